package calibrate

import (
	"bytes"
	"fmt"
	"math"
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

// XLATable is XLA's matmul table read and fitted: the four fits of the
// catalog GPUs and precisions it holds, by "gpu/dtype" ("h100/bf16").
type XLATable struct {
	File string
	Rows []XLARow
	Fits map[string]XLAFit
	// h100Bias is the median signed error of the built-in H100 profile on
	// the sm_90 BF16 rows (set by GenerateBuiltin, for the notes).
	h100Bias float64
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

// relative returns the GEMMPrecision numbers of fit f against base: η_f/η_b
// and max(0, h_f − h_b).
func relative(f, base XLAFit) (float64, float64) {
	return f.ComputeEff / base.ComputeEff, max(0, f.HalfTokens-base.HalfTokens)
}

// Precisions returns the [[gemm_precision]] entries of the built-in
// profile of gpu, whose [[op]] GEMM parameters are the H100's BF16 Vidur
// fit (h100, and h200 and b200 transferred from it); nil for a GPU the
// table says nothing about (a100).
//
//   - h100, h200 FP8: transferred. XLA's sm_90 FP8 rows are not physical
//     (SOURCE.md: 87 of 1,125 above the 1,979 TFLOP/s dense peak, FP8/BF16
//     2.73× on large shapes where 2× is the bound), so the B200's measured
//     FP8-against-BF16 relation is carried over to Hopper.
//   - b200 BF16 and FP8: measured, the sm_100_B200 fits against the sm_90
//     BF16 fit (the Hopper kernels the [[op]] numbers describe).
//   - b200 FP4: an estimate (nothing measured): FP8's measured scale times
//     ρ, the B200's measured loss of compute-bound efficiency from BF16 to
//     FP8 (median fraction of the peak over GEMMs of 2³⁵ FLOPs or more),
//     assumed to repeat from FP8 to FP4; never below FP8's absolute
//     throughput (half FP8's scale on the doubled peak), with FP8's extra
//     half-saturation tokens.
func (t *XLATable) Precisions(gpu string) []GEMMPrecision {
	base := t.Fits["h100/bf16"]
	hb, hf := t.Fits["h100/fp8"], t.Fits["b200/fp8"]
	bb := t.Fits["b200/bf16"]
	pct := func(f XLAFit) string {
		return fmt.Sprintf("η %.3f, h %.0f tokens (held out by shape: median %.1f %%, p90 %.1f %%)", f.ComputeEff, f.HalfTokens, f.HeldOut.Median, f.HeldOut.P90)
	}
	src := "XLA's measured matmul table (../shared/data/xla-matmul/" + t.File + ", openxla/xla e97611c4)"
	switch gpu {
	case "h100", "h200":
		s, h := relative(hf, bb)
		return []GEMMPrecision{{DType: "fp8", ComputeScale: s, ExtraHalfTokens: h, Basis: BasisTransferred,
			Source: fmt.Sprintf("%s, B200's FP8 fit (%s) against its BF16 fit (%s), carried over to Hopper: the sm_90 FP8 rows are not physical "+
				"(%d of %d above the dense FP8 peak; the fit to the rest, %s, hits η = 1), so not used", src, pct(hf), pct(bb), hb.Rejected, hb.Rejected+hb.Samples, pct(hb))}}
	case "b200":
		sb, hbb := relative(bb, base)
		s8, h8 := relative(hf, base)
		rho := hf.LargeEff / bb.LargeEff
		s4 := max(s8*rho, s8/2)
		return []GEMMPrecision{
			{DType: "bf16", ComputeScale: sb, ExtraHalfTokens: hbb, Basis: BasisMeasured,
				Source: fmt.Sprintf("%s: sm_100_B200 BF16 fit (%s) against the sm_90 BF16 fit (%s), the Hopper kernels the [[op]] numbers were fitted on", src, pct(bb), pct(base))},
			{DType: "fp8", ComputeScale: s8, ExtraHalfTokens: h8, Basis: BasisMeasured,
				Source: fmt.Sprintf("%s: sm_100_B200 FP8 (E4M3/E5M2 inputs, BF16 out) fit (%s) against the sm_90 BF16 fit", src, pct(hf))},
			{DType: "fp4", ComputeScale: s4, ExtraHalfTokens: h8, Basis: BasisEstimate,
				Source: fmt.Sprintf("ESTIMATE, no FP4 GEMM measured: FP8's measured scale %.3f × ρ = %.3f, the B200's measured drop in compute-bound efficiency "+
					"from BF16 to FP8 (median fraction of the peak over GEMMs ≥ 2³⁵ FLOPs: %.3f → %.3f in %s), assumed to repeat from FP8 to FP4; "+
					"floor: FP8's absolute throughput (scale %.3f); FP8's extra half-saturation tokens", s8, rho, bb.LargeEff, hf.LargeEff, t.File, s8/2)},
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
// (the wave term and residual trees included where p has them).
func XLACheck(p *Profile, g *hardware.GPU, rows []XLARow, d models.DType) (ErrStats, error) {
	k, err := p.Calibrated(g, 1)
	if err != nil {
		return ErrStats{}, err
	}
	ss := XLASamples(rows, g.Name, d)
	pe := make([]float64, len(ss))
	for i := range ss {
		pe[i] = 100 * (k.OpTime(&ss[i].Op)/ss[i].Seconds - 1)
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
		c, err := XLACheck(p, g, t.Rows, d)
		if err != nil {
			return nil, err
		}
		line := fmt.Sprintf("The %s profile against XLA's measured %s matmul table (%s, %s, %d shapes b×m×n×k, 1–4 × 256–4096; another software stack than Vidur's): "+
			"median absolute error %.1f %%, p90 %.1f %%, median signed %+.1f %% (> 0: predicted slower)", p.GPU, d, key, t.File, c.N, c.Median, c.P90, c.Bias)
		if plain != nil {
			pc, err := XLACheck(plain, g, t.Rows, d)
			if err != nil {
				return nil, err
			}
			line += fmt.Sprintf(" (the H100 fit transferred through the specs alone, without [[gemm_precision]]: %.1f %% / %.1f %% / %+.1f %%; "+
				"the H100 profile is %+.1f %% against sm_90 BF16, so a transfer that keeps that offset is right about B200 against H100)", pc.Median, pc.P90, pc.Bias, t.h100Bias)
		}
		if g.Name == "h100" && d == models.FP8 {
			line += "; the sm_90 FP8 rows are not physical (above the peak), so this FP8 figure is not a measure of accuracy"
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
	fits := &ErrTable{Title: "GEMM efficiency per precision: the GEMM model fitted to XLA's measured matmul table (" + t.File + "), per GPU and precision",
		Note: "o + max(FLOPs/(peak·η)·(1 + h/(b·m)), bytes/(MemBW·μ)) with the precision's dense peak. Held out by shape: shape (m, n, k) in fold " +
			"(rank m + rank n + rank k) mod 5, each fold predicted by the fit on the other four. sm_90 FP8: rows above the 1,979 TFLOP/s peak left out " +
			"(not physical, SOURCE.md); the rest still fit at η = 1, so the built-in Hopper FP8 scale is the B200's FP8/BF16 relation, transferred. " +
			"No FP4 GEMM is measured (B200 FP4 is an estimate; see its profile), nor FP8 KV cache or FP8 attention (the table holds matmuls only).",
		RowHeader: "GPU, precision", Columns: []string{"in-sample", "held out by shape"}}
	for _, c := range xlaCells {
		f := t.Fits[c.gpu+"/"+c.d.String()]
		row := fmt.Sprintf("%s (%s) %s: η %.3f, h %.0f, %d rows", c.gpu, xlaKey(c.gpu), c.d, f.ComputeEff, f.HalfTokens, f.Samples)
		if f.Rejected > 0 {
			row += fmt.Sprintf(", %d rejected", f.Rejected)
		}
		fits.Rows = append(fits.Rows, row)
		fits.Cells = append(fits.Cells, []ErrStats{f.InSample, f.HeldOut})
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
			s, err := XLACheck(c.p, c.g, t.Rows, d)
			if err != nil {
				return nil, nil, err
			}
			line = append(line, s)
		}
		name := d.String()
		if d == models.FP8 {
			name += " (sm_90 rows not physical)"
		}
		check.Rows = append(check.Rows, name)
		check.Cells = append(check.Cells, line)
	}
	return fits, check, nil
}
