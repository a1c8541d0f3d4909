package calibrate

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// This file fits the GEMM model to XLA's measured matmul table per GPU and
// precision, held out by shape, and turns the fits into the per-precision
// GEMM efficiency scales a profile carries (GEMMPrecision).

// XLAFit is the GEMM model fitted to XLA's table for one GPU and precision:
//
//	o + max(FLOPs/(peak·η)·(1 + h/(B·M)), bytes/(MemBW·μ))
//
// with peak the GPU's dense peak for the precision.
type XLAFit struct {
	GPU   string
	DType models.DType
	// OverheadS, ComputeEff, HalfTokens and MemoryEff are o, η, h and μ.
	OverheadS, ComputeEff, HalfTokens, MemoryEff float64
	// Samples are the rows fitted; Rejected the rows left out as faster
	// than the dense peak (not physical: SOURCE.md's sm_90 FP8 caveat).
	Samples, Rejected int
	// InSample is the fit on every row; HeldOut pools each shape's rows
	// predicted by the fit on the other folds (xlaFolds folds of (M, N, K)
	// shapes, all batch sizes of a shape in one fold).
	InSample, HeldOut ErrStats
	// LargeEff is the median fraction of the peak over the compute-bound
	// shapes (2·B·M·N·K ≥ 2³⁵ FLOPs), a fit-free check on ComputeEff.
	LargeEff float64
}

// xlaFolds is the number of shape folds of the held-out fit.
const xlaFolds = 5

// xlaLarge is the FLOPs from which a GEMM counts as compute-bound for
// XLAFit.LargeEff: 2³⁵ (e.g. 2·2048³ = 2³⁴ is not, 2·4096·4096·2048 is).
const xlaLarge = 1 << 35

// FitXLA fits the GEMM model to XLA's rows of one GPU and precision (see
// XLAFit). g must be the catalog GPU the rows are of; false if there are
// fewer than minGEMMSamples usable rows.
func FitXLA(rows []XLARow, g *hardware.GPU, d models.DType) (XLAFit, bool) {
	f := XLAFit{GPU: g.Name, DType: d}
	peak := g.PeakFLOPS(d)
	type shape struct{ m, n, k int }
	var ss []Sample
	var sh []shape
	var large []float64
	for i := range rows {
		s, ok := rows[i].sample(g.Name, d)
		if !ok {
			continue
		}
		if s.Op.FLOPs/s.Seconds > peak {
			f.Rejected++
			continue
		}
		ss = append(ss, s)
		sh = append(sh, shape{rows[i].M, rows[i].N, rows[i].K})
		if s.Op.FLOPs >= xlaLarge {
			large = append(large, s.Op.FLOPs/s.Seconds/peak)
		}
	}
	if len(ss) < minGEMMSamples {
		return f, false
	}
	sort.Float64s(large)
	if len(large) > 0 {
		f.LargeEff = quantile(large, 0.5)
	}
	f.Samples = len(ss)
	m := fitXLAParams(ss, g)
	f.OverheadS, f.ComputeEff, f.HalfTokens, f.MemoryEff = m.o, m.ec, m.h, m.em
	f.InSample = errStats(xlaErrors(m, ss, g))

	// Held out by shape: shape (M, N, K) goes to fold (i_M + i_N + i_K)
	// mod xlaFolds, i_X the rank of X among the distinct values of its
	// dimension, so that every fold holds every value of each dimension
	// (on XLA's 5 × 5 × 5 grid, 25 shapes a fold, no two in a fold
	// differing in one dimension only); a shape's batch sizes stay together.
	rank := func(get func(shape) int) map[int]int {
		var vs []int
		seen := map[int]bool{}
		for _, s := range sh {
			if v := get(s); !seen[v] {
				seen[v] = true
				vs = append(vs, v)
			}
		}
		sort.Ints(vs)
		r := map[int]int{}
		for i, v := range vs {
			r[v] = i
		}
		return r
	}
	rm, rn, rk := rank(func(s shape) int { return s.m }), rank(func(s shape) int { return s.n }), rank(func(s shape) int { return s.k })
	fold := func(s shape) int { return (rm[s.m] + rn[s.n] + rk[s.k]) % xlaFolds }
	var pe []float64
	for k := range xlaFolds {
		var train, test []Sample
		for i := range ss {
			if fold(sh[i]) == k {
				test = append(test, ss[i])
			} else {
				train = append(train, ss[i])
			}
		}
		if len(test) == 0 || len(train) < minGEMMSamples {
			continue
		}
		pe = append(pe, xlaErrors(fitXLAParams(train, g), test, g)...)
	}
	f.HeldOut = errStats(pe)
	return f, true
}

// fitXLAParams fits the GEMM form without a wave term.
func fitXLAParams(ss []Sample, g *hardware.GPU) params {
	return gemmForm.fit(points(ss, g))
}

// xlaErrors are the signed percentage errors of m on ss.
func xlaErrors(m params, ss []Sample, g *hardware.GPU) []float64 {
	pts := points(ss, g)
	pe := make([]float64, len(pts))
	for i := range pts {
		pe[i] = 100 * (m.at(&pts[i])/math.Exp(pts[i].y) - 1)
	}
	return pe
}

// Bases of a GEMMPrecision: what its numbers rest on.
const (
	BasisMeasured    = "measured"    // fitted to measurements of this GPU in this precision
	BasisTransferred = "transferred" // measured on another GPU or precision, carried over
	BasisEstimate    = "estimate"    // nothing measured: reasoned, see its source
)

// GEMMPrecision adjusts a profile's GEMM classes (qkv, out_proj, mlp_up,
// mlp_down, lm_head, moe_router) for GEMMs whose math runs in DType (the
// precision whose peak prices them, hardware.GPU.PeakFLOPS): their compute
// and wave efficiencies are multiplied by ComputeScale (capped at 1) and
// ExtraHalfTokens is added to their half-saturation token count, so one
// occurrence's compute term is
//
//	FLOPs / (peak(DType) · min(1, η_k·ComputeScale)) · (1 + (h_k + ExtraHalfTokens)/tokens)
//
// Memory terms and overheads are not adjusted. The built-in profiles take
// both numbers from XLA's measured matmul table (FitXLA): ComputeScale is
// η(GPU, DType) / η(base), ExtraHalfTokens h(GPU, DType) − h(base) (≥ 0),
// with base the XLA fit of the GPU and precision the [[op]] parameters were
// fitted on (H100, BF16).
type GEMMPrecision struct {
	DType           string  `toml:"dtype"` // "bf16", "fp8" or "fp4"
	ComputeScale    float64 `toml:"compute_scale"`
	ExtraHalfTokens float64 `toml:"extra_half_tokens"`
	// Basis is BasisMeasured, BasisTransferred or BasisEstimate; Source
	// says which data and what was assumed.
	Basis  string `toml:"basis"`
	Source string `toml:"source"`
}

// maxComputeScale bounds GEMMPrecision.ComputeScale.
const maxComputeScale = 4

func validatePrecisions(ps []GEMMPrecision, fe func(field, format string, a ...any) error) error {
	seen := map[models.DType]int{}
	for i, g := range ps {
		at := func(f string) string { return fmt.Sprintf("gemm_precision[%d].%s", i, f) }
		d, err := models.ParseDType(g.DType)
		if err != nil {
			return fe(at("dtype"), "%s", strings.TrimPrefix(err.Error(), "models: "))
		}
		if j, dup := seen[d]; dup {
			return fe(at("dtype"), "%q again (also gemm_precision[%d])", g.DType, j)
		}
		seen[d] = i
		if !(g.ComputeScale >= minEff && g.ComputeScale <= maxComputeScale) {
			return fe(at("compute_scale"), "must be in [%g, %g], got %v", minEff, float64(maxComputeScale), g.ComputeScale)
		}
		if !(g.ExtraHalfTokens >= 0 && g.ExtraHalfTokens <= maxHalfTokens) {
			return fe(at("extra_half_tokens"), "must be in [0, %d] tokens, got %v", maxHalfTokens, g.ExtraHalfTokens)
		}
		switch g.Basis {
		case BasisMeasured, BasisTransferred, BasisEstimate:
		default:
			return fe(at("basis"), "%q: want %q, %q or %q", g.Basis, BasisMeasured, BasisTransferred, BasisEstimate)
		}
		if g.Source == "" {
			return fe(at("source"), "must say what the numbers rest on")
		}
	}
	return nil
}

func writePrecisions(b *bytes.Buffer, ps []GEMMPrecision) {
	if len(ps) == 0 {
		return
	}
	b.WriteString("\n# GEMM classes whose math runs in dtype: compute_eff and wave_eff × compute_scale (capped at 1),\n")
	b.WriteString("# half_tokens + extra_half_tokens; basis says whether measured, transferred or estimated.\n")
	for _, g := range ps {
		fmt.Fprintf(b, "[[gemm_precision]]\ndtype = %s\ncompute_scale = %s\nextra_half_tokens = %s\nbasis = %s\nsource = %s\n",
			tomlQuote(g.DType), tomlFloat(g.ComputeScale), tomlFloat(g.ExtraHalfTokens), tomlQuote(g.Basis), tomlQuote(g.Source))
	}
}

// precision returns the entry for d, or false.
func (p *Profile) precision(d models.DType) (GEMMPrecision, bool) {
	for _, g := range p.GEMMPrecisions {
		if pd, err := models.ParseDType(g.DType); err == nil && pd == d {
			return g, true
		}
	}
	return GEMMPrecision{}, false
}

// mathDType is the precision whose peak prices math of precision d on g
// (hardware.GPU.PeakFLOPS's fallback: FP4 → FP8 → BF16).
func mathDType(g *hardware.GPU, d models.DType) models.DType {
	switch {
	case d == models.FP4 && g.FP4FLOPS > 0:
		return models.FP4
	case d != models.BF16 && g.FP8FLOPS > 0:
		return models.FP8
	}
	return models.BF16
}
