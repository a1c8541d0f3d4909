package plots

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SuitePoint is one run (or one stage of one) in a validation suite: a
// metric measured and simulated.
type SuitePoint struct {
	Group     string // the experiment: one colour each
	Mark      int    // glyph index (e.g. the stage)
	Real, Sim float64
}

// SuitePanel is one metric of the suite, measured against simulated.
type SuitePanel struct {
	Title, Unit string
	Points      []SuitePoint
}

// ValidationSuite draws each panel as simulated against measured on log
// axes with the line sim = real and dotted lines at ±25 %; a point above
// the line is overestimated. Points with a missing or non-positive value
// are left out; a panel left with none is an error.
func ValidationSuite(title, caption string, panels []SuitePanel) (*Figure, error) {
	var groups []string
	seen := map[string]int{}
	for _, pn := range panels {
		for _, q := range pn.Points {
			if _, ok := seen[q.Group]; !ok {
				seen[q.Group] = len(groups)
				groups = append(groups, q.Group)
			}
		}
	}
	var row []*plot.Plot
	for k, pn := range panels {
		p := newPlot(pn.Title, "measured ("+pn.Unit+", log scale)", "simulated ("+pn.Unit+", log scale)")
		lo, hi := math.Inf(1), math.Inf(-1)
		byGroup := make([]map[int]plotter.XYs, len(groups))
		for _, q := range pn.Points {
			if !(q.Real > 0) || !(q.Sim > 0) || math.IsInf(q.Real, 0) || math.IsInf(q.Sim, 0) {
				continue
			}
			lo, hi = math.Min(lo, math.Min(q.Real, q.Sim)), math.Max(hi, math.Max(q.Real, q.Sim))
			g := seen[q.Group]
			if byGroup[g] == nil {
				byGroup[g] = map[int]plotter.XYs{}
			}
			byGroup[g][q.Mark] = append(byGroup[g][q.Mark], plotter.XY{X: q.Real, Y: q.Sim})
		}
		if math.IsInf(lo, 1) {
			return nil, fmt.Errorf("plots: validation suite: %s: no point with both values", pn.Title)
		}
		lo, hi = lo/1.5, hi*1.5
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = logTicks{}, logTicks{}
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
		for _, f := range []struct {
			k    float64
			dash []vg.Length
			name string
		}{{1, nil, "sim = real"}, {1.25, []vg.Length{vg.Points(2), vg.Points(3)}, "±25 %"}, {0.75, []vg.Length{vg.Points(2), vg.Points(3)}, ""}} {
			l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo * f.k}, {X: hi, Y: hi * f.k}})
			if err != nil {
				return nil, fmt.Errorf("plots: validation suite: %v", err)
			}
			l.Color, l.Dashes, l.Width = grey, f.dash, vg.Points(1)
			p.Add(l)
			if f.name != "" && k == 0 {
				p.Legend.Add(f.name, l)
			}
		}
		for g := range groups {
			for mark := 0; mark < 8; mark++ {
				xys := byGroup[g][mark]
				if len(xys) == 0 {
					continue
				}
				sc, err := plotter.NewScatter(xys)
				if err != nil {
					return nil, fmt.Errorf("plots: validation suite: %v", err)
				}
				sc.GlyphStyle = draw.GlyphStyle{Color: seriesColor(g), Radius: vg.Points(4), Shape: glyphs[mark%len(glyphs)]}
				p.Add(sc)
				if k == 0 && mark == firstMark(byGroup[g]) {
					p.Legend.Add(groups[g], sc)
				}
			}
		}
		p.Legend.Top, p.Legend.Left = true, true
		p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), -vg.Points(4)
		row = append(row, p)
	}
	return &Figure{Title: title, Caption: caption, Panels: [][]*plot.Plot{row}}, nil
}

func firstMark(m map[int]plotter.XYs) int {
	for k := 0; k < 8; k++ {
		if len(m[k]) > 0 {
			return k
		}
	}
	return -1
}
