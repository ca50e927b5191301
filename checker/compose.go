package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
)

// Checker names, for CheckerResult.Name and Config.Skip.
const (
	MutualExclusion = "mutual-exclusion"
	Linearizability = "linearizability"
	Fencing         = "fencing"
	StaleWrites     = "stale-writes"
	LostUpdates     = "lost-updates"
	Liveness        = "liveness"
	// The checkers of Redisson's other synchronizers.
	ReadersWriters = "readers-writers"
	Fairness       = "fairness"
	Semaphore      = "semaphore"
	Latch          = "latch"
	LatchLiveness  = "latch-liveness"
	// Refusals judges acquires refused as held (history.Op.Held).
	Refusals = "refusals"
)

// Subject is what a history is of, as far as the checkers must know it:
// what the clients hold, and what the lock and the workload promise. It
// describes; it does not name checkers: each checker says from it whether
// it applies (Checker.Applies). The runner derives it from the lock
// variant's declared kind and grants (variants.Info) and the workload's
// kind.
type Subject struct {
	// Shape is what the clients hold: the lock's kind ("" is
	// lock.KindLock). A lock one client holds at a time; a read-write lock,
	// whose ops carry a mode (readers share it, a writer holds it alone); a
	// semaphore, which up to Permits hold at once; a count-down latch
	// (init, count-down, await), of which nothing is held.
	Shape lock.Kind
	// Permits of a semaphore (lock.KindSemaphore only, at least 1).
	Permits int
	// Reentrant: an acquire by the current holder nests (Redisson's hold
	// count); the hold ends when as many releases were invoked.
	Reentrant bool
	// Fenced: the workload's writes carry fencing tokens that the resource
	// checks, so a late write that carries a token is the fencing
	// checker's to judge (see StaleWrite).
	Fenced bool
	// Fair: the lock grants in queue order, and the history has its
	// waiters' enqueue ops.
	Fair bool
	// Counter: the workload is the counter (read, then write value+1).
	Counter bool
}

func (s Subject) validate() error {
	switch {
	case s.Shape.Check() != nil:
		return fmt.Errorf("checker: Config.Shape: %w", s.Shape.Check())
	case s.Permits < 0:
		return fmt.Errorf("checker: Config.Permits must not be negative, got %d", s.Permits)
	case s.Shape == lock.KindSemaphore && s.Permits == 0:
		return fmt.Errorf("checker: Config.Permits: a semaphore needs at least 1 permit")
	case s.Shape != lock.KindSemaphore && s.Permits != 0:
		return fmt.Errorf("checker: Config.Permits %d: permits belong to a semaphore, not a %s", s.Permits, s.Shape.Or())
	}
	return nil
}

// Checker is one of the checkers Check composes, as Jepsen's
// checker/compose does: its name, what it judges, when it applies and its
// check. The checkers are this package's (Checkers); each reads the
// prepared history (calls, holds, events, fault windows), never the raw
// records, so the history contract is applied once.
type Checker struct {
	// Name names it in CheckerResult.Name and Config.Skip.
	Name string
	// Judges says what it judges (its anomaly kinds say what it believes).
	Judges string
	// skip says why it does not apply to a history of s ("" when it does):
	// the reason a report shows.
	skip  func(s Subject) string
	check func(p *prepared, res *Result, rep *report)
}

// Applies reports whether c judges a history of s and, when it does not,
// why.
func (c Checker) Applies(s Subject) (ok bool, reason string) {
	s.Shape = s.Shape.Or()
	reason = c.skip(s)
	return reason == "", reason
}

// checkers are every checker, in the order Check runs them and a report
// lists them.
var checkers = []Checker{
	{MutualExclusion, "no two clients hold the lock at once", heldAlone, checkMutex},
	{Linearizability, "the lock's operations fit a lease mutex in some order (porcupine)", heldAlone, checkLinearizable},
	{Fencing, "no two grants share a fencing token, and the resource accepted writes in token order", fenced, checkFencing},
	{StaleWrites, "no write was accepted after its writer's lease ended while another client held the lock", heldByOwners, checkStaleWrites},
	{LostUpdates, "the counter lost no acknowledged increment", counter, checkLostUpdates},
	{Liveness, "nobody was kept from a free lock for more than k×TTL while no fault was active", acquired, checkLiveness},
	{Refusals, "no acquire was refused as held while no lease could hold the key", heldAloneOnce, checkRefusals},
	{ReadersWriters, "a writer held the read-write lock alone", shaped(lock.KindReadWrite, "not a read-write lock (Subject.Shape)"), checkReadersWriters},
	{Fairness, "the fair lock granted in queue order", fair, checkFairness},
	{Semaphore, "no more clients held the semaphore at once than it has permits", shaped(lock.KindSemaphore, "not a semaphore (Subject.Shape)"), checkSemaphore},
	{Latch, "no waiter passed the latch before its count could have reached zero", shaped(lock.KindLatch, "not a latch (Subject.Shape)"), checkLatch},
	{LatchLiveness, "no waiter gave up long after the latch's count reached zero", shaped(lock.KindLatch, "not a latch (Subject.Shape)"), checkLatchLiveness},
}

// heldAlone: one client holds the lock at a time (mutual exclusion and
// linearizability judge that).
func heldAlone(s Subject) string {
	switch s.Shape {
	case lock.KindReadWrite:
		return "a read-write lock: readers share it (the readers-writers checker judges it)"
	case lock.KindSemaphore:
		return "a semaphore: up to its permits hold it at once (the semaphore checker judges it)"
	case lock.KindLatch:
		return "a latch: nothing is held (the latch checkers judge it)"
	}
	return ""
}

// heldByOwners: clients hold leases under which they write (a lock, or a
// read-write lock's write lock).
func heldByOwners(s Subject) string {
	if s.Shape == lock.KindReadWrite {
		return ""
	}
	return heldAlone(s)
}

// heldAloneOnce: one client holds the lock at a time, and a hold does
// not nest (a reentrant owner's refusals are the owner's own business).
func heldAloneOnce(s Subject) string {
	if s.Reentrant {
		return "a reentrant lock: an owner's nested holds share one key"
	}
	return heldAlone(s)
}

func acquired(s Subject) string {
	if s.Shape == lock.KindLatch {
		return "a latch: nothing is acquired (the latch-liveness checker judges it)"
	}
	return ""
}

func shaped(shape lock.Kind, otherwise string) func(Subject) string {
	return func(s Subject) string {
		if s.Shape == shape {
			return ""
		}
		return otherwise
	}
}

func fenced(s Subject) string {
	if s.Fenced {
		return ""
	}
	return "the workload is not fenced (Subject.Fenced)"
}

func counter(s Subject) string {
	if s.Counter {
		return ""
	}
	return "not a counter workload (Subject.Counter)"
}

func fair(s Subject) string {
	if s.Fair {
		return ""
	}
	return "not a fair lock (Subject.Fair)"
}

// Checkers lists every checker, in the order Check runs them.
func Checkers() []Checker { return slices.Clone(checkers) }

// Names lists the checkers' names, in the order Check runs them.
func Names() []string {
	out := make([]string, len(checkers))
	for i, c := range checkers {
		out[i] = c.Name
	}
	return out
}

// IsName reports whether name is a checker's name (for Config.Skip).
func IsName(name string) bool {
	return slices.ContainsFunc(checkers, func(c Checker) bool { return c.Name == name })
}

// selected is a checker as a run has it: skip says why it does not run
// ("" when it runs).
type selected struct {
	Checker
	skip string
}

// lineup is every checker with why it does not run on a history of cfg: it
// does not apply to cfg.Subject, or cfg.Skip names it. This is the one
// place the checkers of a run are chosen.
func lineup(cfg Config) []selected {
	out := make([]selected, len(checkers))
	for i, c := range checkers {
		out[i].Checker = c
		_, out[i].skip = c.Applies(cfg.Subject)
		if slices.Contains(cfg.Skip, c.Name) {
			out[i].skip = "skipped by Config.Skip"
		}
	}
	return out
}

// Check runs the checkers on a history (ops in index order, as a Recorder
// keeps them or ReadFile returns them): every checker is listed in the
// result, those that do not apply to cfg.Subject or that cfg.Skip names as
// skipped with the reason. The error is for a bad Config or a history that
// breaks the contract (a *HistoryError: a completion without its invoke,
// times going backwards…); a checker that cannot decide makes the verdict
// unknown instead.
func Check(ops []history.Op, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	p, err := prepare(ops, cfg)
	if err != nil {
		return nil, err
	}
	res := &Result{Verdict: Valid, Faults: p.faults, Ops: len(ops), End: p.end}
	for _, c := range lineup(cfg) {
		rep := &report{CheckerResult: CheckerResult{Name: c.Name, Verdict: Valid}, max: cfg.MaxAnomalies, p: p}
		if c.skip != "" {
			rep.Skipped, rep.Reason = true, c.skip
		} else {
			start := time.Now()
			c.check(p, res, rep)
			rep.Duration = time.Since(start)
		}
		if rep.Anomalies > 0 {
			rep.Verdict = Invalid
		}
		res.Verdict = merge(res.Verdict, rep.Verdict)
		res.Checkers = append(res.Checkers, rep.CheckerResult)
		res.Anomalies = append(res.Anomalies, rep.anomalies...)
		res.Warnings = append(res.Warnings, rep.warnings...)
	}
	byTime := func(a, b Anomaly) int {
		if a.From != b.From {
			return cmp.Compare(a.From, b.From)
		}
		return slices.Compare(a.Ops, b.Ops)
	}
	slices.SortStableFunc(res.Anomalies, byTime)
	slices.SortStableFunc(res.Warnings, byTime)
	if res.Anomalies == nil {
		res.Anomalies = []Anomaly{}
	}
	return res, nil
}
