package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/brewer"
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
	// of the configurations' TTFT) and the objective the cheapest
	// configuration must meet (ProviderFit).
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
	Throughput float64 // output tokens/s
	Cost       float64 // $ per million output tokens
	Quadrant   string  // Perception only
}

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

func quadrant(ttft, thr, ttftLine, thrLine float64) string {
	fast, capacity := ttft <= ttftLine, thr >= thrLine
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
		fmt.Fprintf(b, "  %-60q seeds %d  ttft %12.2f  out_tok/s %9.2f  $/M %8.4f", p.Config, p.Seeds, p.TTFT, p.Throughput, p.Cost)
		if quadrants {
			fmt.Fprintf(b, "  %s", p.Quadrant)
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
	if err := res.need(ttftCol, "output_tok_per_s", "cost_per_m_output_tokens"); err != nil {
		return nil, l, "", 0, err
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
			TTFT: c.Metrics[ttftCol], Throughput: c.Metrics["output_tok_per_s"], Cost: c.Metrics["cost_per_m_output_tokens"],
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
		pts[i].Quadrant = quadrant(pts[i].TTFT, pts[i].Throughput, nums.TTFTLine, nums.ThroughputLine)
	}
	nums.Points = pts

	what := ""
	if l.X != "" {
		what = "; points labelled with " + l.X
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
	p.Add(
		quadrantNote{left: true, top: true, text: FastHasCapacity, lineY: nums.ThroughputLine},
		quadrantNote{left: true, top: false, text: FastLowCapacity, lineY: nums.ThroughputLine},
		quadrantNote{left: false, top: true, text: SlowHasCapacity, lineY: nums.ThroughputLine},
		quadrantNote{left: false, top: false, text: SlowLowCapacity, lineY: nums.ThroughputLine},
	)
	p.Legend.Left, p.Legend.Top = false, true
	return p, nums, nil
}

// quadrantNote writes a quadrant's name: the lower ones in the bottom
// corners, the upper left one in the top-left corner, the upper right one
// just above the throughput line (the top-right corner holds the legend).
type quadrantNote struct {
	left, top bool
	text      string
	lineY     float64
}

func (q quadrantNote) Plot(c draw.Canvas, p *plot.Plot) {
	sty := textStyle(labelSize)
	sty.Color = color.Gray{Y: 150}
	pad := vg.Points(6)
	pt := vg.Point{X: c.Min.X + pad, Y: c.Min.Y + pad}
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	if !q.left {
		pt.X, sty.XAlign = c.Max.X-pad, draw.XRight
	}
	switch {
	case q.top && q.left:
		pt.Y, sty.YAlign = c.Max.Y-pad, draw.YTop
	case q.top:
		_, y := p.Transforms(&c)
		pt.Y = min(y(q.lineY)+pad, c.Max.Y-sty.Height(q.text))
	}
	c.FillText(sty, pt, q.text)
}

// ProviderFitNumbers are the numbers behind the provider-fit matrix.
type ProviderFitNumbers struct {
	File, Stat       string
	SLO              SLO
	TargetThroughput float64
	Points           []MatrixPoint
	// Cheapest is the index in Points of the lowest cost per million output
	// tokens among the configurations meeting the TTFT SLO and the target
	// throughput (each when set; ties: the first); -1 when none does.
	Cheapest  int
	CostEdges []float64 // the colour bins' edges, $ per million output tokens
	Dropped   int
}

// String is a plain-text table of the numbers (the golden form).
func (n *ProviderFitNumbers) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider-fit %s: %s TTFT, %s, target throughput %.4f tok/s, dropped %d\n", n.File, n.Stat, n.SLO, n.TargetThroughput, n.Dropped)
	if n.Cheapest >= 0 {
		fmt.Fprintf(&b, "cheapest meeting both: %q at $%.4f per million output tokens\n", n.Points[n.Cheapest].Config, n.Points[n.Cheapest].Cost)
	} else {
		b.WriteString("cheapest meeting both: none\n")
	}
	fmt.Fprintf(&b, "cost bin edges:")
	for _, e := range n.CostEdges {
		fmt.Fprintf(&b, " %.4f", e)
	}
	b.WriteByte('\n')
	writePoints(&b, n.Points, false)
	return b.String()
}

// costColors are the five darkest of ColorBrewer's 7-class YlOrRd
// (sequential, colour-blind safe; gonum palette/brewer): light = cheap,
// dark = expensive.
func costColors() []color.Color {
	p, err := brewer.GetPalette(brewer.TypeSequential, "YlOrRd", 7)
	if err != nil {
		panic(err) // a built-in palette: cannot fail
	}
	return p.Colors()[2:]
}

// costEdges splits [lo, hi] into n bins: log-spaced when hi/lo > 4 (costs
// across batch sizes span orders of magnitude), else equal.
func costEdges(lo, hi float64, n int) []float64 {
	edges := make([]float64, n+1)
	logBins := lo > 0 && hi/lo > 4
	for i := range edges {
		f := float64(i) / float64(n)
		if logBins {
			edges[i] = lo * math.Pow(hi/lo, f)
		} else {
			edges[i] = lo + f*(hi-lo)
		}
	}
	edges[n] = hi
	return edges
}

func costBin(edges []float64, v float64) int {
	for i := 1; i < len(edges)-1; i++ {
		if v < edges[i] {
			return i - 1
		}
	}
	return len(edges) - 2
}

// ProviderFit draws the provider-fit matrix: every configuration (the mean
// over its seeds) at (output throughput, TTFT), its glyph shape telling the
// group (GPU, provider, policy), its colour the cost per million output
// tokens in five bins, and its label the x value and the cost. The TTFT SLO
// and the target throughput are drawn when set; the cheapest configuration
// meeting both is ringed. TTFT is on a log scale when it spans more than
// 100×. A NaN cost is drawn grey.
func ProviderFit(res *Results, o MatrixOptions) (*plot.Plot, *ProviderFitNumbers, error) {
	pts, l, stat, dropped, err := matrixPoints(res, o)
	if err != nil {
		return nil, nil, err
	}
	nums := &ProviderFitNumbers{File: res.File, Stat: stat, SLO: o.SLO, TargetThroughput: o.TargetThroughput, Points: pts, Cheapest: -1, Dropped: dropped}
	lo, hi := math.Inf(1), math.Inf(-1)
	var ttfts []float64
	for i, p := range pts {
		ttfts = append(ttfts, p.TTFT)
		if finite(p.Cost) {
			lo, hi = math.Min(lo, p.Cost), math.Max(hi, p.Cost)
		}
		ok := (o.SLO.TTFTms <= 0 || p.TTFT <= o.SLO.TTFTms) && p.Throughput >= o.TargetThroughput && finite(p.Cost)
		if ok && (nums.Cheapest < 0 || p.Cost < pts[nums.Cheapest].Cost) {
			nums.Cheapest = i
		}
	}
	colors := costColors()
	if lo <= hi {
		nums.CostEdges = costEdges(lo, hi, len(colors))
	}

	what := ""
	if l.X != "" {
		what = ", labels " + shortName(l.X) + ": $ per M"
	}
	p := newPlot(fmt.Sprintf("Provider fit (%s, %s): %s TTFT vs output throughput; colour = $ per million output tokens%s", res.File, seedNote(res), stat, what),
		"output throughput (tokens/s)", stat+" time to first token (ms)")
	if o.SLO.TTFTms > 0 {
		ttfts = append(ttfts, o.SLO.TTFTms)
	}
	logY := useLog(&p.Y, ttfts, 100)
	if logY {
		p.Y.Label.Text += ", log scale"
	}
	p.X.Tick.Marker = linearTicks{}
	p.X.Min = 0
	gidx, groups := groupIndex(pts)
	var xys plotter.XYs
	var txt []string
	var styles []draw.GlyphStyle
	for _, pt := range pts {
		xys = append(xys, plotter.XY{X: pt.Throughput, Y: pt.TTFT})
		t := "$" + num(pt.Cost)
		if pt.XValue != "" {
			_, v, _ := strings.Cut(pt.XValue, "=")
			t = v + ": " + t
		}
		txt = append(txt, t)
		st := draw.GlyphStyle{Color: color.Gray{Y: 160}, Radius: vg.Points(6), Shape: filledGlyph(gidx[pt.Group])}
		if finite(pt.Cost) && nums.CostEdges != nil {
			st.Color = colors[costBin(nums.CostEdges, pt.Cost)]
		}
		styles = append(styles, st)
	}
	keep, kept := finiteXYs(xys, false, logY)
	if len(keep) > 0 {
		sc, err := plotter.NewScatter(keep)
		if err != nil {
			return nil, nil, err
		}
		sc.GlyphStyleFunc = func(i int) draw.GlyphStyle { return styles[kept[i]] }
		p.Add(sc)
		kt := make([]string, len(kept))
		for i, k := range kept {
			kt[i] = txt[k]
		}
		lbl := &pointLabels{}
		lbl.add(keep, kt, color.Gray{Y: 60})
		p.Add(lbl)
	}
	if len(groups) > 1 || groups[0] != "" {
		for gi, g := range groups {
			p.Legend.Add(g, glyphThumb{draw.GlyphStyle{Color: color.Gray{Y: 90}, Radius: vg.Points(5), Shape: filledGlyph(gi)}})
		}
	}
	for i := 0; i+1 < len(nums.CostEdges); i++ {
		p.Legend.Add(fmt.Sprintf("$%s–%s per M tokens", num(nums.CostEdges[i]), num(nums.CostEdges[i+1])),
			glyphThumb{draw.GlyphStyle{Color: colors[i], Radius: vg.Points(5), Shape: draw.CircleGlyph{}}})
	}
	if o.SLO.TTFTms > 0 {
		h := hline{Y: o.SLO.TTFTms, LineStyle: draw.LineStyle{Color: sloRed, Width: vg.Points(1.5), Dashes: dashes[1]}}
		p.Add(h)
		p.Legend.Add("TTFT SLO "+num(o.SLO.TTFTms)+" ms", h)
	}
	if o.TargetThroughput > 0 {
		v := vline{X: o.TargetThroughput, LineStyle: draw.LineStyle{Color: grey, Width: vg.Points(1.5), Dashes: dashes[1]}}
		p.Add(v)
		p.Legend.Add("target throughput "+num(o.TargetThroughput)+" tok/s", v)
	}
	if c := nums.Cheapest; c >= 0 && (!logY || pts[c].TTFT > 0) {
		sc, err := plotter.NewScatter(plotter.XYs{{X: pts[c].Throughput, Y: pts[c].TTFT}})
		if err != nil {
			return nil, nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(11), Shape: draw.RingGlyph{}}
		p.Add(sc)
		p.Legend.Add("cheapest meeting the SLO: $"+num(pts[c].Cost), sc)
	}
	headroom(p, 0.3)
	p.X.Max += 0.08 * (p.X.Max - p.X.Min) // room for the rightmost labels
	p.Legend.Left, p.Legend.Top = false, true
	return p, nums, nil
}

// filledGlyph is group i's glyph shape, filled so the colour shows: seven
// filled shapes, then outlined ones.
func filledGlyph(i int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{
		draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
		polyGlyph{sides: 4, turn: 0}, polyGlyph{sides: 3, turn: -math.Pi / 2},
		polyGlyph{sides: 5, turn: math.Pi / 2}, polyGlyph{sides: 6, turn: 0},
		draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
	}
	return shapes[i%len(shapes)]
}

// polyGlyph is a filled regular polygon of the glyph's radius, its first
// vertex at angle turn (radians from the x axis): 4 sides at 0 is a
// diamond, 3 at −π/2 a downward triangle.
type polyGlyph struct {
	sides int
	turn  float64
}

func (g polyGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetColor(sty.Color)
	var p vg.Path
	for k := range g.sides {
		a := g.turn + 2*math.Pi*float64(k)/float64(g.sides)
		v := vg.Point{X: pt.X + sty.Radius*vg.Length(math.Cos(a)), Y: pt.Y + sty.Radius*vg.Length(math.Sin(a))}
		if k == 0 {
			p.Move(v)
		} else {
			p.Line(v)
		}
	}
	p.Close()
	c.Fill(p)
}

// glyphThumb is a legend thumbnail of one glyph.
type glyphThumb struct{ draw.GlyphStyle }

func (g glyphThumb) Thumbnail(c *draw.Canvas) { c.DrawGlyph(g.GlyphStyle, c.Center()) }

// Skipped is the number of configurations left out for a NaN or infinite
// TTFT or throughput.
func (n *PerceptionNumbers) Skipped() int { return n.Dropped }

// Skipped is the number of configurations left out for a NaN or infinite
// TTFT or throughput.
func (n *ProviderFitNumbers) Skipped() int { return n.Dropped }
