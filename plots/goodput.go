package plots

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// GoodputOptions configure Goodput.
type GoodputOptions struct {
	X, Group string  // axes (see Results.Layout); X defaults to workload.rate
	Target   float64 // SLO attainment the max-goodput rate must reach (default 0.9, DistServe's)
}

// GoodputNumbers are the numbers behind the goodput figure.
type GoodputNumbers struct {
	File, X string
	Target  float64
	Curves  []GoodputCurve
}

// GoodputCurve is one group's goodput against request rate, in increasing
// rate; every value is the mean over replicate seeds.
type GoodputCurve struct {
	Label      string
	Rate       []float64 // offered request rate (req/s), the x axis
	Seeds      []int
	Goodput    []float64 // requests meeting every SLO per second (goodput_req_per_s)
	Throughput []float64 // completed requests per second (request_throughput)
	Attainment []float64 // fraction of requests meeting every SLO (slo_attainment)
	// MaxRate is the max-goodput rate (see maxGoodputRate); NaN when the
	// attainment is below the target at the lowest rate.
	MaxRate float64
	// Censored is true when the attainment never falls below the target:
	// MaxRate is then the highest rate swept, a lower bound.
	Censored bool
	// Best is the index of the highest swept rate at or below MaxRate
	// (attainment ≥ target); -1 when none. Cost is the $ per million output
	// tokens there (cost_per_m_output_tokens, over the tokens sustained in
	// the arrival window): the GPU's or deployment's cost per token at the
	// load it sustains within the SLO, the comparison a fixed load cannot
	// give. NaN when the file has no cost column.
	Best int
	Cost []float64
	// Saturated[i]: point i's queue kept growing while requests arrived.
	Saturated []bool
	Dropped   int // points left out for a NaN or infinite rate, goodput, throughput or attainment
}

// Skipped is the number of points left out, over every curve.
func (n *GoodputNumbers) Skipped() int {
	return sumCurves(n.Curves, func(c GoodputCurve) int { return c.Dropped })
}

func (n *GoodputNumbers) points() int {
	return sumCurves(n.Curves, func(c GoodputCurve) int { return len(c.Rate) })
}

// maxGoodputRate finds the highest rate at which the attainment still
// reaches target, DistServe's max goodput rate, on the swept grid: walking
// up the rates, at the first rate r_i whose attainment a_i falls below
// target it interpolates linearly between (r_{i−1}, a_{i−1}) and
// (r_i, a_i): r* = r_{i−1} + (a_{i−1} − target)/(a_{i−1} − a_i)·(r_i − r_{i−1}).
// A later recovery above the target (noise) is not counted: the first
// crossing is the conservative answer. When a_0 < target there is none
// (NaN); when no rate falls below, it is the last rate, censored.
func (c *GoodputCurve) maxGoodputRate(target float64) {
	c.MaxRate, c.Censored, c.Best = math.NaN(), false, -1
	n := len(c.Rate)
	if n == 0 || c.Attainment[0] < target {
		return
	}
	for i := 1; i < n; i++ {
		if a0, a1 := c.Attainment[i-1], c.Attainment[i]; a1 < target {
			c.MaxRate = c.Rate[i-1] + (a0-target)/(a0-a1)*(c.Rate[i]-c.Rate[i-1])
			c.Best = i - 1
			return
		}
	}
	c.MaxRate, c.Censored, c.Best = c.Rate[n-1], true, n-1
}

// String is a plain-text table of the numbers (the golden form).
func (n *GoodputNumbers) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "goodput %s: x %s, target attainment %.3f\n", n.File, n.X, n.Target)
	for _, c := range n.Curves {
		censored := ""
		if c.Censored {
			censored = " (censored: attainment never fell below the target)"
		}
		fmt.Fprintf(&b, "curve %q: max goodput rate %.4f req/s%s, dropped %d\n", c.Label, c.MaxRate, censored, c.Dropped)
		if c.Best >= 0 && finite(c.Cost[c.Best]) {
			fmt.Fprintf(&b, "  within the target at %g req/s: $%.4f per M output tokens\n", c.Rate[c.Best], c.Cost[c.Best])
		}
		writeSaturated(&b, "rate", c.Rate, c.Saturated)
		fmt.Fprintf(&b, "  %10s %5s %12s %12s %10s\n", "rate", "seeds", "goodput", "throughput", "attain")
		for i := range c.Rate {
			fmt.Fprintf(&b, "  %10g %5d %12.4f %12.4f %10.4f\n", c.Rate[i], c.Seeds[i], c.Goodput[i], c.Throughput[i], c.Attainment[i])
		}
	}
	return b.String()
}

// Goodput draws goodput against request rate for a sweep over the rate:
// above, goodput (solid) and raw request throughput (dashed) in req/s, one
// colour per group, with the offered load as a grey diagonal; below, the
// SLO attainment in % with the target as a line. Each curve's max-goodput
// rate is a dotted vertical line in its colour on both panels. Values are
// the mean over replicate seeds; points with a NaN or infinite rate,
// goodput, throughput or attainment are left out (Dropped) before the
// max-goodput rate is found, and a sweep with none left is an error.
func Goodput(res *Results, o GoodputOptions) (*Figure, *GoodputNumbers, error) {
	target := o.Target
	if target == 0 {
		target = 0.9
	}
	if !(target > 0 && target <= 1) {
		return nil, nil, fmt.Errorf("plots: target attainment %v: want a fraction in (0, 1]", o.Target)
	}
	if err := res.need("goodput_req_per_s", "request_throughput", "slo_attainment"); err != nil {
		return nil, nil, err
	}
	if len(res.Rows) == 0 {
		return nil, nil, fmt.Errorf("plots: %s: no rows", res.File)
	}
	l, err := res.Layout(o.X, o.Group, "workload.rate")
	if err != nil {
		return nil, nil, err
	}
	curves, err := res.Curves(l)
	if err != nil {
		return nil, nil, err
	}
	nums := &GoodputNumbers{File: res.File, X: l.X, Target: target}
	for _, cv := range curves {
		c := GoodputCurve{Label: cv.Label}
		for i, p := range cv.Points {
			a, g, t := p.Metrics["slo_attainment"], p.Metrics["goodput_req_per_s"], p.Metrics["request_throughput"]
			if !finite(a) || !finite(g) || !finite(t) || !finite(cv.X[i]) {
				c.Dropped++
				continue
			}
			c.Rate = append(c.Rate, cv.X[i])
			c.Seeds = append(c.Seeds, p.Seeds)
			c.Goodput = append(c.Goodput, g)
			c.Throughput = append(c.Throughput, t)
			c.Attainment = append(c.Attainment, a)
			cost := math.NaN()
			if v, ok := p.Metrics["cost_per_m_output_tokens"]; ok {
				cost = v
			}
			c.Cost = append(c.Cost, cost)
			c.Saturated = append(c.Saturated, saturated(p))
		}
		c.maxGoodputRate(target)
		nums.Curves = append(nums.Curves, c)
	}
	if nums.points() == 0 {
		return nil, nil, fmt.Errorf("plots: %s: goodput: every point has a NaN or infinite goodput_req_per_s, request_throughput, slo_attainment or %s: nothing to draw", res.File, l.X)
	}

	xLabel := l.X
	if l.X == "workload.rate" {
		xLabel = "offered request rate (req/s)"
	}
	top := newPlot("Goodput and raw throughput vs "+shortName(l.X), xLabel, "requests per second")
	bot := newPlot("SLO attainment vs "+shortName(l.X), xLabel, "requests meeting every SLO (%)")
	top.Y.Min, bot.Y.Min, bot.Y.Max = 0, 0, 100
	top.Legend.Left = true
	bot.Legend.Left = false
	// Legends: above, one entry per curve (its goodput line) and the line
	// styles; below, each curve's max-goodput rate and the target.
	styleKey := func(name string, dash []vg.Length) {
		l, _ := plotter.NewLine(plotter.XYs{})
		l.Color, l.Width, l.Dashes = grey, vg.Points(2), dash
		top.Legend.Add(name, l)
	}
	fracTop, fracBot := legendRoom(len(nums.Curves)+3), legendRoom(len(nums.Curves)+1)
	var maxRate float64
	var sats plotter.XYs
	for ci, c := range nums.Curves {
		for i, v := range c.Saturated {
			if v {
				sats = append(sats, plotter.XY{X: c.Rate[i], Y: c.Goodput[i]})
			}
		}
		col := seriesColor(ci)
		label := c.Label
		if label != "" {
			label += ": "
		}
		series := []struct {
			name  string
			ys    []float64
			p     *plot.Plot
			scale float64
			dash  []vg.Length
		}{
			{"goodput", c.Goodput, top, 1, nil},
			{"throughput", c.Throughput, top, 1, dashes[1]},
			{"attainment", c.Attainment, bot, 100, nil},
		}
		for _, s := range series {
			xys := make(plotter.XYs, len(c.Rate))
			for i := range c.Rate {
				xys[i] = plotter.XY{X: c.Rate[i], Y: s.scale * s.ys[i]}
			}
			keep, _ := finiteXYs(xys, false, false)
			if len(keep) == 0 {
				continue
			}
			line, pts, err := plotter.NewLinePoints(keep)
			if err != nil {
				return nil, nil, err
			}
			line.Color, line.Width, line.Dashes = col, vg.Points(2), s.dash
			pts.Color, pts.Shape, pts.Radius = col, seriesGlyph(ci), vg.Points(3.5)
			s.p.Add(line, pts)
			if s.name == "goodput" && c.Label != "" {
				top.Legend.Add(c.Label, line, pts)
			}
			maxRate = math.Max(maxRate, c.Rate[len(c.Rate)-1])
		}
		if math.IsNaN(c.MaxRate) {
			bot.Legend.Add(fmt.Sprintf("%sno max goodput rate (below target at every rate)", label))
			continue
		}
		style := draw.LineStyle{Color: col, Width: vg.Points(2), Dashes: dashes[2]}
		text := fmt.Sprintf("%smax goodput rate %s req/s", label, num(c.MaxRate))
		if c.Censored {
			text = fmt.Sprintf("%smax goodput rate ≥ %s req/s (never below target)", label, num(c.MaxRate))
		}
		if c.Best >= 0 && finite(c.Cost[c.Best]) {
			text += fmt.Sprintf("; $%s/M output tokens at %s req/s", num(c.Cost[c.Best]), num(c.Rate[c.Best]))
		}
		top.Add(vline{X: c.MaxRate, LineStyle: style, Top: 1 - fracTop})
		v := vline{X: c.MaxRate, LineStyle: style, Top: 1 - fracBot}
		bot.Add(v)
		bot.Legend.Add(text, v)
	}
	if sc, err := saturatedMarks(sats, false, false); err != nil {
		return nil, nil, err
	} else if sc != nil {
		top.Add(sc)
		top.Legend.Add(saturatedLegend, sc)
	}
	styleKey("goodput (solid)", nil)
	styleKey("throughput (dashed)", dashes[1])
	if maxRate > 0 {
		diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: maxRate, Y: maxRate}})
		if err != nil {
			return nil, nil, err
		}
		diag.Color, diag.Dashes, diag.Width = grey, dashes[2], vg.Points(1)
		top.Add(diag)
		top.Legend.Add("offered load (y = x)", diag)
	}
	th := hline{Y: 100 * target, LineStyle: draw.LineStyle{Color: sloRed, Width: vg.Points(1.5), Dashes: dashes[1]}}
	bot.Add(th)
	bot.Legend.Add(fmt.Sprintf("target %s %%", num(100*target)), th)
	top.X.Tick.Marker, bot.X.Tick.Marker = linearTicks{}, linearTicks{}
	top.Y.Tick.Marker, bot.Y.Tick.Marker = linearTicks{}, linearTicks{}
	top.X.Min, bot.X.Min = 0, 0
	headroom(top, fracTop)
	headroom(bot, fracBot)
	bot.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 20, Label: "20"}, {Value: 40, Label: "40"}, {Value: 60, Label: "60"}, {Value: 80, Label: "80"}, {Value: 100, Label: "100"}}
	fig := &Figure{
		Title: fmt.Sprintf("Goodput vs %s (%s): one colour per %s; %s", shortName(l.X), res.File, curveWhat(l), seedNote(res)),
		Caption: fmt.Sprintf("Goodput: requests meeting every SLO per second. Max goodput rate (DistServe): the rate at which SLO attainment first falls below %s %%, "+
			"interpolated linearly between the two swept rates around the crossing; its cost per token is at the highest swept rate still within the target.", num(100*target)),
		Panels: [][]*plot.Plot{{top}, {bot}},
	}
	return fig, nums, nil
}

// sumCurves adds f over a plot's curves (points drawn, points dropped).
func sumCurves[C any](cs []C, f func(C) int) int {
	k := 0
	for _, c := range cs {
		k += f(c)
	}
	return k
}

// writeSaturated writes a notes line listing the axis values (named axis)
// whose points saturated, if any did: "  saturated at rate = 4, 8".
func writeSaturated(b *strings.Builder, axis string, xs []float64, saturated []bool) {
	var sat []string
	for i, v := range saturated {
		if v {
			sat = append(sat, fmt.Sprintf("%g", xs[i]))
		}
	}
	if len(sat) > 0 {
		fmt.Fprintf(b, "  saturated at %s = %s\n", axis, strings.Join(sat, ", "))
	}
}
