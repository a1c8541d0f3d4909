package calibrate

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/servesim/servesim/hardware"
)

// fitAllReduce fits, per TP degree, t = lat + c/η with c = 2(n−1)/n ·
// bytes/LinkBW, minimising Σ ((lat + c·b)/y − 1)² (relative error, linear
// in lat and b = 1/η) with gonum/mat's least-squares solve. (Weighting each
// octave of message size equally, or a max(lat, c·b) form, fit the
// kilobyte messages of decode steps no better: NCCL switches protocols
// there; see the report's all_reduce rows by size.) A negative latency is
// clamped to 0 and b refitted alone. A TP degree with fewer than
// minAllReduce timings or message sizes is left out (its all-reduces are
// then priced by the roofline); each degree is refitted once without the
// gross outliers of its first fit (grossOutliers on log(predicted/measured)).
// It returns the fits and which samples of ss it left out (nil: none).
func fitAllReduce(ss []Sample, g *hardware.GPU) ([]AllReduceParams, []bool, error) {
	byTP := map[int][]int{}
	var tps []int
	for i, s := range ss {
		if _, ok := byTP[s.TP]; !ok {
			tps = append(tps, s.TP)
		}
		byTP[s.TP] = append(byTP[s.TP], i)
	}
	sort.Ints(tps)
	var out []AllReduceParams
	var dropped []bool
	for _, tp := range tps {
		group := make([]Sample, len(byTP[tp]))
		for j, i := range byTP[tp] {
			group[j] = ss[i]
		}
		if tp < 2 || !minAllReduce.enough(group, commSize) {
			continue
		}
		a, res, err := solveAllReduce(group, tp, g)
		if err != nil {
			return nil, nil, err
		}
		if bad := grossOutliers(res); bad != nil {
			if keep := without(group, bad); minAllReduce.enough(keep, commSize) {
				if a, _, err = solveAllReduce(keep, tp, g); err != nil {
					return nil, nil, err
				}
				if dropped == nil {
					dropped = make([]bool, len(ss))
				}
				for j, b := range bad {
					dropped[byTP[tp][j]] = b
				}
			}
		}
		out = append(out, a)
	}
	return out, dropped, nil
}

// solveAllReduce fits one TP degree's group; it returns the fit and the log
// residual of each sample.
func solveAllReduce(group []Sample, tp int, g *hardware.GPU) (AllReduceParams, []float64, error) {
	n := float64(tp)
	cs := make([]float64, len(group))
	A := mat.NewDense(len(group), 2, nil)
	rhs := mat.NewVecDense(len(group), nil)
	for i, s := range group {
		cs[i] = 2 * (n - 1) / n * s.Op.CommBytes / g.LinkBW
		A.Set(i, 0, 1/s.Seconds)
		A.Set(i, 1, cs[i]/s.Seconds)
		rhs.SetVec(i, 1)
	}
	where := group[0].Where
	var x mat.VecDense
	if err := x.SolveVec(A, rhs); err != nil {
		return AllReduceParams{}, nil, fmt.Errorf("calibrate: %s: all-reduce fit at tp %d: %v", where, tp, err)
	}
	lat, b := x.AtVec(0), x.AtVec(1)
	if lat < 0 {
		lat = 0
		var num, den float64
		for i, s := range group {
			u := cs[i] / s.Seconds
			num += u
			den += u * u
		}
		b = num / den
	}
	if !(b > 0) {
		return AllReduceParams{}, nil, fmt.Errorf("calibrate: %s: all-reduce fit at tp %d (%d timings from this line on): time does not grow with message size (slope %g)", where, tp, len(group), b)
	}
	eff := 1 / b
	ape := make([]float64, len(group))
	res := make([]float64, len(group))
	for i, s := range group {
		pred := lat + cs[i]*b
		ape[i] = 100 * math.Abs(pred/s.Seconds-1)
		res[i] = math.Log(pred / s.Seconds)
	}
	if eff > 2 {
		return AllReduceParams{}, nil, fmt.Errorf("calibrate: %s: all-reduce fit at tp %d: link efficiency %.3g > 2 of link_bw %g: is the GPU's link_bw right?", where, tp, eff, g.LinkBW)
	}
	return AllReduceParams{TP: tp, LatencyS: lat, LinkEff: eff, Fit: statsOf(ape)}, res, nil
}
