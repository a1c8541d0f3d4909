package plots

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlanOption is one deployment of a capacity plan, as the planner ranks it.
type PlanOption struct {
	Label       string  // e.g. "h100 colocated 3×TP4"
	CostPerHour float64 // $/hour
	GPUs        int
	GPU         string  // the GPU type: bars of one type share a colour ("": one colour)
	Rate        float64 // req/s the deployment serves within the SLOs (0: not shown)
	CostPerMTok float64 // $ per million output tokens (0: not shown)
}

// PerGPU is the rate each GPU serves (req/s per GPU; NaN without a rate).
func (o PlanOption) PerGPU() float64 {
	if !(o.Rate > 0) || o.GPUs <= 0 {
		return math.NaN()
	}
	return o.Rate / float64(o.GPUs)
}

// BarLabel is the text at the end of the option's bar: cost per hour, GPU
// count, the rate per GPU and the cost per million output tokens (each
// when known): "$24/h, 4 GPUs, 5 req/s per GPU, $1.83 per M output tokens".
func (o PlanOption) BarLabel() string {
	s := fmt.Sprintf("$%s/h, %d GPUs", num(o.CostPerHour), o.GPUs)
	if v := o.PerGPU(); !math.IsNaN(v) {
		s += fmt.Sprintf(", %s req/s per GPU", num(v))
	}
	if o.CostPerMTok > 0 && !math.IsInf(o.CostPerMTok, 0) {
		s += fmt.Sprintf(", $%s per M output tokens", num(o.CostPerMTok))
	}
	return s
}

// PlanChart draws the planner's options as horizontal bars of cost per hour,
// cheapest at the top, each named by its deployment and labelled with its
// cost, GPU count, rate per GPU and cost per million output tokens, and
// coloured by GPU type: the cheapest deployment meeting the target stands
// first. Options with a non-finite or negative cost are an error.
func PlanChart(opts []PlanOption, title string) (*plot.Plot, error) {
	if len(opts) == 0 {
		return nil, fmt.Errorf("plots: plan: no deployment meets the target: nothing to draw")
	}
	names := make([]string, len(opts))
	gpuIndex := map[string]int{}
	var gpus []string
	hi := 0.0
	for i, o := range opts {
		if !(o.CostPerHour >= 0) || math.IsInf(o.CostPerHour, 0) {
			return nil, fmt.Errorf("plots: plan: %s costs %v per hour", o.Label, o.CostPerHour)
		}
		// Bars go bottom-up: put the cheapest (first) at the top.
		names[len(opts)-1-i] = o.Label
		if _, ok := gpuIndex[o.GPU]; !ok {
			gpuIndex[o.GPU] = len(gpus)
			gpus = append(gpus, o.GPU)
		}
		hi = math.Max(hi, o.CostPerHour)
	}
	p := newPlot(title, "cost ($/hour)", "")
	width := vg.Points(math.Min(48, 480/float64(len(opts))))
	// One bar chart per GPU type, zero elsewhere, so each type has a colour
	// and a legend entry.
	for gi, g := range gpus {
		vals := make(plotter.Values, len(opts))
		for i, o := range opts {
			if o.GPU == g {
				vals[len(opts)-1-i] = o.CostPerHour
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, fmt.Errorf("plots: plan: %w", err)
		}
		bars.Horizontal = true
		bars.Color = seriesColor(gi)
		bars.LineStyle.Width = 0
		p.Add(bars)
		if g != "" {
			p.Legend.Add(g, bars)
		}
	}
	lbl := barLabels{}
	for i, o := range opts {
		lbl = append(lbl, barLabel{x: o.CostPerHour, y: float64(len(opts) - 1 - i), text: o.BarLabel()})
	}
	p.Add(lbl)
	p.NominalY(names...)
	p.Y.Tick.Label.Font.Size = vg.Points(labelSize)
	p.X.Min = 0
	p.X.Max = hi * 1.45 // room for the labels right of the longest bar
	// The legend goes top right, beside the cheapest (shortest) bar.
	p.Legend.Top, p.Legend.Left = true, false
	return p, nil
}

type barLabel struct {
	x, y float64
	text string
}

// barLabels writes each bar's label just right of its end.
type barLabels []barLabel

func (b barLabels) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	sty := textStyle(legendSize + 1)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	for _, l := range b {
		c.FillText(sty, vg.Point{X: x(l.x) + vg.Points(6), Y: y(l.y)}, l.text)
	}
}
