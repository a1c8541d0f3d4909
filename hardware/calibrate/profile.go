package calibrate

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// FormatVersion is the profile file format this package reads and writes.
const FormatVersion = 1

// maxTile bounds a tile dimension in a profile.
const maxTile = 1 << 12

// Bounds of a profile's numbers at load time, so that a corrupt or
// hand-edited profile is an error naming its field rather than a run whose
// kernels take 1e300 s. Fitted profiles sit well inside them: the built-in
// ones have efficiencies from 0.0147 (row_memory_eff) to 1, overheads up to
// 0.81 ms and half_tokens up to 253.
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

// Derivations of a profile.
const (
	DerivationFitted      = "fitted"      // fitted to kernel traces of its own GPU
	DerivationTransferred = "transferred" // another GPU's fit, moved through the specs
)

// Profile is a calibrated kernel-time profile of one GPU type: the
// parameters of the calibrated kernel-time model per operator class, the
// all-reduce model per TP degree, the attention assumption, the
// per-iteration overhead, the fit-error statistics and where it all came
// from. It is written and read as TOML (WriteTOML, LoadProfile); the
// efficiencies are fractions of the peaks in Peaks, which Kernel checks
// against the GPU it is given.
type Profile struct {
	// Format is FormatVersion.
	Format int `toml:"format"`
	// GPU is the catalog name of the GPU the profile describes ("h100").
	GPU string `toml:"gpu"`
	// Derivation is DerivationFitted or DerivationTransferred.
	Derivation string `toml:"derivation"`
	// Source says what the parameters were derived from.
	Source Source `toml:"source"`
	// Peaks are the GPU's datasheet peaks the efficiencies are relative to.
	Peaks Peaks `toml:"peaks"`
	// Iteration is the per-iteration CPU overhead.
	Iteration Iteration `toml:"iteration"`
	// Attention is how attention (absent from the traces) is priced.
	Attention Attention `toml:"attention"`
	// Ops holds one entry per operator class but attention and the
	// all-reduce, in models.OpKind order.
	Ops []OpParams `toml:"op"`
	// AllReduce holds the fitted all-reduce model per TP degree, by
	// increasing TP; empty means roofline (hardware.DefaultEfficiency's
	// link efficiency and the GPU's link latency).
	AllReduce []AllReduceParams `toml:"all_reduce"`
	// GEMMTrees, if not nil, corrects the dense GEMM classes for the kernel
	// cuBLAS picks per shape (see GEMMTrees); nil: the parametric model
	// alone.
	GEMMTrees *GEMMTrees `toml:"gemm_trees"`
	// Notes are free-form lines: caveats, measured transfer errors.
	Notes []string `toml:"notes"`
}

// Source is the provenance of a profile.
type Source struct {
	// Trace names the trace the fit read: the base name of the trace
	// directory ("vidur-profiling") or of a native CSV file.
	Trace string `toml:"trace"`
	// Format is the trace format: "vidur" or "native".
	Format string `toml:"format"`
	// Files are the trace files read, relative to the trace directory.
	Files []string `toml:"files"`
	// Models are the catalog models whose operators were measured.
	Models []string `toml:"models"`
	// Samples is the number of kernel timings fitted.
	Samples int `toml:"samples"`
	// Rejected is the number of the trace's timings for this GPU left out
	// of the fit, as non-physical or as gross outliers; the notes say why.
	// Written only when > 0.
	Rejected int `toml:"rejected"`
	// TransferredFrom is the GPU whose fit a transferred profile carries
	// ("" for a fitted one).
	TransferredFrom string `toml:"transferred_from"`
	// Note is free text (e.g. the trace's upstream commit).
	Note string `toml:"note"`
}

// Peaks are the peaks a profile's efficiencies are fractions of; Kernel
// requires the GPU's to match.
type Peaks struct {
	BF16FLOPS float64 `toml:"bf16_flops"` // dense BF16 tensor-core FLOP/s
	MemBW     float64 `toml:"mem_bw"`     // HBM bytes/s
	LinkBW    float64 `toml:"link_bw"`    // NVLink bytes/s per direction
	// SMs is the GPU's SM count the tile model's waves are counted in
	// (0: the profile has no tile model).
	SMs int `toml:"sms"`
}

// Iteration is the per-iteration CPU overhead of a profile.
type Iteration struct {
	// OverheadS is the seconds added to every iteration (IterOverhead).
	OverheadS float64 `toml:"overhead_s"`
	// PerRequestS is the measured growth of the CPU time per request in the
	// batch. Recorded, not applied: a StepModel takes a fixed overhead.
	PerRequestS float64 `toml:"per_request_s"`
	// Source says where OverheadS comes from.
	Source string `toml:"source"`
}

// Attention is the roofline that prices OpAttnPrefill and OpAttnDecode:
// OverheadS + max(FLOPs/(peak·ComputeEff), Bytes/(MemBW·MemoryEff)).
type Attention struct {
	ComputeEff float64 `toml:"compute_eff"`
	MemoryEff  float64 `toml:"memory_eff"`
	OverheadS  float64 `toml:"overhead_s"`
	Source     string  `toml:"source"`
}

// OpParams are the parameters of one operator class. One occurrence takes
//
//	OverheadS + max(min(FLOPs/(peak·ComputeEff) · (1 + HalfTokens/tokens), W/(peak·WaveEff)),
//	                Bytes/(MemBW·MemoryEff),
//	                Bytes/tokens/(MemBW·RowMemoryEff))
//
// where peak is the GPU's tensor-core peak for the operator's precision.
// The compute efficiency saturates in the token count,
// ComputeEff·tokens/(tokens + HalfTokens) (GEMMs). The second compute term
// is the wave term of a GEMM class with a tile (WaveEff > 0): a kernel with
// TileM × TileN output tiles on a GPU with SMs multiprocessors runs
// ⌈⌈M/TileM⌉·⌈N/TileN⌉ / SMs⌉ waves (M = tokens, N and K from the
// operator) and spends W = 2·K·TileM·TileN·SMs FLOPs per wave (every wave
// counted as full; FLOPs beyond the GEMM's 2·M·N·K, the LM head's norm,
// added); the faster of the two compute terms applies, as cuBLAS picks
// among its kernels. The last term is the time of one token's row at a
// fraction RowMemoryEff of the bandwidth: the norm, activation, RoPE, add
// and embedding kernels give each token's row to one thread block, so a
// small batch takes a row's latency, which grows with the hidden size; 0
// means no such term (GEMMs).
type OpParams struct {
	// Op is the operator class (models.OpKind name: "qkv", "mlp_up", ...).
	Op           string  `toml:"op"`
	OverheadS    float64 `toml:"overhead_s"`
	ComputeEff   float64 `toml:"compute_eff"`
	HalfTokens   float64 `toml:"half_tokens"`
	MemoryEff    float64 `toml:"memory_eff"`
	RowMemoryEff float64 `toml:"row_memory_eff"`
	// WaveEff is the efficiency of the wave term on its padded work, and
	// TileM × TileN its output tile (rows = tokens × columns = N); all
	// three 0: no wave term.
	WaveEff float64 `toml:"wave_eff"`
	TileM   int     `toml:"tile_m"`
	TileN   int     `toml:"tile_n"`
	// From says how the parameters were obtained: "fit" (least squares to
	// this class's samples), "as <op>" (another class's parameters), or
	// "default" (hardware.DefaultEfficiency, no samples).
	From string `toml:"from"`
	// Fit is the in-sample error of a "fit"; zero otherwise.
	Fit FitStats `toml:"fit"`
}

// AllReduceParams is the all-reduce model at one TP degree:
//
//	LatencyS + 2·(TP−1)/TP · bytes / (LinkBW · LinkEff)
type AllReduceParams struct {
	TP       int      `toml:"tp"`
	LatencyS float64  `toml:"latency_s"`
	LinkEff  float64  `toml:"link_eff"`
	Fit      FitStats `toml:"fit"`
}

// FitStats are in-sample absolute percentage errors of a fit.
type FitStats struct {
	Samples   int     `toml:"samples"`
	MedianAPE float64 `toml:"median_ape_pct"`
	P90APE    float64 `toml:"p90_ape_pct"`
	MaxAPE    float64 `toml:"max_ape_pct"`
}

// fittedKinds are the classes a profile carries parameters for, in OpKind
// order: every class but attention and the all-reduce.
var fittedKinds = func() []models.OpKind {
	var ks []models.OpKind
	for k := models.OpKind(0); k < models.NumOpKinds; k++ {
		if k != models.OpAttnPrefill && k != models.OpAttnDecode && k != models.OpAllReduce {
			ks = append(ks, k)
		}
	}
	return ks
}()

// hasTiles reports whether any class has a GEMM tile model.
func (p *Profile) hasTiles() bool {
	for _, o := range p.Ops {
		if o.TileM > 0 {
			return true
		}
	}
	return false
}

// IterOverhead returns the seconds of CPU overhead added to each iteration.
func (p *Profile) IterOverhead() float64 { return p.Iteration.OverheadS }

// Op returns the parameters of class k, or false (attention and the
// all-reduce have none).
func (p *Profile) Op(k models.OpKind) (OpParams, bool) {
	name := k.String()
	for _, o := range p.Ops {
		if o.Op == name {
			return o, true
		}
	}
	return OpParams{}, false
}

// Describe returns one line for run output, e.g.
//
//	h100: fitted from vidur-profiling (vidur, 6 models, 57113 kernel timings); GEMM in-sample median error 5.1–8.4 %; attention by roofline at 50 % of peak (assumed)
//	h200: the h100 profile (fitted from vidur-profiling, 6 models) transferred through the h200 specs; attention by roofline at 50 % of peak (assumed)
func (p *Profile) Describe() string {
	var b strings.Builder
	b.WriteString(p.GPU + ": ")
	switch p.Derivation {
	case DerivationTransferred:
		fmt.Fprintf(&b, "the %s profile (fitted from %s, %d models) transferred through the %s specs", p.Source.TransferredFrom, p.Source.Trace, len(p.Source.Models), p.GPU)
	default:
		fmt.Fprintf(&b, "fitted from %s (%s", p.Source.Trace, p.Source.Format)
		if len(p.Source.Models) > 0 {
			fmt.Fprintf(&b, ", %d models", len(p.Source.Models))
		}
		fmt.Fprintf(&b, ", %d kernel timings)", p.Source.Samples)
		if p.Source.Rejected > 0 {
			fmt.Fprintf(&b, "; %d timings rejected (see notes)", p.Source.Rejected)
		}
		var defaults []string
		for _, o := range p.Ops {
			if o.From == "default" {
				defaults = append(defaults, o.Op)
			}
		}
		if len(defaults) > 0 {
			fmt.Fprintf(&b, "; %d of %d operator classes not fitted, at default efficiencies (%s)", len(defaults), len(p.Ops), strings.Join(defaults, ", "))
		}
		var ape []float64
		for _, k := range gemmKinds {
			if o, ok := p.Op(k); ok && o.From == "fit" {
				ape = append(ape, o.Fit.MedianAPE)
			}
		}
		if len(ape) > 0 {
			sort.Float64s(ape)
			fmt.Fprintf(&b, "; GEMM in-sample median error %.1f–%.1f %%", ape[0], ape[len(ape)-1])
		}
	}
	if t := p.GEMMTrees; t != nil {
		fmt.Fprintf(&b, "; GEMM residual trees (%d)", len(t.Tree))
		if t.Fit.Samples > 0 {
			fmt.Fprintf(&b, ": in-sample median error %.1f %%", t.Fit.MedianAPE)
		}
	}
	fmt.Fprintf(&b, "; attention by roofline at %.0f %% of peak (assumed)", 100*p.Attention.ComputeEff)
	if len(p.AllReduce) == 0 {
		b.WriteString("; all-reduce by roofline")
	}
	return b.String()
}

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

// LoadProfile reads a profile from a TOML file, strictly: unknown keys,
// wrong types and invalid values are errors that name the file, the line
// and the field, e.g.
//
//	calibrate: h100.toml line 31: field "op[2].compute_eff": must be in (0, 1], got 1.4
func LoadProfile(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	return ParseProfile(data, filepath.Base(path))
}

// ParseProfile reads a profile from TOML data; name labels errors.
func ParseProfile(data []byte, name string) (*Profile, error) {
	var p Profile
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&p)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := pe.Message
			if pe.LastKey != "" {
				msg = fmt.Sprintf("field %q: %s", pe.LastKey, msg)
			}
			if pe.Position.Line < 1 { // no line for some errors at the end of the input
				return nil, fmt.Errorf("calibrate: %s: %s", name, msg)
			}
			return nil, fmt.Errorf("calibrate: %s line %d: %s", name, pe.Position.Line, msg)
		}
		msg := strings.TrimPrefix(err.Error(), "toml: ")
		// Type mismatches read `line 9 (last key "format"): incompatible types: ...`.
		if m := typeErrRE.FindStringSubmatch(msg); m != nil {
			return nil, fmt.Errorf("calibrate: %s line %s: field %q: %s", name, m[1], m[2], m[3])
		}
		return nil, fmt.Errorf("calibrate: %s: %s", name, msg)
	}
	// The line index is for error messages only.
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0].String()
		return nil, fmt.Errorf("calibrate: %s line %d: unknown field %q", name, indexTOML(data).find(k), k)
	}
	if err := p.validate(); err != nil {
		var fe *fieldErr
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("calibrate: %s line %d: %w", name, indexTOML(data).find(fe.field), err)
		}
		return nil, fmt.Errorf("calibrate: %s: %w", name, err)
	}
	return &p, nil
}

var typeErrRE = regexp.MustCompile(`^line (\d+) \(last key "([^"]*)"\): (.*)$`)

// tomlIndex maps field paths ("op[3].compute_eff", "iteration.overhead_s",
// "op[3]") to the 1-based line that defines them. It understands what
// WriteTOML writes and hand edits of it: tables, arrays of tables, and
// key = value lines; it is used for error messages only.
type tomlIndex struct {
	lines map[string]int
	keys  []string // in file order, for suffix search
}

func indexTOML(data []byte) *tomlIndex {
	x := &tomlIndex{lines: map[string]int{}}
	count := map[string]int{} // array-of-tables name → elements so far
	cur := ""
	set := func(k string, ln int) {
		if _, ok := x.lines[k]; !ok {
			x.lines[k] = ln
			x.keys = append(x.keys, k)
		}
	}
	for i, line := range strings.Split(string(data), "\n") {
		ln := i + 1
		s := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(s, "[["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(s, "]]", 2)[0], "[ "))
			cur = fmt.Sprintf("%s[%d]", name, count[name])
			count[name]++
			set(cur, ln)
		case strings.HasPrefix(s, "["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(s, "]", 2)[0], "[ "))
			cur = name
			// A sub-table of the last element of an array of tables.
			for arr, n := range count {
				if strings.HasPrefix(name, arr+".") && n > 0 {
					cur = fmt.Sprintf("%s[%d]%s", arr, n-1, name[len(arr):])
				}
			}
			set(cur, ln)
		default:
			eq := strings.IndexByte(s, '=')
			if eq <= 0 {
				continue
			}
			key := strings.TrimSpace(s[:eq])
			if strings.Trim(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
				continue
			}
			if cur != "" {
				key = cur + "." + key
			}
			set(key, ln)
		}
	}
	return x
}

// find returns the line of a field path; an undecoded key (which has no
// array index) matches the first indexed path that ends like it; 0 if
// nothing matches.
func (x *tomlIndex) find(field string) int {
	for f := field; f != ""; {
		if ln, ok := x.lines[f]; ok {
			return ln
		}
		// Drop the last path element: the table's line is better than none.
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	// Undecoded keys come without indexes: "op.bogus" matches "op[0].bogus".
	parts := strings.Split(field, ".")
	for _, k := range x.keys {
		kp := strings.Split(k, ".")
		if len(kp) != len(parts) {
			continue
		}
		ok := true
		for i := range parts {
			if strings.SplitN(kp[i], "[", 2)[0] != parts[i] {
				ok = false
				break
			}
		}
		if ok {
			return x.lines[k]
		}
	}
	return 0
}

// WriteTOML returns the profile as TOML, with a header comment that says
// what each section means. Numbers are written with 6 significant digits;
// the output is deterministic.
func (p *Profile) WriteTOML() []byte {
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# servesim calibrated kernel-time profile (hardware/calibrate).\n")
	w("# One operator occurrence takes\n")
	w("#   overhead_s + max(min(FLOPs / (peak · compute_eff) · (1 + half_tokens/tokens), W / (peak · wave_eff)),\n")
	w("#                    bytes / (mem_bw · memory_eff), bytes / tokens / (mem_bw · row_memory_eff))\n")
	w("# (W only where wave_eff > 0, the last term only where row_memory_eff > 0), where a GEMM of M = tokens rows,\n")
	w("# N columns and depth K in tile_m × tile_n output tiles runs ⌈⌈M/tile_m⌉·⌈N/tile_n⌉ / sms⌉ waves of\n")
	w("# 2·K·tile_m·tile_n·sms FLOPs each (sms in [peaks]): W is their sum. peak is the GPU's tensor-core peak for the\n")
	w("# operator's precision; an all-reduce at TP n takes\n")
	w("#   latency_s + 2·(n−1)/n · bytes / (link_bw · link_eff).\n")
	w("# Efficiencies are fractions of [peaks]. fit.*_ape_pct are in-sample absolute percentage errors.\n")
	w("# Written by servesim's hardware/calibrate (servesim calibrate, or go generate for the built-in ones); see its doc.go.\n\n")
	w("format = %d\n", p.Format)
	w("gpu = %s\n", tomlQuote(p.GPU))
	w("derivation = %s\n", tomlQuote(p.Derivation))
	w("notes = [\n")
	for _, n := range p.Notes {
		w("  %s,\n", tomlQuote(n))
	}
	w("]\n\n[source]\n")
	w("trace = %s\nformat = %s\n", tomlQuote(p.Source.Trace), tomlQuote(p.Source.Format))
	w("files = [\n")
	for _, f := range p.Source.Files {
		w("  %s,\n", tomlQuote(f))
	}
	w("]\nmodels = [")
	for i, m := range p.Source.Models {
		if i > 0 {
			w(", ")
		}
		w("%s", tomlQuote(m))
	}
	w("]\nsamples = %d\n", p.Source.Samples)
	if p.Source.Rejected > 0 {
		w("rejected = %d\n", p.Source.Rejected)
	}
	w("transferred_from = %s\nnote = %s\n\n", tomlQuote(p.Source.TransferredFrom), tomlQuote(p.Source.Note))
	w("[peaks]\nbf16_flops = %s\nmem_bw = %s\nlink_bw = %s\nsms = %d\n\n", tomlFloat(p.Peaks.BF16FLOPS), tomlFloat(p.Peaks.MemBW), tomlFloat(p.Peaks.LinkBW), p.Peaks.SMs)
	w("[iteration]\noverhead_s = %s\nper_request_s = %s\nsource = %s\n\n", tomlFloat(p.Iteration.OverheadS), tomlFloat(p.Iteration.PerRequestS), tomlQuote(p.Iteration.Source))
	w("[attention]\ncompute_eff = %s\nmemory_eff = %s\noverhead_s = %s\nsource = %s\n",
		tomlFloat(p.Attention.ComputeEff), tomlFloat(p.Attention.MemoryEff), tomlFloat(p.Attention.OverheadS), tomlQuote(p.Attention.Source))
	for _, o := range p.Ops {
		w("\n[[op]]\nop = %s\noverhead_s = %s\ncompute_eff = %s\nhalf_tokens = %s\nmemory_eff = %s\nrow_memory_eff = %s\nwave_eff = %s\ntile_m = %d\ntile_n = %d\nfrom = %s\n",
			tomlQuote(o.Op), tomlFloat(o.OverheadS), tomlFloat(o.ComputeEff), tomlFloat(o.HalfTokens), tomlFloat(o.MemoryEff),
			tomlFloat(o.RowMemoryEff), tomlFloat(o.WaveEff), o.TileM, o.TileN, tomlQuote(o.From))
		writeStats(&b, "op.fit", o.Fit)
	}
	for _, a := range p.AllReduce {
		w("\n[[all_reduce]]\ntp = %d\nlatency_s = %s\nlink_eff = %s\n", a.TP, tomlFloat(a.LatencyS), tomlFloat(a.LinkEff))
		writeStats(&b, "all_reduce.fit", a.Fit)
	}
	if t := p.GEMMTrees; t != nil {
		w("\n# Residual trees: a dense GEMM of a class in kinds, in dtype, with N and K known, takes the time above times\n")
		w("# exp(base + the sum over the trees of the leaf it reaches). Node i of a tree splits on feature[i] (x <= value[i]:\n")
		w("# node i+1, else node i+right[i]) or, where feature[i] = -1, is a leaf worth value[i]. Features: see GEMMTrees.\n")
		w("[gemm_trees]\nfeatures = %s\nkinds = [", tomlQuote(t.Features))
		for i, k := range t.Kinds {
			if i > 0 {
				w(", ")
			}
			w("%s", tomlQuote(k))
		}
		w("]\ndtype = %s\nbase = %s\ntrees = %d\ndepth = %d\nmin_leaf = %d\nlearning_rate = %s\nbins = %d\n",
			tomlQuote(t.Dtype), tomlExact(t.Base), t.Trees, t.Depth, t.MinLeaf, tomlFloat(t.LearningRate), t.Bins)
		writeStats(&b, "gemm_trees.fit", t.Fit)
		for _, tr := range t.Tree {
			w("\n[[gemm_trees.tree]]\nfeature = [")
			for i, f := range tr.Feature {
				if i > 0 {
					w(", ")
				}
				w("%d", f)
			}
			w("]\nvalue = [")
			for i, v := range tr.Value {
				if i > 0 {
					w(", ")
				}
				w("%s", tomlExact(v))
			}
			w("]\nright = [")
			for i, r := range tr.Right {
				if i > 0 {
					w(", ")
				}
				w("%d", r)
			}
			w("]\n")
		}
	}
	return b.Bytes()
}

// tomlExact formats v as a TOML float that reads back as exactly v.
func tomlExact(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}

func writeStats(b *bytes.Buffer, table string, s FitStats) {
	fmt.Fprintf(b, "[%s]\nsamples = %d\nmedian_ape_pct = %s\np90_ape_pct = %s\nmax_ape_pct = %s\n",
		table, s.Samples, tomlFloat(s.MedianAPE), tomlFloat(s.P90APE), tomlFloat(s.MaxAPE))
}

// tomlFloat formats v with 6 significant digits as a TOML float.
func tomlFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', 6, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}

// tomlQuote returns s as a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Clone returns a deep copy of p.
func (p *Profile) Clone() *Profile {
	c := *p
	c.Source.Files = append([]string(nil), p.Source.Files...)
	c.Source.Models = append([]string(nil), p.Source.Models...)
	c.Ops = append([]OpParams(nil), p.Ops...)
	c.AllReduce = append([]AllReduceParams(nil), p.AllReduce...)
	c.Notes = append([]string(nil), p.Notes...)
	// GEMMTrees is shared: nothing modifies trees once grown or read.
	return &c
}

// Transfer returns p moved to GPU g through its specs: the same
// efficiencies, half-token counts, GEMM tiles and fixed overheads, now
// fractions of g's peaks (Peaks become g's), with GEMM waves counted on g's
// SMs. The fit statistics are cleared (they were measured on p's GPU, not
// g) and a note says what was assumed. p must be a fitted profile, and g
// must have an SM count if p has a wave term.
func Transfer(p *Profile, g *hardware.GPU) (*Profile, error) {
	if p.Derivation != DerivationFitted {
		return nil, fmt.Errorf("calibrate: transfer from a %s profile: transfer the fitted %s profile instead", p.Derivation, p.Source.TransferredFrom)
	}
	t := p.Clone()
	t.GPU = g.Name
	t.Derivation = DerivationTransferred
	t.Source.TransferredFrom = p.GPU
	if p.hasTiles() && g.SMs <= 0 {
		return nil, fmt.Errorf("calibrate: gpu %q has no SM count (sms): the %s profile's GEMM tile model needs one to count waves; add sms to its definition", g.Name, p.GPU)
	}
	t.Peaks = Peaks{BF16FLOPS: g.BF16FLOPS, MemBW: g.MemBW, LinkBW: g.LinkBW, SMs: g.SMs}
	for i := range t.Ops {
		t.Ops[i].Fit = FitStats{}
	}
	for i := range t.AllReduce {
		t.AllReduce[i].Fit = FitStats{}
	}
	if t.GEMMTrees != nil {
		tt := *t.GEMMTrees
		tt.Fit = FitStats{}
		t.GEMMTrees = &tt
	}
	trees := ""
	if t.GEMMTrees != nil {
		if g.SMs == p.Peaks.SMs {
			trees = fmt.Sprintf(" The GEMM residual trees are kept: %s and %s have the same %d SMs, and the trees assume they run the same kernels (unmeasured unless the report says so).", p.GPU, g.Name, g.SMs)
		} else {
			t.GEMMTrees = nil
			trees = fmt.Sprintf(" The GEMM residual trees are left out: they describe the kernels cuBLAS picks on %s's %d SMs, not on %s's %d.", p.GPU, p.Peaks.SMs, g.Name, g.SMs)
		}
	}
	waves := ""
	if p.hasTiles() {
		waves = fmt.Sprintf(" and GEMM waves are counted on its %d SMs (%s: %d) with the same tiles", g.SMs, p.GPU, p.Peaks.SMs)
	}
	t.Notes = append([]string{fmt.Sprintf(
		"Transferred from the %s fit: every efficiency, half-token count, tile and fixed overhead of %s is kept and applied to the %s peaks "+
			"(BF16 %.4g TFLOP/s, HBM %.4g TB/s, NVLink %.4g GB/s per direction)%s; fit statistics were measured on %s and are left out.%s",
		p.GPU, p.GPU, g.Name, g.BF16FLOPS/1e12, g.MemBW/1e12, g.LinkBW/1e9, waves, p.GPU, trees)}, p.Notes...)
	return t, nil
}

//go:embed profiles/*.toml
var builtinFS embed.FS

// builtinProfile is an embedded profile, parsed once.
type builtinProfile struct {
	once sync.Once
	p    *Profile
	err  error
}

var builtinProfiles = func() map[string]*builtinProfile {
	m := map[string]*builtinProfile{}
	for _, name := range BuiltinGPUs {
		m[name] = &builtinProfile{}
	}
	return m
}()

// BuiltinGPUs are the GPUs with a built-in profile.
var BuiltinGPUs = []string{"a100", "h100", "h200", "b200"}

// Builtin returns a copy of the built-in profile of a catalog GPU ("a100",
// "h100", "h200", "b200"; aliases such as "h100-sxm" resolve through
// hardware.Builtin()), or false. A100 and H100 are fitted from
// ../shared/data/vidur-profiling; H200 and B200 are the H100 fit
// transferred through their specs. `go generate ./hardware/calibrate`
// regenerates them (see doc.go). It panics if an embedded profile does not
// load, which TestBuiltinProfiles rules out.
func Builtin(gpu string) (*Profile, bool) {
	name := strings.ToLower(strings.TrimSpace(gpu))
	if g, err := hardware.Builtin().Get(gpu); err == nil {
		name = g.Name
	}
	b, ok := builtinProfiles[name]
	if !ok {
		return nil, false
	}
	// Each profile is parsed on first use (a profile with trees takes
	// milliseconds).
	b.once.Do(func() {
		data, err := builtinFS.ReadFile("profiles/" + name + ".toml")
		if err == nil {
			b.p, err = ParseProfile(data, "profiles/"+name+".toml")
		}
		b.err = err
	})
	if b.err != nil {
		panic("calibrate: embedded profile: " + b.err.Error())
	}
	return b.p.Clone(), true
}
