package reports

import (
	"cmp"
	"slices"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
)

// lane is one client's use of one key on the timeline.
type lane struct {
	key    string
	client int
}

// markKind is a single-instant event drawn on a lane.
type markKind int

const (
	markWriteOK markKind = iota
	markWriteFail
	markWriteInfo
	markAcquireInfo
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
}

// deriveHolds lays out the lock operations of ops: a lane per key and
// client that used it, the holds the checker computes under cfg, and marks
// for writes and acquires with unknown outcome.
func deriveHolds(ops []history.Op, cfg checker.Config) holdsModel {
	var m holdsModel
	seen := map[lane]bool{}
	writeMarks := map[history.Type]markKind{history.OK: markWriteOK, history.Fail: markWriteFail, history.Info: markWriteInfo}
	for _, o := range ops {
		if o.IsNemesis() || o.Key == "" || !isLockOrResource(o.F) {
			continue
		}
		l := lane{o.Key, o.Client}
		if !seen[l] {
			seen[l] = true
			m.lanes = append(m.lanes, l)
		}
		switch {
		case o.F == history.Acquire && o.Type == history.Info:
			m.marks = append(m.marks, mark{l, markAcquireInfo, o.Time, o.Index})
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
		return cmp.Compare(a.client, b.client)
	})
	holds, err := checker.Holds(ops, cfg)
	if err != nil {
		m.noHolds = err.Error()
	}
	m.holds = holds
	return m
}

func isLockOrResource(f string) bool {
	switch f {
	case history.Acquire, history.Release, history.Extend, history.Write, history.Read:
		return true
	}
	return false
}
