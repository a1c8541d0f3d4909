package plots

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// CDFLevels are the quantile levels CDFNumbers report.
var CDFLevels = []float64{0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1}

// CDFOptions configure CDF.
type CDFOptions struct {
	// SLO objectives are drawn as vertical lines; unset ones are taken
	// from the first run's summary.json.
	SLO SLO
	// Points bounds the points drawn per curve (default 1000): the
	// empirical CDF is drawn at that many evenly spaced ranks.
	Points int
}

// CDFNumbers are the numbers behind the CDF figure.
type CDFNumbers struct {
	SLO    SLO
	Series []CDFSeries
}

// CDFSeries is one run: quantiles of its served requests' TTFT and TPOT.
type CDFSeries struct {
	Label    string
	Requests int // rows of requests.csv
	Rejected int // rejected requests: no TTFT or TPOT
	TTFT     Quantiles
	TPOT     Quantiles // over served requests with more than one output token
}

// Quantiles are a sample's quantiles at CDFLevels (ms), by linear
// interpolation between closest ranks (numpy's default, as
// sim/metrics computes percentiles): q(p) = x[⌊h⌋] + (h − ⌊h⌋)(x[⌊h⌋+1] −
// x[⌊h⌋]) with h = p·(n − 1) on the sorted sample. Empty when N = 0.
type Quantiles struct {
	N      int
	Values []float64
}

func quantiles(sorted []float64) Quantiles {
	q := Quantiles{N: len(sorted)}
	if len(sorted) == 0 {
		return q
	}
	for _, p := range CDFLevels {
		q.Values = append(q.Values, quantile(sorted, p))
	}
	return q
}

// quantile is numpy's linear-interpolation percentile of a sorted sample.
func quantile(sorted []float64, p float64) float64 {
	h := p * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// String is a plain-text table of the numbers (the golden form).
func (n *CDFNumbers) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cdf: %s\n", n.SLO)
	levels := make([]string, len(CDFLevels))
	for i, p := range CDFLevels {
		levels[i] = fmt.Sprintf("%11s", fmt.Sprintf("q%g", 100*p))
	}
	for _, s := range n.Series {
		fmt.Fprintf(&b, "run %q: %d requests, %d rejected\n", s.Label, s.Requests, s.Rejected)
		fmt.Fprintf(&b, "  %-8s %6s %s\n", "metric", "n", strings.Join(levels, ""))
		for _, m := range []struct {
			name string
			q    Quantiles
		}{{"ttft_ms", s.TTFT}, {"tpot_ms", s.TPOT}} {
			fmt.Fprintf(&b, "  %-8s %6d", m.name, m.q.N)
			for _, v := range m.q.Values {
				fmt.Fprintf(&b, " %10.4f", v)
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// CDF draws the empirical CDFs of TTFT and TPOT, one curve per run: the
// share of served requests (TPOT: of served requests with more than one
// output token) whose latency is at most x. The x axis is logarithmic when
// the latencies span more than 100×. Rejected requests have no latency;
// the legend counts them. The SLO objectives are vertical red lines. A run
// with no served request is an error.
func CDF(runs []*Run, o CDFOptions) (*Figure, *CDFNumbers, error) {
	if len(runs) == 0 {
		return nil, nil, fmt.Errorf("plots: cdf: no runs")
	}
	points := o.Points
	if points == 0 {
		points = 1000
	}
	if points < 2 {
		return nil, nil, fmt.Errorf("plots: cdf: %d points per curve: want at least 2", points)
	}
	if err := o.SLO.validate(); err != nil {
		return nil, nil, fmt.Errorf("plots: %v", err)
	}
	slo := o.SLO
	if runs[0].Summary != nil {
		slo = runs[0].Summary.SLO.Override(o.SLO)
	}
	nums := &CDFNumbers{SLO: slo}
	samples := make([][2][]float64, len(runs))
	var all [2][]float64
	for i, r := range runs {
		s := CDFSeries{Label: r.Label, Requests: len(r.Requests)}
		for _, q := range r.Requests {
			if !q.Served() {
				s.Rejected++
				continue
			}
			samples[i][0] = append(samples[i][0], q.TTFTms)
			if !math.IsNaN(q.TPOTms) {
				samples[i][1] = append(samples[i][1], q.TPOTms)
			}
		}
		if len(samples[i][0]) == 0 {
			return nil, nil, fmt.Errorf("plots: cdf: run %s: no served request", r.Dir)
		}
		for k := range 2 {
			slices.Sort(samples[i][k])
			all[k] = append(all[k], samples[i][k]...)
		}
		s.TTFT, s.TPOT = quantiles(samples[i][0]), quantiles(samples[i][1])
		nums.Series = append(nums.Series, s)
	}

	panels := []*plot.Plot{
		newPlot("TTFT distribution", "time to first token (ms)", "served requests with TTFT ≤ x (%)"),
		newPlot("TPOT distribution", "time per output token (ms)", "requests with TPOT ≤ x (%)"),
	}
	objective := []float64{slo.TTFTms, slo.TPOTms}
	for k, p := range panels {
		if objective[k] > 0 {
			all[k] = append(all[k], objective[k])
		}
		if useLog(&p.X, all[k], 100) {
			p.X.Label.Text += ", log scale"
		}
		p.Y.Min, p.Y.Max = 0, 100
		p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 90, Label: "90"}, {Value: 100, Label: "100"}}
		p.Legend.Top, p.Legend.Left = false, false
		p.Legend.YOffs = vg.Points(6)
		p.Legend.XOffs = -vg.Points(6)
		for i, r := range runs {
			xs := samples[i][k]
			if len(xs) == 0 {
				continue
			}
			pts := ecdf(xs, points, isLog(&p.X))
			if len(pts) == 0 {
				continue
			}
			line, err := plotter.NewLine(pts)
			if err != nil {
				return nil, nil, err
			}
			line.Color, line.Width, line.Dashes = seriesColor(i), vg.Points(2), dashes[(i/len(seriesColors))%len(dashes)]
			p.Add(line)
			label := fmt.Sprintf("%s (n=%d", r.Label, len(xs))
			if k == 0 && nums.Series[i].Rejected > 0 {
				label += fmt.Sprintf(", %d rejected", nums.Series[i].Rejected)
			}
			p.Legend.Add(label+")", line)
		}
		if objective[k] > 0 {
			v := vline{X: objective[k], LineStyle: draw.LineStyle{Color: sloRed, Width: vg.Points(1.5), Dashes: dashes[1]}}
			p.Add(v)
			p.Legend.Add(fmt.Sprintf("SLO %s ms", num(objective[k])), v)
		}
		settleAxes(p)
	}
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = r.Label
	}
	fig := &Figure{
		Title:   "Latency CDFs: " + strings.Join(names, ", "),
		Caption: fmt.Sprintf("Empirical CDFs over served requests (rejected requests have no first token); TPOT over requests with more than one output token. Each curve is drawn at up to %d evenly spaced ranks.", points),
		Panels:  [][]*plot.Plot{panels},
	}
	return fig, nums, nil
}

// ecdf returns up to m points of the empirical CDF of a sorted sample:
// (x[i], 100·(i+1)/n) at m evenly spaced ranks i, the first and last
// included. On a log axis non-positive values are left out.
func ecdf(sorted []float64, m int, logX bool) plotter.XYs {
	n := len(sorted)
	m = min(m, n)
	out := make(plotter.XYs, 0, m)
	for k := range m {
		i := 0
		if m > 1 {
			i = int(math.Round(float64(k) * float64(n-1) / float64(m-1)))
		}
		if logX && sorted[i] <= 0 {
			continue
		}
		out = append(out, plotter.XY{X: sorted[i], Y: 100 * float64(i+1) / float64(n)})
	}
	return out
}
