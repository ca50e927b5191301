package workloads

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

// StepAction is what ArmStep makes a client do at a step; the nemesis's
// step-pause and step-crash faults arm it (nemesis.Clients.ArmStep). Set
// exactly one field; the zero StepAction disarms the step.
type StepAction struct {
	// Pause stops the client for this long. In process mode it is a real
	// stop of the whole worker process (SIGSTOP, then SIGCONT): its
	// workload, watchdog goroutines and sockets all stand still, like a long
	// GC pause. In in-process mode the client's goroutine sleeps in the
	// step while everything else of it — a watchdog's renewals above all —
	// keeps running: not a real stop.
	//
	// The deadline of the lock operation the step belongs to
	// (AcquireTimeout, OpTimeout) runs on during the pause, as a Go
	// client's context deadline would: a recipe step after a pause longer
	// than it finds its context ended and sends nothing. A scenario whose
	// client must go on after the pause (the DEL of check-then-del) sets
	// the timeout above the pause.
	Pause time.Duration `json:"pause,omitempty"`
	// Crash crashes the client there, as a Config.Crash crash does (it does
	// not count towards Crash.Limit).
	Crash bool `json:"crash,omitempty"`
}

func (a StepAction) validate() error {
	switch {
	case a.Pause < 0:
		return fmt.Errorf("pause %v is negative", a.Pause)
	case a.Pause > 0 && a.Crash:
		return errors.New("a step action pauses or crashes, not both")
	case a.Pause == 0 && !a.Crash:
		return errors.New("a step action needs a pause or a crash")
	}
	return nil
}

// armedStep is an armed action as it travels between harness and worker.
type armedStep struct {
	// ID tells a re-armed step from the arming that fired.
	ID     uint64     `json:"id"`
	Step   string     `json:"step"`
	Action StepAction `json:"action"`
	// Key is the key of the lock whose step it was, once it fired.
	Key string `json:"key,omitempty"`
}

// ArmStep arms a one-shot action: the next time the client's lock reaches
// step, the client performs a once and the step is disarmed. The zero
// StepAction disarms step. Steps are
// those a lock reports through lock.Options.Hook (each recipe documents
// its own; lock.StepGranted for the variants that report it) and the
// workload's StepAfterAcquire and StepBeforeRelease. Arming a step
// again before it fired replaces its action. Several steps may be armed
// at once; if a step is also Config.Crash's, the armed action goes first.
//
// A client between a crash and its restart keeps what is armed for its
// next process; an action armed on a client that stops for good without
// reaching the step never happens. Arming a client that has stopped for
// good is an error.
//
// Both actions are recorded: a Crash as any crash is (a crash op, whose
// error names the step); a Pause as two info ops "pause" of the client's
// process on the lock's key, one when the stop begins (Value "stop <d> at
// <step>") and one when it ends (Value "resume after <stopped for>"). A
// pause is cut short when the workload ends or the client is killed.
func (c *Client) ArmStep(step string, a StepAction) error {
	if step == "" {
		return fmt.Errorf("client %d: arm step: empty step name", c.id)
	}
	if a == (StepAction{}) {
		return c.disarmStep(step)
	}
	if err := a.validate(); err != nil {
		return fmt.Errorf("client %d: arm step %q: %w", c.id, step, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.done:
		return fmt.Errorf("client %d: arm step %q: the client has stopped for good", c.id, step)
	default:
	}
	c.armSeq++
	arm := armedStep{ID: c.armSeq, Step: step, Action: a}
	if c.worker != nil {
		if err := c.worker.send(message{Arm: &arm}); err != nil {
			return fmt.Errorf("client %d: arm step %q: tell worker %d: %w", c.id, step, c.worker.pid, err)
		}
	}
	c.armed[step] = arm
	return nil
}

// disarmStep forgets what is armed at step, here and in the worker: the
// zero StepAction, as a nemesis heal sends it. A pause already under way
// runs to its end.
func (c *Client) disarmStep(step string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.armed, step)
	if c.worker != nil {
		c.armSeq++
		if err := c.worker.send(message{Arm: &armedStep{ID: c.armSeq, Step: step}}); err != nil {
			return fmt.Errorf("client %d: disarm step %q: tell worker %d: %w", c.id, step, c.worker.pid, err)
		}
	}
	return nil
}

// takeArmed disarms step and returns what was armed there (in-process).
func (c *Client) takeArmed(step string) (armedStep, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.armed[step]
	if ok {
		delete(c.armed, step)
	}
	return a, ok
}

// disarm forgets an arming a worker fired, unless the step was armed again.
func (c *Client) disarm(a armedStep) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.armed[a.Step]; ok && cur.ID == a.ID {
		delete(c.armed, a.Step)
	}
}

// armedSteps lists what is armed, for a new worker. The caller holds c.mu.
func (c *Client) armedSteps() []armedStep {
	list := make([]armedStep, 0, len(c.armed))
	for _, a := range c.armed {
		list = append(list, a)
	}
	return list
}

func crashReason(step string, armed bool) string {
	if armed {
		return "crashed at step " + step + " (armed)"
	}
	return "crashed at step " + step
}

// pauseOp is one of the two records of a step pause.
func pauseOp(key, value string, t int64) history.Op {
	return history.Op{Type: history.Info, F: history.Pause, Key: key, Value: value, Time: t}
}

func pauseBegin(a armedStep, t int64) history.Op {
	return pauseOp(a.Key, fmt.Sprintf("stop %v at %s", a.Action.Pause, a.Step), t)
}

func pauseEnd(a armedStep, stopped time.Duration, t int64) history.Op {
	return pauseOp(a.Key, fmt.Sprintf("resume after %v", stopped.Round(time.Microsecond)), t)
}

// stepPause carries out a pause a worker asked for (it fired an armed
// step). The worker waits for the Resumed reply, which is sent only after
// SIGCONT, so the paused step cannot run on before the stop.
func (c *Client) stepPause(wk *worker, log *procLog, a armedStep) {
	defer func() { _ = wk.send(message{Resumed: a.ID}) }()
	c.mu.Lock()
	c.stepPaused = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.stepPaused = false
		c.mu.Unlock()
	}()
	if err := syscall.Kill(-wk.pid, syscall.SIGSTOP); err != nil {
		return // it is gone; serve will see its end
	}
	waitStopped(wk.pid)
	begin := time.Now()
	log.record(pauseBegin(a, c.w.h.Clock.Now()))
	t := time.NewTimer(a.Action.Pause)
	select {
	case <-t.C:
	case <-c.w.ctx.Done():
	case <-wk.killed:
	}
	t.Stop()
	// Stamped before SIGCONT: whatever the worker records after it is later.
	end := pauseEnd(a, time.Since(begin), c.w.h.Clock.Now())
	c.mu.Lock()
	if !c.paused { // a Pause that raced with the step keeps it stopped
		_ = syscall.Kill(-wk.pid, syscall.SIGCONT)
	}
	c.mu.Unlock()
	log.record(end)
}

// waitStopped waits until every thread of pid has taken its SIGSTOP (or
// exited), so that the pause's record is stamped when the stop is
// complete. It gives up after a second: a record a little early is better
// than no pause.
func waitStopped(pid int) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) && !allStopped(pid) {
		time.Sleep(200 * time.Microsecond)
	}
}

func allStopped(pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return true // gone (or no procfs: nothing to wait for)
	}
	for _, p := range tasks {
		stat, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited
		}
		// pid (comm) state …: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			continue
		}
		switch stat[i+2] {
		case 'T', 't', 'Z', 'X':
		default:
			return false
		}
	}
	return true
}
