package plots

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// ValidationData is one real run beside its simulation: per-request
// latency samples in ms (TPOT over requests with more than one output
// token), and optionally per-second engine stats over time since the first
// arrival.
type ValidationData struct {
	Label     string
	Real, Sim LatencySamples
	// RealSeries and SimSeries are the running requests and the prompt and
	// generated token throughput per tick; both empty when the run has no
	// time series.
	RealSeries, SimSeries []TickPoint
	Caption               string
}

// LatencySamples are per-request latencies in ms.
type LatencySamples struct{ TTFT, TPOT, E2E []float64 }

// TickPoint is one tick of engine stats, T seconds (the tick's end) after
// the first arrival.
type TickPoint struct {
	T                 float64
	Running           float64
	PromptTPS, GenTPS float64
}

// Validation draws the measured and simulated TTFT, TPOT and E2E CDFs in a
// row (measured solid, simulated dashed), and, when there is a time series,
// a second row with running requests and prompt and generated throughput
// over time, measured against simulated. An empty measured or simulated
// sample is an error.
func Validation(d ValidationData) (*Figure, error) {
	type pair struct {
		title, x string
		real     []float64
		sim      []float64
	}
	cdfs := []pair{
		{"TTFT", "time to first token (ms)", d.Real.TTFT, d.Sim.TTFT},
		{"TPOT", "time per output token (ms)", d.Real.TPOT, d.Sim.TPOT},
		{"E2E latency", "end-to-end latency (ms)", d.Real.E2E, d.Sim.E2E},
	}
	var row []*plot.Plot
	for _, c := range cdfs {
		if len(c.real) == 0 || len(c.sim) == 0 {
			return nil, fmt.Errorf("plots: validation %s: %s: %d measured and %d simulated samples; want both", d.Label, c.title, len(c.real), len(c.sim))
		}
		p := newPlot(c.title+" CDF", c.x, "requests with value ≤ x (%)")
		r, s := slices.Sorted(slices.Values(c.real)), slices.Sorted(slices.Values(c.sim))
		if useLog(&p.X, append(append([]float64(nil), r...), s...), 100) {
			p.X.Label.Text += ", log scale"
			p.X.Tick.Marker = decadeTicks{} // a third of the width: 1-2-5 labels would collide
		}
		p.Y.Min, p.Y.Max = 0, 100
		p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 90, Label: "90"}, {Value: 100, Label: "100"}}
		p.Legend.Top, p.Legend.Left = false, false
		p.Legend.XOffs = -vg.Points(6)
		p.Legend.YOffs = vg.Points(6)
		for i, xs := range [][]float64{r, s} {
			line, err := plotter.NewLine(ecdf(xs, 1000, isLog(&p.X)))
			if err != nil {
				return nil, fmt.Errorf("plots: validation %s: %v", d.Label, err)
			}
			line.Color, line.Width, line.Dashes = seriesColor(i), vg.Points(2), dashes[i]
			p.Add(line)
			p.Legend.Add(fmt.Sprintf("%s (n=%d, median %s)", []string{"measured", "simulated"}[i], len(xs), num(quantile(xs, 0.5))), line)
		}
		row = append(row, p)
	}
	fig := &Figure{Title: "Real vs simulated: " + d.Label, Caption: d.Caption, Panels: [][]*plot.Plot{row}}
	if len(d.RealSeries) == 0 {
		return fig, nil
	}
	series := []struct {
		title, y string
		f        func(TickPoint) float64
	}{
		{"Running requests", "requests running", func(t TickPoint) float64 { return t.Running }},
		{"Prompt throughput (5 s mean)", "prompt tokens/s", func(t TickPoint) float64 { return t.PromptTPS }},
		{"Generation throughput (5 s mean)", "generated tokens/s", func(t TickPoint) float64 { return t.GenTPS }},
	}
	var row2 []*plot.Plot
	for _, s := range series {
		p := newPlot(s.title+" over time", "time since first arrival (s)", s.y)
		p.Legend.Top = true
		p.Legend.XOffs = -vg.Points(6)
		for i, ts := range [][]TickPoint{d.RealSeries, d.SimSeries} {
			if len(ts) == 0 {
				continue
			}
			xys := make(plotter.XYs, 0, len(ts))
			for _, t := range ts {
				if v := s.f(t); !math.IsNaN(v) && !math.IsInf(v, 0) {
					xys = append(xys, plotter.XY{X: t.T, Y: v})
				}
			}
			if len(xys) == 0 {
				continue
			}
			if s.title != "Running requests" {
				xys = trailingMean(xys, 5)
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return nil, fmt.Errorf("plots: validation %s: %v", d.Label, err)
			}
			line.Color, line.Width, line.Dashes = seriesColor(i), vg.Points(1.5), dashes[i]
			p.Add(line)
			p.Legend.Add([]string{"measured", "simulated"}[i], line)
		}
		p.Y.Min = 0
		row2 = append(row2, p)
	}
	fig.Panels = append(fig.Panels, row2)
	return fig, nil
}

// trailingMean replaces each Y by the mean of it and the k−1 points before
// it (fewer at the start): per-second token counts are spiky.
func trailingMean(xys plotter.XYs, k int) plotter.XYs {
	out := make(plotter.XYs, len(xys))
	var sum float64
	for i, p := range xys {
		sum += p.Y
		if i >= k {
			sum -= xys[i-k].Y
		}
		out[i] = plotter.XY{X: p.X, Y: sum / float64(min(i+1, k))}
	}
	return out
}

// decadeTicks labels the powers of ten only, with minor ticks between.
type decadeTicks struct{}

func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := logTicks{}.Ticks(lo, hi)
	for i := range ts {
		if m := ts[i].Value / math.Pow(10, math.Floor(math.Log10(ts[i].Value)+1e-9)); math.Abs(m-1) > 1e-6 {
			ts[i].Label = ""
		} else {
			ts[i].Label = tickLabel(ts[i].Value)
		}
	}
	return ts
}
