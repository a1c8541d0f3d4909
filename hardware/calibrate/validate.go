package calibrate

import (
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// Bounds of a profile's numbers at load time, so that a corrupt or
// hand-edited profile is an error naming its field rather than a run whose
// kernels take 1e300 s. Fitted profiles sit well inside them: the built-in
// ones have efficiencies from 0.0021 (row_memory_eff) to 1, overheads up to
// 0.81 ms and half_tokens up to 253; minEff is 21 times below the least.
const (
	// minEff is the least efficiency a profile may give (0.01 % of a peak):
	// below it a kernel would run 10,000 times slower than its roofline,
	// which no fit of a real kernel produces.
	minEff = 1e-4
	// maxOverheadS is the longest fixed overhead of a kernel, an
	// all-reduce or an iteration: 1 s.
	maxOverheadS = 1.0
	// maxHalfTokens bounds half_tokens: the most tokens a trace row may
	// have.
	maxHalfTokens = maxTraceTokens
)

// Validate checks every field: format, GPU name, derivation, peaks within
// the GPU catalog's physical bounds, one entry per operator class with
// efficiencies in [minEff, 1] (0.01 % to 100 % of a peak), overheads in
// [0, 1 s] and half-token counts in [0, maxHalfTokens], all-reduce entries
// with distinct TP ≥ 2 by increasing TP, link efficiencies in [minEff, 2]
// (in-switch reduction can beat the ring bound), and the attention and
// iteration numbers by the same bounds. Errors name the field by its TOML
// path.
func (p *Profile) Validate() error {
	if err := p.validate(); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	return nil
}

func (p *Profile) validate() error {
	fe := func(field, format string, a ...any) error {
		return &fieldErr{field: field, msg: fmt.Sprintf(format, a...)}
	}
	if p.Format != FormatVersion {
		return fe("format", "%d: this servesim reads format %d", p.Format, FormatVersion)
	}
	if p.GPU == "" || strings.ToLower(strings.TrimSpace(p.GPU)) != p.GPU || strings.ContainsAny(p.GPU, " _") {
		return fe("gpu", "%q must be a catalog GPU name (lower case, no spaces)", p.GPU)
	}
	switch p.Derivation {
	case DerivationFitted:
		if p.Source.TransferredFrom != "" {
			return fe("source.transferred_from", "must be empty for a fitted profile")
		}
	case DerivationTransferred:
		if p.Source.TransferredFrom == "" {
			return fe("source.transferred_from", "must name the GPU a transferred profile comes from")
		}
	default:
		return fe("derivation", "%q: want %q or %q", p.Derivation, DerivationFitted, DerivationTransferred)
	}
	if p.Source.Samples < 0 {
		return fe("source.samples", "must be >= 0, got %d", p.Source.Samples)
	}
	if p.Source.Rejected < 0 {
		return fe("source.rejected", "must be >= 0, got %d", p.Source.Rejected)
	}
	for _, f := range []struct {
		key string
		v   float64
		hi  float64
	}{{"peaks.bf16_flops", p.Peaks.BF16FLOPS, hardware.MaxFLOPS}, {"peaks.mem_bw", p.Peaks.MemBW, hardware.MaxBandwidth},
		{"peaks.link_bw", p.Peaks.LinkBW, hardware.MaxBandwidth}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fe(f.key, "must be finite and > 0, got %v", f.v)
		}
		if f.v < hardware.MinRate || f.v > f.hi {
			return fe(f.key, "%g is outside the physical range [%g, %g] (see hardware.GPU.Validate)", f.v, float64(hardware.MinRate), f.hi)
		}
	}
	if p.Peaks.SMs < 0 || p.Peaks.SMs > hardware.MaxSMs {
		return fe("peaks.sms", "must be in [0, %d], got %d", hardware.MaxSMs, p.Peaks.SMs)
	}
	if err := overhead("iteration.overhead_s", p.Iteration.OverheadS); err != nil {
		return err
	}
	if err := finite("iteration.per_request_s", p.Iteration.PerRequestS); err != nil {
		return err
	}
	if math.Abs(p.Iteration.PerRequestS) > maxOverheadS {
		return fe("iteration.per_request_s", "%g s is outside [-%g, %g] s", p.Iteration.PerRequestS, maxOverheadS, maxOverheadS)
	}
	if err := frac("attention.compute_eff", p.Attention.ComputeEff, 1); err != nil {
		return err
	}
	if err := frac("attention.memory_eff", p.Attention.MemoryEff, 1); err != nil {
		return err
	}
	if err := overhead("attention.overhead_s", p.Attention.OverheadS); err != nil {
		return err
	}
	if err := p.Attention.validateDecode(); err != nil {
		return err
	}
	seen := map[string]int{}
	for i, o := range p.Ops {
		at := func(f string) string { return fmt.Sprintf("op[%d].%s", i, f) }
		k, err := models.ParseOpKind(o.Op)
		if err != nil {
			return fe(at("op"), "%v", strings.TrimPrefix(err.Error(), "models: "))
		}
		if k == models.OpAttnPrefill || k == models.OpAttnDecode || k == models.OpAllReduce {
			return fe(at("op"), "%q is priced by [attention] or [[all_reduce]], not [[op]]", o.Op)
		}
		if j, dup := seen[k.String()]; dup {
			return fe(at("op"), "%q again (also op[%d])", o.Op, j)
		}
		seen[k.String()] = i
		if err := overhead(at("overhead_s"), o.OverheadS); err != nil {
			return err
		}
		if err := frac(at("compute_eff"), o.ComputeEff, 1); err != nil {
			return err
		}
		if err := nonNeg(at("half_tokens"), o.HalfTokens); err != nil {
			return err
		}
		if o.HalfTokens > maxHalfTokens {
			return fe(at("half_tokens"), "%g is outside [0, %d] tokens", o.HalfTokens, maxHalfTokens)
		}
		if err := frac(at("memory_eff"), o.MemoryEff, 1); err != nil {
			return err
		}
		if !(o.RowMemoryEff == 0 || o.RowMemoryEff >= minEff && o.RowMemoryEff <= 1) {
			return fe(at("row_memory_eff"), "must be 0 (no per-row term) or in [%g, 1], got %v", minEff, o.RowMemoryEff)
		}
		if !(o.WaveEff == 0 || o.WaveEff >= minEff && o.WaveEff <= 1) {
			return fe(at("wave_eff"), "must be 0 (no wave term) or in [%g, 1], got %v", minEff, o.WaveEff)
		}
		if o.TileM < 0 || o.TileN < 0 || o.TileM > maxTile || o.TileN > maxTile || (o.TileM == 0) != (o.TileN == 0) || (o.TileM == 0) != (o.WaveEff == 0) {
			return fe(at("tile_m"), "tile_m = %d, tile_n = %d with wave_eff = %v: want both tile sides in [1, %d] with wave_eff > 0, or all three 0 (no wave term)",
				o.TileM, o.TileN, o.WaveEff, maxTile)
		}
		if o.TileM > 0 && p.Peaks.SMs <= 0 {
			return fe(at("tile_m"), "a wave term needs the GPU's SM count in peaks.sms")
		}
		if o.From == "" {
			return fe(at("from"), "must say how the parameters were obtained (fit, as <op>, default)")
		}
		if err := o.Fit.validate(at("fit")); err != nil {
			return err
		}
	}
	for _, k := range fittedKinds {
		if _, ok := seen[k.String()]; !ok {
			return fe("op", "no [[op]] entry for %q: a profile prices every operator class", k.String())
		}
	}
	if p.GEMMTrees != nil {
		if p.Peaks.SMs <= 0 {
			return fe("gemm_trees", "the trees' wave features need the GPU's SM count in peaks.sms")
		}
		if err := p.GEMMTrees.validate(fe); err != nil {
			return err
		}
	}
	if err := validatePrecisions(p.GEMMPrecisions, fe); err != nil {
		return err
	}
	if err := p.MoE.validate(); err != nil {
		return err
	}
	for i, a := range p.AllReduce {
		at := func(f string) string { return fmt.Sprintf("all_reduce[%d].%s", i, f) }
		if a.TP < 2 || a.TP > maxTraceTP {
			return fe(at("tp"), "must be in [2, %d], got %d", maxTraceTP, a.TP)
		}
		if i > 0 && a.TP <= p.AllReduce[i-1].TP {
			return fe(at("tp"), "%d: entries must have increasing tp (previous %d)", a.TP, p.AllReduce[i-1].TP)
		}
		if err := overhead(at("latency_s"), a.LatencyS); err != nil {
			return err
		}
		if err := frac(at("link_eff"), a.LinkEff, 2); err != nil {
			return err
		}
		if err := a.Fit.validate(at("fit")); err != nil {
			return err
		}
	}
	return nil
}

func (s FitStats) validate(at string) error {
	if s.Samples < 0 {
		return &fieldErr{field: at + ".samples", msg: fmt.Sprintf("must be >= 0, got %d", s.Samples)}
	}
	for _, f := range []struct {
		k string
		v float64
	}{{"median_ape_pct", s.MedianAPE}, {"p90_ape_pct", s.P90APE}, {"max_ape_pct", s.MaxAPE}} {
		if err := nonNeg(at+"."+f.k, f.v); err != nil {
			return err
		}
	}
	return nil
}

func nonNeg(field string, v float64) error {
	if !(v >= 0) || math.IsInf(v, 0) {
		return &fieldErr{field: field, msg: fmt.Sprintf("must be finite and >= 0, got %v", v)}
	}
	return nil
}

// overhead checks a fixed time: finite, in [0, maxOverheadS].
func overhead(field string, v float64) error {
	if !(v >= 0 && v <= maxOverheadS) {
		return &fieldErr{field: field, msg: fmt.Sprintf("must be in [0, %g] s, got %v", maxOverheadS, v)}
	}
	return nil
}

func finite(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return &fieldErr{field: field, msg: fmt.Sprintf("must be finite, got %v", v)}
	}
	return nil
}

// frac checks an efficiency: in [minEff, hi].
func frac(field string, v, hi float64) error {
	if !(v >= minEff && v <= hi) {
		return &fieldErr{field: field, msg: fmt.Sprintf("must be in [%g, %g], got %v", minEff, hi, v)}
	}
	return nil
}

// fieldErr is a validation error about one TOML field (a path such as
// "op[3].compute_eff"); the loader adds the file and line.
type fieldErr struct {
	field string
	msg   string
}

func (e *fieldErr) Error() string { return fmt.Sprintf("field %q: %s", e.field, e.msg) }
