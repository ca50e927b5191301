package reports

import (
	"fmt"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
)

// drawLegend explains every mark the timeline may carry (those of the
// run's shape), then the notes on what was left out.
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
	if cfg.Shape == lock.KindReadWrite {
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
	if cfg.Shape == lock.KindLatch {
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
