package hardware

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// TestPlanMemoryVLLM checks the block count of the RTX 4090 run
// (data/llmservingsim/vllm-runs/RTX4090/Llama-3.1-8B: TP 1, BF16,
// max_num_batched_tokens 2,048, max_num_seqs 256, utilization 0.9), whose
// log says 2,588 blocks. Every term:
//
//	requested  = ceil(25,250,627,584 × 0.9)                 = 22,725,564,826
//	weights    = 8.03e9 parameters × 2 B                     = 16,060,522,496
//	forward    = 2,048 × 2 B × (4,096 + 4,096 + 2·1,024 + 3·14,336) = 218,103,808
//	hidden     = 2,048 × 4,096 × 2 B                         =     16,777,216
//	sampler    = 256 × 128,256 × 24 B                        =    788,004,864
//	activation = max(forward, hidden + sampler)              =    804,782,080
//	non-torch  = 0.32 GiB                                    =    343,597,383.68
//	CUDA graph = 512 × 2 B × 53,248                          =     54,525,952
//	KV         = 22,725,564,826 − all of the above           =  5,462,136,914.32
//	blocks     = floor(KV / (16 × 2 × 32 × 8 × 128 × 2 B = 2,097,152)) = 2,604
//
// 2,604 is 0.6 % above the run's 2,588 (the sum of forward and an 8 B per
// logit sampler gave 2,759, +6.6 %); the old plan (datasheet memory − 3
// GiB) gives 1,642, 37 % below.
func TestPlanMemoryVLLM(t *testing.T) {
	m, err := models.Builtin().Get("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	g := mustGPU(t, "rtx-4090")
	p := models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}
	v := VLLMMemory{Utilization: 0.9, BlockSize: 16, MaxNumBatchedTokens: 2048, MaxNumSeqs: 256, NonTorch: DefaultNonTorch(1), CUDAGraphs: true}
	for _, c := range []struct {
		name   string
		edit   func(v *VLLMMemory)
		blocks int
		kv     float64
	}{
		{"profiled", func(*VLLMMemory) {}, 2604, 5462136914.32},
		// Without graphs the 54,525,952 B come back: floor(5,516,662,866.32 / 2,097,152) = 2,630.
		{"eager", func(v *VLLMMemory) { v.CUDAGraphs = false }, 2630, 5516662866.32},
		// kv_cache_memory_bytes 4 GiB: 4,294,967,296 / 2,097,152 = 2,048 blocks.
		{"kv_cache_memory_bytes", func(v *VLLMMemory) { v.KVCacheBytes = 4 << 30 }, 2048, 4 << 30},
		// num_gpu_blocks_override replaces the count, not the budget.
		{"num_gpu_blocks_override", func(v *VLLMMemory) { v.BlocksOverride = 2588 }, 2588, 5462136914.32},
	} {
		t.Run(c.name, func(t *testing.T) {
			vv := v
			c.edit(&vv)
			got, err := PlanMemoryVLLM(m, g, p, vv)
			if err != nil {
				t.Fatal(err)
			}
			if got.Blocks != c.blocks || math.Abs(got.KVBytesPerGPU-c.kv) > 1e-3 {
				t.Errorf("blocks %d, KV %.2f B; want %d, %.2f B (%s)", got.Blocks, got.KVBytesPerGPU, c.blocks, c.kv, got)
			}
			if got.Requested != 22725564826 {
				t.Errorf("requested %.0f B, want 22,725,564,826", got.Requested)
			}
		})
	}
}

func TestPlanMemoryVLLMErrors(t *testing.T) {
	m, err := models.Builtin().Get("llama-2-70b")
	if err != nil {
		t.Fatal(err)
	}
	g := mustGPU(t, "h100")
	ok := VLLMMemory{Utilization: 0.9, BlockSize: 16, MaxNumBatchedTokens: 2048, MaxNumSeqs: 256}
	for _, c := range []struct {
		name string
		tp   int
		edit func(v *VLLMMemory)
		want string
	}{
		// 70B at TP 1: 138 GB of weights on a 79 GiB GPU.
		{"weights do not fit", 1, func(*VLLMMemory) {}, "less than one 16-token block"},
		{"utilization", 4, func(v *VLLMMemory) { v.Utilization = 1.5 }, "utilization"},
		{"tokens", 4, func(v *VLLMMemory) { v.MaxNumBatchedTokens = 0 }, "max_num_batched_tokens"},
		{"kv bytes", 4, func(v *VLLMMemory) { v.KVCacheBytes = -1 }, "kv_cache_memory_bytes"},
		{"override", 4, func(v *VLLMMemory) { v.BlocksOverride = -1 }, "num_gpu_blocks_override"},
	} {
		v := ok
		c.edit(&v)
		_, err := PlanMemoryVLLM(m, g, models.Parallel{TP: c.tp, Weights: models.BF16, KV: models.BF16}, v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

// TestProfileActivation: the profiling pass's peak is the larger of the
// forward pass and the hidden states plus the dummy sampler run, never
// their sum. Llama-3.1-8B (hidden 4,096, vocab 128,256, FFN 14,336, 8 KV
// heads of 128) at TP 1:
//
//	2,048 tokens, 256 seqs: forward 2,048 × 2 × 53,248 = 218,103,808 B;
//	  hidden 16,777,216 + sampler 256 × 128,256 × 24 = 788,004,864 → 804,782,080 (sampler side)
//	8,192 tokens, 16 seqs:  forward 8,192 × 2 × 53,248 = 872,415,232 B;
//	  hidden 67,108,864 + sampler 16 × 128,256 × 24 = 49,250,304 → 872,415,232 (forward side)
//	8 tokens, 256 seqs: the sampler runs over min(8, 256) = 8 rows:
//	  max(8 × 2 × 53,248 = 851,968, 8 × 4,096 × 2 + 8 × 128,256 × 24 = 24,690,688) = 24,690,688
func TestProfileActivation(t *testing.T) {
	m, err := models.Builtin().Get("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tokens, seqs int
		want         float64
	}{
		{2048, 256, 804782080},
		{8192, 16, 872415232},
		{8, 256, 24690688},
	} {
		if got := ProfileActivation(m, 1, c.tokens, c.seqs); got != c.want {
			t.Errorf("ProfileActivation(%d tokens, %d seqs) = %.0f B, want %.0f", c.tokens, c.seqs, got, c.want)
		}
	}
}

// TestMaxCUDAGraphSize: min(2 × max_num_seqs, 512), without overflowing
// for a huge max_num_seqs.
func TestMaxCUDAGraphSize(t *testing.T) {
	for _, c := range []struct{ seqs, want int }{{1, 2}, {255, 510}, {256, 512}, {1024, 512}, {math.MaxInt, 512}} {
		if got := MaxCUDAGraphSize(c.seqs); got != c.want {
			t.Errorf("MaxCUDAGraphSize(%d) = %d, want %d", c.seqs, got, c.want)
		}
	}
}
