package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// MatrixOptions configure Perception and ProviderFit.
type MatrixOptions struct {
	// X and Group name axes (see Results.Layout): points are labelled with
	// their X value and told apart by the group axes' values. When no x can
	// be chosen, the last axis labels the points.
	X, Group string
	// SLO.TTFTms is the TTFT quadrant line (Perception; default: the median
	// of the configurations' TTFT). Every objective set (TTFT, TPOT, E2E) is
	// checked on the Stat statistic of each configuration: a configuration
	// missing any of them feels slow (Perception) and cannot be the
	// cheapest meeting the SLO (ProviderFit).
	SLO SLO
	// TargetThroughput in output tokens/s is the throughput quadrant line
	// (Perception; default: the median of the configurations' throughput)
	// and a floor for the cheapest configuration (ProviderFit; 0: none).
	TargetThroughput float64
	// Stat is the TTFT statistic: mean, p50, p90, p95 (default) or p99.
	Stat string
}

// MatrixPoint is one configuration of a sweep, averaged over its seeds.
type MatrixPoint struct {
	Config     string // every axis: "gpu=h100, batch.max_num_seqs=64"
	Group      string // the group axes' values
	XValue     string // the x axis's value
	Seeds      int
	TTFT       float64 // ms, the chosen statistic
	TPOT, E2E  float64 // ms, the chosen statistic (NaN when the file lacks the column)
	Throughput float64 // output tokens/s sustained over the arrival window (throughputColumn)
	Cost       float64 // $ per million output tokens
	// Misses names the objectives the configuration misses on the chosen
	// statistic ("p95 TPOT 49.5 ms > 30 ms"; "" when it meets every one).
	// A NaN statistic of a set objective misses it.
	Misses   []string
	Quadrant string // Perception only
	// Saturated: the configuration's queue kept growing (in most seeds)
	// while requests arrived.
	Saturated bool
}

// MeetsSLO reports whether the configuration meets every set objective.
func (p MatrixPoint) MeetsSLO() bool { return len(p.Misses) == 0 }

// PerceptionNumbers are the numbers behind the perception–capacity matrix.
type PerceptionNumbers struct {
	File, Stat           string
	TTFTLine             float64 // ms
	ThroughputLine       float64 // output tokens/s
	TTFTFromMedian       bool    // no TTFT SLO given: the line is the median
	ThroughputFromMedian bool    // no target given: the line is the median
	Points               []MatrixPoint
	Dropped              int // configurations with a NaN TTFT or throughput
}

// Quadrants of the perception–capacity matrix.
const (
	FastHasCapacity = "feels fast, has capacity"
	FastLowCapacity = "feels fast, lacks capacity"
	SlowHasCapacity = "feels slow, has capacity"
	SlowLowCapacity = "feels slow, lacks capacity"
)

// quadrant places a point: fast when its TTFT is at most the line and it
// misses no other objective (others: the objectives besides TTFT it misses).
func quadrant(ttft, thr, ttftLine, thrLine float64, others int) string {
	fast, capacity := ttft <= ttftLine && others == 0, thr >= thrLine
	switch {
	case fast && capacity:
		return FastHasCapacity
	case fast:
		return FastLowCapacity
	case capacity:
		return SlowHasCapacity
	}
	return SlowLowCapacity
}

// String is a plain-text table of the numbers (the golden form).
func (n *PerceptionNumbers) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "perception %s: %s TTFT line %.4f ms (median: %v), throughput line %.4f tok/s (median: %v), dropped %d\n",
		n.File, n.Stat, n.TTFTLine, n.TTFTFromMedian, n.ThroughputLine, n.ThroughputFromMedian, n.Dropped)
	writePoints(&b, n.Points, true)
	return b.String()
}

func writePoints(b *strings.Builder, pts []MatrixPoint, quadrants bool) {
	for _, p := range pts {
		fmt.Fprintf(b, "  %-60q seeds %d  ttft %12.2f  tpot %8.2f  out_tok/s %9.2f  $/M %8.4f", p.Config, p.Seeds, p.TTFT, p.TPOT, p.Throughput, p.Cost)
		if quadrants {
			fmt.Fprintf(b, "  %s", p.Quadrant)
		}
		if len(p.Misses) > 0 {
			fmt.Fprintf(b, "  misses: %s", strings.Join(p.Misses, "; "))
		}
		b.WriteByte('\n')
	}
}

// matrixPoints averages the configurations and reads TTFT, throughput and
// cost; configurations with a NaN TTFT or throughput are dropped.
func matrixPoints(res *Results, o MatrixOptions) (pts []MatrixPoint, l Layout, stat string, dropped int, err error) {
	stat, err = checkStat(o.Stat)
	if err != nil {
		return nil, l, "", 0, err
	}
	if err := o.SLO.validate(); err != nil {
		return nil, l, "", 0, fmt.Errorf("plots: %v", err)
	}
	if !(o.TargetThroughput >= 0) || math.IsInf(o.TargetThroughput, 0) {
		return nil, l, "", 0, fmt.Errorf("plots: target throughput %v: want a finite number >= 0", o.TargetThroughput)
	}
	ttftCol := "ttft_" + stat + "_ms"
	thrCol := throughputColumn(res)
	cols := []string{ttftCol, thrCol, "cost_per_m_output_tokens"}
	if o.SLO.TPOTms > 0 {
		cols = append(cols, "tpot_"+stat+"_ms")
	}
	if o.SLO.E2Ems > 0 {
		cols = append(cols, "e2e_"+stat+"_ms")
	}
	if err := res.need(cols...); err != nil {
		return nil, l, "", 0, err
	}
	metric := func(c Config, col string) float64 {
		if v, ok := c.Metrics[col]; ok {
			return v
		}
		return math.NaN()
	}
	if len(res.Rows) == 0 {
		return nil, l, "", 0, fmt.Errorf("plots: %s: no rows", res.File)
	}
	if len(res.Axes) > 0 {
		l, err = res.Layout(o.X, o.Group, "")
		if err != nil && o.X == "" {
			last := res.Axes[len(res.Axes)-1]
			l, err = res.Layout(last, o.Group, "")
		}
		if err != nil {
			return nil, l, "", 0, err
		}
	}
	for _, c := range res.Configs() {
		parts := make([]string, len(res.Axes))
		for i, a := range res.Axes {
			parts[i] = a + "=" + c.Axis[a]
		}
		p := MatrixPoint{
			Config: strings.Join(parts, ", "), Group: groupLabel(c.Axis, l.Group), Seeds: c.Seeds,
			TTFT: c.Metrics[ttftCol], TPOT: metric(c, "tpot_"+stat+"_ms"), E2E: metric(c, "e2e_"+stat+"_ms"),
			Throughput: c.Metrics[thrCol], Cost: c.Metrics["cost_per_m_output_tokens"], Saturated: saturated(c),
		}
		for _, obj := range []struct {
			name    string
			v, want float64
		}{{"TTFT", p.TTFT, o.SLO.TTFTms}, {"TPOT", p.TPOT, o.SLO.TPOTms}, {"E2E", p.E2E, o.SLO.E2Ems}} {
			if obj.want > 0 && !(obj.v <= obj.want) {
				p.Misses = append(p.Misses, fmt.Sprintf("%s %s %s ms > %s ms", stat, obj.name, num(obj.v), num(obj.want)))
			}
		}
		if l.X != "" {
			p.XValue = shortName(l.X) + "=" + c.Axis[l.X]
		}
		if !finite(p.TTFT) || !finite(p.Throughput) {
			dropped++
			continue
		}
		pts = append(pts, p)
	}
	if len(pts) == 0 {
		return nil, l, "", dropped, fmt.Errorf("plots: %s: every configuration has a NaN %s or output_tok_per_s", res.File, ttftCol)
	}
	return pts, l, stat, dropped, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// groupIndex numbers the distinct groups in order of appearance.
func groupIndex(pts []MatrixPoint) (map[string]int, []string) {
	idx := map[string]int{}
	var names []string
	for _, p := range pts {
		if _, ok := idx[p.Group]; !ok {
			idx[p.Group] = len(names)
			names = append(names, p.Group)
		}
	}
	return idx, names
}

// Perception draws the perception–capacity matrix: every configuration of
// a sweep (the mean over its seeds) as a point at (TTFT, output
// throughput), coloured by group and labelled with its x value, with
// quadrant lines at the TTFT SLO and the target throughput (each the median
// of the points when not given) and the quadrants named. Points on a line
// count as meeting it (TTFT ≤ line, throughput ≥ line). TTFT is on a log
// scale when it spans more than 100×.
func Perception(res *Results, o MatrixOptions) (*plot.Plot, *PerceptionNumbers, error) {
	pts, l, stat, dropped, err := matrixPoints(res, o)
	if err != nil {
		return nil, nil, err
	}
	nums := &PerceptionNumbers{File: res.File, Stat: stat, TTFTLine: o.SLO.TTFTms, ThroughputLine: o.TargetThroughput, Dropped: dropped}
	var ttfts, thrs []float64
	for _, p := range pts {
		ttfts, thrs = append(ttfts, p.TTFT), append(thrs, p.Throughput)
	}
	if nums.TTFTLine == 0 {
		nums.TTFTLine, nums.TTFTFromMedian = median(ttfts), true
	}
	if nums.ThroughputLine == 0 {
		nums.ThroughputLine, nums.ThroughputFromMedian = median(thrs), true
	}
	for i := range pts {
		others := 0
		for _, m := range pts[i].Misses {
			if !strings.Contains(m, " TTFT ") {
				others++
			}
		}
		pts[i].Quadrant = quadrant(pts[i].TTFT, pts[i].Throughput, nums.TTFTLine, nums.ThroughputLine, others)
	}
	nums.Points = pts

	what := ""
	if l.X != "" {
		what = "; points labelled with " + l.X
	}
	if f := offeredLoad(res).note(); f != "" {
		what += "; " + f
	}
	p := newPlot(fmt.Sprintf("Perception–capacity matrix (%s, %s): %s TTFT × output throughput%s", res.File, seedNote(res), stat, what),
		stat+" time to first token (ms)", "output throughput (tokens/s)")
	logX := useLog(&p.X, append(ttfts, nums.TTFTLine), 100)
	if logX {
		p.X.Label.Text += ", log scale"
	}
	p.Y.Tick.Marker = linearTicks{}
	p.Y.Min = 0
	_, groups := groupIndex(pts)
	lbl := &pointLabels{}
	for gi, g := range groups {
		var xys plotter.XYs
		var txt []string
		for _, pt := range pts {
			if pt.Group == g {
				xys = append(xys, plotter.XY{X: pt.TTFT, Y: pt.Throughput})
				_, v, _ := strings.Cut(pt.XValue, "=")
				txt = append(txt, v)
			}
		}
		keep, kept := finiteXYs(xys, logX, false)
		if len(keep) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(keep)
		if err != nil {
			return nil, nil, err
		}
		sc.Color, sc.Shape, sc.Radius = seriesColor(gi), seriesGlyph(gi), vg.Points(5)
		p.Add(sc)
		name := g
		if name == "" {
			name = "configurations"
		}
		p.Legend.Add(name, sc)
		if l.X != "" {
			kt := make([]string, len(kept))
			for i, k := range kept {
				kt[i] = txt[k]
			}
			lbl.add(keep, kt, seriesColor(gi))
		}
	}
	p.Add(lbl)
	ttftName := "TTFT SLO"
	if nums.TTFTFromMedian {
		ttftName = "median TTFT (no SLO given)"
	}
	thrName := "target throughput"
	if nums.ThroughputFromMedian {
		thrName = "median throughput (no target given)"
	}
	v := vline{X: nums.TTFTLine, LineStyle: draw.LineStyle{Color: sloRed, Width: vg.Points(1.5), Dashes: dashes[1]}}
	h := hline{Y: nums.ThroughputLine, LineStyle: draw.LineStyle{Color: grey, Width: vg.Points(1.5), Dashes: dashes[1]}}
	p.Add(v, h)
	p.Legend.Add(fmt.Sprintf("%s %s ms", ttftName, num(nums.TTFTLine)), v)
	p.Legend.Add(fmt.Sprintf("%s %s tok/s", thrName, num(nums.ThroughputLine)), h)
	headroom(p, 0.2)
	miss, what, err := missMarks(pts, func(pt MatrixPoint) plotter.XY { return plotter.XY{X: pt.TTFT, Y: pt.Throughput} }, logX, false)
	if err != nil {
		return nil, nil, err
	}
	if miss != nil {
		p.Add(miss)
		p.Legend.Add(fmt.Sprintf("misses the %s %s SLO (feels slow)", stat, what), miss)
	}
	if err := addSaturated(p, pts, func(pt MatrixPoint) plotter.XY { return plotter.XY{X: pt.TTFT, Y: pt.Throughput} }, logX, false); err != nil {
		return nil, nil, err
	}
	for _, q := range []struct {
		left, top bool
		text      string
	}{{true, true, FastHasCapacity}, {true, false, FastLowCapacity}, {false, true, SlowHasCapacity}, {false, false, SlowLowCapacity}} {
		p.Add(quadrantNote{left: q.left, top: q.top, text: q.text, lineX: nums.TTFTLine, lineY: nums.ThroughputLine})
	}
	p.Legend.Left, p.Legend.Top = false, true
	return p, nums, nil
}

// quadrantNote writes a quadrant's name in its quadrant, next to where the
// quadrant lines cross (the TTFT line at lineX, the throughput line at
// lineY): fast (left of the TTFT line) names end just left of it, slow ones
// start just right of it; upper names sit just above the throughput line,
// lower ones just below it. A name that would leave the data area is moved
// back inside (a line off the axis range puts its names at the edge).
type quadrantNote struct {
	left, top    bool
	text         string
	lineX, lineY float64
}

func (q quadrantNote) Plot(c draw.Canvas, p *plot.Plot) {
	sty := textStyle(labelSize)
	sty.Color = color.Gray{Y: 130}
	pad := vg.Points(6)
	x, y := p.Transforms(&c)
	cx := min(max(x(q.lineX), c.Min.X), c.Max.X)
	cy := min(max(y(q.lineY), c.Min.Y), c.Max.Y)
	text := q.text
	room := cx - c.Min.X - 2*pad // beside the TTFT line, in this quadrant
	if !q.left {
		room = c.Max.X - cx - 2*pad
	}
	if sty.Width(text) > room {
		text = strings.Replace(text, ", ", ",\n", 1) // two lines fit a narrow quadrant
	}
	w, h := sty.Width(text), sty.Height(text)
	left := cx - pad - w // the text's left edge
	if !q.left {
		left = cx + pad
	}
	left = min(max(left, c.Min.X+pad), c.Max.X-pad-w)
	bottom := cy + pad
	if !q.top {
		bottom = cy - pad - h
	}
	bottom = min(max(bottom, c.Min.Y+pad), c.Max.Y-pad-h)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	if !q.left {
		sty.XAlign = draw.XLeft
	} else {
		// Right-aligned against the line, each line of a split name.
		sty.XAlign = draw.XRight
		left += w
	}
	c.FillText(sty, vg.Point{X: left, Y: bottom}, text)
}

// missMarks crosses out the points that miss an objective the plot's axes
// do not show (TPOT, E2E), so that a point drawn on the good side of the
// TTFT line does not pass for one meeting the SLO. It returns nil when no
// point misses one.
func missMarks(pts []MatrixPoint, xy func(MatrixPoint) plotter.XY, logX, logY bool) (*plotter.Scatter, string, error) {
	var xys plotter.XYs
	what := map[string]bool{}
	for _, pt := range pts {
		miss := false
		for _, m := range pt.Misses {
			if !strings.Contains(m, " TTFT ") {
				miss = true
				_, rest, _ := strings.Cut(m, " ")
				name, _, _ := strings.Cut(rest, " ")
				what[name] = true
			}
		}
		if miss {
			xys = append(xys, xy(pt))
		}
	}
	keep, _ := finiteXYs(xys, logX, logY)
	if len(keep) == 0 {
		return nil, "", nil
	}
	sc, err := plotter.NewScatter(keep)
	if err != nil {
		return nil, "", err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(10), Shape: draw.CrossGlyph{}}
	var names []string
	for _, n := range []string{"TPOT", "E2E"} {
		if what[n] {
			names = append(names, n)
		}
	}
	return sc, strings.Join(names, "/"), nil
}

// Skipped is the number of configurations left out for a NaN or infinite
// TTFT or throughput.
func (n *PerceptionNumbers) Skipped() int { return n.Dropped }

// addSaturated squares the saturated configurations (saturatedMarks).
func addSaturated(p *plot.Plot, pts []MatrixPoint, xy func(MatrixPoint) plotter.XY, logX, logY bool) error {
	var xys plotter.XYs
	for _, pt := range pts {
		if pt.Saturated {
			xys = append(xys, xy(pt))
		}
	}
	sc, err := saturatedMarks(xys, logX, logY)
	if sc != nil {
		p.Add(sc)
		p.Legend.Add(saturatedLegend, sc)
	}
	return err
}
