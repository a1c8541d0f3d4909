package models

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// hfExtras reads the keys of a config.json that change what a checkpoint
// costs beyond its shape, recording them in m (after the shape is read):
//
//   - quantization_config: the precision the weights are stored in,
//     m.Inferred.Weights (see quantization);
//   - rope_scaling (or rope_parameters): a context extension, applied to
//     m.MaxContext as vLLM derives max_model_len (vllm/config/model.py
//     _get_and_verify_max_len: for a rope_type other than su, longrope and
//     llama3 the length is multiplied by factor, starting from
//     original_max_position_embeddings for yarn);
//   - sliding_window: recorded in m.SlidingWindow/SlidingLayers and noted
//     as not modelled (attention and KV are priced as full attention, an
//     upper bound; vLLM, which models it, would cap both at the window).
//
// top is the config's top-level object (llama4 keeps its shape in
// text_config and its quantization_config at the top).
func (c *hfConf) hfExtras(m *Model, top map[string]any, arch string) {
	c.quantization(m, top)
	c.ropeScaling(m)
	c.slidingWindow(m, arch)
}

// quantization reads quantization_config's quant_method (as vLLM's
// quantization registry names them, vllm/model_executor/layers/
// quantization/__init__.py): fp8, fbgemm_fp8, ptpc_fp8 → FP8; mxfp4 →
// FP4; modelopt by quant_algo (FP8, NVFP4); compressed-tensors by format
// (float-quantized: 8-bit floats; nvfp4-pack-quantized: FP4). Integer
// formats (awq, gptq, bitsandbytes, gguf, compressed-tensors int- and
// pack-quantized) are errors: servesim models BF16, FP8 and FP4 weights.
func (c *hfConf) quantization(m *Model, top map[string]any) {
	v, ok := top["quantization_config"]
	if !ok || v == nil {
		return
	}
	q, ok := v.(map[string]any)
	if !ok {
		c.fail("quantization_config", "want an object, got %s", jsonType(v))
		return
	}
	str := func(k string) string { s, _ := q[k].(string); return strings.ToLower(s) }
	method := str("quant_method")
	prec := ""
	what := "quant_method " + method
	switch method {
	case "fp8", "fbgemm_fp8", "ptpc_fp8":
		prec = "fp8"
	case "mxfp4":
		prec = "fp4"
	case "modelopt", "modelopt_fp4":
		what += ", quant_algo " + str("quant_algo")
		switch str("quant_algo") {
		case "fp8":
			prec = "fp8"
		case "nvfp4", "fp4":
			prec = "fp4"
		}
	case "compressed-tensors":
		what += ", format " + str("format")
		switch f := str("format"); {
		case f == "float-quantized":
			prec = "fp8"
		case strings.Contains(f, "nvfp4") || strings.Contains(f, "mxfp4"):
			prec = "fp4"
		}
	}
	if prec == "" {
		c.fail("quantization_config", "%s: not a format servesim models (BF16, FP8 and FP4 weights: quant_method fp8, mxfp4, modelopt FP8/NVFP4, compressed-tensors float-quantized); integer quantizations (awq, gptq, int8) are not modelled", what)
		return
	}
	m.Inferred.Weights = prec
	m.Inferred.Notes = append(m.Inferred.Notes, fmt.Sprintf("weights %s: from the config's quantization_config (%s)", prec, what))
}

// ropeScaling applies rope_scaling's context extension to m.MaxContext.
func (c *hfConf) ropeScaling(m *Model) {
	key := "rope_scaling"
	v := c.raw[key]
	if v == nil {
		key, v = "rope_parameters", c.raw["rope_parameters"]
	}
	if v == nil {
		return
	}
	rs, ok := v.(map[string]any)
	if !ok {
		c.fail(key, "want an object, got %s", jsonType(v))
		return
	}
	typ, _ := rs["rope_type"].(string)
	if typ == "" {
		typ, _ = rs["type"].(string)
	}
	switch typ {
	case "su", "longrope", "llama3", "default", "":
		return // vLLM leaves max_model_len alone (llama3's is already the extended one)
	}
	factor := 1.0
	if f, ok := rs["factor"].(json.Number); ok {
		x, err := f.Float64()
		if err != nil || !(x >= 1) || math.IsInf(x, 0) {
			c.fail(key+".factor", "%s: want a number ≥ 1", f)
			return
		}
		factor = x
	}
	base, from := m.MaxContext, "max_position_embeddings"
	if typ == "yarn" {
		sub := &hfConf{file: c.file, raw: rs, prefix: c.prefix + key + "."}
		if n, ok := sub.integer("original_max_position_embeddings"); ok {
			base, from = n, "original_max_position_embeddings"
		}
		if sub.bad != nil {
			c.bad = sub.bad
			return
		}
	}
	ctx := int(float64(base) * factor)
	if ctx > maxContext {
		c.fail(key+".factor", "%g × %s %d = %d tokens: over %d", factor, from, base, ctx, maxContext)
		return
	}
	if ctx != m.MaxContext {
		m.Inferred.Notes = append(m.Inferred.Notes, fmt.Sprintf("context %d tokens: %s %s × factor %g, as vLLM derives max_model_len (max_position_embeddings %d)", ctx, from, typ, factor, m.MaxContext))
		m.MaxContext = ctx
	}
}

// slidingWindow records sliding_window when the config uses it: Mistral's
// on every layer; Qwen2/Qwen3's only with use_sliding_window true, on the
// layers from max_window_layers on (transformers' Qwen2 attention).
func (c *hfConf) slidingWindow(m *Model, arch string) {
	w, ok := c.integer("sliding_window")
	if !ok || w == 0 || w >= m.MaxContext {
		return // absent, null, or no narrower than the context
	}
	layers := m.Layers
	switch arch {
	case "qwen2", "qwen3", "qwen3_moe":
		if !c.flag("use_sliding_window") {
			return
		}
		layers = m.Layers - c.opt("max_window_layers", 0)
		if layers <= 0 {
			return
		}
	}
	m.SlidingWindow, m.SlidingLayers = w, layers
	m.Inferred.Notes = append(m.Inferred.Notes, fmt.Sprintf("the config's sliding_window %d (%d of %d layers) is not modelled: attention and KV are priced over the whole context, an upper bound (vLLM caps them at the window)", w, layers, m.Layers))
}
