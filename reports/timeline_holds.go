package reports

import (
	"fmt"

	"github.com/tumbler-dev/tumbler/history"
)

// The timeline's bars: each lane's holds, merged where less than a pixel
// apart, in the client's color.

var clientColors = []string{"#1c7ed6", "#2f9e44", "#7048e8", "#0c8599", "#e8590c", "#5c940d", "#d6336c", "#1864ab", "#862e9c", "#495057"}

// segment is a drawn bar: one hold, or several merged when less than a
// pixel apart.
type segment struct {
	from, to int64
	n        int
	title    string
}

// mergeSegments joins consecutive spans (sorted by start) less than eps
// apart.
func mergeSegments(spans []segment, eps int64) []segment {
	var out []segment
	for _, s := range spans {
		if n := len(out); n > 0 && s.from-out[n-1].to < eps {
			last := &out[n-1]
			last.to = max(last.to, s.to)
			last.n += s.n
			continue
		}
		out = append(out, s)
	}
	return out
}

// prepareSegments turns holds into bars per lane, merging holds less than
// half a pixel apart: at the timeline's resolution they are one bar, and
// thousands of holds stay a small file.
func (l *timelineLayout) prepareSegments(m holdsModel) {
	held := map[lane][]segment{}
	past := map[lane][]segment{}
	if m.noHolds != "" {
		l.notes = append(l.notes, "No holds are drawn: the checker rejected the history ("+truncate(m.noHolds, 120)+").")
	}
	// A bar runs as long as the client believed it held the lock; the part
	// past its validity is hatched.
	for _, h := range m.holds {
		ln := lane{h.Key, h.Client, h.Mode}
		if _, ok := l.laneY[ln]; !ok {
			continue
		}
		end := max(h.HeldUntil, h.Start)
		validEnd := min(end, max(h.ValidUntil, h.Start))
		t := fmt.Sprintf("client %d held %q from %s (op %d) to %s (%s)", h.Client, h.Key, secs(h.Start), h.AcquireOp, secs(end), endReason(h.HeldUntilBy))
		if h.Token != 0 {
			t += fmt.Sprintf(", token %d", h.Token)
		}
		if h.ValidUntil > 0 {
			t += ", " + history.ValidUntilText(h.ValidUntil)
		}
		held[ln] = append(held[ln], segment{h.Start, validEnd, 1, t})
		if end > validEnd {
			past[ln] = append(past[ln], segment{validEnd, end, 1, t + ": held past its validity"})
		}
	}
	eps := max(l.v.end/(2*tlPlotW), 1)
	total, drawn := 0, 0
	l.segs = map[lane][2][]segment{}
	for _, ln := range l.lanes {
		total += len(held[ln])
		h, p := mergeSegments(held[ln], eps), mergeSegments(past[ln], eps)
		if drawn+len(h)+len(p) > tlMaxSegments {
			l.notes = append(l.notes, fmt.Sprintf("Bars are drawn for the first %d lanes only (cap of %d bars); see history.jsonl for the rest.", len(l.segs), tlMaxSegments))
			break
		}
		l.segs[ln] = [2][]segment{h, p}
		drawn += len(h) + len(p)
	}
	l.withTitles = drawn <= tlTitleSegments
	if drawn < total {
		l.notes = append(l.notes, fmt.Sprintf("%d holds are drawn as %d bars: holds less than half a pixel apart are merged (hover a bar for its span).", total, drawn))
	}
}

func (v *view) drawHolds(out *svgOut, l *timelineLayout) {
	for _, ln := range l.lanes {
		segs, ok := l.segs[ln]
		if !ok {
			continue
		}
		y := l.laneY[ln] + (tlLaneH-tlBarH)/2
		out.printf(`<g fill="%s">`, laneColor(ln))
		for kind, list := range segs {
			for _, s := range list {
				x, w := l.x(s.from), l.w(s.from, s.to, 0.8)
				opacity := ""
				if kind == 1 {
					opacity = ` fill-opacity=".35"`
				}
				out.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d"%s>`, x, y, w, tlBarH, opacity)
				if l.withTitles || s.n > 1 {
					out.printf(`<title>%s</title>`, esc(segmentTitle(s)))
				}
				out.printf(`</rect>`)
				if kind == 1 {
					out.printf(`<rect class="tl-past" x="%.1f" y="%.1f" width="%.1f" height="%d"/>`, x, y, w, tlBarH)
				}
			}
		}
		out.printf("</g>\n")
	}
}

// laneColor is the client's color; a reader's bars are lighter.
func laneColor(ln lane) string {
	if ln.mode == history.ModeRead {
		return "#74c0fc"
	}
	return clientColor(ln.client)
}

func clientColor(c int) string {
	n := len(clientColors)
	return clientColors[(c%n+n)%n]
}

func segmentTitle(s segment) string {
	if s.n > 1 {
		return fmt.Sprintf("%d holds from %s to %s", s.n, secs(s.from), secs(s.to))
	}
	return s.title
}

func endReason(by string) string {
	switch by {
	case "release":
		return "released"
	case "crash":
		return "crashed"
	case "lost":
		return "lease reported lost"
	case "re-acquire":
		return "acquired again"
	case "end":
		return "still held when the history ends"
	}
	return by
}
