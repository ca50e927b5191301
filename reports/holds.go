package reports

import (
	"cmp"
	"slices"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
)

// lane is one client's use of one key on the timeline; a read-write
// lock's reader and writer holds go on separate lanes (mode).
type lane struct {
	key    string
	client int
	mode   string
}

// markKind is a single-instant event drawn on a lane.
type markKind int

const (
	markWriteOK markKind = iota
	markWriteFail
	markWriteInfo
	markAcquireInfo
	markCountDown
	markInit
)

type mark struct {
	lane lane
	kind markKind
	t    int64
	op   int64
}

// holdsModel is the timeline's content: lanes sorted by key then client,
// the holds and the marks drawn on them.
type holdsModel struct {
	lanes []lane
	// holds are the checker's own (checker.Holds), so that the bars show
	// what the mutual-exclusion verdict and its red overlaps are about.
	holds []checker.Hold
	// noHolds says why no hold is drawn: the checker rejected the history.
	noHolds string
	marks   []mark
	// waits are the fair lock's queue entries and the latch's waiters
	// (checker.Waits), drawn under their lanes' holds.
	waits []checker.Wait
	// permits > 0 draws, per key, the number of permits held over time.
	permits int
}

// deriveHolds lays out the lock operations of ops: a lane per key and
// client that used it, the holds the checker computes under cfg, and marks
// for writes and acquires with unknown outcome.
func deriveHolds(ops []history.Op, cfg checker.Config) holdsModel {
	var m holdsModel
	seen := map[lane]bool{}
	writeMarks := map[history.Type]markKind{history.OK: markWriteOK, history.Fail: markWriteFail, history.Info: markWriteInfo}
	m.permits = cfg.Permits
	for _, o := range ops {
		if o.IsNemesis() || o.Key == "" || !history.IsCall(o.F) {
			continue
		}
		l := laneOf(o, cfg)
		if !seen[l] {
			seen[l] = true
			m.lanes = append(m.lanes, l)
		}
		switch {
		case o.F == history.Acquire && o.Type == history.Info:
			m.marks = append(m.marks, mark{l, markAcquireInfo, o.Time, o.Index})
		case o.F == history.CountDown && o.Type == history.OK:
			m.marks = append(m.marks, mark{l, markCountDown, o.Time, o.Index})
		case o.F == history.Init && o.Type == history.OK:
			m.marks = append(m.marks, mark{l, markInit, o.Time, o.Index})
		case o.F == history.Write:
			if k, ok := writeMarks[o.Type]; ok {
				m.marks = append(m.marks, mark{l, k, o.Time, o.Index})
			}
		}
	}
	slices.SortFunc(m.lanes, func(a, b lane) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.mode, b.mode); c != 0 { // readers, then writers
			return c
		}
		return cmp.Compare(a.client, b.client)
	})
	if waits, err := checker.Waits(ops, cfg); err == nil {
		m.waits = waits
	}
	holds, err := checker.Holds(ops, cfg)
	if err != nil {
		m.noHolds = err.Error()
	}
	m.holds = holds
	return m
}

// laneOf is the lane of a lock or resource op: a read-write lock's ops go
// on the lane of their mode, the resource requests on the writer's.
func laneOf(o history.Op, cfg checker.Config) lane {
	l := lane{key: o.Key, client: o.Client}
	if cfg.Shape == lock.KindReadWrite {
		l.mode = o.Mode
		if l.mode == "" {
			l.mode = history.ModeWrite
		}
	}
	return l
}
