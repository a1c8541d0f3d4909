package calibrate

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// FormatVersion is the profile file format this package reads and writes.
const FormatVersion = 1

// maxTile bounds a tile dimension in a profile.
const maxTile = 1 << 12

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
	// GEMMPrecisions, if not empty, adjust the GEMM classes per math
	// precision (see GEMMPrecision, precision.go); a precision without an
	// entry takes the [[op]] parameters as they are.
	GEMMPrecisions []GEMMPrecision `toml:"gemm_precision"`
	// MoE, if MemoryEff > 0, prices MoE expert operators apart from the
	// dense GEMM classes (MoEParams, moe.go); the zero value: as dense.
	MoE MoEParams `toml:"moe"`
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

// Attention prices OpAttnPrefill by the roofline
// OverheadS + max(FLOPs/(peak·ComputeEff), Bytes/(MemBW·MemoryEff)), and
// OpAttnDecode by the same with the Decode* parameters, a per-sequence
// bandwidth term Bytes/decodes/(MemBW·DecodeRowMemoryEff) inside the max
// and a per-sequence cost decodes·DecodePerSeqS added to it (see
// attention.go); with DecodeMemoryEff = 0 decodes take the prefill
// parameters (an assumed roofline). A mixed batch is the sum of the two (one FlashAttention call
// measured as such: the fit sets the two overheads so).
type Attention struct {
	ComputeEff float64 `toml:"compute_eff"`
	MemoryEff  float64 `toml:"memory_eff"`
	OverheadS  float64 `toml:"overhead_s"`
	// PrefillRowComputeEff, if > 0, adds a prefill term FLOPs/tokens /
	// (peak·it): one query row's keys at a fraction of the peak, the
	// latency of a short chunk over a long context (few thread blocks).
	PrefillRowComputeEff float64 `toml:"prefill_row_compute_eff"`
	// Decode parameters; all 0: as prefill.
	DecodeComputeEff   float64 `toml:"decode_compute_eff"`
	DecodeMemoryEff    float64 `toml:"decode_memory_eff"`
	DecodeRowMemoryEff float64 `toml:"decode_row_memory_eff"`
	DecodeOverheadS    float64 `toml:"decode_overhead_s"`
	// DecodePerSeqS is the seconds each decode adds to a decode-only call
	// beyond its bytes (the additive form t = o + n·s + bytes/(BW·μ));
	// 0, as in profiles written before it: no such term (the old form).
	// Mixed calls with Mixed* parameters do not take it.
	DecodePerSeqS float64 `toml:"decode_per_seq_s"`
	// DecodeResidual, when set, multiplies a decode-only call's time by a
	// factor measured on the bundles' grid, by work units (decodes × KV
	// heads per GPU, DecodeResidualUnits) and KV bytes per unit
	// (DecodeResidualBytes): DecodeResidual[i][j] at units i and bytes j,
	// bilinear in their log2 between points, the edge values beyond them
	// (attention_residual.go). Empty, as in profiles written before it: no
	// factor.
	DecodeResidualUnits []float64   `toml:"decode_residual_units"`
	DecodeResidualBytes []float64   `toml:"decode_residual_unit_bytes"`
	DecodeResidual      [][]float64 `toml:"decode_residual"`
	// Mixed parameters price the decodes of a call that also holds a
	// prefill chunk (models.Op.Mixed); all 0: as decode-only.
	MixedComputeEff float64 `toml:"mixed_compute_eff"`
	MixedMemoryEff  float64 `toml:"mixed_memory_eff"`
	MixedOverheadS  float64 `toml:"mixed_overhead_s"`
	// From is "assumed" (or ""), "fit" (to this GPU's attention timings) or
	// "transferred from <gpu>" (another GPU's fit on this GPU's peaks).
	From string `toml:"from"`
	// DecodeFrom, when set, is the GPU whose own kernel timings the
	// decode-only bandwidth and per-sequence cost (decode_memory_eff,
	// decode_per_seq_s) were fitted to, where the rest follows From
	// (blackwell_attention.go: "b200").
	DecodeFrom string `toml:"decode_from"`
	// Fit is the in-sample error of a "fit" (held-out errors are in the
	// notes and `servesim calibrate --report`).
	Fit    FitStats `toml:"fit"`
	Source string   `toml:"source"`
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
// order: every class but attention, the all-reduce and qk_norm (the norms
// inside attention, which no trace profiles: a profile may carry an entry
// for it, else it is priced with the norm class's parameters).
var fittedKinds = func() []models.OpKind {
	var ks []models.OpKind
	for k := models.OpKind(0); k < models.NumOpKinds; k++ {
		if k != models.OpAttnPrefill && k != models.OpAttnDecode && k != models.OpAllReduce && k != models.OpQKNorm {
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
	if s := p.precisionSummary(); s != "" {
		b.WriteString("; " + s)
	}
	b.WriteString("; " + p.Attention.describe(p.GPU))
	if len(p.AllReduce) == 0 {
		b.WriteString("; all-reduce by roofline")
	}
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
	c.GEMMPrecisions = append([]GEMMPrecision(nil), p.GEMMPrecisions...)
	c.Attention.DecodeResidualUnits = append([]float64(nil), p.Attention.DecodeResidualUnits...)
	c.Attention.DecodeResidualBytes = append([]float64(nil), p.Attention.DecodeResidualBytes...)
	c.Attention.DecodeResidual = nil
	for _, row := range p.Attention.DecodeResidual {
		c.Attention.DecodeResidual = append(c.Attention.DecodeResidual, append([]float64(nil), row...))
	}
	// GEMMTrees is shared: nothing modifies trees once grown or read.
	return &c
}

// Transfer returns p moved to GPU g through its specs: the same
// efficiencies, GEMM tiles and fixed overheads, now fractions of g's peaks
// (Peaks become g's), with GEMM waves counted on g's SMs, and the GEMMs'
// half-token counts (and MoE half-rows) scaled by ridgeRatio. The fit
// statistics are cleared (they were measured on p's GPU, not g) and a note
// says what was assumed. p must be a fitted profile, and g must have an SM
// count if p has a wave term.
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
	ridge := ridgeRatio(p.Peaks, t.Peaks)
	for i := range t.Ops {
		t.Ops[i].Fit = FitStats{}
		t.Ops[i].HalfTokens *= ridge
	}
	t.MoE.HalfRows *= ridge
	for i := range t.AllReduce {
		t.AllReduce[i].Fit = FitStats{}
	}
	if t.Attention.From == "fit" {
		t.Attention.From, t.Attention.Fit = "transferred from "+p.GPU, FitStats{}
	}
	if t.MoE.From == "fit" {
		t.MoE.From, t.MoE.Fit = "transferred from "+p.GPU, FitStats{}
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
	var resid string
	t.Attention, resid = t.Attention.onSMs(p.Peaks.SMs, g.SMs, p.GPU, g.Name)
	trees += resid
	waves := ""
	if p.hasTiles() {
		waves = fmt.Sprintf(" and GEMM waves are counted on its %d SMs (%s: %d) with the same tiles", g.SMs, p.GPU, p.Peaks.SMs)
	}
	t.Notes = append([]string{fmt.Sprintf(
		"Transferred from the %s fit: every efficiency, tile and fixed overhead of %s is kept and applied to the %s peaks "+
			"(BF16 %.4g TFLOP/s, HBM %.4g TB/s, NVLink %.4g GB/s per direction)%s; the GEMMs' half-token counts are scaled by the ridge points' ratio "+
			"(peak/HBM on %s over the same on %s: %.3g); fit statistics were measured on %s and are left out.%s",
		p.GPU, p.GPU, g.Name, g.BF16FLOPS/1e12, g.MemBW/1e12, g.LinkBW/1e9, waves, g.Name, p.GPU, ridge, p.GPU, trees)}, p.Notes...)
	return t, nil
}

// ridgeRatio is the ratio of the two GPUs' ridge points, (BF16 peak /
// HBM bandwidth on to) / (the same on from): how a GEMM's half-token
// count moves between them. The saturating form's (1 + h/tokens) makes a
// small-M GEMM cost at least 2·N·K·h / (peak · compute_eff), a floor set
// in compute units; fitted where the weight read binds, h places that
// floor just under the memory term, at a token count in proportion to
// the GPU's ridge point: the A100 and H100 fits to Vidur's traces (one
// stack, two GPUs) give h / ridge = 0.62 and 0.59 for mlp_up, 0.63 and
// 0.53 for qkv, 0.66 and 0.66 for out_proj, 0.59 and 0.86 for mlp_down
// (ridges 153 and 295 FLOPs per byte). Kept in tokens, a transfer to a GPU
// of more bandwidth for its compute (H100 → H200: ridge 206) lifts the
// floor above the faster weight read and prices every decode-sized GEMM
// by it: the H200's measured GEMMs of 1–128 tokens came out 30 % slow
// (median), the A100's 39 %, before this scaling (docs/calibration.md).
func ridgeRatio(from, to Peaks) float64 {
	if !(from.BF16FLOPS > 0 && from.MemBW > 0 && to.BF16FLOPS > 0 && to.MemBW > 0) {
		return 1
	}
	return (to.BF16FLOPS / to.MemBW) / (from.BF16FLOPS / from.MemBW)
}

// rateHalfTokens moves a transferred profile's half-token counts from the
// datasheet ridge Transfer used to the effective one, once a measured BF16
// [[gemm_precision]] entry re-rates this GPU's GEMM compute (compute_scale)
// or weight read (memory_scale): the floor (1 + h/tokens) sets under a
// small-M GEMM is in compute time, the weight read in memory time, and
// their ratio is what the fit measured on the source GPU. It multiplies
// every half-token count (and the MoE half-rows) by compute_scale /
// memory_scale (memory_scale 0: 1) and returns a sentence saying so for
// the transfer note; without such an entry it does nothing and returns "".
func (p *Profile) rateHalfTokens() string {
	g, ok := p.precision(models.BF16)
	if !ok || !(g.ComputeScale > 0) {
		return ""
	}
	f := g.ComputeScale
	if g.MemoryScale > 0 {
		f /= g.MemoryScale
	}
	for i := range p.Ops {
		p.Ops[i].HalfTokens *= f
	}
	p.MoE.HalfRows *= f
	return fmt.Sprintf(" The measured BF16 GEMM scales below move the ridge point on: half-token counts × %.3g more (compute_scale / memory_scale).", f)
}

//go:embed profiles/*.toml
var builtinFS embed.FS

// builtinProfile is an embedded profile, loaded once: from its generated
// Go form (static_<gpu>.go, static data the compiler lays out, which
// TestStaticProfiles holds equal to what ParseProfile reads from the TOML),
// or parsed from the TOML in a build without it (the toml_builtins tag).
type builtinProfile struct {
	once   sync.Once
	p      *Profile
	digest string // SHA-256 of the TOML, hex
	err    error
}

var builtinProfiles = func() map[string]*builtinProfile {
	m := map[string]*builtinProfile{}
	for _, name := range BuiltinGPUs {
		m[name] = &builtinProfile{}
	}
	return m
}()

// BuiltinGPUs are the GPUs with a built-in profile.
var BuiltinGPUs = []string{"a100", "h100", "h200", "b200", "rtx-pro-6000", "rtx-4090", "h100-pcie", "a100-pcie", "gb200", "l40s", "b300", "gb300"}

// bundleGPUs are the built-in GPUs fitted to LLMServingSim's bundles alone.
var bundleGPUs = []string{"rtx-pro-6000", "rtx-4090"}

// Builtin returns a copy of the built-in profile of a catalog GPU ("a100",
// "h100", "h200", "b200", "rtx-pro-6000", "rtx-4090", "h100-pcie",
// "a100-pcie", "gb200", "l40s"; aliases such as
// "h100-sxm" resolve through hardware.Builtin()), or false. A100 and H100
// are fitted from ../shared/data/vidur-profiling; H200 and B200 are the
// H100 fit transferred through their specs; RTX PRO 6000 and RTX 4090 are
// fitted to LLMServingSim's profile bundles (dense.csv, per_sequence.csv,
// attention.csv); h100-pcie, a100-pcie, gb200 and l40s are a measured GPU
// of the same architecture transferred through their specs (see
// derivedGPUs). `go generate ./hardware/calibrate`
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
	b.load(name)
	return b.p.Clone(), true
}

// BuiltinDigest returns the SHA-256 (hex) of the TOML of a built-in
// profile, what WriteTOML writes for Builtin(gpu) (TestBuiltinDigest), or
// false; gpu as for Builtin.
func BuiltinDigest(gpu string) (string, bool) {
	name := strings.ToLower(strings.TrimSpace(gpu))
	if g, err := hardware.Builtin().Get(gpu); err == nil {
		name = g.Name
	}
	b, ok := builtinProfiles[name]
	if !ok {
		return "", false
	}
	b.load(name)
	return b.digest, true
}

// load reads the built-in profile of name once: its generated form, or
// its TOML (a profile with trees takes milliseconds to parse). It panics
// if the TOML does not load.
func (b *builtinProfile) load(name string) {
	b.once.Do(func() {
		if b.p, b.digest = builtinStatic(name); b.p != nil {
			return
		}
		data, err := builtinFS.ReadFile("profiles/" + name + ".toml")
		if err == nil {
			b.p, err = ParseProfile(data, "profiles/"+name+".toml")
			sum := sha256.Sum256(data)
			b.digest = hex.EncodeToString(sum[:])
		}
		b.err = err
	})
	if b.err != nil {
		panic("calibrate: embedded profile: " + b.err.Error())
	}
}
