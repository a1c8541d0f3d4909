package calibrate

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// moeDims are the MoE-block shapes of the bundles' MoE models: hidden
// size, routed experts, experts per token, expert intermediate size and
// shared experts (of the same width).
var moeDims = map[string]struct{ hidden, experts, topK, ffn, shared int }{
	// config.json of Qwen/Qwen3-30B-A3B-Instruct-2507 (as the catalog's
	// qwen3-30b-a3b): hidden_size 2048, num_experts 128,
	// num_experts_per_tok 8, moe_intermediate_size 768, no shared expert.
	"Qwen/Qwen3-30B-A3B-Instruct-2507": {2048, 128, 8, 768, 0},
	// Qwen3.6-35B-A3B model card (huggingface.co/Qwen/Qwen3.6-35B-A3B,
	// quoted at mera.a-ai.ru/en/industrial/submits/181): hidden dimension
	// 2048, 256 experts, 8 routed + 1 shared, expert intermediate dimension
	// 512; the shared expert is 512 wide as well
	// (--moe-shared-expert-intermediate-size 512,
	// radixark.com/miles/docs/models/qwen/qwen3-6-moe).
	"Qwen/Qwen3.6-35B-A3B": {2048, 256, 8, 512, 1},
}

// MoEModel returns a models.Model that carries only the MoE-block shapes
// of the bundle's model (one layer): what moe.csv rows are priced with.
func (b *Bundle) MoEModel() (*models.Model, error) {
	d, ok := moeDims[b.Meta.Model]
	if !ok {
		return nil, unknownShapes(b, moeDims, "MoE shapes (hidden, experts, top-k, expert width)")
	}
	return &models.Model{Name: b.Meta.Model, Layers: 1, Hidden: d.hidden, Heads: 16, KVHeads: 2, HeadDim: 128, Vocab: 1,
		Experts: d.experts, TopK: d.topK, ExpertFFN: d.ffn, SharedExperts: d.shared, GatedMLP: true}, nil
}

// MoESample is one moe.csv row priced by package models: the operators of
// one MoE layer's MLP (router, expert up, activation, down; Count 1) for
// Tokens tokens touching Experts distinct routed experts, and the measured
// time of the whole block.
type MoESample struct {
	Ops     []models.Op
	Tokens  int
	Experts int
	Seconds float64
	Model   string // bundle's model
	Where   string // "FILE line N"
}

// MoESamples prices every moe.csv row of the bundle (TP 1 only: SOURCE.md)
// with models.Model.MoEOps. A row whose activated_experts exceeds the
// model's experts or its tokens × top-k is an error naming the line.
func (b *Bundle) MoESamples() ([]MoESample, error) {
	var out []MoESample
	for _, t := range b.TP {
		if len(t.MoE) == 0 {
			continue
		}
		m, err := b.MoEModel()
		if err != nil {
			return nil, err
		}
		file := filepath.Join(b.Dir, fmt.Sprintf("tp%d", t.TP), "moe.csv")
		p := models.Parallel{TP: t.TP, Weights: models.BF16, KV: models.BF16}
		for _, r := range t.MoE {
			if r.Experts > m.Experts || r.Experts > r.Tokens*m.TopK {
				return nil, fmt.Errorf("calibrate: %s line %d: column \"activated_experts\": %d experts cannot be touched by %d tokens of top-%d routing over %d experts",
					file, r.Line, r.Experts, r.Tokens, m.TopK, m.Experts)
			}
			out = append(out, MoESample{Ops: m.MoEOps(r.Tokens, float64(r.Experts), p, nil), Tokens: r.Tokens, Experts: r.Experts,
				Seconds: r.Seconds, Model: b.Meta.Model, Where: fmt.Sprintf("%s line %d", file, r.Line)})
		}
	}
	return out, nil
}

// MoEBlockTime is k's time of the MoE block of s: the sum of its
// operators' times.
func MoEBlockTime(k hardware.KernelModel, s *MoESample) float64 {
	t := 0.0
	for i := range s.Ops {
		t += float64(s.Ops[i].Count) * k.OpTime(&s.Ops[i])
	}
	return t
}

// moeErrors are the signed percentage errors of k on ss.
func moeErrors(k hardware.KernelModel, ss []MoESample) []float64 {
	pe := make([]float64, len(ss))
	for i := range ss {
		pe[i] = 100 * (MoEBlockTime(k, &ss[i])/ss[i].Seconds - 1)
	}
	return pe
}

// MoEParams price the expert operators of an MoE layer (models.Op.Experts
// > 0: the expert up-projection, activation and down-projection, vLLM's
// fused MoE kernels) apart from dense GEMMs. One occurrence takes
//
//	OverheadS + max(FLOPs / (peak · ComputeEff) · (1 + HalfRows/rows), Bytes / (MemBW · MemoryEff))
//
// with rows the operator's (token, expert) rows (models.Op.Tokens) and
// Bytes the weights of every touched expert plus the activations. The zero
// value (MemoryEff = 0) means none: expert operators take their dense
// class's [[op]] parameters, as before this section existed.
type MoEParams struct {
	OverheadS  float64 `toml:"overhead_s"`
	ComputeEff float64 `toml:"compute_eff"`
	HalfRows   float64 `toml:"half_rows"`
	MemoryEff  float64 `toml:"memory_eff"`
	// MaxExpertNK bounds where the fit is used: moeReach × the largest N·K
	// (one expert's weight elements per GPU; for the activation its width
	// × the hidden size) among the fitted operators. An expert operator
	// above it (a model with larger experts than any measured one: e.g.
	// Mixtral's 14,336-wide experts against Qwen3's 512–768) takes its
	// dense class's [[op]] parameters, which were fitted on GEMMs of that
	// size. 0: no bound (profiles written before the field).
	MaxExpertNK float64 `toml:"max_expert_nk"`
	// From is "fit" (to this GPU's moe.csv) or "transferred from <gpu>".
	From string `toml:"from"`
	// Fit is the in-sample error of a "fit" over whole MoE blocks.
	Fit    FitStats `toml:"fit"`
	Source string   `toml:"source"`
}

// moeClass is the kernel class of m on g.
func (m *MoEParams) class(g *hardware.GPU) class {
	return class{o: m.OverheadS, invC: uniform(1 / m.ComputeEff), h: [3]float64{m.HalfRows, m.HalfRows, m.HalfRows}, invM: 1 / (g.MemBW * m.MemoryEff)}
}

// validate checks [moe]: all zero (none), or memory_eff and compute_eff in
// [minEff, 1], overhead_s in [0, 1 s], half_rows in [0, maxHalfTokens] and
// a from.
func (m *MoEParams) validate() error {
	if *m == (MoEParams{}) {
		return nil
	}
	if m.MemoryEff == 0 {
		return &fieldErr{field: "moe.memory_eff", msg: "must be > 0 when [moe] sets anything (or remove the [moe] table: expert operators then take the dense parameters)"}
	}
	for _, f := range []struct {
		k string
		v float64
	}{{"moe.compute_eff", m.ComputeEff}, {"moe.memory_eff", m.MemoryEff}} {
		if err := frac(f.k, f.v, 1); err != nil {
			return err
		}
	}
	if err := overhead("moe.overhead_s", m.OverheadS); err != nil {
		return err
	}
	if !(m.HalfRows >= 0 && m.HalfRows <= maxHalfTokens) {
		return &fieldErr{field: "moe.half_rows", msg: fmt.Sprintf("must be in [0, %d] rows, got %v", maxHalfTokens, m.HalfRows)}
	}
	if !(m.MaxExpertNK >= 0 && m.MaxExpertNK <= 1e15) {
		return &fieldErr{field: "moe.max_expert_nk", msg: fmt.Sprintf("must be 0 (no bound) or a positive count of weight elements up to 1e15, got %v", m.MaxExpertNK)}
	}
	if m.From == "" {
		return &fieldErr{field: "moe.from", msg: "must say how the parameters were obtained (fit, transferred from <gpu>)"}
	}
	return m.Fit.validate("moe.fit")
}

// writeTOML writes the [moe] table, if any.
func (m *MoEParams) writeTOML(b *bytes.Buffer) {
	if m.MemoryEff == 0 {
		return
	}
	fmt.Fprintf(b, "\n# MoE expert operators (up, act, down of an MoE layer): overhead_s + max(FLOPs / (peak · compute_eff) · (1 + half_rows/rows),\n")
	fmt.Fprintf(b, "# bytes / (mem_bw · memory_eff)), rows = (token, expert) rows, bytes = every touched expert's weights + activations.\n")
	fmt.Fprintf(b, "[moe]\noverhead_s = %s\ncompute_eff = %s\nhalf_rows = %s\nmemory_eff = %s\nfrom = %s\nsource = %s\n",
		tomlFloat(m.OverheadS), tomlFloat(m.ComputeEff), tomlFloat(m.HalfRows), tomlFloat(m.MemoryEff), tomlQuote(m.From), tomlQuote(m.Source))
	if m.MaxExpertNK > 0 {
		fmt.Fprintf(b, "# larger experts than any fitted (N·K above max_expert_nk) take the dense classes\nmax_expert_nk = %s\n", tomlFloat(m.MaxExpertNK))
	}
	if m.Fit.Samples > 0 {
		writeStats(b, "moe.fit", m.Fit)
	}
}

// moeReach is how far past the largest measured expert a [moe] fit is
// used: experts up to twice its weight elements. A judgement, not a fit:
// the bundles measure 512- and 768-wide experts on a 2,048 hidden size
// (1.0–3.1 M elements for the up-projection), the fused-MoE regime of
// many small experts; the catalog's other MoE models have experts 4 to
// 40 times that (Qwen3-235B-A22B 12.6 M, DeepSeek-V3 29 M, Mixtral 117 M),
// near the dense shapes the [[op]] classes were fitted on, and a fit
// extrapolated that far prices Mixtral-8x7B's decode at twice its dense
// cost.
const moeReach = 2

// minMoERows is the fewest moe.csv rows FitMoE fits.
const minMoERows = 8

// FitMoE fits MoEParams of gpu g to the MoE blocks ss by least squares on
// log(predicted/measured), where a block's predicted time is its router
// priced by base (the profile's moe_router class) plus its expert
// operators priced by the fitted parameters. base must be a valid profile
// of g. The result's From is "fit" and Fit its in-sample error.
func FitMoE(ss []MoESample, base *Profile, g *hardware.GPU) (MoEParams, error) {
	if len(ss) < minMoERows {
		return MoEParams{}, fmt.Errorf("calibrate: MoE fit on %s: %d moe.csv rows, need %d", g.Name, len(ss), minMoERows)
	}
	b := base.Clone()
	b.MoE = MoEParams{}
	k, err := b.Calibrated(g, 1)
	if err != nil {
		return MoEParams{}, err
	}
	var m MoEParams
	set := func(x []float64) {
		m.OverheadS = math.Min(maxOverheadS, math.Exp(x[0]))
		m.ComputeEff = math.Min(1, math.Max(minEff, logistic(x[1])))
		m.MemoryEff = math.Min(1, math.Max(minEff, logistic(x[2])))
		m.HalfRows = math.Min(maxHalfTokens, math.Exp(x[3]))
		k.moe, k.hasMoE = m.class(g), true
	}
	res := func(x, r []float64) {
		set(x)
		for i := range ss {
			r[i] = math.Log(MoEBlockTime(k, &ss[i])) - math.Log(ss[i].Seconds)
		}
	}
	var best []float64
	bestCost := math.Inf(1)
	for _, x0 := range [][]float64{
		{math.Log(10e-6), logit(0.5), logit(0.8), math.Log(16)},
		{math.Log(2e-6), logit(0.2), logit(0.5), math.Log(256)},
		{math.Log(20e-6), logit(0.05), logit(0.9), math.Log(1)},
	} {
		x, c := levenbergMarquardt(res, nil, x0, len(ss), 300)
		if c < bestCost {
			best, bestCost = x, c
		}
	}
	set(best)
	for i := range ss {
		for _, op := range ss[i].Ops {
			if op.Experts > 0 {
				m.MaxExpertNK = max(m.MaxExpertNK, moeReach*float64(op.N)*float64(op.K))
			}
		}
	}
	m.From = "fit"
	m.Fit = statsOf(absAll(moeErrors(k, ss)))
	return m, nil
}

// absAll returns |x| of each element.
func absAll(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Abs(v)
	}
	return out
}

// moeSets reads the MoE blocks of every bundle under dir that has a
// moe.csv, by catalog GPU, with the bundle's model.
func moeSets(dir string) (map[string][]MoESample, map[string]string, error) {
	dirs, err := FindBundles(dir)
	if err != nil {
		return nil, nil, err
	}
	sets, model := map[string][]MoESample{}, map[string]string{}
	for _, d := range dirs {
		b, err := ReadBundle(d)
		if err != nil {
			return nil, nil, err
		}
		ss, err := b.MoESamples()
		if err != nil {
			return nil, nil, err
		}
		if len(ss) == 0 {
			continue
		}
		g, err := b.BundleGPU(hardware.Builtin())
		if err != nil {
			return nil, nil, err
		}
		if _, dup := sets[g.Name]; dup {
			return nil, nil, fmt.Errorf("calibrate: %s: a second MoE bundle for %s (also %s): servesim fits one per GPU", d, g.Name, model[g.Name])
		}
		sets[g.Name], model[g.Name] = ss, b.Meta.Model
	}
	return sets, model, nil
}

// moeSource is MoEParams.Source of a fit to model's moe.csv on gpu.
func moeSource(gpu, model string, n int) string {
	return fmt.Sprintf("LLMServingSim's %s bundle of %s: %d moe.csv rows (whole sparse-MoE blocks, vLLM 0.19 fused MoE, routing forced to the activated experts), the router priced by moe_router", gpu, model, n)
}

// AttachMoE fits p's [moe] parameters to the moe.csv of p's GPU in the
// bundles under dir, with p as the base profile, and notes it; false (and
// p unchanged) when no bundle has MoE timings for p.GPU.
func AttachMoE(p *Profile, dir string) (bool, error) {
	sets, model, err := moeSets(dir)
	if err != nil {
		return false, err
	}
	ss, ok := sets[p.GPU]
	if !ok {
		return false, nil
	}
	g, err := hardware.Builtin().Get(p.GPU)
	if err != nil {
		return false, err
	}
	m, err := FitMoE(ss, p, g)
	if err != nil {
		return false, err
	}
	m.Source = moeSource(p.GPU, model[p.GPU], len(ss))
	p.MoE = m
	for i, n := range p.Notes {
		p.Notes[i] = strings.Replace(n, "MoE expert GEMMs use the dense GEMM parameters.",
			"MoE expert operators take [moe], fitted to "+model[p.GPU]+"'s moe.csv (see its source).", 1)
	}
	return true, nil
}

// MoE table rows.
const (
	RowMoEDense   = "dense GEMM parameters (no [moe])"
	RowMoEFit     = "[moe] fitted to this GPU (in-sample)"
	RowMoEHeldOut = "[moe] of the other GPU, through the specs (held out)"
)

// EvaluateMoE is the MoE block error table of the bundles under dir: for
// each GPU with a moe.csv, the built-in profile's prediction of each block
// (router + expert operators) with the expert operators at the dense GEMM
// parameters, at [moe] fitted to the GPU's own rows, and at the [moe] fit
// of the other GPU applied to this one's peaks. It also returns the fits.
func EvaluateMoE(dir string) (*ErrTable, map[string]MoEParams, error) {
	sets, model, err := moeSets(dir)
	if err != nil {
		return nil, nil, err
	}
	gpus := sortedKeys(sets)
	t := &ErrTable{Title: "MoE blocks (LLMServingSim moe.csv: router + experts of one layer at TP 1, routing forced), built-in profiles",
		Note: "Each block is priced as models.Model.MoEOps of its token count and activated experts (distinct experts touched, plus the " +
			"shared one of Qwen3.6-35B-A3B), the router by the profile's moe_router class and the expert operators as the row says.",
		RowHeader: "expert operators priced by", Rows: []string{RowMoEDense, RowMoEFit, RowMoEHeldOut}}
	fits := map[string]MoEParams{}
	base := map[string]*Profile{}
	for _, n := range gpus {
		p, ok := Builtin(n)
		if !ok {
			return nil, nil, fmt.Errorf("calibrate: no built-in profile for %s, whose bundle has moe.csv", n)
		}
		p.MoE = MoEParams{}
		g, err := hardware.Builtin().Get(n)
		if err != nil {
			return nil, nil, err
		}
		m, err := FitMoE(sets[n], p, g)
		if err != nil {
			return nil, nil, err
		}
		m.Source = moeSource(n, model[n], len(sets[n]))
		fits[n], base[n] = m, p
		t.Columns = append(t.Columns, n+" ("+model[n]+")")
	}
	t.Cells = make([][]ErrStats, len(t.Rows))
	for i := range t.Cells {
		t.Cells[i] = make([]ErrStats, len(gpus))
	}
	for j, n := range gpus {
		g, _ := hardware.Builtin().Get(n)
		for i, moe := range []*MoEParams{{}, ptr(fits[n]), nil} {
			if moe == nil {
				if len(gpus) != 2 {
					continue
				}
				moe = ptr(fits[gpus[1-j]])
			}
			p := base[n].Clone()
			p.MoE = *moe
			k, err := p.Calibrated(g, 1)
			if err != nil {
				return nil, nil, err
			}
			t.Cells[i][j] = errStats(moeErrors(k, sets[n]))
		}
	}
	return t, fits, nil
}

func ptr[T any](v T) *T { return &v }

// unknownShapes is the error for a bundle whose model dims lacks: what
// names the shapes, and the error lists the models dims knows.
func unknownShapes[T any](b *Bundle, dims map[string]T, what string) error {
	return fmt.Errorf("calibrate: %s line %d: model %q: its %s are not known to servesim (known: %s)",
		filepath.Join(b.Dir, "meta.yaml"), b.Meta.line("model"), b.Meta.Model, what, strings.Join(slices.Sorted(maps.Keys(dims)), ", "))
}
