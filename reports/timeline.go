package reports

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/tumbler-dev/tumbler/checker"
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
