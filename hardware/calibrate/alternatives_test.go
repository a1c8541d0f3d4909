package calibrate

import (
	"flag"
	"fmt"
	"math"
	"strings"
	"testing"
)

var alternatives = flag.Bool("alternatives", false, "run TestAlternativeForms: fit other GEMM model forms to the Vidur data (about 6 minutes on 2 cores)")

// An altTerm is one compute term of an alternative GEMM model: work over
// peak·η, optionally times the saturation (1 + h/t). The work is the
// operator's FLOPs (tile{}), the padded work of whole waves of tile t, or
// (all) the least padded work over tileCandidates.
type altTerm struct {
	t   tile
	all bool
	sat bool
}

// An altForm is a GEMM model, o + max(min over its terms, bytes/(MemBW·μ)),
// with the candidates its fit chooses from (the tiles), each a list of terms.
type altForm struct {
	name  string
	cands [][]altTerm
}

type altPoint struct {
	work      []float64 // per term, s at 100 % of the peak
	bm, n, y  float64
	measuredS float64
}

// x = [log o, logit μ, then per term logit η and, if it saturates, log h].
func altPred(terms []altTerm, x []float64, p *altPoint) float64 {
	tc := math.Inf(1)
	j := 2
	for i, tm := range terms {
		v := p.work[i] / logistic(x[j])
		j++
		if tm.sat {
			v *= 1 + math.Exp(x[j])/p.n
			j++
		}
		tc = math.Min(tc, v)
	}
	return math.Exp(x[0]) + math.Max(tc, p.bm/logistic(x[1]))
}

// altFit fits one candidate from three starts (forward-difference
// Jacobian) and returns its parameters and cost.
func altFit(terms []altTerm, pts []altPoint) ([]float64, float64) {
	res := func(x, r []float64) {
		for i := range pts {
			r[i] = math.Log(altPred(terms, x, &pts[i])) - pts[i].y
		}
	}
	var best []float64
	bestCost := math.Inf(1)
	for _, s := range [][3]float64{{0.75, 64, 4e-6}, {0.6, 16, 2e-6}, {0.85, 256, 8e-6}} {
		x0 := []float64{math.Log(s[2]), logit(0.8)}
		for i, tm := range terms {
			x0 = append(x0, logit(s[0]-0.1*float64(i)))
			if tm.sat {
				x0 = append(x0, math.Log(s[1]))
			}
		}
		x, c := levenbergMarquardt(res, nil, x0, len(pts), 200)
		if c < bestCost {
			best, bestCost = x, c
		}
	}
	return best, bestCost
}

// TestAlternativeForms fits GEMM model forms other than the shipped one to
// the Vidur traces and prints their held-out-by-model errors (GEMMs of the
// four profiled classes, median / p90 absolute percentage error): the
// evidence behind docs/calibration.md's choice of min(saturating FLOPs term, wave
// term). It runs only with -alternatives:
//
//	go test ./hardware/calibrate -run TestAlternativeForms -alternatives -v -timeout 1h
func TestAlternativeForms(t *testing.T) {
	if !*alternatives {
		t.Skip("run with -alternatives")
	}
	dir := vidurDir(t)
	one := func(sat bool) [][]altTerm {
		var c [][]altTerm
		for _, tl := range tileCandidates {
			c = append(c, []altTerm{{t: tl, sat: sat}})
		}
		return c
	}
	withFLOPs := func(sat bool) [][]altTerm {
		var c [][]altTerm
		for _, tl := range tileCandidates {
			c = append(c, []altTerm{{sat: sat}, {t: tl}})
		}
		return c
	}
	var pairs [][]altTerm
	for _, small := range []tile{{64, 64}, {64, 128}, {128, 64}, {128, 128}} {
		for _, large := range []tile{{128, 128}, {128, 256}, {256, 128}, {256, 256}} {
			if small != large {
				pairs = append(pairs, []altTerm{{t: large}, {t: small}})
			}
		}
	}
	forms := []altForm{
		{"FLOPs, saturating (no wave term)", [][]altTerm{{{sat: true}}}},
		{"padded work of one tile, saturating", one(true)},
		{"padded work of one tile, no saturation", one(false)},
		{"least padded work over the nine tiles, one efficiency", [][]altTerm{{{all: true}}}},
		{"min(two tiles, each its efficiency)", pairs},
		{"min(FLOPs without saturation, one tile)", withFLOPs(false)},
		{"min(FLOPs saturating, one tile) (shipped)", withFLOPs(true)},
	}
	var out strings.Builder
	out.WriteString("| GEMM form (held out by model) | a100 | h100 |\n|---|---|---|\n")
	for _, f := range forms {
		fmt.Fprintf(&out, "| %s |", f.name)
		for _, name := range traceGPUs {
			tr, g, err := loadVidurGPU(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			prep := func(terms []altTerm, ss []Sample) []altPoint {
				pts := points(ss, g)
				ap := make([]altPoint, len(pts))
				for i := range pts {
					ap[i] = altPoint{work: make([]float64, len(terms)), bm: pts[i].bm, n: pts[i].n, y: pts[i].y, measuredS: ss[i].Seconds}
				}
				for j, tm := range terms {
					tiles := []tile{tm.t}
					if tm.all {
						tiles = tileCandidates
					}
					for i := range ap {
						ap[i].work[j] = math.Inf(1)
					}
					for _, tl := range tiles {
						withTile(pts, tl, g.SMs)
						for i := range pts {
							w := pts[i].a
							if tl.m > 0 {
								w = pts[i].w
							}
							ap[i].work[j] = math.Min(ap[i].work[j], w)
						}
					}
				}
				return ap
			}
			var pe []float64
			for _, k := range reportGEMMs {
				for _, m := range tr.Models() {
					train := tr.Filter(func(s *Sample) bool { return s.Op.Kind == k && s.Model != m })
					test := tr.Filter(func(s *Sample) bool { return s.Op.Kind == k && s.Model == m })
					var best []altTerm
					var bx []float64
					bc := math.Inf(1)
					for _, c := range f.cands {
						x, cost := altFit(c, prep(c, train))
						if cost < bc {
							best, bx, bc = c, x, cost
						}
					}
					for _, p := range prep(best, test) {
						pe = append(pe, 100*(altPred(best, bx, &p)/p.measuredS-1))
					}
				}
			}
			s := errStats(pe)
			fmt.Fprintf(&out, " %.1f / %.1f |", s.Median, s.P90)
		}
		out.WriteString("\n")
		t.Logf("%s done", f.name)
	}
	t.Log("\n" + out.String())
}
