package hardware

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/models"
)

// KernelModel turns one occurrence of an operator into seconds on one GPU of
// the tensor-parallel group. Implementations must return a finite,
// non-negative time, must not retain op, and must be pure functions of op
// (StepModel caches results by token count).
//
// Roofline is the implementation from specs; a calibrated one (efficiencies
// fitted to kernel traces) can be swapped in without touching StepModel.
type KernelModel interface {
	OpTime(op *models.Op) float64
}

// DecodeKernel is a kernel model with a cheaper path for the operator a
// decode-only step prices afresh every step: its decode attention
// (OpAttnDecode, not Mixed). DecodeTime(op) must equal OpTime(op) to the
// bit for every such operator; it skips what OpTime decides from the
// operator's kind (calibrate.Calibrated implements it). A StepModel uses
// it where its kernel model, under the engine wrappers that pass
// attention through (FusedAddNormKernel, CustomARKernel), has it.
type DecodeKernel interface {
	KernelModel
	DecodeTime(op *models.Op) float64
}

// KernelFunc adapts a function to KernelModel (for tests and experiments).
type KernelFunc func(op *models.Op) float64

// OpTime returns f(op).
func (f KernelFunc) OpTime(op *models.Op) float64 { return f(op) }

var (
	_ KernelModel = KernelFunc(nil)
	_ KernelModel = Roofline{}
	_ KernelModel = (*Roofline)(nil)
)

// Efficiency is the fraction of a peak an operator class reaches, plus fixed
// costs. Fractions are in (0, 1].
type Efficiency struct {
	// Compute is the fraction of the tensor-core peak a GEMM reaches.
	Compute float64
	// Memory is the fraction of HBM bandwidth any operator's bytes move at.
	Memory float64
	// Link is the fraction of LinkBW a ring all-reduce reaches.
	Link float64
	// AttnCompute is the fraction of the tensor-core peak attention
	// (OpAttnPrefill, OpAttnDecode) reaches on its FLOPs.
	AttnCompute float64
	// OpOverhead is the fixed GPU time of one kernel in seconds, added to
	// every operator occurrence but the all-reduce (whose fixed cost is
	// GPU.LinkLatency).
	OpOverhead float64
}

// DefaultEfficiency returns the roofline defaults, read off the per-operator
// kernel timings of ../shared/data/vidur-profiling (Vidur, H100 and A100,
// Llama-2-7B/70B, CodeLlama-34B, InternLM-20B, Qwen-72B, Llama-3-8B/70B at
// TP 1–8; TestProvenanceGEMM re-derives them from the files):
//
//   - Compute 0.74: median fraction of the dense BF16 peak reached by the
//     four GEMMs (QKV, output, up, down) at 4,096 tokens, over 192 profiled
//     cases (range 0.58–0.88). The data notes give ≈ 70–77 % for large
//     GEMMs; H100 Llama-2-7B up-projection: 744 TFLOP/s of 989.4.
//   - Memory 0.80: median fraction of HBM bandwidth at which the same GEMMs
//     read their weights at 1 token and TP 1 once OpOverhead is taken off,
//     over 48 cases (range 0.63–0.90 before); gpu-specs.md: batch-1 decode
//     reads weights at ≈ 80–85 % of peak on H100.
//   - OpOverhead 4 µs: median GPU time of the norm, RoPE, activation and
//     residual-add kernels at 1 token (192 cases, 1–22 µs), whose bytes would
//     take well under 0.1 µs: their time is fixed cost.
//   - Link 0.70: least-squares fits t = α + 2(n−1)/n·size/(η·LinkBW) to the
//     DGX all-reduce profiles (2 KiB–64 MiB) give η ≈ 0.68–0.81 on H100 and
//     0.57–0.61 on A100 at TP 2/4/8; 0.70 serves H100-class NVLink, and
//     TestProvenanceAllReduce bounds the error on both.
//   - AttnCompute 0.50: no attention profile was obtained (attention.csv is
//     missing from the data); FlashAttention-2 reports 50–73 % of the
//     theoretical maximum FLOP/s on A100 (Dao 2023, arXiv:2307.08691,
//     abstract), and serving chunks are shorter than its benchmarks, so the
//     low end. An assumption until a calibrated model replaces it.
func DefaultEfficiency() Efficiency {
	return Efficiency{
		Compute:     0.74,
		Memory:      0.80,
		Link:        0.70,
		AttnCompute: 0.50,
		OpOverhead:  4e-6,
	}
}

// Validate checks that fractions are in (0, 1] and OpOverhead is finite and
// non-negative.
func (e Efficiency) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"compute", e.Compute}, {"memory", e.Memory}, {"link", e.Link}, {"attn_compute", e.AttnCompute}} {
		if !(f.v > 0 && f.v <= 1) {
			return fmt.Errorf("hardware: efficiency %q must be in (0, 1], got %v", f.name, f.v)
		}
	}
	if !(e.OpOverhead >= 0) || math.IsInf(e.OpOverhead, 0) {
		return fmt.Errorf("hardware: efficiency \"op_overhead\" must be finite and >= 0, got %v", e.OpOverhead)
	}
	return nil
}

// Roofline is the kernel-time model from specs (DESIGN §3). One occurrence
// of an operator takes
//
//	OpOverhead + max(FLOPs / (PeakFLOPS(op.Compute) · η_c), Bytes / (MemBW · Memory))
//
// with η_c = AttnCompute for attention and Compute otherwise. An occurrence
// with no FLOPs and no bytes (e.g. prefill attention in a decode-only batch)
// launches no kernel and takes 0. An all-reduce (OpAllReduce) is a ring:
//
//	2 · (TP−1)/TP · CommBytes / (LinkBW · Link) + LinkLatency
//
// and 0 when TP ≤ 1 or CommBytes is 0.
//
// GPU must be non-nil and Eff valid (Efficiency.Validate); OpTime panics on
// a nil GPU. TP is the tensor-parallel degree of the instance.
type Roofline struct {
	GPU *GPU
	Eff Efficiency
	TP  int
}

// OpTime returns the seconds of one occurrence of op.
func (r Roofline) OpTime(op *models.Op) float64 {
	g := r.GPU
	if op.Kind == models.OpAllReduce {
		if r.TP <= 1 || op.CommBytes == 0 {
			return 0
		}
		n := float64(r.TP)
		return 2*(n-1)/n*op.CommBytes/(g.LinkBW*r.Eff.Link) + g.LinkLatency
	}
	if op.FLOPs == 0 && op.Bytes == 0 {
		return 0
	}
	return r.Eff.OpOverhead + max(r.ComputeTime(op), r.MemoryTime(op))
}

// ComputeTime and MemoryTime return the two roofline terms of op without
// overhead; for reports and tests that ask which bound an operator is under.
func (r Roofline) ComputeTime(op *models.Op) float64 {
	eta := r.Eff.Compute
	if op.Kind == models.OpAttnPrefill || op.Kind == models.OpAttnDecode {
		eta = r.Eff.AttnCompute
	}
	return op.FLOPs / (r.GPU.PeakFLOPS(op.Compute) * eta)
}

// MemoryTime: see ComputeTime.
func (r Roofline) MemoryTime(op *models.Op) float64 {
	return op.Bytes / (r.GPU.MemBW * r.Eff.Memory)
}
