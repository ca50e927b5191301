package reports

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tumbler-dev/tumbler/history"
)

// What the timeline shows beside the holds: writes and unknown outcomes,
// a fair lock's queue and a latch's waiters, a semaphore's permits held.

func (v *view) drawMarks(out *svgOut, l *timelineLayout, m holdsModel) {
	last := map[lane]map[markKind]float64{}
	n := 0
	for _, mk := range m.marks {
		y, ok := l.laneY[mk.lane]
		if !ok || n >= tlMaxMarks {
			continue
		}
		x := l.x(mk.t)
		if last[mk.lane] == nil {
			last[mk.lane] = map[markKind]float64{}
		}
		// Marks of one kind closer than a pixel are one mark.
		if px, seen := last[mk.lane][mk.kind]; seen && x-px < 1 {
			continue
		}
		last[mk.lane][mk.kind] = x
		n++
		switch mk.kind {
		case markWriteOK:
			out.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#212529" stroke-width="1"><title>write accepted at %s (op %d)</title></line>`, x, y+1, x, y+tlLaneH-1, secs(mk.t), mk.op)
		case markWriteFail:
			out.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#868e96" stroke-width="1" stroke-dasharray="2,1"><title>write rejected at %s (op %d)</title></line>`, x, y+1, x, y+tlLaneH-1, secs(mk.t), mk.op)
		case markWriteInfo:
			out.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#f08c00" stroke-width="1"><title>write with unknown outcome at %s (op %d)</title></line>`, x, y+1, x, y+tlLaneH-1, secs(mk.t), mk.op)
		case markAcquireInfo:
			out.printf(`<circle cx="%.1f" cy="%.1f" r="2.5" fill="none" stroke="#f08c00"><title>acquire with unknown outcome at %s (op %d)</title></circle>`, x, y+tlLaneH/2, secs(mk.t), mk.op)
		case markCountDown:
			out.printf(`<path d="M%.1f %.1f l-3 -6 h6 z" fill="#2b8a3e"><title>count-down at %s (op %d)</title></path>`, x, y+tlLaneH-2, secs(mk.t), mk.op)
		case markInit:
			out.printf(`<rect x="%.1f" y="%.1f" width="3" height="%d" fill="#495057"><title>latch or semaphore set up at %s (op %d)</title></rect>`, x-1.5, y+1, tlLaneH-2, secs(mk.t), mk.op)
		}
		out.printf("\n")
	}
}

// drawWaits draws the queue entries of a fair lock (thin bars under the
// lane, numbered in the order they entered the queue, dashed when the
// entry timed out) and a latch's waiters (from the await's call to its
// pass, or to giving up).
func (v *view) drawWaits(out *svgOut, l *timelineLayout, m holdsModel) {
	n := 0
	for _, w := range m.waits {
		y, ok := l.laneY[lane{w.Key, w.Client, ""}]
		if !ok || n >= tlMaxMarks {
			continue
		}
		n++
		x, wd := l.x(w.From), l.w(w.From, w.To, 1)
		switch w.Kind {
		case "queue":
			dash := ""
			what := fmt.Sprintf("queued #%d for %q from %s to %s (op %d)", w.Order, w.Key, secs(w.From), secs(w.To), w.Op)
			if w.TimedOut {
				dash = ` stroke-dasharray="3,2"`
				what += ": its entry timed out before the waiter polled again"
			}
			out.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="3" fill="#adb5bd" stroke="#868e96" stroke-width=".5"%s><title>%s</title></rect>`,
				x, y+tlLaneH-3, wd, dash, esc(what))
			if wd > 14 {
				out.printf(`<text x="%.1f" y="%.1f" font-size="8" fill="#495057">#%d</text>`, x+1, y+tlLaneH-4, w.Order)
			}
		case "await":
			fill := "#ffe066"
			if w.Outcome == history.OK {
				fill = "#d3f9d8"
			}
			out.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s" stroke="#adb5bd" stroke-width=".5"><title>waited on latch %q from %s to %s (op %d): %s</title></rect>`,
				x, y+(tlLaneH-tlBarH)/2, wd, tlBarH, fill, esc(w.Key), secs(w.From), secs(w.To), w.Op, awaitOutcome(w.Outcome))
		}
		out.printf("\n")
	}
}

func awaitOutcome(t history.Type) string {
	switch t {
	case history.OK:
		return "passed"
	case history.Fail:
		return "gave up"
	}
	return "unknown"
}

// drawPermits draws, under each key of a semaphore, how many permits were
// held over time (the holds the semaphore checker counts), with the
// permits as a dashed line and the excess in red.
func (v *view) drawPermits(out *svgOut, l *timelineLayout, m holdsModel) {
	if m.permits <= 0 {
		return
	}
	type step struct {
		t int64
		d int
	}
	byKey := map[string][]step{}
	for _, h := range m.holds {
		if h.End > h.Start {
			byKey[h.Key] = append(byKey[h.Key], step{h.Start, 1}, step{h.End, -1})
		}
	}
	for key, y0 := range l.permitsY {
		steps := byKey[key]
		slices.SortFunc(steps, func(a, b step) int {
			if a.t != b.t {
				return cmp.Compare(a.t, b.t)
			}
			return cmp.Compare(a.d, b.d) // an end before a start at the same instant
		})
		top := m.permits + 1
		n, most := 0, 0
		for _, s := range steps {
			n += s.d
			most = max(most, n)
		}
		top = max(top, most)
		yOf := func(k int) float64 { return y0 + tlPermitsH - float64(k)*tlPermitsH/float64(top) }
		out.printf(`<text x="18" y="%.1f" fill="#495057">permits held</text>`, y0+tlPermitsH/2+4)
		out.printf(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#868e96" stroke-dasharray="4,2"><title>%d permits</title></line>`,
			tlLabelW, yOf(m.permits), tlLabelW+tlPlotW, yOf(m.permits), m.permits)
		out.printf(`<text x="%d" y="%.1f" font-size="9" fill="#868e96" text-anchor="end">%d</text>`, tlLabelW-4, yOf(m.permits)+3, m.permits)
		var pts strings.Builder
		n = 0
		lastX := l.x(0)
		fmt.Fprintf(&pts, "%.1f,%.1f", lastX, yOf(0))
		for _, s := range steps {
			x := l.x(s.t)
			fmt.Fprintf(&pts, " %.1f,%.1f", x, yOf(n))
			n += s.d
			fmt.Fprintf(&pts, " %.1f,%.1f", x, yOf(n))
			if n > m.permits {
				end := l.v.end
				// the excess lasts until the next step
				for _, t := range steps {
					if t.t > s.t {
						end = t.t
						break
					}
				}
				out.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#e03131" fill-opacity=".3"><title>%d holders of %d permits from %s</title></rect>`,
					x, yOf(n), l.w(s.t, end, 1), yOf(m.permits)-yOf(n), n, m.permits, secs(s.t))
			}
		}
		fmt.Fprintf(&pts, " %.1f,%.1f", l.x(l.v.end), yOf(n))
		out.printf(`<polyline points="%s" fill="none" stroke="#1c7ed6" stroke-width="1.2"/>`+"\n", pts.String())
	}
}
