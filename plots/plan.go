package plots

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// PlanOption is one deployment of a capacity plan, as the planner ranks it.
type PlanOption struct {
	Label       string  // e.g. "h100 colocated 3×TP4"
	CostPerHour float64 // $/hour
	GPUs        int
}

// PlanChart draws the planner's options as horizontal bars of cost per hour,
// cheapest at the top, each labelled with its GPU count: the cheapest
// deployment meeting the target stands first. Options with a non-finite or
// negative cost are an error.
func PlanChart(opts []PlanOption, title string) (*plot.Plot, error) {
	if len(opts) == 0 {
		return nil, fmt.Errorf("plots: plan: no deployment meets the target: nothing to draw")
	}
	vals := make(plotter.Values, len(opts))
	names := make([]string, len(opts))
	// Bars go bottom-up: put the cheapest (first) at the top.
	for i, o := range opts {
		if !(o.CostPerHour >= 0) || math.IsInf(o.CostPerHour, 0) {
			return nil, fmt.Errorf("plots: plan: %s costs %v per hour", o.Label, o.CostPerHour)
		}
		j := len(opts) - 1 - i
		vals[j] = o.CostPerHour
		names[j] = fmt.Sprintf("%s (%d GPUs)", o.Label, o.GPUs)
	}
	p := newPlot(title, "cost ($/hour)", "")
	width := vg.Points(math.Min(48, 480/float64(len(opts))))
	bars, err := plotter.NewBarChart(vals, width)
	if err != nil {
		return nil, fmt.Errorf("plots: plan: %w", err)
	}
	bars.Horizontal = true
	bars.Color = seriesColor(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalY(names...)
	p.X.Min = 0
	return p, nil
}
