package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// gauge draws the SLO-compliance bar: coloured zones (red below 90 %,
// yellow 90–95 %, green from 95 %), a bar filled to the attainment in its
// zone's colour, and the numbers as text.
type gauge struct {
	value  float64 // attainment, 0–1
	status string
	lines  []string
}

var gaugeColors = map[string]color.Color{
	GaugeGreen:  color.RGBA{R: 0, G: 150, B: 70, A: 255},
	GaugeYellow: color.RGBA{R: 230, G: 180, B: 0, A: 255},
	GaugeRed:    color.RGBA{R: 200, G: 30, B: 30, A: 255},
	GaugeNone:   color.Gray{Y: 120},
}

func (g gauge) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	rect := func(x0, x1, y0, y1 float64, col color.Color) {
		c.SetColor(col)
		var pa vg.Path
		pa.Move(vg.Point{X: x(x0), Y: y(y0)})
		pa.Line(vg.Point{X: x(x1), Y: y(y0)})
		pa.Line(vg.Point{X: x(x1), Y: y(y1)})
		pa.Line(vg.Point{X: x(x0), Y: y(y1)})
		pa.Close()
		c.Fill(pa)
	}
	light := func(col color.Color) color.Color {
		r, gg, b, _ := col.RGBA()
		mix := func(v uint32) uint8 { return uint8((v>>8)/3 + 255*2/3) }
		return color.RGBA{R: mix(r), G: mix(gg), B: mix(b), A: 255}
	}
	// Zones along the bar's lower edge, then the bar.
	rect(0, 90, 0.40, 0.46, light(gaugeColors[GaugeRed]))
	rect(90, 95, 0.40, 0.46, light(gaugeColors[GaugeYellow]))
	rect(95, 100, 0.40, 0.46, light(gaugeColors[GaugeGreen]))
	rect(0, 100, 0.46, 0.64, color.Gray{Y: 230})
	value := fmt.Sprintf("%.1f %%", 100*g.value)
	if g.status == GaugeNone {
		value = "no SLO"
	} else {
		rect(0, 100*g.value, 0.46, 0.64, gaugeColors[g.status])
	}
	for _, t := range []float64{90, 95} {
		c.StrokeLine2(draw.LineStyle{Color: color.Black, Width: vg.Points(1.5)}, x(t), y(0.40), x(t), y(0.70))
	}
	big := textStyle(34)
	big.Color = gaugeColors[g.status]
	big.XAlign, big.YAlign = draw.XCenter, draw.YBottom
	c.FillText(big, vg.Point{X: x(50), Y: y(0.72)}, value)
	sty := textStyle(legendSize)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	for i, l := range g.lines {
		c.FillText(sty, vg.Point{X: x(50), Y: y(0.34) - vg.Length(i)*vg.Points(legendSize*1.35)}, l)
	}
}

func (n *DashboardNumbers) gaugePlot() *plot.Plot {
	p := newPlot("SLO compliance", "requests meeting every SLO (%)", "")
	p.HideY()
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 100, 0, 1
	p.X.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 50, Label: "50"}, {Value: 90, Label: "90"}, {Value: 95, Label: "95"}, {Value: 100, Label: "100"}}
	word := map[string]string{GaugeGreen: "green: ≥ 95 %", GaugeYellow: "yellow: 90–95 %", GaugeRed: "red: below 90 %"}[n.Gauge]
	lines := []string{
		fmt.Sprintf("%d of %d requests met %s (%s)", n.Met, n.Requests, n.SLO, word),
		fmt.Sprintf("served %d, rejected %d", n.Served, n.Rejected),
	}
	if n.Gauge == GaugeNone {
		lines = []string{"no data: no SLO to check", "(no summary.json; give --slo-ttft, --slo-tpot or --slo-e2e)", lines[1]}
	}
	switch {
	case n.Gauge == GaugeNone:
	case n.ArrivalSpan > 0:
		lines = append(lines,
			fmt.Sprintf("goodput %s req/s over the %s s of arrivals (offered %s req/s)", num(n.WindowGoodput), num(n.ArrivalSpan), num(n.Offered)),
			fmt.Sprintf("completed within them: %s req/s", num(n.WindowThroughput)),
			fmt.Sprintf("(%s req/s over the %s s to the last completion, drain included)", num(float64(n.Met)/max(n.Duration, n.ArrivalSpan)), num(n.Duration)))
	case n.Duration > 0:
		lines = append(lines, fmt.Sprintf("goodput %s req/s over %s s", num(float64(n.Met)/n.Duration), num(n.Duration)))
	}
	if st := n.Saturation; st != nil {
		lines = append(lines, saturationLines(st)...)
	}
	if !math.IsNaN(n.SummaryAttainment) && math.Abs(n.SummaryAttainment-n.Attainment) > 1e-9 {
		lines = append(lines, fmt.Sprintf("summary.json: %.1f %% under the run's own SLO", 100*n.SummaryAttainment))
	}
	p.Add(gauge{value: n.Attainment, status: n.Gauge, lines: lines})
	return p
}

// saturationLines say whether the run's queue kept growing (summary.json's
// verdict): the offered load against the measured capacity and the span the
// queue grew, or that it stayed bounded.
func saturationLines(st *Saturation) []string {
	switch {
	case !st.Judged:
		return []string{"saturation not judged (too few arrivals)"}
	case !st.Saturated:
		return []string{"not saturated: the queue stayed bounded over the arrivals"}
	}
	return []string{fmt.Sprintf("SATURATED: %s req/s offered, %s served; queue grew %s–%s s to %d",
		num(st.OfferedRate), num(st.CapacityRate), num(st.GrowthStart), num(st.GrowthEnd), st.OutstandingPeak)}
}
