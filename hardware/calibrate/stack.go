package calibrate

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// A serving stack that runs its own kernels for some kernel classes: the
// profiles model vLLM's (Vidur's sarathi-serve kernels, vLLM's NVFP4 and
// trtllm-gen benchmarks), so a run under another engine re-rates the
// classes that engine prices with kernels measured apart from vLLM's, and
// keeps vLLM's for the classes nobody measured. A Stack is that re-rating,
// one entry a class with its source; Apply returns the re-rated profile
// (no per-step cost: the kernel model is built from it once).

// StackRate re-rates one kernel class of a profile.
type StackRate struct {
	// Class names the kernel class ("FP4 GEMMs"); DType is the GEMM
	// precision entry ([[gemm_precision]]) it multiplies.
	Class string
	DType models.DType
	// ComputeMul and MemoryMul multiply the entry's ComputeScale and
	// MemoryScale (the precision's compute and memory efficiency).
	ComputeMul, MemoryMul float64
	// Source says which measurements set the multipliers.
	Source string
}

// Stack is one engine's re-rating of a profile on one GPU.
type Stack struct {
	Engine string // "TensorRT-LLM"
	Rates  []StackRate
	// Unmeasured are the classes the stack runs its own kernels for but
	// no measurement prices: they keep the profile's (vLLM's) numbers.
	Unmeasured []string
}

// Apply returns a copy of p with every rate applied (p is not changed).
// A rate whose precision p has no entry for is an error: there is nothing
// measured to re-rate.
func (s *Stack) Apply(p *Profile) (*Profile, error) {
	c := p.Clone()
	for _, r := range s.Rates {
		i := -1
		for j := range c.GEMMPrecisions {
			if d, err := models.ParseDType(c.GEMMPrecisions[j].DType); err == nil && d == r.DType {
				i = j
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("calibrate: the %s profile has no [[gemm_precision]] %s entry for %s's %s to re-rate", p.GPU, r.DType, s.Engine, r.Class)
		}
		e := &c.GEMMPrecisions[i]
		e.ComputeScale = min(maxComputeScale, e.ComputeScale*r.ComputeMul)
		if e.MemoryScale > 0 {
			e.MemoryScale *= r.MemoryMul
		}
		e.Source += fmt.Sprintf("; re-rated for %s: compute × %.3f, memory × %.3f (%s)", s.Engine, r.ComputeMul, r.MemoryMul, r.Source)
	}
	return c, nil
}

// Describe is the run header's sentence: "<profile> re-rated for
// TensorRT-LLM: <classes> (source); <classes> not measured, vLLM's".
func (s *Stack) Describe(profile string) string {
	var b strings.Builder
	b.WriteString(profile)
	if len(s.Rates) > 0 {
		fmt.Fprintf(&b, " re-rated for %s:", s.Engine)
		for i, r := range s.Rates {
			if i > 0 {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " %s compute × %.3f, memory × %.3f (%s)", r.Class, r.ComputeMul, r.MemoryMul, r.Source)
		}
	} else {
		fmt.Fprintf(&b, ", nothing re-rated for %s", s.Engine)
	}
	if len(s.Unmeasured) > 0 {
		fmt.Fprintf(&b, "; %s not measured, vLLM's", strings.Join(s.Unmeasured, ", "))
	}
	return b.String()
}

// TRTLLMFP4Backends are the FlashInfer mm_fp4 backends of the embedded
// FP4 table that run TensorRT-LLM's own kernels: "trtllm" (trtllm-gen
// cubins) and "cutlass" (FlashInfer's csrc/nv_internal/tensorrt_llm copy
// of TensorRT-LLM's CUTLASS NVFP4 GEMM). cudnn and cutedsl are not
// TensorRT-LLM's and are left out. TensorRT-LLM autotunes between its
// tactics, so a shape takes the faster of the two.
var TRTLLMFP4Backends = []string{"cutlass", "trtllm"}

// trtllmUnmeasured are TensorRT-LLM's own kernel classes without a
// measurement here: FP8 GEMMs on Hopper (cuBLASLt/CUTLASS FP8; no public
// table times them against vLLM's CUTLASS scaled_mm on the same shapes),
// XQA decode attention on Hopper (vLLM PR #43232 gives XQA/FAv3 ratios
// 0.98–1.70× without the head shapes, and the h100 profile's decode
// attention already runs at 83 % of HBM bandwidth), FMHA prefill attention
// (no table). Decode attention on Blackwell is not listed: the b200
// profile's is fitted to trtllm-gen's decode kernel already (vLLM PR
// #19825), the kernel TensorRT-LLM runs.
var trtllmUnmeasured = []string{"FP8 GEMMs (Hopper cuBLASLt/CUTLASS)", "XQA decode attention (Hopper)", "FMHA prefill attention"}

// fp4Rate memoizes TRTLLMStack's FP4 rate per profile.
var fp4Rate sync.Map // *Profile → fp4RateResult

type fp4RateResult struct {
	r   StackRate
	err error
}

// TRTLLMStack is TensorRT-LLM's re-rating of profile p on GPU g: on a GPU
// with an FP4 peak and an fp4 [[gemm_precision]] entry (Blackwell), its
// FP4 GEMMs are re-rated to TensorRT-LLM's NVFP4 kernels as FlashInfer
// measured them on B200 (FP4TRTLLMRate); the other classes are listed as
// not measured. The result is memoized per profile.
func TRTLLMStack(p *Profile, g *hardware.GPU) (*Stack, error) {
	s := &Stack{Engine: "TensorRT-LLM", Unmeasured: trtllmUnmeasured}
	if g.PeakFLOPS(models.FP4) == g.PeakFLOPS(models.FP8) { // no FP4 tensor cores (Hopper and older)
		return s, nil
	}
	if _, ok := p.precision(models.FP4); !ok {
		s.Unmeasured = append([]string{"FP4 GEMMs (no fp4 entry in this profile)"}, s.Unmeasured...)
		return s, nil
	}
	v, ok := fp4Rate.Load(p)
	if !ok {
		r, err := FP4TRTLLMRate(p, g)
		v, _ = fp4Rate.LoadOrStore(p, fp4RateResult{r, err})
	}
	res := v.(fp4RateResult)
	if res.err != nil {
		return nil, res.err
	}
	s.Rates = append(s.Rates, res.r)
	return s, nil
}

// FP4TRTLLMRate derives the FP4 GEMM multipliers from the embedded table
// (testdata/blackwell/flashinfer-b200-fp4-gemm.csv), each shape at the
// faster of TRTLLMFP4Backends: ComputeMul c so that the profile's median
// signed error on the compute-bound shapes (M ≥ 512: 1024×7168×4608,
// FlashInfer PR #1979) is zero, solved by bisection between 1/4 and the
// multiplier that takes the scale to maxComputeScale (the error falls
// monotonically as c grows). MemoryMul stays 1: the memory-bound rows
// (M ≤ 16, 7168×2048, vLLM PR #42235) all take 3.3–3.6 µs, 2.2 TB/s of
// weight bytes, slower than the profile's FP4 bandwidth; the profile is
// slower there (+177–205 %) through its fixed per-GEMM overhead (Vidur's
// H100 kernels, launch included), which one weight shape cannot separate
// from bandwidth, so neither is re-rated. The timed calls take
// pre-quantized activations: TensorRT-LLM's separate activation quantize
// kernel (fp4_quantize) is not priced.
func FP4TRTLLMRate(p *Profile, g *hardware.GPU) (StackRate, error) {
	rows, err := ReadFP4GEMM(bytes.NewReader(b200FP4CSV), B200FP4File)
	if err != nil {
		return StackRate{}, err
	}
	best := map[[3]int]float64{}
	for _, r := range rows {
		if !containsStr(TRTLLMFP4Backends, r.Backend) {
			continue
		}
		k := [3]int{r.M, r.N, r.K}
		best[k] = max(best[k], r.TFLOPS)
	}
	var large []Sample
	for k, tf := range best {
		m, n, kk := float64(k[0]), float64(k[1]), float64(k[2])
		flops := 2 * m * n * kk
		s := Sample{GPU: g.Name, TP: 1, Seconds: flops / (tf * 1e12),
			Op: models.Op{Kind: models.OpMLPUp, Count: 1, Tokens: k[0], FLOPs: flops, N: k[1], K: k[2], Compute: models.FP4,
				Bytes: n*kk*models.FP4.Bytes() + (m*kk+m*n)*models.BF16.Bytes()}}
		if k[0] >= 512 {
			large = append(large, s)
		}
	}
	if len(large) == 0 {
		return StackRate{}, fmt.Errorf("calibrate: %s: no compute-bound (M ≥ 512) rows of %v", B200FP4File, TRTLLMFP4Backends)
	}
	median := func(c, m float64, ss []Sample) (float64, error) {
		st := &Stack{Engine: "TensorRT-LLM", Rates: []StackRate{{Class: "FP4 GEMMs", DType: models.FP4, ComputeMul: c, MemoryMul: m}}}
		q, err := st.Apply(p)
		if err != nil {
			return 0, err
		}
		l, err := predictAll(q, g, ss)
		if err != nil {
			return 0, err
		}
		pe := make([]float64, len(l))
		for i := range l {
			pe[i] = l[i].pe
		}
		sort.Float64s(pe)
		return quantile(pe, 0.5), nil
	}
	e, _ := p.precision(models.FP4)
	solve := func(hi float64, f func(x float64) (float64, error)) (float64, error) {
		lo := 0.25
		for range 60 {
			mid := (lo + hi) / 2
			e, err := f(mid)
			if err != nil {
				return 0, err
			}
			if e > 0 { // still slower than measured: a larger multiplier
				lo = mid
			} else {
				hi = mid
			}
		}
		return (lo + hi) / 2, nil
	}
	mm := 1.0
	cm, err := solve(maxComputeScale/e.ComputeScale, func(x float64) (float64, error) { return median(x, mm, large) })
	if err != nil {
		return StackRate{}, err
	}
	return StackRate{Class: "FP4 GEMMs", DType: models.FP4, ComputeMul: cm, MemoryMul: mm,
		Source: fmt.Sprintf("measured: TensorRT-LLM's NVFP4 kernels (FlashInfer mm_fp4 backends %s, the faster a shape) on B200, "+
			"compute from %d shape of M ≥ 512 (FlashInfer PR #1979), hardware/calibrate/testdata/%s; memory and overheads not re-rated; activation quantize not priced",
			strings.Join(TRTLLMFP4Backends, " and "), len(large), B200FP4File)}, nil
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
