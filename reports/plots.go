package reports

import (
	"fmt"
	"image/color"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
)

const (
	plotWidth  = 12 * vg.Inch
	plotHeight = 4 * vg.Inch
	// maxPlotPoints per outcome: beyond it every n-th point is drawn (an
	// SVG of 100k circles is unreadable and slow anyway).
	maxPlotPoints = 5000
	// throughputBin is the bin of the throughput plot, widened so that a
	// long run has at most maxBins bins.
	throughputBin = 250 * time.Millisecond
	maxBins       = 2000
)

var (
	colorOK   = color.NRGBA{R: 0x2b, G: 0x8a, B: 0x3e, A: 0xff}
	colorFail = color.NRGBA{R: 0x86, G: 0x8e, B: 0x96, A: 0xff}
	colorInfo = color.NRGBA{R: 0xe6, G: 0x77, B: 0x00, A: 0xff}
	colorBand = color.NRGBA{R: 0x42, G: 0x63, B: 0xeb, A: 0x26}
	colorFLbl = color.NRGBA{R: 0x36, G: 0x4f, B: 0xc7, A: 0xff}
	// sans matches the timeline and the page.
	sans = font.Font{Typeface: "Liberation", Variant: "Sans"}
)

// call is an invoke with its completion, for the plots.
type call struct {
	f          string
	typ        history.Type
	start, end int64
}

// calls pairs client invokes with their completions (the oldest pending
// invoke of the same process, function and key); invokes that never
// completed are left out.
func calls(ops []history.Op) []call {
	type pk struct {
		proc history.Process
		f    string
		key  string
		own  string
	}
	pending := map[pk][]int64{}
	var out []call
	for _, o := range ops {
		if o.IsNemesis() || !history.IsCall(o.F) {
			continue
		}
		k := pk{o.Process, o.F, o.Key, ""}
		if o.F == history.Extend {
			k.own = o.Value
		}
		if o.Type == history.Invoke {
			pending[k] = append(pending[k], o.Time)
			continue
		}
		q := pending[k]
		if len(q) == 0 {
			continue
		}
		out = append(out, call{o.F, o.Type, q[0], o.Time})
		pending[k] = q[1:]
	}
	return out
}

// faultBands shades the fault windows of a plot, labelled with their IDs.
type faultBands struct{ faults []checker.FaultWindow }

func (b faultBands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := draw.TextStyle{Color: colorFLbl, Font: font.From(sans, 8), Handler: plot.DefaultTextHandler, YAlign: draw.YTop}
	for _, f := range b.faults {
		x0, x1 := trX(history.Seconds(f.Start)), trX(history.Seconds(f.Stop))
		x0, x1 = max(x0, c.Min.X), min(max(x1, x0+1), c.Max.X)
		if x0 >= c.Max.X {
			continue
		}
		c.FillPolygon(colorBand, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		c.FillText(sty, vg.Point{X: x0 + 2, Y: c.Max.Y - 2}, f.ID+" "+f.Kind)
	}
}

func (b faultBands) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(colorBand, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// newTimePlot makes a plot over the whole run with the faults shaded.
func (v *view) newTimePlot(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time since the run started (s)"
	p.Y.Label.Text = ylabel
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		*f = font.From(sans, f.Size)
	}
	p.X.Min, p.X.Max = 0, history.Seconds(v.end)
	p.X.Tick.Marker = secondTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	if len(v.faults) > 0 {
		bands := faultBands{v.faults}
		p.Add(bands)
		p.Legend.Add("fault", bands)
	}
	return p
}

// secondTicks labels the time axis every 1, 2 or 5 × 10^k seconds, as
// the timeline does.
type secondTicks struct{}

func (secondTicks) Ticks(lo, hi float64) []plot.Tick {
	step := niceStep((hi - lo) / 12)
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi && len(ticks) < 100; i++ {
		ticks = append(ticks, plot.Tick{Value: i * step, Label: formatTick(i*step, step)})
	}
	return ticks
}

// sample keeps at most maxPlotPoints points, evenly spread, and says how.
func sample(pts plotter.XYs) (plotter.XYs, int) {
	if len(pts) <= maxPlotPoints {
		return pts, 1
	}
	stride := (len(pts) + maxPlotPoints - 1) / maxPlotPoints
	out := make(plotter.XYs, 0, maxPlotPoints)
	for i := 0; i < len(pts); i += stride {
		out = append(out, pts[i])
	}
	return out, stride
}

// writeLatencyPlot draws each completed acquire's latency at its
// completion time (latency.svg), on a log scale: a fault turns 50 µs
// acquires into timeouts of seconds.
func (v *view) writeLatencyPlot(path string) error {
	byType := map[history.Type]plotter.XYs{}
	const minMs = 0.001
	yMin, yMax := math.Inf(1), math.Inf(-1)
	for _, c := range calls(v.run.Ops) {
		if c.f != history.Acquire {
			continue
		}
		ms := max(float64(c.end-c.start)/1e6, minMs)
		yMin, yMax = min(yMin, ms), max(yMax, ms)
		byType[c.typ] = append(byType[c.typ], plotter.XY{X: history.Seconds(c.end), Y: ms})
	}
	title := "Acquire latency"
	p := v.newTimePlot(title, "latency (ms, log scale)")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	if math.IsInf(yMin, 0) {
		yMin, yMax = 0.01, 1000
		p.Title.Text += ": no acquire completed"
	}
	// Whole decades keep the log ticks readable.
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(yMin)))
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(yMax*1.01)))
	series := []struct {
		typ   history.Type
		name  string
		color color.Color
		shape draw.GlyphDrawer
	}{
		{history.OK, "ok", colorOK, draw.CircleGlyph{}},
		{history.Fail, "fail", colorFail, draw.BoxGlyph{}},
		{history.Info, "unknown (info)", colorInfo, draw.CrossGlyph{}},
	}
	for _, s := range series {
		pts, stride := sample(byType[s.typ])
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: s.color, Radius: vg.Points(1.8), Shape: s.shape}
		p.Add(sc)
		label := fmt.Sprintf("%s (%d)", s.name, len(byType[s.typ]))
		if stride > 1 {
			label += fmt.Sprintf(", every %dth shown", stride)
		}
		p.Legend.Add(label, sc)
	}
	return p.Save(plotWidth, plotHeight, path)
}

// writeThroughputPlot draws completed client operations per second by
// outcome (throughput.svg).
func (v *view) writeThroughputPlot(path string) error {
	bin := int64(throughputBin)
	if v.end/bin > maxBins {
		bin = (v.end + maxBins - 1) / maxBins
	}
	n := int(v.end/bin) + 1
	counts := map[history.Type][]float64{history.OK: make([]float64, n), history.Fail: make([]float64, n), history.Info: make([]float64, n)}
	total := 0
	for _, c := range calls(v.run.Ops) {
		if cs, ok := counts[c.typ]; ok {
			cs[min(max(int(c.end/bin), 0), n-1)]++
			total++
		}
	}
	title := fmt.Sprintf("Throughput: completed client operations per second (%s bins)", dur(time.Duration(bin)))
	if total == 0 {
		title += ": none completed"
	}
	p := v.newTimePlot(title, "operations/s")
	p.Y.Min = 0
	yMax := 1.0
	perSec := 1e9 / float64(bin)
	for _, s := range []struct {
		typ   history.Type
		name  string
		color color.Color
	}{{history.OK, "ok", colorOK}, {history.Fail, "fail", colorFail}, {history.Info, "unknown (info)", colorInfo}} {
		pts := make(plotter.XYs, n+1)
		sum := 0.0
		for i := range n {
			pts[i] = plotter.XY{X: history.Seconds(int64(i) * bin), Y: counts[s.typ][i] * perSec}
			yMax = max(yMax, pts[i].Y)
			sum += counts[s.typ][i]
		}
		pts[n] = plotter.XY{X: history.Seconds(int64(n) * bin), Y: pts[n-1].Y}
		if sum == 0 && s.typ != history.OK {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.StepStyle = plotter.PostStep
		line.Color = s.color
		line.Width = vg.Points(1.2)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s (%d)", s.name, int(sum)), line)
	}
	p.Y.Max = yMax * 1.3 // room for the legend
	return p.Save(plotWidth, plotHeight, path)
}
