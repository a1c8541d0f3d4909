package calibrate

import (
	"bytes"
	"fmt"
	"path/filepath"
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
// with peak the GPU's dense peak for the precision. Where XLA timed a row as
// a transpose plus the GEMM (Transposed: FP8 before Blackwell, see
// xla_transpose.go), a row is (T + G)/2 with G that model and
// T = o_T + 2·B·K·N/(MemBW·μ_T).
type XLAFit struct {
	GPU   string
	DType models.DType
	// OverheadS, ComputeEff, HalfTokens and MemoryEff are o, η, h and μ.
	OverheadS, ComputeEff, HalfTokens, MemoryEff float64
	// Transposed says the rows were timed as (T + G)/2;
	// TransposeOverheadS and TransposeMemoryEff are then o_T and μ_T
	// (only o + o_T is identified: both add to every row).
	Transposed                             bool
	TransposeOverheadS, TransposeMemoryEff float64
	// Samples are the rows fitted; AbovePeak how many of them record more
	// than the dense peak (taken at face value, one kernel a dot).
	Samples, AbovePeak int
	// InSample is the fit on every row; HeldOut pools each shape's rows
	// predicted by the fit on the other folds (xlaFolds folds of (M, N, K)
	// shapes, all batch sizes of a shape in one fold).
	InSample, HeldOut ErrStats
	// LargeEff is the median fraction of the peak over the compute-bound
	// shapes (2·B·M·N·K ≥ 2³⁵ FLOPs), a fit-free check on ComputeEff; for
	// transposed rows it is of the GEMM alone, 2·(recorded) − T of the fit.
	LargeEff float64
}

// xlaFolds is the number of shape folds of the held-out fit.
const xlaFolds = 5

// xlaLarge is the FLOPs from which a GEMM counts as compute-bound for
// XLAFit.LargeEff: 2³⁵ (e.g. 2·2048³ = 2³⁴ is not, 2·4096·4096·2048 is).
const xlaLarge = 1 << 35

// FitXLA fits the GEMM model to XLA's rows of one GPU and precision (see
// XLAFit). g must be the catalog GPU the rows are of; false if there are
// fewer than minGEMMSamples usable rows or they mix transposed and
// untransposed timings.
func FitXLA(rows []XLARow, g *hardware.GPU, d models.DType) (XLAFit, bool) {
	f := XLAFit{GPU: g.Name, DType: d}
	peak := g.PeakFLOPS(d)
	type shape struct{ m, n, k int }
	var ss []Sample
	var rs []*XLARow
	var sh []shape
	nt := 0
	for i := range rows {
		s, ok := rows[i].sample(g.Name, d)
		if !ok {
			continue
		}
		if s.Op.FLOPs/s.Seconds > peak {
			f.AbovePeak++
		}
		if xlaTransposed(rows[i].Arch, rows[i].DType) {
			nt++
		}
		ss = append(ss, s)
		rs = append(rs, &rows[i])
		sh = append(sh, shape{rows[i].M, rows[i].N, rows[i].K})
	}
	if len(ss) < minGEMMSamples || (nt != 0 && nt != len(ss)) {
		return f, false
	}
	f.Transposed = nt > 0
	f.Samples = len(ss)
	pts := xlaPoints(ss, rs, g)
	m := fitXLAModel(pts, f.Transposed)
	f.OverheadS, f.ComputeEff, f.HalfTokens, f.MemoryEff = m.gemm.o, m.gemm.ec, m.gemm.h, m.gemm.em
	f.TransposeOverheadS, f.TransposeMemoryEff = m.oT, m.muT
	f.InSample = errStats(xlaModelErrors(m, pts))
	var large []float64
	for i := range pts {
		if ss[i].Op.FLOPs < xlaLarge {
			continue
		}
		t := ss[i].Seconds
		if f.Transposed {
			t = 2*t - (m.oT + pts[i].tb/m.muT)
		}
		large = append(large, ss[i].Op.FLOPs/t/peak)
	}
	sort.Float64s(large)
	if len(large) > 0 {
		f.LargeEff = quantile(large, 0.5)
	}

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
		var train, test []xlaPoint
		for i := range pts {
			if fold(sh[i]) == k {
				test = append(test, pts[i])
			} else {
				train = append(train, pts[i])
			}
		}
		if len(test) == 0 || len(train) < minGEMMSamples {
			continue
		}
		pe = append(pe, xlaModelErrors(fitXLAModel(train, f.Transposed), test)...)
	}
	f.HeldOut = errStats(pe)
	return f, true
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
// and, if MemoryScale is set (> 0), their memory efficiency is multiplied by
// it (capped at 1): bytes / (MemBW · min(1, μ_k·MemoryScale)). Overheads are
// not adjusted. The built-in profiles take the numbers from XLA's measured
// matmul table (FitXLA): ComputeScale is η(GPU, DType) / η(base),
// ExtraHalfTokens h(GPU, DType) − h(base) (≥ 0), MemoryScale μ(GPU, DType) /
// μ(base), with base the XLA fit of the GPU and precision the [[op]]
// parameters were fitted on (H100, BF16).
type GEMMPrecision struct {
	DType           string  `toml:"dtype"` // "bf16", "fp8" or "fp4"
	ComputeScale    float64 `toml:"compute_scale"`
	ExtraHalfTokens float64 `toml:"extra_half_tokens"`
	// MemoryScale multiplies the GEMM classes' memory efficiency; 0 (or
	// absent): not adjusted.
	MemoryScale float64 `toml:"memory_scale"`
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
		if g.MemoryScale != 0 && !(g.MemoryScale >= minEff && g.MemoryScale <= maxComputeScale) {
			return fe(at("memory_scale"), "must be 0 (not adjusted) or in [%g, %g], got %v", minEff, float64(maxComputeScale), g.MemoryScale)
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
	b.WriteString("# half_tokens + extra_half_tokens, memory_eff × memory_scale (capped at 1; absent: not adjusted);\n")
	b.WriteString("# basis says whether measured, transferred or estimated.\n")
	for _, g := range ps {
		fmt.Fprintf(b, "[[gemm_precision]]\ndtype = %s\ncompute_scale = %s\nextra_half_tokens = %s\n",
			tomlQuote(g.DType), tomlFloat(g.ComputeScale), tomlFloat(g.ExtraHalfTokens))
		if g.MemoryScale != 0 {
			fmt.Fprintf(b, "memory_scale = %s\n", tomlFloat(g.MemoryScale))
		}
		fmt.Fprintf(b, "basis = %s\nsource = %s\n", tomlQuote(g.Basis), tomlQuote(g.Source))
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

// PrecisionNote says how the profile prices GEMMs whose weights are in d on
// g when it has no [[gemm_precision]] entry for the precision their math
// runs in (mathDType): at that precision's peak with the BF16 efficiencies,
// an assumption no data backs. It is "" where nothing is assumed (BF16
// math, or an entry exists).
func (p *Profile) PrecisionNote(g *hardware.GPU, d models.DType) string {
	md := mathDType(g, d)
	if md == models.BF16 {
		return ""
	}
	if _, ok := p.precision(md); ok {
		return ""
	}
	return fmt.Sprintf("%s GEMMs: no %s scale in this profile, so its BF16 efficiencies at the %s peak (assumed, not measured)", d, md, md)
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

// XLATable is XLA's matmul table read and fitted: the four fits of the
// catalog GPUs and precisions it holds, by "gpu/dtype" ("h100/bf16").
type XLATable struct {
	File string
	Rows []XLARow
	Fits map[string]XLAFit
	// h100Bias is the median signed error of the built-in H100 profile on
	// the sm_90 BF16 rows (set by GenerateBuiltin, for the notes).
	h100Bias float64
	// vllm is vLLM's B200 GEMM benchmarks (vllm_gemm.go): B200 FP4 is
	// fitted to it, and B200 FP8 cross-checked against it.
	vllm *VLLMTable
}

// xlaCells are the fits of an XLATable, in report order.
var xlaCells = []struct {
	gpu string
	d   models.DType
}{{"h100", models.BF16}, {"h100", models.FP8}, {"b200", models.BF16}, {"b200", models.FP8}}

// LoadXLA reads XLA's matmul table (matmul.csv) and fits every GPU and
// precision it holds.
func LoadXLA(path string) (*XLATable, error) {
	rows, err := readFile(path, filepath.Base(path), ReadXLAMatmul)
	if err != nil {
		return nil, err
	}
	t := &XLATable{File: filepath.Base(path), Rows: rows, Fits: map[string]XLAFit{}}
	if t.vllm, err = LoadVLLMB200(); err != nil {
		return nil, err
	}
	for _, c := range xlaCells {
		g, err := hardware.Builtin().Get(c.gpu)
		if err != nil {
			return nil, err
		}
		f, ok := FitXLA(rows, g, c.d)
		if !ok {
			return nil, fmt.Errorf("calibrate: %s: fewer than %d usable %s rows for %s", path, minGEMMSamples, c.d, c.gpu)
		}
		t.Fits[c.gpu+"/"+c.d.String()] = f
	}
	return t, nil
}

// DefaultXLAPath is where the built-in profiles and the report find XLA's
// table: the xla-matmul folder beside the Vidur data (both folders of
// ../shared/data).
func DefaultXLAPath(vidurDir string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(vidurDir)), "xla-matmul", "matmul.csv")
}

// relative returns the GEMMPrecision numbers of fit f against base: η_f/η_b,
// max(0, h_f − h_b) and μ_f/μ_b.
func relative(f, base XLAFit) (float64, float64, float64) {
	return f.ComputeEff / base.ComputeEff, max(0, f.HalfTokens-base.HalfTokens), f.MemoryEff / base.MemoryEff
}

// Precisions returns the [[gemm_precision]] entries of the built-in
// profile of gpu, whose [[op]] GEMM parameters are the H100's BF16 Vidur
// fit (h100, and h200 and b200 transferred from it); nil for a GPU the
// table says nothing about (a100).
//
//   - h100 FP8: measured, the sm_90 FP8 fit read as a transpose plus the
//     GEMM (xla_transpose.go) against the sm_90 BF16 fit; compute only: its
//     GEMM memory efficiency is not identified apart from the transpose's
//     (it sits at its bound, 1), so memory is not adjusted.
//   - h200 FP8: the H100's, transferred: the same GH100 chip and tensor-core
//     peaks (only HBM differs, which the [[op]] transfer carries).
//   - b200 BF16 and FP8: measured, the sm_100_B200 fits against the sm_90
//     BF16 fit (the Hopper kernels the [[op]] numbers describe): compute
//     efficiency, half-saturation tokens and the GEMMs' memory efficiency
//     (the table's GEMMs up to 4096³ are memory-bound at the roofline in
//     about 60 % of its rows on both GPUs, so μ is fitted on each).
//   - b200 FP4: measured, vLLM's NVFP4 GEMM benchmarks on B200 relative
//     to the same runs' BF16 GEMM, applied to the B200 BF16 entry
//     (VLLMTable.fp4Precision). Without that table (never for the built-in
//     profiles: it is embedded) an estimate: FP8's measured scale times ρ,
//     the B200's measured loss of compute-bound efficiency from BF16 to FP8
//     (median fraction of the peak over GEMMs of 2³⁵ FLOPs or more), assumed
//     to repeat from FP8 to FP4; never below FP8's absolute throughput (half
//     FP8's scale on the doubled peak), with FP8's extra half-saturation
//     tokens and memory scale.
//   - b200 FP8 is cross-checked against vLLM's FP8 benchmarks (its source
//     says by how much); XLA's fit is kept.
func (t *XLATable) Precisions(gpu string) []GEMMPrecision {
	base := t.Fits["h100/bf16"]
	hf, bf := t.Fits["h100/fp8"], t.Fits["b200/fp8"]
	bb := t.Fits["b200/bf16"]
	pct := func(f XLAFit) string {
		return fmt.Sprintf("η %.3f, h %.0f tokens, μ %.3f (held out by shape: median %.1f %%, p90 %.1f %%)", f.ComputeEff, f.HalfTokens, f.MemoryEff, f.HeldOut.Median, f.HeldOut.P90)
	}
	src := "XLA's measured matmul table (../shared/data/xla-matmul/" + t.File + ", openxla/xla e97611c4)"
	switch gpu {
	case "h100", "h200":
		s, h, _ := relative(hf, base)
		fp8 := GEMMPrecision{DType: "fp8", ComputeScale: s, ExtraHalfTokens: h, Basis: BasisMeasured,
			Source: fmt.Sprintf("%s: sm_90 FP8 fit (%s) against the sm_90 BF16 fit (%s). XLA timed each sm_90 FP8 row as a transpose of the "+
				"b×k×n rhs plus the cuBLASLt GEMM and stored the median over both kernels' events, (T + G)/2 (gemm_rewriter.cc: non-Blackwell "+
				"FP8 needs a column-major rhs; hlo_op_profiler.cc: median over all kernels), which is why %d of %d rows exceed the dense FP8 "+
				"peak; fitted as (o_T + 2·b·k·n/(MemBW·μ_T) + G)/2, μ_T %.3f. Memory not adjusted: the GEMM's μ is not identified apart "+
				"from the transpose's (fit at its bound)", src, pct(hf), pct(base), hf.AbovePeak, hf.Samples, hf.TransposeMemoryEff)}
		if gpu == "h200" {
			fp8.Basis = BasisTransferred
			fp8.Source = "the H100's, measured on sm_90 (the same GH100 chip and tensor-core peaks; no H200 matmul table): " + fp8.Source
		}
		return []GEMMPrecision{fp8}
	case "b200":
		sb, hbb, mb := relative(bb, base)
		s8, h8, m8 := relative(bf, base)
		rho := bf.LargeEff / bb.LargeEff
		s4 := max(s8*rho, s8/2)
		fp8 := GEMMPrecision{DType: "fp8", ComputeScale: s8, ExtraHalfTokens: h8, MemoryScale: m8, Basis: BasisMeasured,
			Source: fmt.Sprintf("%s: sm_100_B200 FP8 (E4M3/E5M2 inputs, BF16 out; one kernel a dot on Blackwell) fit (%s) against the sm_90 BF16 fit", src, pct(bf))}
		fp4 := GEMMPrecision{DType: "fp4", ComputeScale: s4, ExtraHalfTokens: h8, MemoryScale: m8, Basis: BasisEstimate,
			Source: fmt.Sprintf("ESTIMATE, no FP4 GEMM measured: FP8's measured scale %.3f × ρ = %.3f, the B200's measured drop in compute-bound efficiency "+
				"from BF16 to FP8 (median fraction of the peak over GEMMs ≥ 2³⁵ FLOPs: %.3f → %.3f in %s), assumed to repeat from FP8 to FP4; "+
				"floor: FP8's absolute throughput (scale %.3f); FP8's extra half-saturation tokens and memory scale", s8, rho, bb.LargeEff, bf.LargeEff, t.File, s8/2)}
		if t.vllm != nil {
			fp8.Source += ". " + t.vllm.fp8Check(sb, s8)
			fp4 = t.vllm.fp4Precision(sb, hbb, mb)
		}
		return []GEMMPrecision{
			{DType: "bf16", ComputeScale: sb, ExtraHalfTokens: hbb, MemoryScale: mb, Basis: BasisMeasured,
				Source: fmt.Sprintf("%s: sm_100_B200 BF16 fit (%s) against the sm_90 BF16 fit (%s), the Hopper kernels the [[op]] numbers were fitted on", src, pct(bb), pct(base))},
			fp8, fp4,
		}
	}
	return nil
}

// precisionSummary is the Describe clause of a profile's precisions, e.g.
// "GEMM efficiency × 0.80 bf16 (measured), × 0.87 fp8 (measured), × 0.81 fp4 (estimate)".
func (p *Profile) precisionSummary() string {
	if len(p.GEMMPrecisions) == 0 {
		return ""
	}
	parts := make([]string, len(p.GEMMPrecisions))
	for i, g := range p.GEMMPrecisions {
		parts[i] = fmt.Sprintf("× %.2f %s (%s)", g.ComputeScale, g.DType, g.Basis)
	}
	return "GEMM efficiency " + strings.Join(parts, ", ")
}

// XLACheck returns the errors of profile p's GEMMs against XLA's rows of
// GPU g in precision d: each row priced as one mlp_up GEMM of B·M tokens
// (the wave term and residual trees included where p has them). Rows that
// XLA timed as a transpose plus the GEMM (XLAFit.Transposed) are compared
// as (T + G)/2, T the transpose of t's fit and G p's GEMM.
func (t *XLATable) XLACheck(p *Profile, g *hardware.GPU, d models.DType) (ErrStats, error) {
	k, err := p.Calibrated(g, 1)
	if err != nil {
		return ErrStats{}, err
	}
	f := t.Fits[g.Name+"/"+d.String()]
	var pe []float64
	for i := range t.Rows {
		r := &t.Rows[i]
		s, ok := r.sample(g.Name, d)
		if !ok {
			continue
		}
		pred := k.OpTime(&s.Op)
		if f.Transposed && xlaTransposed(r.Arch, r.DType) {
			pred = (f.TransposeOverheadS + 2*float64(r.B)*float64(r.K)*float64(r.N)/(g.MemBW*f.TransposeMemoryEff) + pred) / 2
		}
		pe = append(pe, 100*(pred/s.Seconds-1))
	}
	return errStats(pe), nil
}

// xlaNotes are the notes a built-in profile of gpu gets from XLA's table:
// what its GEMM precisions rest on and how well it predicts the table.
func (t *XLATable) notes(p *Profile, g *hardware.GPU, plain *Profile) ([]string, error) {
	var notes []string
	for _, d := range []models.DType{models.BF16, models.FP8} {
		key := xlaKey(g.Name)
		if key == "" {
			return nil, nil
		}
		c, err := t.XLACheck(p, g, d)
		if err != nil {
			return nil, err
		}
		line := fmt.Sprintf("The %s profile against XLA's measured %s matmul table (%s, %s, %d shapes b×m×n×k, 1–4 × 256–4096; another software stack than Vidur's): "+
			"median absolute error %.1f %%, p90 %.1f %%, median signed %+.1f %% (> 0: predicted slower)", p.GPU, d, key, t.File, c.N, c.Median, c.P90, c.Bias)
		if plain != nil {
			pc, err := t.XLACheck(plain, g, d)
			if err != nil {
				return nil, err
			}
			line += fmt.Sprintf(" (the H100 fit transferred through the specs alone, without [[gemm_precision]]: %.1f %% / %.1f %% / %+.1f %%; "+
				"the H100 profile is %+.1f %% against sm_90 BF16, so a transfer that keeps that offset is right about B200 against H100)", pc.Median, pc.P90, pc.Bias, t.h100Bias)
		}
		if g.Name == "h100" && d == models.FP8 {
			line += "; each sm_90 FP8 row is compared as (T + G)/2, T the fitted rhs transpose XLA timed with the GEMM (see [[gemm_precision]] fp8)"
		}
		notes = append(notes, line+".")
	}
	return notes, nil
}

// xlaKey is XLA's profile name of a catalog GPU, or "".
func xlaKey(gpu string) string {
	switch gpu {
	case "h100":
		return "sm_90"
	case "b200":
		return "sm_100_B200"
	}
	return ""
}

// xlaTables are the report's GEMM-precision section: the XLA fits per GPU
// and precision (in-sample and held out by shape), and the built-in-style
// profiles against the table (h100: the Vidur fit; b200: the H100 fit
// transferred, without and with the B200's [[gemm_precision]]).
func (t *XLATable) tables(h100 *Profile) (*ErrTable, *ErrTable, error) {
	fits := &ErrTable{Title: "GEMM efficiency per precision: the GEMM model fitted to XLA's measured matmul table (" + t.File + ") and vLLM's B200 GEMM benchmarks, per GPU and precision",
		Note: "o + max(FLOPs/(peak·η)·(1 + h/(b·m)), bytes/(MemBW·μ)) with the precision's dense peak. Held out by shape: shape (m, n, k) in fold " +
			"(rank m + rank n + rank k) mod 5, each fold predicted by the fit on the other four. sm_90 FP8: XLA timed each row as a transpose of the " +
			"rhs plus the GEMM and stored the median over both kernels, (T + G)/2 (87 rows exceed the 1,979 TFLOP/s peak at face value); fitted as " +
			"(o_T + 2·b·k·n/(MemBW·μ_T) + G)/2, G the model above, whose η and h give the built-in H100 and H200 FP8 scale. " +
			"XLA's table holds no FP4 GEMM: the b200 fp4 rows are vLLM's NVFP4 benchmarks on B200 (testdata/" + VLLMGEMMFile + ", PRs named in the row), " +
			"the same model fitted on the 9 PFLOP/s FP4 peak, held out by batch size (one full shape is stored); b200 fp8 (vLLM) is the cross-check of XLA's fp8 row. " +
			"No FP8 KV cache or FP8 attention is measured (the tables hold matmuls only).",
		RowHeader: "GPU, precision", Columns: []string{"in-sample", "held out by shape"}}
	for _, c := range xlaCells {
		f := t.Fits[c.gpu+"/"+c.d.String()]
		row := fmt.Sprintf("%s (%s) %s: η %.3f, h %.0f, %d rows", c.gpu, xlaKey(c.gpu), c.d, f.ComputeEff, f.HalfTokens, f.Samples)
		if f.AbovePeak > 0 {
			row += fmt.Sprintf(", %d above the peak", f.AbovePeak)
		}
		fits.Rows = append(fits.Rows, row)
		fits.Cells = append(fits.Cells, []ErrStats{f.InSample, f.HeldOut})
	}
	if t.vllm != nil {
		for _, c := range vllmCells {
			f := t.vllm.Fits[vllmKey(c.d, c.quant)]
			col := map[bool]string{true: "with activation quantization", false: "noquant"}[c.quant]
			fits.Rows = append(fits.Rows, fmt.Sprintf("b200 (vLLM PR %s) %s %s: η %.3f, h %.0f, %d rows; same runs' BF16 η %.3f", prList(f.PRs), c.d, col, f.Low.ec, f.Low.h, f.Rows, f.BF16.ec))
			fits.Cells = append(fits.Cells, []ErrStats{f.InSample, f.HeldOut})
		}
	}
	check := &ErrTable{Title: "Profiles against XLA's matmul table: each row priced as one mlp_up GEMM of b·m tokens",
		Note: "XLA's kernels are not Vidur's (another software stack), so the H100 column gives the offset of the stack; a transfer is right " +
			"about B200 against H100 where its column keeps that offset.",
		RowHeader: "precision", Columns: []string{"h100 (sm_90)", "h100 → b200, specs only (sm_100_B200)", "h100 → b200 with B200 [[gemm_precision]] (sm_100_B200)"}}
	hg, err := hardware.Builtin().Get("h100")
	if err != nil {
		return nil, nil, err
	}
	bg, err := hardware.Builtin().Get("b200")
	if err != nil {
		return nil, nil, err
	}
	base := h100.Clone()
	base.GEMMPrecisions = t.Precisions("h100")
	plain, err := Transfer(h100, bg)
	if err != nil {
		return nil, nil, err
	}
	plain.GEMMPrecisions = nil
	derived := plain.Clone()
	derived.GEMMPrecisions = t.Precisions("b200")
	for _, d := range []models.DType{models.BF16, models.FP8} {
		var line []ErrStats
		for _, c := range []struct {
			p *Profile
			g *hardware.GPU
		}{{base, hg}, {plain, bg}, {derived, bg}} {
			s, err := t.XLACheck(c.p, c.g, d)
			if err != nil {
				return nil, nil, err
			}
			line = append(line, s)
		}
		name := d.String()
		if d == models.FP8 {
			name += " (sm_90 rows as (T + G)/2)"
		}
		check.Rows = append(check.Rows, name)
		check.Cells = append(check.Cells, line)
	}
	return fits, check, nil
}
