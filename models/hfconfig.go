package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// HFArchitectures are the HuggingFace model_type values ReadHFConfig
// imports, with the architectures class each config.json names.
var HFArchitectures = map[string]string{
	"llama":       "LlamaForCausalLM",
	"mistral":     "MistralForCausalLM",
	"mixtral":     "MixtralForCausalLM",
	"qwen2":       "Qwen2ForCausalLM",
	"qwen3":       "Qwen3ForCausalLM",
	"qwen3_moe":   "Qwen3MoeForCausalLM",
	"deepseek_v3": "DeepseekV3ForCausalLM",
	"llama4":      "Llama4ForConditionalGeneration",
}

func hfTypes() string {
	ts := make([]string, 0, len(HFArchitectures))
	for t := range HFArchitectures {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return strings.Join(ts, ", ")
}

// maxHFConfigBytes bounds a config.json (real ones are a few KiB).
const maxHFConfigBytes = 1 << 20

// ReadHFConfig builds a model from a HuggingFace config.json: path is the
// file or a directory holding config.json (a HuggingFace download). See
// ParseHFConfig.
func ReadHFConfig(path string) (*Model, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "config.json")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxHFConfigBytes+1)); err != nil {
		return nil, &FieldError{File: path, Msg: "read: " + err.Error()}
	}
	if buf.Len() > maxHFConfigBytes {
		return nil, &FieldError{File: path, Msg: fmt.Sprintf("larger than %d bytes: not a config.json", maxHFConfigBytes)}
	}
	return ParseHFConfig(buf.Bytes(), path)
}

// ParseHFConfig builds a model from the bytes of a HuggingFace config.json;
// file names it in errors and gives the model its name: the directory
// holding config.json, or the file's name without .json, lower-cased with
// characters a catalog name cannot hold replaced by '-'. The architecture
// is model_type, else the first of architectures; the supported ones are
// HFArchitectures (llama4 reads its text_config). Keys read, by
// architecture:
//
//   - all: hidden_size, num_hidden_layers, num_attention_heads, vocab_size,
//     max_position_embeddings (required); num_key_value_heads (default
//     num_attention_heads), head_dim (default hidden/heads; null allowed),
//     tie_word_embeddings (default false);
//   - dense (llama, mistral, qwen2, qwen3): intermediate_size; qwen2 has
//     QKV biases, qwen3 and llama4 per-head q/k norms (llama4: use_qk_norm),
//     attention_bias true sets the QKV biases (the output-projection bias
//     is not modelled);
//   - mixtral: num_local_experts, num_experts_per_tok, intermediate_size
//     (per expert); qwen3_moe: num_experts, num_experts_per_tok,
//     moe_intermediate_size (decoder_sparse_step must be 1, mlp_only_layers
//     empty); llama4: num_local_experts, num_experts_per_tok,
//     intermediate_size, one shared expert (interleave_moe_layer_step 1);
//   - deepseek_v3: n_routed_experts, num_experts_per_tok,
//     moe_intermediate_size, n_shared_experts, first_k_dense_replace,
//     intermediate_size, q_lora_rank (null: none), kv_lora_rank,
//     qk_nope_head_dim, qk_rope_head_dim, v_head_dim (moe_layer_freq 1).
//
// Beyond the shape, quantization_config, rope_scaling and sliding_window
// are read (hfExtras): the weights' precision and a context extension
// apply, a sliding window is recorded and noted as not modelled;
// m.Inferred says what was inferred.
//
// Errors are *FieldError values naming the file and the JSON key (JSON has
// no line numbers here); every missing required key is listed at once.
func ParseHFConfig(data []byte, file string) (*Model, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, &FieldError{File: file, Msg: "not a JSON object: " + err.Error()}
	}
	if raw == nil {
		return nil, &FieldError{File: file, Msg: "not a JSON object: null"}
	}
	c := &hfConf{file: file, raw: raw}
	arch, err := c.arch()
	if err != nil {
		return nil, err
	}
	if arch == "llama4" {
		tc, ok := raw["text_config"].(map[string]any)
		if !ok {
			return nil, c.err("text_config", "missing or not an object: model_type \"llama4\" keeps the text model's shape there")
		}
		c = &hfConf{file: file, raw: tc, prefix: "text_config."}
	}
	m := &Model{Name: hfModelName(file), GatedMLP: true}
	if s, ok := raw["_name_or_path"].(string); ok && strings.Count(s, "/") == 1 && !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, ".") {
		m.HFName = s
	}
	m.Source = fmt.Sprintf("imported from %s (model_type %q)", file, arch)

	m.Hidden = c.need("hidden_size")
	m.Layers = c.need("num_hidden_layers")
	m.Heads = c.need("num_attention_heads")
	m.Vocab = c.need("vocab_size")
	m.MaxContext = c.need("max_position_embeddings")
	m.KVHeads = c.opt("num_key_value_heads", 0)
	m.HeadDim = c.opt("head_dim", 0)
	m.TiedEmbeddings = c.flag("tie_word_embeddings")
	if c.flag("attention_bias") {
		m.QKVBias = true
	}
	switch arch {
	case "llama", "mistral":
		m.FFN = c.need("intermediate_size")
	case "qwen2":
		m.FFN = c.need("intermediate_size")
		m.QKVBias = true
	case "qwen3":
		m.FFN = c.need("intermediate_size")
		m.QKNorm = true
	case "mixtral":
		m.Experts = c.need("num_local_experts")
		m.TopK = c.need("num_experts_per_tok")
		m.ExpertFFN = c.need("intermediate_size")
	case "qwen3_moe":
		m.Experts = c.need("num_experts")
		m.TopK = c.need("num_experts_per_tok")
		m.ExpertFFN = c.need("moe_intermediate_size")
		m.QKNorm = true
		c.mustEqual("decoder_sparse_step", 1)
		c.mustBeEmpty("mlp_only_layers")
	case "llama4":
		m.Experts = c.need("num_local_experts")
		m.TopK = c.need("num_experts_per_tok")
		m.ExpertFFN = c.need("intermediate_size")
		m.SharedExperts = 1
		m.QKNorm = c.flag("use_qk_norm")
		c.mustEqual("interleave_moe_layer_step", 1)
	case "deepseek_v3":
		m.Experts = c.need("n_routed_experts")
		m.TopK = c.need("num_experts_per_tok")
		m.ExpertFFN = c.need("moe_intermediate_size")
		m.SharedExperts = c.opt("n_shared_experts", 0)
		m.DenseLayers = c.opt("first_k_dense_replace", 0)
		if m.DenseLayers > 0 {
			m.FFN = c.need("intermediate_size")
		}
		m.QLoRARank = c.opt("q_lora_rank", 0)
		m.KVLoRARank = c.need("kv_lora_rank")
		nope := c.need("qk_nope_head_dim")
		m.RopeHeadDim = c.need("qk_rope_head_dim")
		m.VHeadDim = c.need("v_head_dim")
		m.HeadDim = nope + m.RopeHeadDim
		c.mustEqual("moe_layer_freq", 1)
	}
	if len(c.missing) == 0 {
		c.hfExtras(m, raw, arch)
	}
	if c.bad != nil {
		return nil, c.bad
	}
	if len(c.missing) > 0 {
		names := make([]string, len(c.missing))
		for i, k := range c.missing {
			names[i] = c.prefix + k
		}
		return nil, c.err(c.missing[0], fmt.Sprintf("missing (model_type %q needs %s)", arch, strings.Join(names, ", ")))
	}
	if err := m.Validate(); err != nil {
		if fe, ok := err.(*FieldError); ok {
			fe.File = file
			fe.Msg += " (from config.json)"
			return nil, fe
		}
		return nil, err
	}
	return m, nil
}

// hfConf reads keys of one config object, collecting missing keys and the
// first invalid one.
type hfConf struct {
	file    string
	raw     map[string]any
	prefix  string // "text_config." inside llama4's text config
	missing []string
	bad     *FieldError
}

func (c *hfConf) err(key, msg string) *FieldError {
	return &FieldError{File: c.file, Field: c.prefix + key, Msg: msg}
}

func (c *hfConf) fail(key, format string, args ...any) {
	if c.bad == nil {
		c.bad = c.err(key, fmt.Sprintf(format, args...))
	}
}

// arch returns model_type, or the model_type of the first architectures
// entry, when it is one ParseHFConfig supports.
func (c *hfConf) arch() (string, error) {
	mt, hasType := c.raw["model_type"]
	archs, _ := c.raw["architectures"].([]any)
	if hasType {
		s, ok := mt.(string)
		if !ok {
			return "", c.err("model_type", "want a string")
		}
		if _, ok := HFArchitectures[s]; ok {
			return s, nil
		}
		return "", c.err("model_type", fmt.Sprintf("%q (architectures %v) is not an architecture servesim imports (known: %s); describe the model in a --models-file TOML instead (see `servesim models`)", s, archs, hfTypes()))
	}
	if len(archs) > 0 {
		if a, ok := archs[0].(string); ok {
			for t, cls := range HFArchitectures {
				if cls == a {
					return t, nil
				}
			}
			return "", c.err("architectures", fmt.Sprintf("%q is not an architecture servesim imports (known model_type: %s); describe the model in a --models-file TOML instead", a, hfTypes()))
		}
	}
	return "", c.err("model_type", "missing, and no architectures list: cannot tell the architecture (known model_type: "+hfTypes()+")")
}

// integer reads key as a non-negative integer; ok is false when the key is
// absent or null.
func (c *hfConf) integer(key string) (int, bool) {
	v, present := c.raw[key]
	if !present || v == nil {
		return 0, false
	}
	n, isNum := v.(json.Number)
	if !isNum {
		c.fail(key, "want an integer, got %s", jsonType(v))
		return 0, true
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || f < 0 || f > maxContext {
		c.fail(key, "want a non-negative integer at most %d, got %s", maxContext, n.String())
		return 0, true
	}
	return int(f), true
}

func (c *hfConf) need(key string) int {
	n, ok := c.integer(key)
	if !ok {
		c.missing = append(c.missing, key)
	}
	return n
}

func (c *hfConf) opt(key string, def int) int {
	if n, ok := c.integer(key); ok {
		return n
	}
	return def
}

func (c *hfConf) flag(key string) bool {
	v, present := c.raw[key]
	if !present || v == nil {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		c.fail(key, "want true or false, got %s", jsonType(v))
	}
	return b
}

// mustEqual rejects a layout servesim does not model (an optional key whose
// value differs from want).
func (c *hfConf) mustEqual(key string, want int) {
	if n, ok := c.integer(key); ok && n != want && c.bad == nil {
		c.fail(key, "%d: only %d is supported (servesim models every layer alike)", n, want)
	}
}

func (c *hfConf) mustBeEmpty(key string) {
	if v, ok := c.raw[key].([]any); ok && len(v) > 0 {
		c.fail(key, "%v: dense layers inside a qwen3_moe model are not supported", v)
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}

// hfModelName derives a catalog name from a config.json path.
func hfModelName(file string) string {
	base := filepath.Base(file)
	if strings.EqualFold(base, "config.json") {
		base = filepath.Base(filepath.Dir(file))
	} else {
		base = strings.TrimSuffix(base, filepath.Ext(base))
	}
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	if s := strings.Trim(b.String(), "-."); s != "" {
		return s
	}
	return "imported"
}
