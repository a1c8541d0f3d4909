package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// OfferedLoad is what a sweep's points were offered over their arrival
// windows (the offered_req_per_s and offered_output_tok_per_s columns,
// experiments.Columns). Fixed is true when every configuration was offered
// the same rate within FixedLoadTolerance: then, past the point where a
// deployment keeps up, its throughput is the offered load whatever it
// could do, and a cost per token there ranks prices, not capacity.
type OfferedLoad struct {
	Known            bool    // the file has the columns
	Fixed            bool    // one load for every configuration
	MinRate, MaxRate float64 // req/s over the configurations
	Output           float64 // mean offered output tok/s over the configurations
}

// FixedLoadTolerance is the relative spread of offered rates read as one
// load: a trace or seed changes the measured rate of the same nominal load
// by a few per cent (12 req/s Poisson over 200 s: ±2/√2400 ≈ ±4 % at 2σ).
const FixedLoadTolerance = 0.05

func offeredLoad(res *Results) OfferedLoad {
	var o OfferedLoad
	if res.need("offered_req_per_s", "offered_output_tok_per_s") != nil {
		return o
	}
	o.MinRate, o.MaxRate = math.Inf(1), math.Inf(-1)
	var sum float64
	n := 0
	for _, c := range res.Configs() {
		r, out := c.Metrics["offered_req_per_s"], c.Metrics["offered_output_tok_per_s"]
		if !finite(r) || !finite(out) {
			continue
		}
		o.MinRate, o.MaxRate = min(o.MinRate, r), max(o.MaxRate, r)
		sum += out
		n++
	}
	if n == 0 {
		return OfferedLoad{}
	}
	o.Known, o.Output = true, sum/float64(n)
	o.Fixed = o.MaxRate <= o.MinRate*(1+FixedLoadTolerance)
	return o
}

// note says what load was held fixed ("" when it was not, or is unknown).
func (o OfferedLoad) note() string {
	if !o.Known || !o.Fixed {
		return ""
	}
	return fmt.Sprintf("every point offered %s req/s ≈ %s output tok/s", num((o.MinRate+o.MaxRate)/2), num(o.Output))
}

// saturated reports whether a configuration's queue kept growing in most
// of its seeds (the saturated column, a 0/1 per row averaged over seeds;
// false when the file has no such column).
func saturated(c Config) bool { return c.Metrics["saturated"] >= 0.5 }

// saturatedMarks draws a black square around each point of xys: the
// configuration was saturated (its queue kept growing while requests
// arrived), so its latencies are a queue that grows with the run's length.
func saturatedMarks(xys plotter.XYs, logX, logY bool) (*plotter.Scatter, error) {
	keep, _ := finiteXYs(xys, logX, logY)
	if len(keep) == 0 {
		return nil, nil
	}
	sc, err := plotter.NewScatter(keep)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(9), Shape: draw.SquareGlyph{}}
	return sc, nil
}

// saturatedLegend is the legend entry of saturatedMarks.
const saturatedLegend = "saturated: queue kept growing"

// throughputColumn is the output throughput the plots draw: the tok/s
// sustained over the arrival window (steady_output_tok_per_s: the offered
// load's when the queue stays bounded, the measured capacity when it kept
// growing), the throughput cost per token divides by; output_tok_per_s
// (first arrival to last completion, drain tail included) in a file
// written before that column.
func throughputColumn(res *Results) string {
	if res.need("steady_output_tok_per_s") == nil {
		return "steady_output_tok_per_s"
	}
	return "output_tok_per_s"
}
