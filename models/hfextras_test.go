package models

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHFConfigExtras: the keys of a config.json that change a checkpoint's
// cost beyond its shape (ignored before): quantization_config sets the
// weights' precision, a YaRN rope_scaling the context as vLLM derives
// max_model_len, and a Mistral sliding_window is recorded with a note
// that it is not modelled. The base is testdata/hf/Qwen3-8B (40960
// positions, 36 layers), edited per case.
func TestHFConfigExtras(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "hf", "Qwen3-8B", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		edit        map[string]any
		weights     string
		context     int
		window      int // sliding_window recorded (0: none)
		note, error string
	}{
		{"plain", nil, "", 40960, 0, "", ""},
		// Qwen/Qwen3-8B-FP8's quantization_config.
		{"fp8", map[string]any{"quantization_config": map[string]any{"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": []int{128, 128}}}, "fp8", 40960, 0, "quant_method fp8", ""},
		{"compressed-tensors fp8", map[string]any{"quantization_config": map[string]any{"quant_method": "compressed-tensors", "format": "float-quantized"}}, "fp8", 40960, 0, "float-quantized", ""},
		{"modelopt nvfp4", map[string]any{"quantization_config": map[string]any{"quant_method": "modelopt", "quant_algo": "NVFP4"}}, "fp4", 40960, 0, "quant_algo nvfp4", ""},
		{"mxfp4", map[string]any{"quantization_config": map[string]any{"quant_method": "mxfp4"}}, "fp4", 40960, 0, "mxfp4", ""},
		{"awq", map[string]any{"quantization_config": map[string]any{"quant_method": "awq", "bits": 4}}, "", 0, 0, "", "quant_method awq"},
		{"int8", map[string]any{"quantization_config": map[string]any{"quant_method": "compressed-tensors", "format": "int-quantized"}}, "", 0, 0, "", "int-quantized"},
		// Qwen3's model card: YaRN factor 4 over 32768 original positions
		// → 4 × 32768 = 131072 tokens.
		{"yarn", map[string]any{"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}, "", 131072, 0, "original_max_position_embeddings yarn × factor 4", ""},
		// linear: max_position_embeddings × factor = 40960 × 2.
		{"linear", map[string]any{"rope_scaling": map[string]any{"type": "linear", "factor": 2.0}}, "", 81920, 0, "max_position_embeddings linear × factor 2", ""},
		{"llama3", map[string]any{"rope_scaling": map[string]any{"rope_type": "llama3", "factor": 8.0}}, "", 40960, 0, "", ""},
		// Mistral-7B-v0.1: a 4096-token window on every layer.
		{"mistral window", map[string]any{"model_type": "mistral", "sliding_window": 4096}, "", 40960, 4096, "sliding_window 4096 (36 of 36 layers) is not modelled", ""},
		{"qwen window off", map[string]any{"sliding_window": 4096, "use_sliding_window": false}, "", 40960, 0, "", ""},
		// use_sliding_window with max_window_layers 28: layers 28..35 slide.
		{"qwen window on", map[string]any{"sliding_window": 4096, "use_sliding_window": true, "max_window_layers": 28}, "", 40960, 4096, "(8 of 36 layers)", ""},
	} {
		var raw map[string]any
		if err := json.Unmarshal(data, &raw); err != nil {
			t.Fatal(err)
		}
		for k, v := range c.edit {
			raw[k] = v
		}
		b, _ := json.Marshal(raw)
		m, err := ParseHFConfig(b, "config.json")
		if c.error != "" {
			if err == nil || !strings.Contains(err.Error(), c.error) || !strings.Contains(err.Error(), "quantization_config") {
				t.Errorf("%s: error %v, want one naming quantization_config and %q", c.name, err, c.error)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		notes := strings.Join(m.Inferred.Notes, "; ")
		if m.Inferred.Weights != c.weights || m.MaxContext != c.context || m.SlidingWindow != c.window || (c.note == "") != (notes == "") || !strings.Contains(notes, c.note) {
			t.Errorf("%s: weights %q, context %d, window %d, notes %q; want %q, %d, %d, a note with %q", c.name, m.Inferred.Weights, m.MaxContext, m.SlidingWindow, notes, c.weights, c.context, c.window, c.note)
		}
	}
}

// DeepSeek-V3's published config.json (testdata/hf) carries its FP8
// quantization_config: the import reads the weights as FP8.
func TestHFConfigDeepSeekV3IsFP8(t *testing.T) {
	m, err := ReadHFConfig(filepath.Join("testdata", "hf", "DeepSeek-V3"))
	if err != nil || m.Inferred.Weights != "fp8" {
		t.Fatalf("%v, %+v: want fp8 weights", err, m.Inferred)
	}
}

// TestLookupCheckpoints: a Hugging Face id of a fine-tune or a quantized
// copy of a catalog architecture resolves to it, with the precision its
// suffix names; an id that is no such copy, or an integer quantization, is
// an error (with a suggestion when one is close).
func TestLookupCheckpoints(t *testing.T) {
	c := Builtin()
	for _, tc := range []struct {
		id, model, weights, err string
	}{
		{"Qwen/Qwen3-8B", "qwen3-8b", "", ""},
		{"Qwen/Qwen3-8B-FP8", "qwen3-8b", "fp8", ""}, // a catalog alias, and FP8 by its suffix
		{"Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b", "", ""},
		{"Qwen/Qwen3-30B-A3B-Instruct-2507-FP8", "qwen3-30b-a3b", "fp8", ""},
		{"neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b", "fp8", ""}, // another organization's copy
		{"RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "llama-3.1-70b", "fp8", ""},
		{"nvidia/Llama-3.1-8B-Instruct-NVFP4", "llama-3.1-8b", "fp4", ""},
		{"Qwen/Qwen3-8B-AWQ", "", "", "integer quantization"},
		{"Qwen/Qwen3-9B", "", "", "no model with hf_name"},       // 9B is not a variant word
		{"Qwen/Qwen3-8B-Magic", "", "", "no model with hf_name"}, // nor is Magic
		{"meta-llama/Llama-3.1-8B-Instrct", "", "", "did you mean meta-llama/Llama-3.1-8B-Instruct?"},
		{"llama-3.1-8", "", "", "did you mean llama-3.1-8b?"},
	} {
		m, err := c.Lookup(tc.id)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.id, err, tc.err)
			}
			continue
		}
		if err != nil || m.Name != tc.model || m.Inferred.Weights != tc.weights {
			t.Errorf("%s: %v, %v; want %s, weights %q", tc.id, m, err, tc.model, tc.weights)
			continue
		}
		if (tc.id != m.HFName && len(m.Inferred.Notes) == 0) || (tc.id == m.HFName && len(m.Inferred.Notes) != 0) {
			t.Errorf("%s: notes %q: want what was inferred, and nothing for the catalog's own id", tc.id, m.Inferred.Notes)
		}
	}
}
