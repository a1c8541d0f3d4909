package plots

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SpeedupOptions configure Speedup.
type SpeedupOptions struct {
	X        string // the x axis (default workload.rate)
	Group    string // the axis whose values are the curves (default speculative)
	Baseline string // the group value every other is divided into (default "off")
	Metric   string // a latency column (default tpot_mean_ms): speedup = baseline / curve
}

// SpeedupCurve is one group's speedup against X, in increasing X (means
// over replicate seeds).
type SpeedupCurve struct {
	Label   string
	X       []float64
	Speedup []float64
}

// Speedup draws each group's speedup over the baseline group against X: a
// speculative-decoding sweep's "speedup vs rate, one curve per method".
// Points whose baseline or own metric is missing, zero or not finite are
// left out.
func Speedup(res *Results, o SpeedupOptions) (*plot.Plot, *SpeedupNumbers, error) {
	if o.X == "" {
		o.X = "workload.rate"
	}
	if o.Group == "" {
		o.Group = "speculative"
	}
	if o.Baseline == "" {
		o.Baseline = "off"
	}
	if o.Metric == "" {
		o.Metric = "tpot_mean_ms"
	}
	if err := res.need(o.Metric); err != nil {
		return nil, nil, err
	}
	type acc struct{ sum, n float64 }
	vals := map[string]map[float64]*acc{} // group → x → metric
	for _, r := range res.Rows {
		x, err := strconv.ParseFloat(r.Axis[o.X], 64)
		g, ok := r.Axis[o.Group]
		if err != nil || !ok {
			return nil, nil, fmt.Errorf("plots: %s line %d: want numeric axis %q and axis %q", res.File, r.Line, o.X, o.Group)
		}
		if vals[g] == nil {
			vals[g] = map[float64]*acc{}
		}
		a := vals[g][x]
		if a == nil {
			a = &acc{}
			vals[g][x] = a
		}
		a.sum += r.Metrics[o.Metric]
		a.n++
	}
	base, ok := vals[o.Baseline]
	if !ok {
		return nil, nil, fmt.Errorf("plots: %s: no rows with %s = %q to divide by", res.File, o.Group, o.Baseline)
	}
	var groups []string
	for g := range vals {
		if g != o.Baseline {
			groups = append(groups, g)
		}
	}
	sort.Strings(groups)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Speedup of %s over %s = %q", o.Metric, o.Group, o.Baseline)
	p.X.Label.Text = o.X
	if o.X == "workload.rate" {
		p.X.Label.Text = "request rate (req/s, workload.rate)"
	}
	p.Y.Label.Text = fmt.Sprintf("speedup (×): %s at %q / with the method", o.Metric, o.Baseline)
	p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks{}, linearTicks{}
	var curves []SpeedupCurve
	for i, g := range groups {
		c := SpeedupCurve{Label: g}
		var xs []float64
		for x := range vals[g] {
			xs = append(xs, x)
		}
		sort.Float64s(xs)
		for _, x := range xs {
			b, v := base[x], vals[g][x]
			if b == nil || !(v.sum > 0) || math.IsInf(b.sum/v.sum, 0) || math.IsNaN(b.sum/v.sum) {
				continue
			}
			c.X = append(c.X, x)
			c.Speedup = append(c.Speedup, (b.sum/b.n)/(v.sum/v.n))
		}
		if len(c.X) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(c.X))
		for j := range c.X {
			pts[j].X, pts[j].Y = c.X[j], c.Speedup[j]
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, nil, fmt.Errorf("plots: %s: %v", res.File, err)
		}
		l.Color, s.Color = seriesColor(i), seriesColor(i)
		s.Shape = draw.CircleGlyph{}
		p.Add(l, s)
		p.Legend.Add(g, l, s)
		curves = append(curves, c)
	}
	if len(curves) == 0 {
		return nil, nil, fmt.Errorf("plots: %s: no group to compare with %q", res.File, o.Baseline)
	}
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(one)
	// Keep 1× (no gain) in view: a reader judges a speedup against it.
	p.Y.Min, p.Y.Max = math.Min(p.Y.Min, 0.95), math.Max(p.Y.Max, 1.05)
	p.Legend.Top = true
	return p, &SpeedupNumbers{Metric: o.Metric, Baseline: o.Baseline, Curves: curves}, nil
}

// SpeedupNumbers are the numbers behind the speedup figure.
type SpeedupNumbers struct {
	Metric, Baseline string
	Curves           []SpeedupCurve
}

// String lists every curve's points: "label x speedup" a line.
func (n *SpeedupNumbers) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "speedup of %s over %q\n", n.Metric, n.Baseline)
	for _, c := range n.Curves {
		for i := range c.X {
			fmt.Fprintf(&b, "%s\t%g\t%.3f\n", c.Label, c.X[i], c.Speedup[i])
		}
	}
	return b.String()
}
