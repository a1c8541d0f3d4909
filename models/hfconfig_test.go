package models

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// shape is a model without its catalog identity (name, HF ids, source).
func shape(m *Model) Model {
	s := *m
	s.Name, s.HFName, s.HFAliases, s.Source = "", "", nil, ""
	s.Inferred = Inferred{} // what the import inferred (TestHFConfigExtras)
	return s
}

// An imported config.json gives the catalog's model: every shape field and
// the KV bytes per token equal.
func TestHFConfigMatchesCatalog(t *testing.T) {
	c := Builtin()
	cases := []struct{ dir, model, name string }{
		{"Llama-3.1-8B-Instruct", "llama-3.1-8b", "llama-3.1-8b-instruct"}, // the Instruct config: same shape as the base entry
		{"Qwen3-8B", "qwen3-8b", "qwen3-8b"},
		{"Qwen3-30B-A3B", "qwen3-30b-a3b", "qwen3-30b-a3b"},
		{"Mixtral-8x22B-v0.1", "mixtral-8x22b", "mixtral-8x22b-v0.1"},
		{"Mistral-Nemo-Base-2407", "mistral-nemo-12b", "mistral-nemo-base-2407"},
		{"Qwen2.5-7B", "qwen2.5-7b", "qwen2.5-7b"},
		{"DeepSeek-V3", "deepseek-v3", "deepseek-v3"},
		{"Llama-4-Scout-17B-16E", "llama-4-scout-17b-16e", "llama-4-scout-17b-16e"},
	}
	for _, tc := range cases {
		dir := filepath.Join("testdata", "hf", tc.dir)
		got, err := ReadHFConfig(dir) // a directory holding config.json
		if err != nil {
			t.Errorf("%s: %v", tc.dir, err)
			continue
		}
		want, _ := c.Get(tc.model)
		if !reflect.DeepEqual(shape(got), shape(want)) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.dir, shape(got), shape(want))
		}
		for _, kv := range []DType{BF16, FP8} {
			if g, w := got.KVBytesPerToken(kv), want.KVBytesPerToken(kv); g != w {
				t.Errorf("%s: KV bytes/token at %s = %g, catalog %g", tc.dir, kv, g, w)
			}
		}
		if got.Name != tc.name {
			t.Errorf("%s: name %q, want %q", tc.dir, got.Name, tc.name)
		}
		byFile, err := ReadHFConfig(filepath.Join(dir, "config.json"))
		if err != nil || !reflect.DeepEqual(byFile, got) {
			t.Errorf("%s: the file and its directory import differently: %v", tc.dir, err)
		}
	}
}

func TestHFConfigErrors(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown type", `{"model_type": "gemma2", "architectures": ["Gemma2ForCausalLM"]}`,
			`models: c.json: field "model_type": "gemma2" (architectures [Gemma2ForCausalLM]) is not an architecture servesim imports (known: deepseek_v3, llama, llama4, mistral, mixtral, qwen2, qwen3, qwen3_moe)`},
		{"unknown class", `{"architectures": ["FalconForCausalLM"]}`,
			`models: c.json: field "architectures": "FalconForCausalLM" is not an architecture`},
		{"class only", `{"architectures": ["Qwen3ForCausalLM"]}`,
			`models: c.json: field "hidden_size": missing (model_type "qwen3" needs hidden_size, num_hidden_layers, num_attention_heads, vocab_size, max_position_embeddings, intermediate_size)`},
		{"no type", `{"hidden_size": 8}`, `models: c.json: field "model_type": missing, and no architectures list`},
		{"missing one", `{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "max_position_embeddings": 8}`,
			`models: c.json: field "intermediate_size": missing (model_type "llama" needs intermediate_size)`},
		{"float", `{"model_type": "llama", "hidden_size": 64.5}`, `models: c.json: field "hidden_size": want a non-negative integer at most 1073741824, got 64.5`},
		{"string", `{"model_type": "llama", "num_hidden_layers": "2"}`, `models: c.json: field "num_hidden_layers": want an integer, got a string`},
		{"invalid", `{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 3, "vocab_size": 10, "max_position_embeddings": 8, "intermediate_size": 8}`,
			`models: c.json: model "c": field "kv_heads": 3 must divide heads 4 (from config.json)`},
		{"llama4 flat", `{"model_type": "llama4"}`, `models: c.json: field "text_config": missing or not an object`},
		{"llama4 key", `{"model_type": "llama4", "text_config": {"hidden_size": 8}}`, `models: c.json: field "text_config.num_hidden_layers": missing`},
		{"sparse step", `{"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, "max_position_embeddings": 8, "num_experts": 4, "num_experts_per_tok": 1, "moe_intermediate_size": 8, "decoder_sparse_step": 2}`,
			`models: c.json: field "decoder_sparse_step": 2: only 1 is supported`},
		{"not json", `model_type: llama`, `models: c.json: not a JSON object`},
		{"null", `null`, `models: c.json: not a JSON object: null`},
	}
	for _, tc := range cases {
		_, err := ParseHFConfig([]byte(tc.doc), "c.json")
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %s", tc.name, err, tc.want)
		}
	}
	if _, err := ReadHFConfig(filepath.Join(t.TempDir(), "none")); err == nil || !strings.HasPrefix(err.Error(), "models: open ") {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzParseHFConfig(f *testing.F) {
	for _, dir := range []string{"Qwen3-8B", "DeepSeek-V3", "Llama-4-Scout-17B-16E", "Mixtral-8x22B-v0.1"} {
		b, err := os.ReadFile(filepath.Join("testdata", "hf", dir, "config.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"model_type": "deepseek_v3", "q_lora_rank": null, "kv_lora_rank": 1e300}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseHFConfig(data, "f.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "models: f.json") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		// An imported model is valid and can be costed.
		if err := m.Validate(); err != nil {
			t.Fatalf("imported model invalid: %v", err)
		}
		b := Batch{Prefills: 1, PrefillTokens: 3, PrefillPairs: 6, Decodes: 1, DecodeCtx: 5}
		for _, op := range m.Ops(b, Parallel{TP: 1}, nil) {
			if !(op.FLOPs >= 0 && op.Bytes >= 0) {
				t.Fatalf("op %v: FLOPs %g bytes %g", op.Kind, op.FLOPs, op.Bytes)
			}
		}
		_ = m.KVBytesPerToken(BF16)
	})
}
