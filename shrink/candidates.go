package shrink

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/nemesis"
)

// The candidates of a pass: each function below makes the base plan
// smaller in one way, tries every candidate it makes (shrinker.try) and
// reports whether one was kept.

// truncate drops the steps that start after the anomaly and cuts the time
// limit to a TTL past it (rounded up to a tenth of a second).
func (s *shrinker) truncate(ctx context.Context) bool {
	if s.at <= 0 {
		return false
	}
	p := s.base()
	ttl := s.ttl()
	var kept []nemesis.Step
	for _, st := range p.Faults {
		if st.At.Resolve(ttl) <= s.at {
			kept = append(kept, st)
		}
	}
	limit := roundUp(s.at+ttl, 100*time.Millisecond)
	cur := p.TimeLimit.Resolve(ttl)
	if len(kept) == len(p.Faults) && limit >= cur {
		return false
	}
	p.Faults = kept
	if limit < cur {
		p.TimeLimit = nemesis.Fixed(limit)
	}
	if !valid(p) {
		return false
	}
	return s.try(ctx, fmt.Sprintf("cut after the anomaly at %v: %d steps, time limit %v", s.at.Round(time.Millisecond), len(kept), p.TimeLimit), p)
}

func roundUp(d, to time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d)/float64(to))) * to
}

// dropSteps removes chunks of steps, halves first, then smaller, as
// delta debugging's complement step does.
func (s *shrinker) dropSteps(ctx context.Context) bool {
	progress := false
	for n := 2; ; {
		steps := s.res.Minimal.Faults
		if len(steps) == 0 {
			return progress
		}
		n = min(n, len(steps))
		size := (len(steps) + n - 1) / n
		dropped := false
		for from := 0; from < len(steps) && !dropped; from += size {
			to := min(from+size, len(steps))
			p := s.base()
			p.Faults = slices.Delete(p.Faults, from, to)
			if !valid(p) {
				continue
			}
			what := fmt.Sprintf("drop step %d", from+1)
			if to-from > 1 {
				what = fmt.Sprintf("drop steps %d-%d", from+1, to)
			}
			if s.try(ctx, what+" ("+stepsText(steps[from:to])+")", p) {
				dropped, progress = true, true
			}
			if ctx.Err() != nil || s.spent() {
				return progress
			}
		}
		switch {
		case dropped:
			n = max(n-1, 2)
		case size == 1:
			return progress
		default:
			n *= 2
		}
	}
}

func stepsText(steps []nemesis.Step) string {
	out := make([]string, len(steps))
	for i, st := range steps {
		out[i] = string(st.Fault)
	}
	return strings.Join(out, ", ")
}

// halveTimeLimit shortens the time limit, not below the end of the last
// step (its start, its duration and a TTL).
func (s *shrinker) halveTimeLimit(ctx context.Context) bool {
	p := s.base()
	ttl := s.ttl()
	cur := p.TimeLimit.Resolve(ttl)
	floor := ttl
	for _, st := range p.Faults {
		floor = max(floor, st.At.Resolve(ttl)+st.For.Resolve(ttl)+ttl)
	}
	for _, f := range []float64{0.5, 0.75} {
		next := roundUp(time.Duration(float64(cur)*f), 100*time.Millisecond)
		if next < floor || next >= cur {
			continue
		}
		p.TimeLimit = nemesis.Fixed(next)
		if valid(p) && s.try(ctx, fmt.Sprintf("time limit %v", next), p) {
			return true
		}
	}
	return false
}

// milder halves each step's durations and magnitudes — every span of the
// step (nemesis.Step.Spans) but its start — one field of one step at a
// time. A half the step's kind refuses (a jitter over its latency, a strobe
// no shorter than the clock fault) is not tried.
func (s *shrinker) milder(ctx context.Context) bool {
	progress := false
	for i := 0; i < len(s.res.Minimal.Faults); i++ {
		for k := range s.res.Minimal.Faults[i].Spans() {
			p := s.base()
			st := &p.Faults[i]
			f := st.Spans()[k]
			if f.Span == &st.At || f.Span.IsZero() {
				continue // the start is when, not how much
			}
			v := *f.Span
			half := v.Scale(0.5)
			if half.IsZero() || half.String() == v.String() {
				continue
			}
			*f.Span = half
			if !valid(p) {
				continue
			}
			if s.try(ctx, fmt.Sprintf("step %d (%s): %s %s → %s", i+1, st.Fault, f.Name, v, half), p) {
				progress = true
			}
			if ctx.Err() != nil || s.spent() {
				return progress
			}
		}
	}
	return progress
}

// fewer lowers the number of clients (halving, then one less, not below
// two: a lock needs a contender) and of keys (down to one).
func (s *shrinker) fewer(ctx context.Context) bool {
	progress := false
	for _, n := range []func(w int) int{func(w int) int { return max(2, w/2) }, func(w int) int { return w - 1 }} {
		p := s.base()
		c := p.Workload.Clients
		if next := n(c); next >= 2 && next < c {
			p.Workload.Clients = next
			if valid(p) && s.try(ctx, fmt.Sprintf("%d clients", next), p) {
				progress = true
			}
		}
	}
	p := s.base()
	if k := p.Workload.Keys; k > 1 {
		p.Workload.Keys = 1
		if valid(p) && s.try(ctx, "1 key", p) {
			progress = true
		}
	}
	return progress
}
