package calibrate

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// The report's per-layer step rows: Vidur's measured medians against the
// profile, with the all-reduce from the NCCL profiles.

// stepCases are the per-layer step-time comparisons: Llama-2-7B at TP 1 and
// Llama-2-70B at TP 4 (the smallest power of two whose weights fit an
// 80 GB H100 with room for KV: 140 GB / 4 = 35 GB per GPU).
var stepCases = []struct {
	model string
	tp    int
}{{"llama-2-7b", 1}, {"llama-2-70b", 4}}

var stepTokens = []int{1, 16, 256, 4096}

// stepKinds are the per-layer operators of Vidur's mlp.csv plus the TP
// all-reduce.
var stepKinds = []models.OpKind{models.OpNorm, models.OpQKV, models.OpRoPE, models.OpOutProj, models.OpAllReduce,
	models.OpMLPUp, models.OpAct, models.OpMLPDown, models.OpAdd}

func stepRows(dir string, tr *Trace, g *hardware.GPU, p *Profile, heldOut map[string]*Profile) ([]StepRow, error) {
	cat := models.Builtin()
	ar, err := allReduceMedians(dir)
	if err != nil {
		return nil, err
	}
	var out []StepRow
	for _, c := range stepCases {
		m, err := cat.Get(c.model)
		if err != nil {
			return nil, err
		}
		par := models.Parallel{TP: c.tp, Weights: models.BF16, KV: models.BF16}
		cal, err := p.Calibrated(g, c.tp)
		if err != nil {
			return nil, err
		}
		ho, err := heldOut["h100/"+c.model].Calibrated(g, c.tp)
		if err != nil {
			return nil, err
		}
		rf := hardware.Roofline{GPU: g, Eff: hardware.DefaultEfficiency(), TP: c.tp}
		for _, n := range stepTokens {
			row := StepRow{Model: c.model, TP: c.tp, Tokens: n}
			// Measured: the samples of this (model, TP, tokens), by Vidur operator.
			var norms, others float64
			found := 0
			for _, s := range tr.Samples {
				if s.Model != c.model || s.TP != c.tp || s.Op.Tokens != n {
					continue
				}
				switch s.Op.Kind {
				case models.OpEmbed:
					continue
				case models.OpNorm:
					norms += s.Seconds
				case models.OpAdd:
					others += 2 * s.Seconds // servesim counts 2 residual adds per layer; Vidur profiles one add kernel
				default:
					others += s.Seconds
				}
				found++
			}
			if found == 0 {
				return nil, fmt.Errorf("calibrate: no H100 samples of %s at tp %d and %d tokens", c.model, c.tp, n)
			}
			row.Measured = norms + others
			if c.tp > 1 {
				row.Measured += 2 * ar.at(c.tp, float64(n)*float64(m.Hidden)*2)
			}
			ops := m.Ops(models.Batch{Decodes: n}, par, nil)
			for _, kind := range stepKinds {
				op, ok := opOf(ops, kind)
				if !ok {
					continue
				}
				per := float64(op.Count) / float64(m.Layers)
				row.Calibrated += per * cal.OpTime(&op)
				row.HeldOut += per * ho.OpTime(&op)
				row.Roofline += per * rf.OpTime(&op)
			}
			out = append(out, row)
		}
	}
	return out, nil
}

// arTable holds the H100 DGX all-reduce medians by TP and size.
type arTable map[int][][2]float64 // tp → sorted (bytes, seconds)

// at interpolates linearly in message size between measured sizes.
func (a arTable) at(tp int, bytes float64) float64 {
	pts := a[tp]
	if len(pts) == 0 {
		return math.NaN()
	}
	i := sort.Search(len(pts), func(i int) bool { return pts[i][0] >= bytes })
	switch {
	case i == 0:
		return pts[0][1]
	case i == len(pts):
		return pts[len(pts)-1][1]
	}
	lo, hi := pts[i-1], pts[i]
	return lo[1] + (hi[1]-lo[1])*(bytes-lo[0])/(hi[0]-lo[0])
}

func allReduceMedians(dir string) (arTable, error) {
	rel := "network/h100_dgx/all_reduce.csv"
	rows, err := readFile(filepath.Join(dir, filepath.FromSlash(rel)), rel, ReadVidurCollective)
	if err != nil {
		return nil, err
	}
	by := map[int]map[float64][]float64{}
	for _, r := range rows {
		if r.Workers != r.DevicesPerNode {
			continue
		}
		if by[r.Workers] == nil {
			by[r.Workers] = map[float64][]float64{}
		}
		by[r.Workers][r.Bytes] = append(by[r.Workers][r.Bytes], r.Seconds)
	}
	out := arTable{}
	for tp, sizes := range by {
		for b, v := range sizes {
			sort.Float64s(v)
			out[tp] = append(out[tp], [2]float64{b, quantile(v, 0.5)})
		}
		sort.Slice(out[tp], func(i, j int) bool { return out[tp][i][0] < out[tp][j][0] })
	}
	return out, nil
}
