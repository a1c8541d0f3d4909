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

// Stats names the latency statistics a results.csv has per latency
// (column ttft_STAT_ms and so on).
var statNames = []string{"mean", "p50", "p90", "p95", "p99"}

func checkStat(stat string) (string, error) {
	if stat == "" {
		return "p95", nil
	}
	if !slices.Contains(statNames, stat) {
		return "", fmt.Errorf("plots: latency statistic %q: want one of %s", stat, strings.Join(statNames, ", "))
	}
	return stat, nil
}

// BatchLatencyOptions configure BatchLatency.
type BatchLatencyOptions struct {
	X, Group string  // axes (see Results.Layout); X defaults to batch.max_num_seqs
	SLO      SLO     // TTFT and TPOT objectives a sweet spot must meet; 0: not checked
	Stat     string  // latency statistic: mean, p50, p90, p95 (default) or p99
	Taper    float64 // taper threshold as a fraction of the first step's gain (default 0.1)
}

// BatchLatencyNumbers are the numbers behind the batch–latency figure.
type BatchLatencyNumbers struct {
	File, X, Stat string
	SLO           SLO
	Taper         float64
	// Offered is the load the points were offered (OfferedLoad): when it
	// is Fixed, past a knee throughput is the offered load and the cost
	// panel ranks the groups' prices per hour, not their capacity.
	Offered OfferedLoad
	Curves  []BatchLatencyCurve
}

// BatchLatencyCurve is one GPU's or policy's trade-off curve, in increasing
// x (usually max_num_seqs).
type BatchLatencyCurve struct {
	Label      string
	X          []float64
	Seeds      []int
	Throughput []float64 // output tokens/s sustained over the arrival window (throughputColumn)
	TTFT, TPOT []float64 // ms, the chosen statistic
	Cost       []float64 // $ per million output tokens
	// Saturated[i]: point i's queue kept growing (in most seeds) while
	// requests arrived; false when the file has no saturated column.
	Saturated []bool
	// RelGain[i] is the throughput gained per unit of x from point i−1 to
	// i, divided by the same for the first step (point 0 to 1); RelGain[0]
	// is NaN, and every entry is NaN when the first step gains nothing.
	RelGain []float64
	// Knee is the first point beyond which the next step's RelGain falls
	// below Taper (the last point when none does; 0 when the first step
	// gains nothing or there is one point).
	Knee int
	// SweetSpot is the chosen point (see BatchLatency); -1 when no point
	// meets the SLO.
	SweetSpot int
	Dropped   int // points left out for a missing (NaN) x or throughput
}

// meets reports whether point i is within the SLO's TTFT and TPOT (an
// unset objective always holds; a NaN latency never does).
func (c *BatchLatencyCurve) meets(i int, slo SLO) bool {
	return (slo.TTFTms <= 0 || c.TTFT[i] <= slo.TTFTms) && (slo.TPOTms <= 0 || c.TPOT[i] <= slo.TPOTms)
}

// IsBatchLimit reports whether a sweep axis is a batch limit that the
// batch–latency plot can run along: its last dotted part is max_num_seqs or
// max_num_batched_tokens (batch.max_num_seqs, disagg.decode_batch.max_num_seqs, …).
func IsBatchLimit(axis string) bool {
	leaf := axis[strings.LastIndexByte(axis, '.')+1:]
	return leaf == "max_num_seqs" || leaf == "max_num_batched_tokens"
}

// Skipped is the number of points left out for a NaN or infinite x or
// throughput, over every curve.
func (n *BatchLatencyNumbers) Skipped() int {
	return sumCurves(n.Curves, func(c BatchLatencyCurve) int { return c.Dropped })
}

func (n *BatchLatencyNumbers) points() int {
	return sumCurves(n.Curves, func(c BatchLatencyCurve) int { return len(c.X) })
}

// sweetSpot computes RelGain, Knee and SweetSpot.
//
// The marginal gain of step i is g_i = (T_i − T_{i−1}) / (x_i − x_{i−1}),
// throughput per unit of x; per unit of x so that a doubling grid does not
// halve it by construction. The knee is the first point k whose next step
// has tapered, g_{k+1} < taper·g_1: past it more batch buys little
// throughput but adds latency. The sweet spot is the knee when it meets the
// SLO; else the largest point below the knee that meets it (less batch,
// lower TPOT); else the smallest point above it that meets it (a small
// batch queues, so TTFT may meet the SLO only past the knee); else none.
func (c *BatchLatencyCurve) sweetSpot(slo SLO, taper float64) {
	n := len(c.X)
	c.RelGain = make([]float64, n)
	for i := range c.RelGain {
		c.RelGain[i] = math.NaN()
	}
	c.Knee = n - 1
	if n >= 2 {
		gain := func(i int) float64 { return (c.Throughput[i] - c.Throughput[i-1]) / (c.X[i] - c.X[i-1]) }
		g1 := gain(1)
		if g1 > 0 {
			for i := 1; i < n; i++ {
				c.RelGain[i] = gain(i) / g1
			}
			for k := 0; k+1 < n; k++ {
				if c.RelGain[k+1] < taper {
					c.Knee = k
					break
				}
			}
		} else {
			c.Knee = 0
		}
	}
	c.SweetSpot = -1
	switch {
	case n == 0:
	case c.meets(c.Knee, slo):
		c.SweetSpot = c.Knee
	default:
		for i := c.Knee - 1; i >= 0 && c.SweetSpot < 0; i-- {
			if c.meets(i, slo) {
				c.SweetSpot = i
			}
		}
		for i := c.Knee + 1; i < n && c.SweetSpot < 0; i++ {
			if c.meets(i, slo) {
				c.SweetSpot = i
			}
		}
	}
}

// String is a plain-text table of the numbers (the golden form).
func (n *BatchLatencyNumbers) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch-latency %s: x %s, latency %s, %s, taper %.2f\n", n.File, n.X, n.Stat, n.SLO, n.Taper)
	if o := n.Offered; o.Known {
		fmt.Fprintf(&b, "offered %.4f–%.4f req/s, %.2f output tok/s on average, fixed %v\n", o.MinRate, o.MaxRate, o.Output, o.Fixed)
	}
	for _, c := range n.Curves {
		fmt.Fprintf(&b, "curve %q: knee x=%s, sweet spot %s, dropped %d\n", c.Label, atIndex(c.X, c.Knee), atIndex(c.X, c.SweetSpot), c.Dropped)
		writeSaturated(&b, "x", c.X, c.Saturated)
		fmt.Fprintf(&b, "  %10s %5s %12s %12s %10s %10s %9s\n", "x", "seeds", "out_tok/s", "ttft_ms", "tpot_ms", "$/M_out", "rel_gain")
		for i := range c.X {
			fmt.Fprintf(&b, "  %10g %5d %12.2f %12.2f %10.3f %10.4f %9.4f\n", c.X[i], c.Seeds[i], c.Throughput[i], c.TTFT[i], c.TPOT[i], c.Cost[i], c.RelGain[i])
		}
	}
	return b.String()
}

func atIndex(xs []float64, i int) string {
	if i < 0 || i >= len(xs) {
		return "none"
	}
	return fmt.Sprintf("%g", xs[i])
}

// BatchLatency draws the batch–latency trade-off of a sweep over the max
// batch size: four panels, one curve per group (GPU, policy, …), points in
// increasing x labelled with x:
//
//   - output throughput against TTFT, and against TPOT (the chosen
//     statistic, log scale when it spans more than 100×), with the SLO as a
//     vertical line;
//   - cost per million output tokens against x;
//   - the marginal throughput gain per unit of x relative to the first
//     step, with the taper threshold.
//
// Each curve's sweet spot (BatchLatencyCurve.sweetSpot) is ringed. Metrics
// are the mean over replicate seeds. Points with a NaN or infinite x or
// throughput are left out (counted in Dropped; an error when none is left);
// a point with a NaN or infinite latency is left out of that panel only
// (and never meets an objective set on it). The x axis must be a batch limit (IsBatchLimit):
// along a rate or any other axis a "sweet spot" of batch size means
// nothing, so such a sweep is an error pointing to the goodput plot.
func BatchLatency(res *Results, o BatchLatencyOptions) (*Figure, *BatchLatencyNumbers, error) {
	stat, err := checkStat(o.Stat)
	if err != nil {
		return nil, nil, err
	}
	if err := o.SLO.validate(); err != nil {
		return nil, nil, fmt.Errorf("plots: %v", err)
	}
	taper := o.Taper
	if taper == 0 {
		taper = 0.1
	}
	if !(taper > 0 && taper < 1) {
		return nil, nil, fmt.Errorf("plots: taper %v: want a fraction in (0, 1)", o.Taper)
	}
	ttftCol, tpotCol := "ttft_"+stat+"_ms", "tpot_"+stat+"_ms"
	thrCol := throughputColumn(res)
	if err := res.need(thrCol, ttftCol, tpotCol, "cost_per_m_output_tokens"); err != nil {
		return nil, nil, err
	}
	l, err := res.Layout(o.X, o.Group, "batch.max_num_seqs")
	if err != nil {
		return nil, nil, err
	}
	if !IsBatchLimit(l.X) {
		return nil, nil, fmt.Errorf("plots: %s: batch-latency: x axis %q is not a batch limit (max_num_seqs, max_num_batched_tokens): the knee and sweet spot are a batch size, and would be meaningless along %s; sweep batch.max_num_seqs, name it with --x, or plot a rate sweep with 'plot goodput'",
			res.File, l.X, l.X)
	}
	curves, err := res.Curves(l)
	if err != nil {
		return nil, nil, err
	}
	nums := &BatchLatencyNumbers{File: res.File, X: l.X, Stat: stat, SLO: o.SLO, Taper: taper, Offered: offeredLoad(res)}
	for _, cv := range curves {
		c := BatchLatencyCurve{Label: cv.Label}
		for i, p := range cv.Points {
			t := p.Metrics[thrCol]
			if !finite(t) || !finite(cv.X[i]) {
				c.Dropped++
				continue
			}
			c.X = append(c.X, cv.X[i])
			c.Seeds = append(c.Seeds, p.Seeds)
			c.Throughput = append(c.Throughput, t)
			c.TTFT = append(c.TTFT, p.Metrics[ttftCol])
			c.TPOT = append(c.TPOT, p.Metrics[tpotCol])
			c.Cost = append(c.Cost, p.Metrics["cost_per_m_output_tokens"])
			c.Saturated = append(c.Saturated, saturated(p))
		}
		c.sweetSpot(o.SLO, taper)
		nums.Curves = append(nums.Curves, c)
	}
	if len(res.Rows) == 0 {
		return nil, nil, fmt.Errorf("plots: %s: no rows", res.File)
	}
	if nums.points() == 0 {
		return nil, nil, fmt.Errorf("plots: %s: batch-latency: every point has a NaN or infinite output_tok_per_s or %s: nothing to draw", res.File, l.X)
	}

	xName := shortName(l.X)
	var allTTFT, allTPOT, allX, allCost []float64
	for _, c := range nums.Curves {
		allTTFT = append(allTTFT, c.TTFT...)
		allTPOT = append(allTPOT, c.TPOT...)
		allX = append(allX, c.X...)
		allCost = append(allCost, c.Cost...)
	}
	pTTFT := newPlot("Output throughput vs "+stat+" TTFT", stat+" TTFT (ms)", "output throughput (tokens/s)")
	pTPOT := newPlot("Output throughput vs "+stat+" TPOT", stat+" TPOT (ms)", "output throughput (tokens/s)")
	pCost := newPlot("Cost per million output tokens vs "+xName, l.X, "$ per million output tokens")
	pGain := newPlot("Throughput gain per unit of "+xName+", relative to the first step", l.X+" (end of step)", "marginal gain (% of first step's)")
	logTTFT := useLog(&pTTFT.X, allTTFT, 100)
	logTPOT := useLog(&pTPOT.X, allTPOT, 100)
	for _, p := range []*plot.Plot{pTTFT, pTPOT} {
		p.Y.Tick.Marker = linearTicks{}
		p.Y.Min = 0 // throughput from zero
	}
	logX := useLog(&pCost.X, allX, 15)
	if logX {
		pCost.X.Tick.Marker = valueTicks(uniqueSorted(allX))
	}
	useLog(&pCost.Y, allCost, 20)
	pGain.X.Scale, pGain.X.Tick.Marker = pCost.X.Scale, pCost.X.Tick.Marker
	pGain.Y.Tick.Marker = linearTicks{}
	if logTTFT {
		pTTFT.X.Label.Text += ", log scale"
	}
	if logTPOT {
		pTPOT.X.Label.Text += ", log scale"
	}
	if logX {
		pCost.X.Label.Text += " (log scale)"
		pGain.X.Label.Text += ", log scale"
	}

	var spots [3]plotter.XYs // sweet spots on the TTFT, TPOT and cost panels
	var sats [2]plotter.XYs  // saturated points on the TTFT and TPOT panels
	lbl := map[*plot.Plot]*pointLabels{pTTFT: {}, pTPOT: {}}
	for ci, c := range nums.Curves {
		col := seriesColor(ci)
		label := c.Label
		if label == "" {
			label = "all points"
		}
		xText := make([]string, len(c.X))
		for i, x := range c.X {
			xText[i] = tickLabel(x)
		}
		add := func(p *plot.Plot, xs, ys []float64, logx, logy, withLabels bool) error {
			xys := make(plotter.XYs, len(xs))
			for i := range xs {
				xys[i] = plotter.XY{X: xs[i], Y: ys[i]}
			}
			keep, kept := finiteXYs(xys, logx, logy)
			if len(keep) == 0 {
				return nil
			}
			line, pts, err := plotter.NewLinePoints(keep)
			if err != nil {
				return err
			}
			line.Color, line.Width = col, vg.Points(2)
			pts.Color, pts.Shape, pts.Radius = col, seriesGlyph(ci), vg.Points(3.5)
			p.Add(line, pts)
			p.Legend.Add(label, line, pts)
			if withLabels {
				txt := make([]string, len(kept))
				for i, k := range kept {
					txt[i] = xText[k]
				}
				lbl[p].add(keep, txt, col)
			}
			return nil
		}
		if err := add(pTTFT, c.TTFT, c.Throughput, logTTFT, false, true); err != nil {
			return nil, nil, err
		}
		if err := add(pTPOT, c.TPOT, c.Throughput, logTPOT, false, true); err != nil {
			return nil, nil, err
		}
		if err := add(pCost, c.X, c.Cost, logX, isLog(&pCost.Y), false); err != nil {
			return nil, nil, err
		}
		gx, gy := []float64{}, []float64{}
		for i := 1; i < len(c.X); i++ {
			gx, gy = append(gx, c.X[i]), append(gy, 100*c.RelGain[i])
		}
		if err := add(pGain, gx, gy, logX, false, false); err != nil {
			return nil, nil, err
		}
		for i, v := range c.Saturated {
			if v {
				sats[0] = append(sats[0], plotter.XY{X: c.TTFT[i], Y: c.Throughput[i]})
				sats[1] = append(sats[1], plotter.XY{X: c.TPOT[i], Y: c.Throughput[i]})
			}
		}
		if s := c.SweetSpot; s >= 0 {
			spots[0] = append(spots[0], plotter.XY{X: c.TTFT[s], Y: c.Throughput[s]})
			spots[1] = append(spots[1], plotter.XY{X: c.TPOT[s], Y: c.Throughput[s]})
			spots[2] = append(spots[2], plotter.XY{X: c.X[s], Y: c.Cost[s]})
		}
	}
	for i, p := range []*plot.Plot{pTTFT, pTPOT, pCost} {
		keep, _ := finiteXYs(spots[i], isLog(&p.X), isLog(&p.Y))
		if len(keep) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(keep)
		if err != nil {
			return nil, nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(9), Shape: draw.RingGlyph{}}
		p.Add(sc)
		p.Legend.Add("sweet spot", sc)
	}
	for i, p := range []*plot.Plot{pTTFT, pTPOT} {
		sc, err := saturatedMarks(sats[i], isLog(&p.X), false)
		if err != nil {
			return nil, nil, err
		}
		if sc != nil {
			p.Add(sc)
			p.Legend.Add(saturatedLegend, sc)
		}
	}
	fixed := nums.Offered.note()
	if fixed != "" {
		for _, p := range []*plot.Plot{pTTFT, pTPOT} {
			h := hline{Y: nums.Offered.Output, LineStyle: draw.LineStyle{Color: grey, Width: vg.Points(1.5), Dashes: dashes[2]}}
			p.Add(h)
			p.Legend.Add("offered load (the same for every point)", h)
		}
		pCost.Title.Text += " (one offered load)"
	}
	if o.SLO.TTFTms > 0 {
		v := vline{X: o.SLO.TTFTms, LineStyle: draw.LineStyle{Color: sloRed, Width: vg.Points(1.5), Dashes: dashes[1]}}
		pTTFT.Add(v)
		pTTFT.Legend.Add("TTFT SLO "+num(o.SLO.TTFTms)+" ms", v)
	}
	if o.SLO.TPOTms > 0 {
		v := vline{X: o.SLO.TPOTms, LineStyle: draw.LineStyle{Color: sloRed, Width: vg.Points(1.5), Dashes: dashes[1]}}
		pTPOT.Add(v)
		pTPOT.Legend.Add("TPOT SLO "+num(o.SLO.TPOTms)+" ms", v)
	}
	pTTFT.Add(lbl[pTTFT])
	pTPOT.Add(lbl[pTPOT])
	th := hline{Y: 100 * taper, LineStyle: draw.LineStyle{Color: grey, Width: vg.Points(1.5), Dashes: dashes[1]}}
	pGain.Add(th)
	pGain.Legend.Add(fmt.Sprintf("taper threshold %s %%", num(100*taper)), th)
	for _, p := range []*plot.Plot{pTTFT, pTPOT, pCost, pGain} {
		headroom(p, 0.3)
	}

	seeds := seedNote(res)
	title := fmt.Sprintf("Batch–latency trade-off (%s): one curve per %s, points labelled with %s; %s", res.File, curveWhat(l), l.X, seeds)
	caption := fmt.Sprintf("Sweet spot: the first %s whose next step gains less than %s %% of the first step's throughput per unit of %s (the knee), if it meets the SLO (%s on %s latency);\n"+
		"else the largest SLO-meeting point below the knee, else the smallest above it; none when no point meets the SLO. Throughput is output tokens/s; cost is $/hour over the tokens/s sustained in the arrival window.",
		xName, num(100*taper), xName, o.SLO, stat)
	if fixed != "" {
		title += "; " + fixed
		caption += fmt.Sprintf("\nHeld fixed: the offered load (%s). Past its knee each %s completes what is offered, so throughput and cost there compare %s prices per hour, not capacity:\n"+
			"to compare capacity, sweep the rate (plot goodput: the highest rate each sustains within the SLO).", fixed, curveWhat(l), curveWhat(l))
	}
	fig := &Figure{
		Title:   title,
		Caption: caption,
		Panels:  [][]*plot.Plot{{pTTFT, pTPOT}, {pCost, pGain}},
	}
	return fig, nums, nil
}

func isLog(a *plot.Axis) bool {
	_, ok := a.Scale.(plot.LogScale)
	return ok
}

func uniqueSorted(vs []float64) []float64 {
	out := slices.Clone(vs)
	out = slices.DeleteFunc(out, func(v float64) bool { return math.IsNaN(v) })
	slices.Sort(out)
	return slices.Compact(out)
}

// curveWhat names what a curve stands for: the group axes, or "sweep".
func curveWhat(l Layout) string {
	if len(l.Group) == 0 {
		return "sweep"
	}
	return strings.Join(l.Group, " × ")
}

// seedNote says how many replicate seeds each point averages.
func seedNote(res *Results) string {
	cs := res.Configs()
	lo, hi := math.MaxInt, 0
	for _, c := range cs {
		lo, hi = min(lo, c.Seeds), max(hi, c.Seeds)
	}
	switch {
	case len(cs) == 0:
		return "no points"
	case hi == 1:
		return "one seed per point"
	case lo == hi:
		return fmt.Sprintf("each point the mean of %d seeds", hi)
	}
	return fmt.Sprintf("each point the mean of %d–%d seeds", lo, hi)
}
