package calibrate

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// The calibrated attention model. Package models prices a batch's attention
// as two operators per layer: OpAttnPrefill (the prefill chunks: FLOPs of
// QKᵀ and PV over the causal query–key pairs, chunk × (prior + (chunk+1)/2);
// bytes of Q, O and the KV read and written) and OpAttnDecode (the decodes:
// the KV bytes every decode reads, 2 × kv_heads × head_dim × 2 bytes per
// context token, and its FLOPs). vLLM runs both in one FlashAttention varlen
// call; a bundle's attention.csv times that call. The simulator keeps the
// two operators and sums them, so the fitted model is that sum:
//
//	t(call) = [prefill] (o_p + max(F_p/(peak·η_p), B_p/(BW·μ_p)))
//	        + [decodes] (o_d + n·s_d + max(F_d/(peak·η_d), B_d/(BW·μ_d), B_d/n/(BW·ρ_d)))
//
// fitted to every row of the call (pure prefill, pure decode and mixed), so
// that the two overheads add up to a mixed call's and each operator alone
// to a pure one's. A mixed call's decodes take their own o, η, μ (the
// Mixed* fields) and no s or ρ.
//
// The decode-only form the fit uses is additive: t = o_d + n·s_d +
// B_d/(BW·μ_d), a fixed cost, a cost per sequence (its thread blocks'
// launch and reduction, the query and output rows) and the bytes at a
// bandwidth. The bundles' pure-decode rows say so: on the H100, n = 512
// from KV 64 to 1024 adds 1.0 GB in 346 µs (μ ≈ 0.87) while n = 1 → 512 at
// KV 16 adds 36 µs, 70 ns a sequence, that bytes alone do not explain. The
// older form, o_d + max(F/(peak·η_d), B/(BW·μ_d), B/n/(BW·ρ_d)) with s_d =
// 0, folds the per-sequence cost into a lower μ and overpredicts large
// batches at long contexts (H100 n = 512, KV 1024: +15 %); held out by
// context (fit KV ≤ 256, predict 1024 on H100; KV ≤ 1024, predict longer
// on the RTX 4090 and RTX PRO 6000) its median error is 28 %, 27 % and
// 14 % against 11 %, 7.5 % and 9 % for the additive form (the
// `calibrate --report` attention table has the full comparison). The
// compute term never binds (a decode's FLOPs per KV byte is the GQA
// ratio, 4–8, far under any ridge point: η_d is not identifiable and is
// set to 1) and the per-sequence bandwidth term ρ_d, fitted, chases the
// H100's kernel switch at KV 256 and extrapolates a lone long sequence at
// 8 % of the bandwidth (p90 118 % held out by context), so the fit leaves
// it out (ρ_d = 0). Profiles written with the older form (no
// decode_per_seq_s) load and price as before. On top of the additive form
// a decode-only call takes the residual table of attention_residual.go,
// by work units (decodes × KV heads per GPU) and KV bytes per unit.
//
// The fit minimises the squared log error, from fixed starts
// (Levenberg–Marquardt): deterministic.

// attnDims are the attention shapes of a bundle's model at TP 1, from its
// Hugging Face config.json (meta.yaml records heads per rank for one TP
// degree, never head_dim). AttnDims checks them against meta.yaml.
var attnDims = map[string]struct{ heads, kvHeads, headDim int }{
	// config.json: num_attention_heads 32, num_key_value_heads 8, hidden 4096 / 32 = 128.
	"meta-llama/Llama-3.1-8B": {32, 8, 128},
	// config.json: num_attention_heads 64, num_key_value_heads 8, head_dim 128.
	"Qwen/Qwen3-32B": {64, 8, 128},
	// config.json: num_attention_heads 32, num_key_value_heads 4, head_dim 128.
	"Qwen/Qwen3-30B-A3B-Instruct-2507": {32, 4, 128},
	// config.json text_config: num_attention_heads 16, num_key_value_heads 2,
	// head_dim 256 (the full-attention layers; SOURCE.md: attention.csv
	// holds only those).
	"Qwen/Qwen3.6-35B-A3B": {16, 2, 256},
}

// AttnModel returns a models.Model that carries only the attention shapes
// of the bundle's model (one layer, TP-1 head counts): what the fit prices
// the bundle's rows with. It checks the head counts against meta.yaml's
// hf_overrides, which are per rank for the largest TP degree.
func (b *Bundle) AttnModel() (*models.Model, error) {
	d, ok := attnDims[b.Meta.Model]
	if !ok {
		return nil, unknownShapes(b, attnDims, "attention shapes (heads, KV heads, head_dim)")
	}
	tp := 1
	for _, t := range b.Meta.TPDegrees {
		tp = max(tp, t)
	}
	for _, c := range []struct {
		key  string
		full int
	}{{"num_attention_heads", d.heads}, {"num_key_value_heads", d.kvHeads}} {
		k := "engine_effective.hf_overrides." + c.key
		s, ok := b.Meta.Values[k]
		if !ok {
			continue
		}
		v, err := strconv.Atoi(s)
		want := max(1, c.full/tp)
		if err != nil || v != want && v != c.full {
			return nil, fmt.Errorf("calibrate: %s line %d: %s = %s, but %s has %d (%d per rank at TP %d)",
				filepath.Join(b.Dir, "meta.yaml"), b.Meta.line(k), c.key, s, b.Meta.Model, c.full, want, tp)
		}
	}
	return &models.Model{Name: b.Meta.Model, Layers: 1, Hidden: d.heads * d.headDim, Heads: d.heads, KVHeads: d.kvHeads,
		HeadDim: d.headDim, FFN: 1, Vocab: 1}, nil
}

// BundleGPU returns the catalog GPU a bundle was measured on, by its folder
// label or its device name.
func (b *Bundle) BundleGPU(cat *hardware.Catalog) (*hardware.GPU, error) {
	slug := func(s string) string {
		return strings.Trim(strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
				return r
			case r >= 'A' && r <= 'Z':
				return r + 'a' - 'A'
			}
			return '-'
		}, s), "-")
	}
	for _, n := range []string{b.Meta.Hardware, slug(b.Meta.GPU), strings.TrimPrefix(slug(b.Meta.GPU), "nvidia-")} {
		if n == "" {
			continue
		}
		if g, err := cat.Get(strings.ToLower(n)); err == nil {
			return g, nil
		}
	}
	// "NVIDIA H100 80GB HBM3": the first word after the vendor that names a GPU.
	for _, w := range strings.Fields(b.Meta.GPU) {
		if g, err := cat.Get(strings.ToLower(w)); err == nil {
			return g, nil
		}
	}
	return nil, fmt.Errorf("calibrate: %s line %d: gpu %q is not in the GPU catalog (add it, with an alias, to a --gpus file)",
		filepath.Join(b.Dir, "meta.yaml"), b.Meta.line("gpu"), b.Meta.GPU)
}

// AttnSample is one attention call priced by package models: the two
// operators of the call (Kind 0 = none) and the measured time.
type AttnSample struct {
	Prefill, Decode models.Op
	HasP, HasD      bool
	Seconds         float64
	Model           string // bundle's model
	TP              int
	Row             AttnRow
	Where           string // "FILE line N"
}

// AttnSamples prices every attention row of the bundle with package
// models (one layer, the rank's heads at each TP degree, BF16 KV).
func (b *Bundle) AttnSamples() ([]AttnSample, error) {
	m, err := b.AttnModel()
	if err != nil {
		return nil, err
	}
	var out []AttnSample
	var ops []models.Op
	for _, t := range b.TP {
		p := models.Parallel{TP: t.TP, Weights: models.BF16, KV: models.BF16}
		file := filepath.Join(filepath.Base(b.Dir), fmt.Sprintf("tp%d", t.TP), "attention.csv")
		for _, r := range t.Attention {
			ops = m.BatchOps(AttnBatch(r), p, ops[:0])
			s := AttnSample{Seconds: r.Seconds, Model: b.Meta.Model, TP: t.TP, Row: r, Where: fmt.Sprintf("%s line %d", file, r.Line)}
			for _, op := range ops {
				switch op.Kind {
				case models.OpAttnPrefill:
					s.Prefill, s.HasP = op, true
				case models.OpAttnDecode:
					s.Decode, s.HasD = op, true
				}
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// AttnBatch is the simulator's batch of one attention.csv row: at most one
// prefill chunk over its prior context, and decodes that share one context.
func AttnBatch(r AttnRow) models.Batch {
	var b models.Batch
	if r.PrefillChunk > 0 {
		p := float64(r.PrefillChunk)
		b.Prefills, b.PrefillTokens, b.PrefillCtx = 1, r.PrefillChunk, int64(r.KVPrefill)
		b.PrefillPairs = p * (float64(r.KVPrefill) + (p+1)/2)
	}
	b.Decodes, b.DecodeCtx = r.NDecode, int64(r.NDecode)*int64(r.KVDecode)
	return b
}

// AttnTime is the calibrated attention time of sample s under a on g: the
// sum of Calibrated.OpTime of its two operators.
func AttnTime(a *Attention, g *hardware.GPU, s *AttnSample) float64 {
	var t float64
	if s.HasP {
		t += a.prefillTime(g, &s.Prefill)
	}
	if s.HasD {
		t += a.decodeTime(g, &s.Decode)
	}
	return t
}

func (a *Attention) prefillTime(g *hardware.GPU, op *models.Op) float64 {
	t := max(op.FLOPs/(g.PeakFLOPS(op.Compute)*a.ComputeEff), op.Bytes/(g.MemBW*a.MemoryEff))
	if a.PrefillRowComputeEff > 0 {
		t = max(t, op.FLOPs/float64(max(op.Tokens, 1))/(g.PeakFLOPS(op.Compute)*a.PrefillRowComputeEff))
	}
	return a.OverheadS + t
}

func (a *Attention) decodeTime(g *hardware.GPU, op *models.Op) float64 {
	if op.Mixed && a.MixedMemoryEff > 0 {
		return a.MixedOverheadS + max(op.FLOPs/(g.PeakFLOPS(op.Compute)*a.MixedComputeEff), op.Bytes/(g.MemBW*a.MixedMemoryEff))
	}
	ce, me, re, o, s := a.decode()
	d := max(op.FLOPs/(g.PeakFLOPS(op.Compute)*ce), op.Bytes/(g.MemBW*me))
	if re > 0 {
		d = max(d, op.Bytes/float64(max(op.Tokens, 1))/(g.MemBW*re))
	}
	t := o + s*float64(op.Tokens) + d
	if len(a.DecodeResidual) > 0 {
		w, u := decodeWork(op.Tokens, op.KVHeads, op.Bytes)
		t *= residualAt(a.DecodeResidualUnits, a.DecodeResidualBytes, a.DecodeResidual, w, u)
	}
	return t
}

// decode returns the decode-only parameters: the Decode* fields, or the
// prefill ones when the profile has none (an assumed roofline).
func (a *Attention) decode() (ce, me, re, o, s float64) {
	if a.DecodeMemoryEff > 0 {
		return a.DecodeComputeEff, a.DecodeMemoryEff, a.DecodeRowMemoryEff, a.DecodeOverheadS, a.DecodePerSeqS
	}
	return a.ComputeEff, a.MemoryEff, 0, a.OverheadS, 0
}

// minAttnRows is the least number of calls of each kind (pure prefill,
// pure decode, mixed) an attention fit needs: about five per parameter.
const minAttnRows = 16

// FitAttention fits the attention model to ss measured on g, in three
// stages, each a least-squares fit of the log error
// (Levenberg–Marquardt from fixed starts, so deterministic): the prefill
// parameters to the pure-prefill calls, the decode-only parameters (o_d,
// μ_d, s_d of the additive form) to the pure-decode calls, then the mixed-decode parameters to the mixed calls
// with the prefill part fixed. The result's From is "fit" and Fit its
// in-sample error over all of ss.
func FitAttention(ss []AttnSample, g *hardware.GPU) (Attention, error) {
	return fitAttnCalls(ss, g, formResidual)
}

// attnForm is the decode-only form a fit uses.
type attnForm int

const (
	// formResidual: the additive form times the residual table by work
	// units and bytes per unit (attention_residual.go).
	formResidual attnForm = iota
	// formAdditive: the additive form alone.
	formAdditive
	// formOlder: o_d + max(F/(peak·η_d), B/(BW·μ_d), B/n/(BW·ρ_d)), no s_d.
	formOlder
)

// fitAttnCalls is FitAttention with the decode-only form form; the report
// prints the other forms for comparison.
func fitAttnCalls(ss []AttnSample, g *hardware.GPU, form attnForm) (Attention, error) {
	var pre, dec, mix []AttnSample
	for _, s := range ss {
		switch {
		case s.HasP && s.HasD:
			mix = append(mix, s)
		case s.HasP:
			pre = append(pre, s)
		case s.HasD:
			dec = append(dec, s)
		}
	}
	if len(pre) < minAttnRows || len(dec) < minAttnRows || len(mix) < minAttnRows {
		return Attention{}, fmt.Errorf("calibrate: attention fit on %s: %d pure-prefill, %d pure-decode and %d mixed calls; need %d of each",
			g.Name, len(pre), len(dec), len(mix), minAttnRows)
	}
	var a Attention
	set := func(dst []*float64, x []float64, kinds string) {
		for i, d := range dst {
			if kinds[i] == 'o' {
				*d = math.Exp(x[i])
			} else {
				*d = math.Min(1, math.Max(minEff, logistic(x[i])))
			}
		}
	}
	stage := func(rows []AttnSample, dst []*float64, kinds string, starts [][]float64) {
		res := func(x, r []float64) {
			set(dst, x, kinds)
			for i := range rows {
				r[i] = math.Log(AttnTime(&a, g, &rows[i])) - math.Log(rows[i].Seconds)
			}
		}
		var best []float64
		bestCost := math.Inf(1)
		for _, x0 := range starts {
			x, c := levenbergMarquardt(res, nil, x0, len(rows), 200)
			if c < bestCost {
				best, bestCost = x, c
			}
		}
		set(dst, best, kinds)
	}
	stage(pre, []*float64{&a.OverheadS, &a.ComputeEff, &a.MemoryEff, &a.PrefillRowComputeEff}, "oeee", [][]float64{
		{math.Log(5e-6), logit(0.5), logit(0.5), logit(0.002)}, {math.Log(2e-6), logit(0.2), logit(0.1), logit(0.0005)}})
	// Decode-only: the additive form (see the top of this file); the
	// compute term is kept at the peak (never binding) and the
	// per-sequence bandwidth term left out.
	if form == formOlder {
		stage(dec, []*float64{&a.DecodeOverheadS, &a.DecodeComputeEff, &a.DecodeMemoryEff, &a.DecodeRowMemoryEff}, "oeee", [][]float64{
			{math.Log(5e-6), logit(0.3), logit(0.7), logit(0.3)}, {math.Log(10e-6), logit(0.05), logit(0.9), logit(0.05)}})
	} else {
		a.DecodeComputeEff, a.DecodeRowMemoryEff = 1, 0
		stage(dec, []*float64{&a.DecodeOverheadS, &a.DecodeMemoryEff, &a.DecodePerSeqS}, "oeo", [][]float64{
			{math.Log(5e-6), logit(0.7), math.Log(50e-9)}, {math.Log(10e-6), logit(0.9), math.Log(10e-9)}, {math.Log(3e-6), logit(0.5), math.Log(200e-9)}})
		if form == formResidual {
			fitResidual(&a, dec, g)
		}
	}
	stage(mix, []*float64{&a.MixedOverheadS, &a.MixedComputeEff, &a.MixedMemoryEff}, "oee", [][]float64{
		{math.Log(2e-6), logit(0.01), logit(0.5)}, {math.Log(10e-6), logit(0.002), logit(0.2)}})
	a.From = "fit"
	a.Fit = AttnErrors(&a, g, ss)
	return a, nil
}

// AttnErrors are the absolute percentage errors of a on ss.
func AttnErrors(a *Attention, g *hardware.GPU, ss []AttnSample) FitStats {
	ape := make([]float64, len(ss))
	for i := range ss {
		ape[i] = 100 * math.Abs(AttnTime(a, g, &ss[i])/ss[i].Seconds-1)
	}
	return statsOf(ape)
}

// doubling reports whether every axis value of r is on the doubling grid
// (0 or 16·2^k; n_decode 0 or 2^k), as opposed to the ×1.5 rows the
// RTX PRO 6000 bundles add.
func doubling(r AttnRow) bool {
	pow2 := func(v int) bool { return v > 0 && v&(v-1) == 0 }
	for _, v := range []int{r.PrefillChunk, r.KVPrefill, r.KVDecode} {
		if v != 0 && !(v >= 16 && pow2(v)) {
			return false
		}
	}
	return r.NDecode == 0 || pow2(r.NDecode)
}

// maxPerSeqS bounds decode_per_seq_s: 1 ms a sequence a layer is far
// beyond any attention kernel (the bundles fit 20–180 ns).
const maxPerSeqS = 1e-3

// validateDecode checks the decode parameters (all 0, or efficiencies in
// [minEff, 1] with a row efficiency and a per-sequence cost that may be
// 0), From and Fit.
func (a *Attention) validateDecode() error {
	if a.DecodeMemoryEff == 0 && a.DecodeComputeEff == 0 && a.DecodeRowMemoryEff == 0 && a.DecodeOverheadS == 0 {
		// decodes as prefill
	} else {
		if err := frac("attention.decode_compute_eff", a.DecodeComputeEff, 1); err != nil {
			return err
		}
		if err := frac("attention.decode_memory_eff", a.DecodeMemoryEff, 1); err != nil {
			return err
		}
		if !(a.DecodeRowMemoryEff == 0 || a.DecodeRowMemoryEff >= minEff && a.DecodeRowMemoryEff <= 1) {
			return &fieldErr{field: "attention.decode_row_memory_eff", msg: fmt.Sprintf("must be 0 (no per-sequence term) or in [%g, 1], got %v", minEff, a.DecodeRowMemoryEff)}
		}
		if err := overhead("attention.decode_overhead_s", a.DecodeOverheadS); err != nil {
			return err
		}
		if !(a.DecodePerSeqS >= 0 && a.DecodePerSeqS <= maxPerSeqS) {
			return &fieldErr{field: "attention.decode_per_seq_s", msg: fmt.Sprintf("must be in [0, %g] s (seconds per decode sequence; 0: none), got %v", maxPerSeqS, a.DecodePerSeqS)}
		}
	}
	if err := a.validateResidual(); err != nil {
		return err
	}
	if a.DecodeMemoryEff == 0 && a.DecodePerSeqS != 0 {
		return &fieldErr{field: "attention.decode_per_seq_s", msg: fmt.Sprintf("%v s needs the decode parameters (decode_memory_eff, decode_compute_eff, decode_overhead_s) beside it: without them decodes are priced as prefill", a.DecodePerSeqS)}
	}
	if !(a.From == "" || a.From == "assumed" || a.From == "fit" || strings.HasPrefix(a.From, "transferred from ") && len(a.From) > len("transferred from ")) {
		return &fieldErr{field: "attention.from", msg: fmt.Sprintf("%q: want \"assumed\", \"fit\" or \"transferred from <gpu>\"", a.From)}
	}
	if a.DecodeFrom != "" && (a.DecodeMemoryEff == 0 || strings.TrimSpace(a.DecodeFrom) != a.DecodeFrom) {
		return &fieldErr{field: "attention.decode_from", msg: fmt.Sprintf("%q needs the decode parameters beside it and a GPU name without spaces around it", a.DecodeFrom)}
	}
	return a.Fit.validate("attention.fit")
}

// describe is the attention part of Profile.Describe of a profile of gpu.
func (a *Attention) describe(gpu string) string {
	decode := ""
	switch {
	case a.DecodeFrom == gpu:
		decode = "; decode attention's bandwidth fitted to this GPU's kernel timings"
	case a.DecodeFrom != "":
		decode = fmt.Sprintf("; decode attention's bandwidth: the %s's measured, transferred", a.DecodeFrom)
	}
	switch {
	case a.From == "fit":
		return fmt.Sprintf("attention fitted to measured kernel times (in-sample median error %.1f %%)", a.Fit.MedianAPE) + decode
	case strings.HasPrefix(a.From, "transferred from "):
		return fmt.Sprintf("attention: the %s fit to measured kernel times, transferred", strings.TrimPrefix(a.From, "transferred from ")) + decode
	}
	return fmt.Sprintf("attention by roofline at %.0f %% of peak (assumed)", 100*a.ComputeEff)
}
