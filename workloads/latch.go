package workloads

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
)

// runLatch runs the latch workload's rounds (LatchSpec) until the time
// limit. The first round begins a quarter of a round after the workload
// starts, so that every client (a process, in process mode) is up by then;
// a client that restarts after a crash joins at the next round.
func (s *session) runLatch(ctx context.Context) error {
	spec := s.cfg.Latch
	round := int64(s.cfg.span(spec.Round))
	start := s.deadline - int64(s.cfg.TimeLimit) + round/4
	r := int64(0)
	if late := s.clock.Now() - start; int(s.proc) >= s.cfg.Clients && late > 0 {
		r = (late + round - 1) / round
	}
	for ; ; r++ {
		t0 := start + r*round
		if t0 >= s.deadline || ctx.Err() != nil || s.out.dead() {
			return nil
		}
		key := s.cfg.Key(int(r))
		p, err := s.primitive(ctx, key)
		if err != nil {
			return err
		}
		l, ok := p.(lock.Latch)
		if !ok {
			return fmt.Errorf("client %d: the latch workload needs a latch, not %T", s.client, p)
		}
		if !s.sleepUntilNs(ctx, t0) {
			return nil
		}
		if s.client == 0 {
			s.setCount(ctx, l, int64(spec.Count))
		}
		if !s.sleepUntilNs(ctx, t0+round/10) {
			return nil
		}
		if s.client < spec.Counters {
			if !s.sleepUntilNs(ctx, s.clock.Now()+int64(s.draw(s.cfg.hold()))) {
				return nil
			}
			s.countDown(ctx, l)
		} else {
			s.await(ctx, l, t0+round*9/10)
		}
		if s.out.dead() {
			return errCrashed
		}
	}
}

// sleepUntilNs is sleepUntil for a history time.
func (s *session) sleepUntilNs(ctx context.Context, t int64) bool {
	return s.sleepUntil(ctx, s.clock.Time(t))
}

func (s *session) setCount(ctx context.Context, l lock.Latch, n int64) {
	inv := s.newOp(history.Invoke, history.Init, l.Key(), lock.Lease{})
	inv.Value = strconv.FormatInt(n, 10)
	s.ops.Add(1)
	s.out.record(inv)
	cctx, cancel := context.WithTimeout(ctx, s.cfg.span(s.cfg.OpTimeout))
	set, err := l.TrySetCount(cctx, n)
	cancel()
	s.completeInit(inv, set, err)
}

func (s *session) countDown(ctx context.Context, l lock.Latch) {
	if s.step(l.Key(), StepBeforeCountDown) != nil {
		return
	}
	inv := s.invoke(history.CountDown, l.Key(), lock.Lease{})
	cctx, cancel := context.WithTimeout(ctx, s.cfg.span(s.cfg.OpTimeout))
	err := l.CountDown(cctx)
	cancel()
	s.complete(inv, err)
}

// await waits on the latch until until (history time): ok when it passed,
// fail when it gave up.
func (s *session) await(ctx context.Context, l lock.Latch, until int64) {
	inv := s.invoke(history.Await, l.Key(), lock.Lease{})
	actx, cancel := context.WithDeadline(ctx, s.clock.Time(until))
	err := l.Await(actx)
	cancel()
	if err != nil && ctx.Err() != nil && !errors.Is(err, lock.ErrNotObtained) {
		err = fmt.Errorf("%w: the workload ended: %w", lock.ErrNotObtained, err)
	}
	s.complete(inv, err)
}
