package calibrate

import (
	"math"
	"strings"

	"github.com/servesim/servesim/hardware"
)

// This file reads the sm_90 FP8 rows of XLA's matmul table for what they
// physically are. Two pieces of XLA's code, at the versions that made the
// table, fix how such a row was timed:
//
//   - xla/service/gpu/transforms/gemm_rewriter.cc (CreateF8CustomCall): "On
//     non-Blackwell systems, cuBLASLt FP8 GEMM kernels require the first
//     operand, i.e. A, to be row-major … cuBLASLt requires the second
//     operand to be column-major … so make it column-major if it is
//     currently row-major." The table's dot is [b,m,k] × [b,k,n]
//     (xla/tools/matmul_perf_table_gen.cc, GetModule): its rhs is row-major,
//     so on sm_90 every FP8 row compiles to two kernels, a transpose of the
//     b×k×n FP8 rhs and the cuBLASLt GEMM. BF16 and FP32 dots are one
//     cuBLAS call; on Blackwell (sm_100) FP8 needs no transpose.
//   - xla/service/gpu/model/hlo_op_profiler.cc (CuptiKernelTracer): the
//     stored runtime is the median duration over all kernel events of the
//     traced runs (5 × 2 executions); with two kernels an execution, 10
//     transposes and 10 GEMMs, the median is the mean of the 10th and 11th
//     shortest, one of each kind: (T + G)/2, half the dot's time.
//
// So a sm_90 FP8 row records (T + G)/2, and its flops_per_s is about twice
// the dot's: this is why 87 of the 1,125 rows exceed the 1,979 TFLOP/s
// dense FP8 peak (2,621 at most, 1,310 when halved) and why their large-
// shape FP8/BF16 ratio is 2.73 where equal efficiency would give 2. The
// fit models a row as (T + G)/2 with T = o_T + 2·b·k·n/(MemBW·μ_T) (read and
// write the FP8 rhs once) and G the GEMM model; G's parameters are what a
// serving GEMM (weights stored in the layout the kernel wants) runs at.

// xlaTransposed reports whether XLA timed rows of arch and dtype as a
// transpose plus a GEMM: FP8 inputs on a CUDA GPU before Blackwell (sm_8x,
// sm_9x).
func xlaTransposed(arch, dtype string) bool {
	return strings.HasPrefix(dtype, "f8") && (strings.HasPrefix(arch, "sm_8") || strings.HasPrefix(arch, "sm_9"))
}

// xlaModel is the fitted model of a row's recorded time: the GEMM's
// parameters and, when transposed, the rhs transpose's overhead oT and
// memory efficiency muT, the row recording (T + G)/2.
type xlaModel struct {
	gemm       params
	transposed bool
	oT, muT    float64
}

// xlaPoint is a row reduced to what xlaModel needs: the GEMM's point and the
// rhs transpose's bytes over the bandwidth (s at 100 %).
type xlaPoint struct {
	point
	tb float64
}

// at is the recorded time of pt under m.
func (m xlaModel) at(pt *xlaPoint) float64 {
	g := m.gemm.at(&pt.point)
	if !m.transposed {
		return g
	}
	return (m.oT + pt.tb/m.muT + g) / 2
}

// transposeStarts are the starting (log o_T, logit μ_T) of the fit.
var transposeStarts = [][]float64{{math.Log(4e-6), logit(0.8)}, {math.Log(2e-6), logit(0.6)}, {math.Log(8e-6), logit(0.9)}}

// fitXLAModel fits the model of rows transposed or not to pts.
func fitXLAModel(pts []xlaPoint, transposed bool) xlaModel {
	if !transposed {
		ps := make([]point, len(pts))
		for i := range pts {
			ps[i] = pts[i].point
		}
		return xlaModel{gemm: gemmForm.fit(ps)}
	}
	decode := func(x []float64) xlaModel {
		return xlaModel{gemm: gemmForm.decode(x[:4]), transposed: true, oT: math.Exp(x[4]), muT: logistic(x[5])}
	}
	res := func(x, r []float64) {
		m := decode(x)
		for i := range pts {
			r[i] = math.Log(m.at(&pts[i])) - pts[i].y
		}
	}
	var best []float64
	bestCost := math.Inf(1)
	for i, g0 := range gemmForm.starts {
		x0 := append(append([]float64(nil), g0...), transposeStarts[i%len(transposeStarts)]...)
		x, c := levenbergMarquardt(res, nil, x0, len(pts), 300)
		if c < bestCost {
			best, bestCost = x, c
		}
	}
	return decode(best)
}

// xlaPoints are the points of samples ss of rows rs on g.
func xlaPoints(ss []Sample, rs []*XLARow, g *hardware.GPU) []xlaPoint {
	ps := points(ss, g)
	out := make([]xlaPoint, len(ps))
	for i := range ps {
		r := rs[i]
		out[i] = xlaPoint{point: ps[i], tb: 2 * float64(r.B) * float64(r.K) * float64(r.N) / g.MemBW}
	}
	return out
}

// xlaModelErrors are the signed percentage errors of m on pts.
func xlaModelErrors(m xlaModel, pts []xlaPoint) []float64 {
	pe := make([]float64, len(pts))
	for i := range pts {
		pe[i] = 100 * (m.at(&pts[i])/math.Exp(pts[i].y) - 1)
	}
	return pe
}
