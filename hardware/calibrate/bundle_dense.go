package calibrate

import (
	"fmt"
	"path/filepath"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// denseKinds maps a bundle's dense.csv layer (and per_sequence.csv's
// lm_head) to the operator class package models prices it as. Left out:
// final_layernorm (models folds the final norm into the LM head), sampler
// (not an operator of the forward pass), qk_norm (not modelled),
// linear_attention (Gated DeltaNet, not modelled) and MoE (moe.csv: a
// whole block, not one class).
var denseKinds = map[string]models.OpKind{
	"embedding":    models.OpEmbed,
	"layernorm":    models.OpNorm,
	"qkv_proj":     models.OpQKV,
	"rotary_emb":   models.OpRoPE,
	"o_proj":       models.OpOutProj,
	"gate_up_proj": models.OpMLPUp,
	"act_fn":       models.OpAct,
	"down_proj":    models.OpMLPDown,
	"lm_head":      models.OpLMHead,
}

// CatalogModel returns the catalog model whose Hugging Face name is the
// bundle's model, or false.
func (b *Bundle) CatalogModel(cat *models.Catalog) (*models.Model, bool) {
	m, err := cat.ByHFName(b.Meta.Model)
	return m, err == nil
}

// DenseSamples turns the bundle's dense.csv and per_sequence.csv rows of
// the operators package models prices (denseKinds) into samples of model m
// on gpu: a dense row is a prefill of `tokens` tokens with no context, a
// per-sequence row an LM head over `sequences` rows; each tp<N>/ folder is
// one rank at TP N. The rows of tp_stable layers copied from TP 1
// (layernorm; SOURCE.md) are kept: their shape does not depend on TP.
func (b *Bundle) DenseSamples(m *models.Model, gpu string) []Sample {
	var out []Sample
	var ops []models.Op
	base := filepath.Base(filepath.Dir(filepath.Dir(b.Dir))) + "/" + filepath.Base(filepath.Dir(b.Dir)) + "/" + filepath.Base(b.Dir)
	for _, t := range b.TP {
		p := models.Parallel{TP: t.TP, Weights: models.BF16, KV: models.BF16}
		add := func(layer string, rows int, seconds float64, file string, line int) {
			k, ok := denseKinds[layer]
			if !ok {
				return
			}
			batch := models.Batch{Prefills: 1, PrefillTokens: rows, PrefillPairs: float64(rows) * float64(rows+1) / 2}
			if k == models.OpLMHead {
				batch = models.Batch{Decodes: rows}
			}
			ops = m.Ops(batch, p, ops[:0])
			op, ok := opOf(ops, k)
			if !ok {
				return
			}
			op.Count = 1
			out = append(out, Sample{GPU: gpu, Model: m.Name, Name: layer, TP: t.TP, Op: op, Seconds: seconds,
				Where: fmt.Sprintf("%s/tp%d/%s line %d", base, t.TP, file, line)})
		}
		for _, r := range t.Dense {
			add(r.Layer, r.Tokens, r.Seconds, "dense.csv", r.Line)
		}
		for _, r := range t.PerSeq {
			add(r.Layer, r.Sequences, r.Seconds, "per_sequence.csv", r.Line)
		}
	}
	return out
}

// fitBundleGPU fits a profile of g to the dense operators of the bundles
// in dirs whose models are in the catalog, with attention from fits and
// the iteration overhead of iter (the bundles time kernels only). vLLM
// fuses the residual add into the RMSNorm kernel, so the bundles have no
// add: its class is priced at the bandwidth bound alone (no overhead).
func fitBundleGPU(dirs []string, g *hardware.GPU, iter Iteration, cat *models.Catalog) (*Profile, error) {
	var ss []Sample
	var files []string
	for _, d := range dirs {
		b, err := ReadBundle(d)
		if err != nil {
			return nil, err
		}
		bg, err := b.BundleGPU(hardware.Builtin())
		if err != nil {
			return nil, err
		}
		m, ok := b.CatalogModel(cat)
		if bg.Name != g.Name || !ok {
			continue
		}
		ss = append(ss, b.DenseSamples(m, g.Name)...)
		for _, t := range b.TP {
			rel := filepath.Join(filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(d)))), filepath.Base(filepath.Dir(filepath.Dir(d))), filepath.Base(filepath.Dir(d)), filepath.Base(d), fmt.Sprintf("tp%d", t.TP))
			files = append(files, rel+"/dense.csv", rel+"/per_sequence.csv")
		}
	}
	if len(ss) == 0 {
		return nil, fmt.Errorf("calibrate: no dense timings of a catalog model for %s in the bundles", g.Name)
	}
	p, err := FitProfile(&Trace{Samples: ss, Sources: files}, g, FitOptions{Trace: "llmservingsim", Format: "bundle", IterOverhead: &IterOverheadFit{Fixed: iter.OverheadS, PerRequest: iter.PerRequestS},
		Note: "LLMServingSim (github.com/casys-kaist/LLMServingSim) profiler/perf at commit 5daddb21a545658d5150b535712d0494584b5278 (see ../shared/data/llmservingsim/SOURCE.md)",
		Notes: []string{
			"Kernel times are LLMServingSim's: vLLM 0.19.0 in eager mode, a 1-layer model with the real per-rank shapes, TP emulated on one GPU, the mean CUDA kernel time of one call per nn.Module (3 timed forwards per shot).",
			"add: vLLM fuses the residual add into RMSNorm (fused_add_rms_norm), so the bundles have no add kernel; its class takes the bandwidth bound of its bytes alone, no overhead (the norm's time holds the rest).",
			"moe_router takes out_proj's parameters (no samples); MoE expert GEMMs use the dense GEMM parameters.",
			"iteration overhead: " + iter.Source,
		}})
	if err != nil {
		return nil, err
	}
	for i := range p.Ops {
		if p.Ops[i].Op == models.OpAdd.String() {
			p.Ops[i] = OpParams{Op: p.Ops[i].Op, ComputeEff: 1, MemoryEff: 1, From: "fused into norm (vLLM fused_add_rms_norm): bandwidth bound only"}
		}
	}
	p.Iteration = iter
	return p, nil
}
