package plots

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/brewer"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ProviderFitNumbers are the numbers behind the provider-fit matrix.
type ProviderFitNumbers struct {
	File, Stat       string
	SLO              SLO
	TargetThroughput float64
	Points           []MatrixPoint
	// Cheapest is the index in Points of the lowest cost per million output
	// tokens among the configurations meeting every SLO objective set (on
	// the statistic) and the target throughput (ties: the first); -1 when
	// none does.
	Cheapest  int
	CostEdges []float64 // the colour bins' edges, $ per million output tokens
	Dropped   int
}

// String is a plain-text table of the numbers (the golden form).
func (n *ProviderFitNumbers) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "provider-fit %s: %s TTFT, %s, target throughput %.4f tok/s, dropped %d\n", n.File, n.Stat, n.SLO, n.TargetThroughput, n.Dropped)
	if n.Cheapest >= 0 {
		fmt.Fprintf(&b, "cheapest meeting every SLO and the target: %q at $%.4f per million output tokens\n", n.Points[n.Cheapest].Config, n.Points[n.Cheapest].Cost)
	} else {
		b.WriteString("cheapest meeting every SLO and the target: none\n")
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
		ok := p.MeetsSLO() && p.Throughput >= o.TargetThroughput && finite(p.Cost)
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
	title := fmt.Sprintf("Provider fit (%s, %s): %s TTFT vs output throughput; colour = $ per million output tokens%s", res.File, seedNote(res), stat, what)
	if f := offeredLoad(res).note(); f != "" {
		// Said in the figure: at one load, every configuration that keeps
		// up completes the same tokens, so its cost ranks prices per hour.
		title += fmt.Sprintf("\nHeld fixed: %s, so where a %s keeps up its cost per token ranks its price per hour, not its capacity", f, curveWhat(l))
	}
	p := newPlot(title, "output throughput (tokens/s)", stat+" time to first token (ms)")
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
	miss, what, err := missMarks(pts, func(pt MatrixPoint) plotter.XY { return plotter.XY{X: pt.Throughput, Y: pt.TTFT} }, false, logY)
	if err != nil {
		return nil, nil, err
	}
	if miss != nil {
		p.Add(miss)
		p.Legend.Add(fmt.Sprintf("misses the %s %s SLO", stat, what), miss)
	}
	if err := addSaturated(p, pts, func(pt MatrixPoint) plotter.XY { return plotter.XY{X: pt.Throughput, Y: pt.TTFT} }, false, logY); err != nil {
		return nil, nil, err
	}
	if c := nums.Cheapest; c >= 0 && (!logY || pts[c].TTFT > 0) {
		sc, err := plotter.NewScatter(plotter.XYs{{X: pts[c].Throughput, Y: pts[c].TTFT}})
		if err != nil {
			return nil, nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(11), Shape: draw.RingGlyph{}}
		p.Add(sc)
		p.Legend.Add("cheapest meeting every SLO: $"+num(pts[c].Cost), sc)
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
func (n *ProviderFitNumbers) Skipped() int { return n.Dropped }
