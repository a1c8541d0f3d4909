package hardware

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// TestPlanMemoryTRTLLM checks TensorRT-LLM's KV sizing of Llama-3.1-8B
// (BF16, TP 1) on an H100 SXM at trtllm-serve's defaults (fraction 0.9,
// tokens_per_block 32, max_num_tokens 8192, CUDA graphs up to batch 128):
//
//	total      = 85,061,827,297 B (the catalog's device memory)
//	weights    = 8.03e9 parameters × 2 B                          = 16,060,522,496
//	activation = 8,192 × 2 B × (4,096 + 4,096 + 2·1,024 + 3·14,336) =    872,415,232
//	non-torch  = 0.32 GiB                                          =    343,597,383.68
//	CUDA graph = 128 × 2 B × 53,248                                 =     13,631,488
//	free       = total − all of the above                          = 67,771,660,697.32
//	KV         = free × 0.9                                        = 60,994,494,627.588
//	tokens     = floor(KV / (2 × 32 × 8 × 128 × 2 B = 131,072))     =        465,351
//	blocks     = floor(465,351 / 32)                               =         14,542
func TestPlanMemoryTRTLLM(t *testing.T) {
	m, err := models.Builtin().Get("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	g := mustGPU(t, "h100")
	p := models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}
	base := TRTLLMMemory{Fraction: 0.9, TokensPerBlock: 32, MaxNumTokens: 8192, NonTorch: DefaultNonTorch(1), GraphBatch: 128}
	for _, c := range []struct {
		name   string
		edit   func(*TRTLLMMemory)
		blocks int
		kv     float64
	}{
		{"defaults", func(*TRTLLMMemory) {}, 14542, 60994494627.588},
		// No CUDA graphs: the 13,631,488 B come back, 0.9 × 67,785,292,185.32 / 131,072 / 32 → 14,545 blocks.
		{"no CUDA graphs", func(t *TRTLLMMemory) { t.GraphBatch = 0 }, 14545, 61006762966.788},
		// 16-token blocks: floor(465,351 / 16) = 29,084.
		{"tokens_per_block 16", func(t *TRTLLMMemory) { t.TokensPerBlock = 16 }, 29084, 60994494627.588},
		// fraction 0.5, max_num_tokens 2048 (activation 218,103,808 B): floor(0.5 × 68,425,972,121.32 / 131,072 / 32) = 8,157.
		{"fraction 0.5, max_num_tokens 2048", func(t *TRTLLMMemory) { t.Fraction, t.MaxNumTokens = 0.5, 2048 }, 8157, 34212986060.66},
		// max_tokens 100,000 caps the tokens: floor(100,000 / 32) = 3,125 blocks, 100,000 × 131,072 B.
		{"max_tokens", func(t *TRTLLMMemory) { t.MaxTokens = 100000 }, 3125, 100000 * 131072},
	} {
		t.Run(c.name, func(t *testing.T) {
			tm := base
			c.edit(&tm)
			got, err := PlanMemoryTRTLLM(m, g, p, tm)
			if err != nil {
				t.Fatal(err)
			}
			if got.Blocks != c.blocks || math.Abs(got.KVBytesPerGPU-c.kv) > 1e-2 {
				t.Errorf("blocks %d, KV %.3f B; want %d, %.3f B (%s)", got.Blocks, got.KVBytesPerGPU, c.blocks, c.kv, got)
			}
		})
	}
}

func TestPlanMemoryTRTLLMErrors(t *testing.T) {
	m, err := models.Builtin().Get("llama-2-70b")
	if err != nil {
		t.Fatal(err)
	}
	g := mustGPU(t, "h100")
	ok := TRTLLMMemory{Fraction: 0.9, TokensPerBlock: 32, MaxNumTokens: 8192}
	for _, c := range []struct {
		name string
		tp   int
		edit func(*TRTLLMMemory)
		want string
	}{
		{"weights do not fit", 1, func(*TRTLLMMemory) {}, "less than one 32-token block"},
		{"fraction 1", 4, func(t *TRTLLMMemory) { t.Fraction = 1 }, "kv_cache_free_gpu_memory_fraction"}, // TensorRT-LLM: must be smaller than 1.0
		{"fraction 0", 4, func(t *TRTLLMMemory) { t.Fraction = 0 }, "kv_cache_free_gpu_memory_fraction"},
		{"tokens_per_block", 4, func(t *TRTLLMMemory) { t.TokensPerBlock = 0 }, "tokens_per_block"},
		{"max_num_tokens", 4, func(t *TRTLLMMemory) { t.MaxNumTokens = 0 }, "max_num_tokens"},
		{"max_tokens", 4, func(t *TRTLLMMemory) { t.MaxTokens = -1 }, "max_tokens"},
		{"non-torch", 4, func(t *TRTLLMMemory) { t.NonTorch = math.NaN() }, "non-torch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tm := ok
			c.edit(&tm)
			_, err := PlanMemoryTRTLLM(m, g, models.Parallel{TP: c.tp, Weights: models.BF16, KV: models.BF16}, tm)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "hardware: ") {
				t.Fatalf("err %v, want one naming %q", err, c.want)
			}
		})
	}
}
