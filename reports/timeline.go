package reports

import (
	"bufio"
	"cmp"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
)

// Timeline geometry (px). The width is fixed so that a 30 s run with
// thousands of holds stays readable; the height grows with the lanes.
const (
	tlWidth      = 1200
	tlLabelW     = 170
	tlRight      = 20
	tlPlotW      = tlWidth - tlLabelW - tlRight
	tlFaultRowH  = 14
	tlMaxFaultRw = 6
	tlKeyH       = 18
	tlLaneH      = 14
	tlBarH       = 9
	// tlMaxLanes caps the lanes drawn (keys × clients).
	tlMaxLanes = 150
	// tlMaxSegments caps the bars drawn after merging holds that are less
	// than a pixel apart; tlTitleSegments is how many may carry a tooltip.
	tlMaxSegments   = 20000
	tlTitleSegments = 3000
	tlMaxMarks      = 20000
	tlMaxAnomalies  = 600
	tlLegendRowH    = 18
	// tlPermitsH is the height of a semaphore key's permits-held chart.
	tlPermitsH = 40
)

var clientColors = []string{"#1c7ed6", "#2f9e44", "#7048e8", "#0c8599", "#e8590c", "#5c940d", "#d6336c", "#1864ab", "#862e9c", "#495057"}

// svgOut writes SVG text and keeps the first write error.
type svgOut struct {
	w   *bufio.Writer
	err error
}

func (s *svgOut) printf(format string, args ...any) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, format, args...)
	}
}

// esc makes s safe in XML text and attributes, dropping the control
// characters XML 1.0 cannot carry at all.
func esc(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return -1
		}
		return r
	}, s)
	return html.EscapeString(s)
}

// segment is a drawn bar: one hold, or several merged when less than a
// pixel apart.
type segment struct {
	from, to int64
	n        int
	title    string
}

// timelineLayout places lanes and fault labels.
type timelineLayout struct {
	v         *view
	lanes     []lane
	laneY     map[lane]float64
	keyTop    map[string]float64
	keyBottom map[string]float64
	faultRow  []int
	faultRows int
	lanesTop  float64
	bottom    float64
	// permitsY is where each key's permits chart starts (semaphores).
	permitsY map[string]float64
	notes    []string
	// segs are each lane's bars: held (valid) and held past validity.
	segs       map[lane][2][]segment
	withTitles bool
}

func (l *timelineLayout) x(t int64) float64 {
	return tlLabelW + float64(t)/float64(l.v.end)*tlPlotW
}

func (l *timelineLayout) w(from, to int64, minW float64) float64 {
	return max(l.x(to)-l.x(from), minW)
}

// writeTimeline draws the Gantt of lock holds (timeline.svg).
func (v *view) writeTimeline(w io.Writer) error {
	out := &svgOut{w: bufio.NewWriter(w)}
	m := deriveHolds(v.run.Ops, v.run.Check)
	l := v.layout(m)
	height := int(l.bottom) + 44 + 2*tlLegendRowH + 8 + 14*len(l.notes)
	out.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11" style="max-width:100%%;height:auto">`+"\n",
		tlWidth, height, tlWidth, height)
	out.printf(`<style>.tl-lbl{fill:#343a40}.tl-ax{stroke:#868e96}.tl-grid{stroke:#e9ecef}.tl-fault{fill:#4263eb;fill-opacity:.10}` +
		`.tl-flbl{fill:#364fc7}.tl-past{fill:url(#tl-hatch)}.tl-dg{fill:#e03131;fill-opacity:.55;stroke:#c92a2a}` +
		`.tl-anom{fill:none;stroke-width:1.5}.tl-warn{fill:#f59f00}</style>` + "\n")
	out.printf(`<defs><pattern id="tl-hatch" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
		`<rect width="5" height="5" fill="#fff" fill-opacity=".6"/><line x1="0" y1="0" x2="0" y2="5" stroke="#495057" stroke-width="1.6"/></pattern></defs>` + "\n")
	out.printf(`<rect width="%d" height="%d" fill="#fff"/>`+"\n", tlWidth, height)
	title := v.run.Name
	if title == "" {
		title = "run"
	}
	out.printf(`<text x="10" y="20" font-size="14" font-weight="bold">%s — lock holds per key and client</text>`+"\n", esc(title))
	out.printf(`<text x="%d" y="20" text-anchor="end" font-size="14" font-weight="bold" fill="%s">%s</text>`+"\n",
		tlWidth-tlRight, verdictColor(v.verdict), esc(strings.ToUpper(string(v.verdict))))

	v.drawAxisGrid(out, l)
	v.drawFaults(out, l)
	v.drawLanes(out, l)
	v.drawWaits(out, l, m)
	v.drawHolds(out, l)
	v.drawPermits(out, l, m)
	v.drawMarks(out, l, m)
	v.drawAnomalies(out, l)
	v.drawLegend(out, l)
	out.printf("</svg>\n")
	if out.err != nil {
		return out.err
	}
	return out.w.Flush()
}

func (v *view) layout(m holdsModel) *timelineLayout {
	l := &timelineLayout{v: v, laneY: map[lane]float64{}, keyTop: map[string]float64{}, keyBottom: map[string]float64{}, permitsY: map[string]float64{}}
	// Fault labels go on rows above the lanes, the first row where the
	// previous label has ended.
	var rowEnd []float64
	for _, f := range v.faults {
		x := l.x(f.Start)
		width := 7 * float64(len(faultLabel(f)))
		row := -1
		for i, e := range rowEnd {
			if e < x {
				row = i
				break
			}
		}
		if row < 0 && len(rowEnd) < tlMaxFaultRw {
			row = len(rowEnd)
			rowEnd = append(rowEnd, 0)
		}
		if row < 0 {
			row = len(rowEnd) - 1
		}
		rowEnd[row] = x + width
		l.faultRow = append(l.faultRow, row)
	}
	l.faultRows = len(rowEnd)
	l.lanesTop = 34 + float64(l.faultRows*tlFaultRowH) + 4
	lanes := m.lanes
	if len(lanes) > tlMaxLanes {
		l.notes = append(l.notes, fmt.Sprintf("Only the first %d of %d lanes (key × client) are drawn.", tlMaxLanes, len(lanes)))
		lanes = lanes[:tlMaxLanes]
	}
	l.lanes = lanes
	y := l.lanesTop
	for i, ln := range lanes {
		if i == 0 || lanes[i-1].key != ln.key {
			l.keyTop[ln.key] = y
			y += tlKeyH
		}
		l.laneY[ln] = y
		y += tlLaneH
		l.keyBottom[ln.key] = y
		if m.permits > 0 && (i == len(lanes)-1 || lanes[i+1].key != ln.key) {
			l.permitsY[ln.key] = y + 4
			y += tlPermitsH + 8
		}
	}
	if len(lanes) == 0 {
		y += 30
		l.notes = append(l.notes, "No lock operations were recorded.")
	}
	l.bottom = y + 4
	l.prepareSegments(m)
	if r := l.v.run.Result; r != nil && len(r.Anomalies) > tlMaxAnomalies {
		l.notes = append(l.notes, fmt.Sprintf("Only the first %d of %d anomalies are marked.", tlMaxAnomalies, len(r.Anomalies)))
	}
	return l
}

func faultLabel(f checker.FaultWindow) string {
	return f.ID + " " + f.Kind
}

func (v *view) drawAxisGrid(out *svgOut, l *timelineLayout) {
	step := niceStep(float64(v.end) / 1e9 / 12)
	out.printf(`<g class="tl-axis">`)
	for i := 0; ; i++ {
		s := float64(i) * step
		ns := int64(math.Round(s * 1e9))
		if ns > v.end {
			break
		}
		x := l.x(ns)
		out.printf(`<line class="tl-grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, l.lanesTop, x, l.bottom)
		out.printf(`<line class="tl-ax" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, l.bottom, x, l.bottom+4)
		out.printf(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x, l.bottom+16, formatTick(s, step))
	}
	out.printf(`<line class="tl-ax" x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`, tlLabelW, l.bottom, tlLabelW+tlPlotW, l.bottom)
	out.printf(`<text x="%d" y="%.1f" text-anchor="middle">time since the run started (s)</text></g>`+"\n", tlLabelW+tlPlotW/2, l.bottom+32)
}

// niceStep rounds a raw step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func formatTick(s, step float64) string {
	prec := max(0, int(-math.Floor(math.Log10(step))))
	return fmt.Sprintf("%.*f", prec, s)
}

func (v *view) drawFaults(out *svgOut, l *timelineLayout) {
	for i, f := range v.faults {
		x := l.x(f.Start)
		wd := l.w(f.Start, f.Stop, 1.5)
		rowY := 34 + float64(l.faultRow[i]*tlFaultRowH)
		stop := "never stopped"
		if f.Healed {
			stop = "stopped at " + secs(f.Stop)
		}
		out.printf(`<a href="index.html#%s"><title>fault %s (%s): %s — started at %s, %s</title>`,
			faultAnchor(f.ID), esc(f.ID), esc(f.Kind), esc(f.Desc), secs(f.Start), stop)
		out.printf(`<rect class="tl-fault" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, x, rowY, wd, l.bottom-rowY)
		out.printf(`<text class="tl-flbl" x="%.1f" y="%.1f">%s</text></a>`+"\n", x+2, rowY+10, esc(faultLabel(f)))
	}
}

func (v *view) drawLanes(out *svgOut, l *timelineLayout) {
	for i, ln := range l.lanes {
		if i == 0 || l.lanes[i-1].key != ln.key {
			y := l.keyTop[ln.key]
			out.printf(`<text x="6" y="%.1f" font-weight="bold">key %s</text>`, y+13, esc(truncate(ln.key, 24)))
			out.printf(`<line class="tl-ax" x1="6" y1="%.1f" x2="%d" y2="%.1f" stroke-opacity=".4"/>`+"\n", y+0.5, tlLabelW+tlPlotW, y+0.5)
		}
		y := l.laneY[ln]
		label := fmt.Sprintf("client %d", ln.client)
		if ln.mode != "" {
			label += " · " + ln.mode
		}
		out.printf(`<text class="tl-lbl" x="18" y="%.1f">%s</text>`+"\n", y+10, esc(label))
	}
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
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

// anomalyColor by kind: red for double grants, the lock's own failure.
func anomalyColor(k checker.Kind) string {
	switch k {
	case checker.DoubleGrant, checker.NotLinearizable, checker.Unavailable,
		checker.WriterOverlap, checker.PermitsExceeded, checker.UnfairGrant, checker.LatchEarly, checker.LatchStuck:
		return "#e03131"
	case checker.TokenReuse, checker.TokenOrder:
		return "#ae3ec9"
	case checker.StaleWrite, checker.LostUpdate:
		return "#e8590c"
	}
	return "#f59f00"
}

// lanesOf are the lanes an anomaly concerns: its clients on its key.
func (l *timelineLayout) lanesOf(a checker.Anomaly) []lane {
	var out []lane
	for _, ln := range l.lanes {
		if a.Key != "" && ln.key != a.Key {
			continue
		}
		for _, c := range a.Clients {
			if ln.client == c {
				out = append(out, ln)
				break
			}
		}
	}
	return out
}

func (v *view) drawAnomalies(out *svgOut, l *timelineLayout) {
	if v.run.Result == nil {
		return
	}
	for i, a := range v.run.Result.Anomalies {
		if i >= tlMaxAnomalies {
			break
		}
		out.printf(`<a href="index.html#%s"><title>%s</title>`, anomalyAnchor(i), esc(string(a.Kind)+": "+a.Explanation))
		color := anomalyColor(a.Kind)
		switch a.Kind {
		case checker.DoubleGrant, checker.WriterOverlap, checker.PermitsExceeded:
			for _, ln := range l.lanesOf(a) {
				out.printf(`<rect class="tl-dg" x="%.1f" y="%.1f" width="%.1f" height="%d"/>`, l.x(a.From), l.laneY[ln], l.w(a.From, a.To, 2.5), tlLaneH)
			}
		case checker.Unavailable:
			if top, ok := l.keyTop[a.Key]; ok {
				out.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity=".08" stroke="%s" stroke-dasharray="4,2"/>`,
					l.x(a.From), top+tlKeyH, l.w(a.From, a.To, 2), l.keyBottom[a.Key]-top-tlKeyH, color, color)
			}
		default:
			for _, ln := range l.lanesOf(a) {
				y := l.laneY[ln]
				out.printf(`<rect class="tl-anom" x="%.1f" y="%.1f" width="%.1f" height="%d" stroke="%s" stroke-dasharray="3,2"/>`, l.x(a.From), y, l.w(a.From, a.To, 2), tlLaneH, color)
				if len(a.Ops) > 0 && len(a.Clients) > 0 && ln.client == a.Clients[0] {
					if op, ok := v.op(a.Ops[0]); ok {
						x := l.x(op.Time)
						out.printf(`<path d="M%.1f %.1f l-4 -6 h8 z" fill="%s"/>`, x, y+3, color)
					}
				}
			}
		}
		out.printf("</a>\n")
	}
	for i, a := range v.run.Result.Warnings {
		if i >= tlMaxAnomalies {
			break
		}
		for _, ln := range l.lanesOf(a) {
			if len(a.Clients) == 0 || ln.client != a.Clients[0] {
				continue
			}
			t := a.To
			if op, ok := v.op(firstOr(a.Ops, -1)); ok {
				t = op.Time
			}
			out.printf(`<path class="tl-warn" d="M%.1f %.1f l-3.5 -5 h7 z"><title>warning, %s: %s</title></path>`+"\n",
				l.x(t), l.laneY[ln]+3, esc(string(a.Kind)), esc(a.Explanation))
		}
	}
}

func firstOr(xs []int64, def int64) int64 {
	if len(xs) == 0 {
		return def
	}
	return xs[0]
}

func (v *view) drawLegend(out *svgOut, l *timelineLayout) {
	y := l.bottom + 44
	x := 10.0
	item := func(draw func(x, y float64), label string) {
		width := 30 + 6.2*float64(len(label))
		if x+width > tlWidth {
			x, y = 10, y+tlLegendRowH
		}
		draw(x, y)
		out.printf(`<text x="%.1f" y="%.1f">%s</text>`, x+22, y+10, esc(label))
		x += width
	}
	item(func(x, y float64) {
		out.printf(`<rect x="%.1f" y="%.1f" width="18" height="%d" fill="%s"/>`, x, y+1, tlBarH, clientColors[0])
	}, "held, lease valid")
	item(func(x, y float64) {
		out.printf(`<rect x="%.1f" y="%.1f" width="18" height="%d" fill="%s" fill-opacity=".35"/><rect class="tl-past" x="%.1f" y="%.1f" width="18" height="%d"/>`,
			x, y+1, tlBarH, clientColors[0], x, y+1, tlBarH)
	}, "held past validity")
	item(func(x, y float64) {
		out.printf(`<rect x="%.1f" y="%.1f" width="18" height="%d" fill="#e03131" fill-opacity=".55" stroke="#c92a2a"/>`, x, y, tlLaneH-2)
	}, "double grant (overlap)")
	item(func(x, y float64) {
		out.printf(`<rect class="tl-anom" x="%.1f" y="%.1f" width="18" height="%d" stroke="%s" stroke-dasharray="3,2"/>`, x, y, tlLaneH-2, anomalyColor(checker.NotLinearizable))
	}, "not linearizable (call no order fits)")
	item(func(x, y float64) {
		c := anomalyColor(checker.Unavailable)
		out.printf(`<rect x="%.1f" y="%.1f" width="18" height="%d" fill="%s" fill-opacity=".08" stroke="%s" stroke-dasharray="4,2"/>`, x, y, tlLaneH-2, c, c)
	}, "lock unavailable")
	item(func(x, y float64) {
		out.printf(`<rect class="tl-anom" x="%.1f" y="%.1f" width="18" height="%d" stroke="%s" stroke-dasharray="3,2"/>`, x, y, tlLaneH-2, anomalyColor(checker.StaleWrite))
	}, "stale write / lost update")
	item(func(x, y float64) {
		out.printf(`<rect class="tl-anom" x="%.1f" y="%.1f" width="18" height="%d" stroke="%s" stroke-dasharray="3,2"/>`, x, y, tlLaneH-2, anomalyColor(checker.TokenReuse))
	}, "token reuse / order")
	item(func(x, y float64) {
		out.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#212529"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#868e96" stroke-dasharray="2,1"/>`,
			x+6, y, x+6, y+12, x+12, y, x+12, y+12)
	}, "write accepted / rejected")
	item(func(x, y float64) {
		out.printf(`<circle cx="%.1f" cy="%.1f" r="2.5" fill="none" stroke="#f08c00"/>`, x+9, y+6)
	}, "unknown acquire")
	item(func(x, y float64) {
		out.printf(`<rect class="tl-fault" x="%.1f" y="%.1f" width="18" height="12"/>`, x, y)
	}, "fault active")
	cfg := v.run.Check
	if cfg.Shape == checker.ShapeReadWrite {
		item(func(x, y float64) {
			out.printf(`<rect x="%.1f" y="%.1f" width="18" height="%d" fill="%s"/>`, x, y+1, tlBarH, laneColor(lane{mode: history.ModeRead}))
		}, "read hold (a lane per mode)")
		item(func(x, y float64) {
			out.printf(`<rect class="tl-anom" x="%.1f" y="%.1f" width="18" height="%d" stroke="%s"/>`, x, y, tlLaneH-2, anomalyColor(checker.WriterOverlap))
		}, "writer overlap")
	}
	if cfg.Fair {
		item(func(x, y float64) {
			out.printf(`<rect x="%.1f" y="%.1f" width="18" height="3" fill="#adb5bd" stroke="#868e96" stroke-width=".5"/><text x="%.1f" y="%.1f" font-size="8">#n</text>`, x, y+8, x+1, y+7)
		}, "queued, n-th to enter (dashed: entry timed out)")
	}
	if cfg.Permits > 0 {
		item(func(x, y float64) {
			out.printf(`<polyline points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="none" stroke="#1c7ed6"/>`, x, y+10, x+6, y+10, x+6, y+3, x+18, y+3)
		}, fmt.Sprintf("permits held (dashed: the %d permits)", cfg.Permits))
	}
	if cfg.Shape == checker.ShapeLatch {
		item(func(x, y float64) {
			out.printf(`<rect x="%.1f" y="%.1f" width="18" height="%d" fill="#d3f9d8" stroke="#adb5bd"/>`, x, y+1, tlBarH)
		}, "waited on the latch and passed (yellow: gave up)")
		item(func(x, y float64) {
			out.printf(`<path d="M%.1f %.1f l-3 -6 h6 z" fill="#2b8a3e"/>`, x+9, y+10)
		}, "count-down")
	}
	for i, n := range l.notes {
		out.printf(`<text x="10" y="%.1f" fill="#862e9c">%s</text>`+"\n", l.bottom+44+2*tlLegendRowH+12+float64(14*i), esc(n))
	}
}

// anomalyAnchor is the id of the i-th anomaly (0-based) on the index.
func anomalyAnchor(i int) string { return fmt.Sprintf("anomaly-%d", i+1) }

// opAnchor is the id of an op's row on the index.
func opAnchor(index int64) string { return fmt.Sprintf("op-%d", index) }

// faultAnchor is the id of a fault's row on the index.
func faultAnchor(id string) string { return "fault-" + safeName(id) }

func verdictColor(v checker.Verdict) string {
	switch v {
	case checker.Valid:
		return "#2b8a3e"
	case checker.Invalid:
		return "#c92a2a"
	}
	return "#e67700"
}
