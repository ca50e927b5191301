package reports

import (
	"github.com/tumbler-dev/tumbler/checker"
)

// The checkers' anomalies and warnings on the timeline, each a link to
// its entry on the index.

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
