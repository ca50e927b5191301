package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

// call is an invoke paired with its completion.
type call struct {
	f      string
	key    string
	proc   history.Process
	client int
	typ    history.Type // OK, Fail or Info (also when it never completed)
	inv    int64        // history index of the invoke
	done   int64        // history index of the completion, -1 if none
	call   int64        // invoke time
	ret    int64        // completion time; the end of the history if none
	value  string
	token  int64
	vu     int64
	err    string
	held   bool   // a failed acquire refused as held (history.Op.Held)
	lease  int32  // calls index of the acquire this op acts under, -1 if none
	mode   string // a read-write lock's mode (history.Op.Mode)
}

// opIndex is the record that best stands for the call: its completion.
func (c *call) opIndex() int64 {
	if c.done >= 0 {
		return c.done
	}
	return c.inv
}

// event is a single-record op: crash or lost.
type event struct {
	f      string
	proc   history.Process
	client int
	key    string
	owner  string // lost: the lease's owner value, if known
	time   int64
	index  int64
}

// prepared is a history paired up and indexed for the checkers.
type prepared struct {
	cfg    Config
	ops    []history.Op
	calls  []call
	events []event
	// byOp maps ops[i] to its call (invoke or completion), -1 for events.
	byOp   []int32
	faults []FaultWindow
	end    int64 // the latest time in the history
	keys   []string
	holds  []hold // mutual exclusion windows, by key then start
}

type procKey struct {
	proc history.Process
	key  string
}

type ownerKey struct {
	proc  history.Process
	key   string
	owner string
}

// scan checks ops against the history contract as far as one pass can
// (each op valid on its own, indexes increasing, every completion paired)
// and pairs their calls into calls (pairer), calling onCall for each call
// record and onOther for every other client record; nemesis records are
// left to FaultWindows. It returns the history's last time.
func scan(ops []history.Op, calls callStore, onCall func(i int, ci int32), onOther func(o *history.Op)) (int64, error) {
	pr := newPairer(calls)
	var end int64
	for i := range ops {
		o := &ops[i]
		if err := o.Validate(); err != nil {
			return 0, &HistoryError{o.Index, fmt.Sprintf("%s: %v", o.Summary(), err)}
		}
		if i > 0 && o.Index <= ops[i-1].Index {
			return 0, &HistoryError{o.Index, fmt.Sprintf("%s follows op %d: ops must be in increasing index order", o.Summary(), ops[i-1].Index)}
		}
		end = max(end, o.Time)
		if o.IsNemesis() {
			continue // paired by FaultWindows
		}
		if !history.IsCall(o.F) {
			onOther(o)
			continue
		}
		ci, err := pr.add(o)
		if err != nil {
			return 0, err
		}
		onCall(i, ci)
	}
	return end, nil
}

// faultError says how a fault window breaks the history contract.
func faultError(fw FaultWindow) error {
	if fw.StartOp < 0 {
		return &HistoryError{fw.StopOp, fmt.Sprintf("fault %s was stopped but never started", fw.ID)}
	}
	if fw.Stop < fw.Start {
		return &HistoryError{fw.StopOp, fmt.Sprintf("fault %s stops before it starts (op %d)", fw.ID, fw.StartOp)}
	}
	return nil
}

func prepare(ops []history.Op, cfg Config) (*prepared, error) {
	p := &prepared{cfg: cfg, ops: ops, byOp: make([]int32, len(ops))}
	for i := range p.byOp {
		p.byOp[i] = -1
	}
	calls := &callSlice{}
	keys := map[string]bool{}
	// A client's pauses (info ops "pause", a begin then an end, recorded
	// by the client itself when an armed step stops it).
	type pause struct{ from, to int64 }
	pauses := map[int][]pause{}
	pauseOpen := map[int]int64{}
	end, err := scan(ops, calls,
		func(i int, ci int32) {
			keys[ops[i].Key] = true
			p.byOp[i] = ci
		},
		func(o *history.Op) {
			switch o.F {
			case history.Pause:
				if from, open := pauseOpen[o.Client]; open {
					pauses[o.Client] = append(pauses[o.Client], pause{from, o.Time})
					delete(pauseOpen, o.Client)
				} else {
					pauseOpen[o.Client] = o.Time
				}
			case history.Crash, history.Lost:
				p.events = append(p.events, event{o.F, o.Process, o.Client, o.Key, o.Value, o.Time, o.Index})
			}
		})
	if err != nil {
		return nil, err
	}
	p.end = end
	p.calls = calls.calls
	for i := range p.calls {
		if p.calls[i].done < 0 {
			p.calls[i].ret = p.end
		}
	}
	for _, fw := range FaultWindows(ops) {
		if err := faultError(fw); err != nil {
			return nil, err
		}
		if fw.Kind == "" {
			fw.Kind = "fault"
		}
		for _, t := range fw.Targets {
			c, err := strconv.Atoi(strings.TrimPrefix(t, "client:"))
			if err != nil || !strings.HasPrefix(t, "client:") {
				continue
			}
			during := func(t int64) bool { return t >= fw.Start && t <= fw.Stop }
			if from, open := pauseOpen[c]; open && during(from) {
				fw.Effect = p.end // stopped until the end of the history
				fw.Fired++
			}
			for _, ps := range pauses[c] {
				if during(ps.from) {
					fw.Effect = max(fw.Effect, ps.to)
					fw.Fired++
				}
			}
			for _, e := range p.events {
				if e.f == history.Crash && e.client == c && during(e.time) {
					fw.Fired++
				}
			}
		}
		p.faults = append(p.faults, fw)
	}
	for k := range keys {
		p.keys = append(p.keys, k)
	}
	slices.Sort(p.keys)
	p.holds = computeHolds(p)
	return p, nil
}

// leaseOp: an op that acts under a lease (a release, an extend, a
// resource request, a question to the library about the lease).
func leaseOp(f string) bool {
	switch f {
	case history.Release, history.Extend, history.Write, history.Read, history.Valid:
		return true
	}
	return false
}

// faultsIn returns the IDs of the faults active at some time in [from, to].
func (p *prepared) faultsIn(from, to int64) []string {
	var ids []string
	for _, f := range p.faults {
		if f.Start <= to && f.Effect >= from {
			ids = append(ids, f.ID)
		}
	}
	return ids
}

func (p *prepared) fault(id string) *FaultWindow {
	for i := range p.faults {
		if p.faults[i].ID == id {
			return &p.faults[i]
		}
	}
	return nil
}

// faultClause describes the faults of ids for an explanation:
// "fault f2 (kill n2, restart empty) started at 3.950 s".
func (p *prepared) faultClause(ids []string) string {
	if len(ids) == 0 {
		return "no fault was active"
	}
	var parts []string
	for i, id := range ids {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(ids)-3))
			break
		}
		f := p.fault(id)
		what := f.Desc
		if what == "" {
			what = strings.TrimSpace(f.Kind + " " + strings.Join(f.Targets, ","))
		}
		s := fmt.Sprintf("fault %s (%s) started at %s", f.ID, what, secs(f.Start))
		if f.Healed {
			s += " and stopped at " + secs(f.Stop)
		} else {
			s += " and was never stopped"
		}
		if f.Effect > f.Stop {
			s += ", the client pause it caused lasting until " + secs(f.Effect)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// article puts "a" or "an" before a function name: "an acquire".
func article(f string) string {
	if f != "" && strings.ContainsRune("aeiou", rune(f[0])) {
		return "an " + f
	}
	return "a " + f
}

func ownerNote(owner string) string {
	if owner == "" {
		return ""
	}
	return fmt.Sprintf(" with owner value %q", owner)
}

func procName(p history.Process) string {
	if p == history.NemesisProcess {
		return "nemesis"
	}
	return fmt.Sprint(int(p))
}

// secs renders a history time for people: "4.210 s".
func secs(ns int64) string { return fmt.Sprintf("%.3f s", history.Seconds(ns)) }

// dur renders a span: "690ms".
func dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Millisecond || d <= -time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= time.Microsecond || d <= -time.Microsecond:
		return d.Round(time.Microsecond).String()
	}
	return d.String()
}

// joinInts renders a few ints: "1, 2, 4".
func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// FaultWindows pairs the nemesis's start and stop records of each fault
// without checking anything else, so a report can show what was injected
// when even in a history Check rejects: a fault never stopped lasts until the
// last op, one never started starts at its stop. Windows are in start order;
// Effect is Stop (Check extends it by the client pauses a fault caused).
func FaultWindows(ops []history.Op) []FaultWindow {
	byID := map[string]*FaultWindow{}
	var order []string
	var end int64
	for i := range ops {
		o := &ops[i]
		end = max(end, o.Time)
		if !o.IsNemesis() || o.Fault == nil || (o.F != history.Start && o.F != history.Stop) {
			continue
		}
		fw := byID[o.Fault.ID]
		if fw == nil {
			fw = &FaultWindow{ID: o.Fault.ID, Start: math.MaxInt64, Stop: -1, StartOp: -1, StopOp: -1}
			byID[o.Fault.ID] = fw
			order = append(order, o.Fault.ID)
		}
		if o.Fault.Kind != "" {
			fw.Kind = o.Fault.Kind
		}
		if o.Fault.Desc != "" {
			fw.Desc = o.Fault.Desc
		}
		if len(o.Fault.Targets) > 0 {
			fw.Targets = o.Fault.Targets
		}
		fw.Traits = fw.Traits.With(o.Fault.Traits...)
		if o.F == history.Start && o.Time < fw.Start {
			fw.Start, fw.StartOp = o.Time, o.Index
			fw.Skipped = o.Type == history.Fail
		}
		if o.F == history.Stop && o.Time >= fw.Stop {
			fw.Stop, fw.StopOp, fw.Healed = o.Time, o.Index, true
		}
	}
	out := make([]FaultWindow, 0, len(order))
	for _, id := range order {
		fw := *byID[id]
		if fw.StartOp < 0 {
			fw.Start = fw.Stop
		}
		if !fw.Healed {
			fw.Stop = end
		}
		fw.Effect = fw.Stop
		out = append(out, fw)
	}
	slices.SortStableFunc(out, func(a, b FaultWindow) int { return cmp.Compare(a.Start, b.Start) })
	return out
}
