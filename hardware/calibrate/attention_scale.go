package calibrate

import (
	"fmt"
	"math"
)

// The attention transfer's compute scale. A GPU without attention timings
// takes the fit of a GPU that runs the same kernels (attnTransfer), its
// efficiencies read as fractions of the target's peaks. But a datasheet
// peak is not what a card sustains: the RTX 4090 boosts past its spec
// (its GEMM classes fit compute_eff 0.95–1.00 of 165 TFLOP/s), while an
// A100's GEMMs reach 0.70–0.76 of 312 (Vidur's traces), an L40S's about
// 0.73 of what a 4090's do (the square-matmul benchmark behind its
// [[gemm_precision]] bf16 scale) and an H100 PCIe's 0.81 of an SXM's. The
// tensor cores and clocks that set a GEMM's fraction of the peak set
// FlashAttention's too, so a transfer scales the attention's compute
// efficiencies (prefill, its per-row bound, and the decodes of a mixed
// call) by gemmComputeEff(target) / gemmComputeEff(source).
//
// Measured between the bundles' GPUs (TestAttentionComputeScale, the
// attention transfer rows of `servesim calibrate --report`), median / p90
// absolute error and median signed error of every call, all contexts:
//
//	RTX 4090 → RTX PRO 6000 (both FlashAttention-2; scale 0.772)
//	  unscaled 31.2 / 61.1 / −27.4 %, scaled 20.9 / 56.0 / −12.0 %
//	  (prefill-only calls −38.0 → −24.0 % signed)
//	RTX PRO 6000 → RTX 4090 (scale 1.296)
//	  unscaled 53.1 / 110.1 / +52.3 %, scaled 28.3 / 68.0 / +20.1 %
//	RTX 4090 → H100 (FlashAttention-2 fit to FlashAttention-3; 0.758)
//	  unscaled 21.3 / 65.6 / −2.8 %, scaled 20.0 / 75.4 / +0.1 %
//
// (H100 ↔ RTX PRO 6000 have the same GEMM fraction, 0.748 and 0.761, so
// their scale is 1.02 and moves nothing.) Decode-only calls are
// bandwidth-bound (their compute term never binds, attention.go), so the
// scale leaves them alone; DecodeComputeEff stays 1.
//
// B200 and GB200 keep the unscaled H100 fit: vLLM runs other attention
// kernels on sm_100 than FlashAttention-3, which no measurement here
// relates to the GEMMs' fraction.

// attnComputeScaled names the transfers that take the compute scale.
// (h200 is the H100's die and fit: its scale is 1.)
var attnComputeScaled = map[string]bool{"a100": true, "a100-pcie": true, "l40s": true, "h100-pcie": true}

// gemmComputeEff is the geometric mean over the four dense GEMM classes
// (qkv, out_proj, mlp_up, mlp_down) of p's BF16 compute efficiency:
// compute_eff times its [[gemm_precision]] bf16 compute_scale where it
// has one, capped at 1 as the kernel model caps it. It returns 0 for a
// profile without those classes.
func gemmComputeEff(p *Profile) float64 {
	s := 1.0
	for _, gp := range p.GEMMPrecisions {
		if gp.DType == "bf16" && gp.ComputeScale > 0 {
			s = gp.ComputeScale
		}
	}
	l, n := 0.0, 0
	for _, o := range p.Ops {
		switch o.Op {
		case "qkv", "out_proj", "mlp_up", "mlp_down":
			if !(o.ComputeEff > 0) {
				return 0
			}
			l += math.Log(min(1, o.ComputeEff*s))
			n++
		}
	}
	if n != 4 {
		return 0
	}
	return math.Exp(l / 4)
}

// scaleCompute returns a with its compute efficiencies (prefill, per-row
// prefill, mixed-call decodes) times s, capped at 1.
func (a Attention) scaleCompute(s float64) Attention {
	a.ComputeEff = min(1, a.ComputeEff*s)
	if a.PrefillRowComputeEff > 0 {
		a.PrefillRowComputeEff = min(1, a.PrefillRowComputeEff*s)
	}
	if a.MixedComputeEff > 0 {
		a.MixedComputeEff = min(1, a.MixedComputeEff*s)
	}
	return a
}

// attnScale returns the compute scale of the attention transfer from src
// to dst (gemmComputeEff(dst) / gemmComputeEff(src)) and a sentence for
// the profile's note; 1 and "" where either profile lacks the GEMM
// classes.
func attnScale(src, dst *Profile) (float64, string) {
	es, ed := gemmComputeEff(src), gemmComputeEff(dst)
	if es == 0 || ed == 0 {
		return 1, ""
	}
	s := ed / es
	return s, fmt.Sprintf(" Its compute efficiencies are scaled by %.3f, the BF16 GEMM classes' compute efficiency on %s (%.3f, geometric mean of qkv, out_proj, mlp_up, mlp_down) over %s's (%.3f): "+
		"a card's sustained fraction of its peak sets FlashAttention's as it sets the GEMMs' (between the RTX 4090 and RTX PRO 6000 bundles this scale takes the transferred attention's median error from 31.2 to 20.9 %% and 53.1 to 28.3 %%).",
		s, dst.GPU, ed, src.GPU, es)
}
