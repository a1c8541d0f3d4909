package models

import (
	"math"
	"strings"
	"testing"
)

// The models added for issue 14: parameter totals against their model cards
// and KV bytes per token from their config.json shapes.
func TestIssue14Models(t *testing.T) {
	c := Builtin()
	cases := []struct {
		name   string
		params float64 // published total, parameters
		tol    float64 // relative: model cards round to 3 significant digits
		kvBF16 float64 // KV bytes per token at BF16
		kvTP8  float64 // per GPU at TP 8 (0: TP 8 not valid)
	}{
		// 2 × 36 layers × 8 KV heads × 128 × 2 B = 147,456; at TP 8 one KV head: 147,456 / 8 = 18,432.
		{"qwen3-8b", 8.2e9, 0.01, 147456, 18432},
		// 2 × 40 × 8 × 128 × 2 = 163,840; TP 8: 20,480.
		{"qwen3-14b", 14.8e9, 0.01, 163840, 20480},
		// 2 × 64 × 8 × 128 × 2 = 262,144; TP 8: 32,768.
		{"qwen3-32b", 32.8e9, 0.01, 262144, 32768},
		// 2 × 48 × 4 × 128 × 2 = 98,304; TP 8 > 4 KV heads: one replicated head, 2 × 48 × 128 × 2 = 24,576.
		{"qwen3-30b-a3b", 30.5e9, 0.01, 98304, 24576},
		// 2 × 94 × 4 × 128 × 2 = 192,512; TP 8: one replicated head, 48,128.
		{"qwen3-235b-a22b", 235e9, 0.01, 192512, 48128},
		// 2 × 56 × 8 × 128 × 2 = 229,376; TP 8: 28,672. Mistral: 141B total.
		{"mixtral-8x22b", 141e9, 0.01, 229376, 28672},
		// MLA: 61 layers × (kv_lora_rank 512 + qk_rope_head_dim 64) × 2 B = 70,272, the
		// whole latent on every GPU at any TP. arXiv:2412.19437: 671B without the MTP module.
		{"deepseek-v3", 671e9, 0.001, 70272, 70272},
		// 2 × 40 × 8 × 128 × 2 = 163,840; TP 8: 20,480. Mistral: 12B ("12.2B" on the card).
		{"mistral-nemo-12b", 12.2e9, 0.01, 163840, 20480},
		// 2 × 28 × 4 × 128 × 2 = 57,344; TP 8 does not divide 28 heads. Card: 7.61B.
		{"qwen2.5-7b", 7.61e9, 0.005, 57344, 0},
		// 2 × 60 × 8 × 128 × 2 = 245,760; TP 8: 30,720. 01.AI: 34B (34.4B in the checkpoint).
		{"yi-34b", 34.4e9, 0.01, 245760, 30720},
		// 2 × 48 × 8 × 128 × 2 = 196,608; TP 8: 24,576. Meta's 109B total includes the
		// vision encoder, which is not modelled: the text model is 107.8B.
		{"llama-4-scout-17b-16e", 109e9, 0.02, 196608, 24576},
	}
	for _, tc := range cases {
		m, err := c.Get(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if e := math.Abs(m.Params()/tc.params - 1); e > tc.tol {
			t.Errorf("%s: %.4g parameters, published %.4g (off by %.2f%%)", tc.name, m.Params(), tc.params, 100*e)
		}
		if got := m.KVBytesPerToken(BF16); got != tc.kvBF16 {
			t.Errorf("%s: KV bytes/token %g, want %g", tc.name, got, tc.kvBF16)
		}
		p := Parallel{TP: 8}
		if tc.kvTP8 == 0 {
			if m.CheckParallel(p) == nil {
				t.Errorf("%s: TP 8 accepted", tc.name)
			}
			continue
		}
		if err := m.CheckParallel(p); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		} else if got := m.KVBytesPerTokenPerGPU(p); got != tc.kvTP8 {
			t.Errorf("%s: KV bytes/token/GPU at TP 8 = %g, want %g", tc.name, got, tc.kvTP8)
		}
	}
}

// Active parameters against model cards: Qwen3-30B-A3B 3.3B, Qwen3-235B-A22B 22B,
// DeepSeek-V3 37B, Mixtral-8x22B 39B (these cards count the input embedding).
func TestIssue14ActiveParams(t *testing.T) {
	c := Builtin()
	for _, tc := range []struct {
		name   string
		active float64
	}{{"qwen3-30b-a3b", 3.3e9}, {"qwen3-235b-a22b", 22e9}, {"deepseek-v3", 37e9}, {"mixtral-8x22b", 39e9}} {
		m, _ := c.Get(tc.name)
		withEmbed := m.ActiveParams() + float64(m.Vocab)*float64(m.Hidden)
		if e := math.Abs(withEmbed/tc.active - 1); e > 0.03 {
			t.Errorf("%s: %.4g active (with the embedding), published %.4g", tc.name, withEmbed, tc.active)
		}
	}
}

func TestGetByHFID(t *testing.T) {
	c := Builtin()
	for _, tc := range []struct{ in, want string }{
		{"meta-llama/Llama-3.1-8B", "llama-3.1-8b"},
		{"meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"}, // same config.json shape as the base
		{"Qwen/Qwen3-8B", "qwen3-8b"},
		{"qwen/qwen3-8b-base", "qwen3-8b"},
		{"deepseek-ai/DeepSeek-V3", "deepseek-v3"},
		{"mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"},
		{"meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama-4-scout-17b-16e"},
	} {
		m, err := c.Get(tc.in)
		if err != nil || m.Name != tc.want {
			t.Errorf("Get(%q) = %v, %v; want %s", tc.in, m, err, tc.want)
		}
	}
	_, err := c.Get("google/gemma-2-9b")
	if err == nil || !strings.Contains(err.Error(), `"google/gemma-2-9b"`) || !strings.Contains(err.Error(), "--model-config") {
		t.Errorf("unknown HF id: %v", err)
	}
}

// MLA's attention: vLLM's prefill is the non-absorbed form, its decode the
// absorbed one (mla.go).
func TestMLAAttentionFLOPs(t *testing.T) {
	m, _ := Builtin().Get("deepseek-v3")
	p := Parallel{TP: 8}
	// One decode over 1023 cached tokens: keys = 1024. Per GPU 128/8 = 16 heads.
	// W_UK: 2·16·128·512 = 2,097,152; MQA over the latent: 2·16·(576 + 512)·1024 =
	// 35,651,584; W_UV: 2·16·512·128 = 2,097,152; sum 39,845,888.
	d := opOf(t, m.Ops(decodes(1, 1023), p, nil), OpAttnDecode)
	if d.FLOPs != 39845888 {
		t.Errorf("decode FLOPs %g, want 39,845,888", d.FLOPs)
	}
	// A 1024-token prefill with no context: pairs = 1024·1025/2 = 524,800. kv_b over
	// the 1024 latents, nope = 192 − 64 = 128: 2·1024·512·16·(128 + 128) =
	// 4,294,967,296; attention 2·16·(192 + 128)·524,800 = 5,373,952,000; sum
	// 9,668,919,296.
	pf := opOf(t, m.Ops(prefill(1024, 0), p, nil), OpAttnPrefill)
	if pf.FLOPs != 9668919296 {
		t.Errorf("prefill FLOPs %g, want 9,668,919,296", pf.FLOPs)
	}
}
