package hardware

import (
	"math"
	"slices"
	"testing"

	"github.com/servesim/servesim/models"
)

// TestSGLangGPUDefaults checks server_args' memory heuristics on the
// catalog's GPUs (device memory in MiB: the catalog's device_bytes / 2^20):
//
//	h100 81,121 MiB, tp 1: chunk 8192, bs 256; reserved 512 + 8192·1.5 + 256·2 + 1/8·1024
//	     = 13,440 MiB; fraction round((81,121 − 13,440) / 81,121, 3) = 0.834
//	h100 tp 8: bs 512; reserved 512 + 12,288 + 1,024 + 8/8·1024 = 14,848; 0.817
//	h200 143,157 MiB: chunk 8192, bs 256, 13,440; round(129,717 / 143,157) = 0.906
//	b200 182,642 MiB: chunk 16384, bs 512; 512 + 24,576 + 1,024 + 128 = 26,240; 0.856
//	h100, --chunked-prefill-size -1: reserves for max_prefill_tokens 16384:
//	     512 + 24,576 + 512 + 128 = 25,728; round(55,393 / 81,121) = 0.683
func TestSGLangGPUDefaults(t *testing.T) {
	for _, c := range []struct {
		gpu                string
		tp, chunk          int
		wantChunk, wantBS  int
		wantReserved, frac float64
	}{
		{"h100", 1, 0, 8192, 256, 13440, 0.834},
		{"h100", 8, 0, 8192, 512, 14848, 0.817},
		{"h200", 1, 0, 8192, 256, 13440, 0.906},
		{"b200", 1, 0, 16384, 512, 26240, 0.856},
		{"h100", 1, -1, -1, 256, 25728, 0.683},
	} {
		d := SGLangGPUDefaults(mustGPU(t, c.gpu), c.tp, 1, c.chunk, 0, 16384)
		if d.ChunkedPrefill != c.wantChunk || d.CUDAGraphMaxBS != c.wantBS || d.ReservedMiB != c.wantReserved || d.MemFractionStatic != c.frac {
			t.Errorf("%s tp %d chunk %d: %+v, want chunk %d, max bs %d, reserved %g MiB, fraction %g",
				c.gpu, c.tp, c.chunk, d, c.wantChunk, c.wantBS, c.wantReserved, c.frac)
		}
	}
}

// TestSGLangCUDAGraphBS: [1 2 4 8 12] + 16..256 step 8 + 272..496 step 16 +
// 512.. step 32, each ≤ max bs: 5 + 31 = 36 sizes at 256, + 15 + 1 = 52 at 512.
func TestSGLangCUDAGraphBS(t *testing.T) {
	s := SGLangCUDAGraphBS(256)
	if len(s) != 36 || s[4] != 12 || s[5] != 16 || s[35] != 256 {
		t.Errorf("SGLangCUDAGraphBS(256) = %v", s)
	}
	s = SGLangCUDAGraphBS(512)
	if len(s) != 52 || s[36] != 272 || s[50] != 496 || s[51] != 512 || !slices.IsSorted(s) {
		t.Errorf("SGLangCUDAGraphBS(512) = %v", s)
	}
	if s := SGLangCUDAGraphBS(10); !slices.Equal(s, []int{1, 2, 4, 8}) {
		t.Errorf("SGLangCUDAGraphBS(10) = %v", s)
	}
}

// TestPlanMemorySGLang checks profile_max_num_token for Llama-3.1-8B on one
// H100 at mem_fraction_static 0.834:
//
//	total   = 85,061,827,297 B − 0.32 GiB (context)     = 84,718,229,913.32 B
//	weights = 16,060,522,496 B (8.03e9 parameters × 2 B)
//	rest    = total × 0.834 − weights                   = 54,594,481,251.71 B
//	cell    = 2 × 32 layers × 8 KV heads × 128 × 2 B    = 131,072 B
//	max_total_num_tokens = floor(rest / cell)           = 416,522
//
// at 16-token pages floor(416,522 / 16) × 16 = 416,512; at tp 2 (cell
// 65,536 B, weights 8,030,527,488 B a GPU): floor((70,655,003,747.71 −
// 8,030,527,488) / 65,536) = 955,573. max_running_requests is then
// min(416,522 // 2, min(max(416,522 / 131,072 × 512, 2048), 4096)) = 2048.
func TestPlanMemorySGLang(t *testing.T) {
	m, err := models.Builtin().Get("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	g := mustGPU(t, "h100")
	o := SGLangMemory{MemFractionStatic: 0.834, PageSize: 1, Context: DefaultNonTorchBytes}
	for _, c := range []struct {
		tp, page, want int
	}{{1, 1, 416522}, {2, 1, 955573}, {1, 16, 416512}} {
		o.PageSize = c.page
		p, err := PlanMemorySGLang(m, g, models.Parallel{TP: c.tp, Weights: models.BF16, KV: models.BF16}, o)
		if err != nil {
			t.Fatal(err)
		}
		total := g.DeviceMemory() - DefaultNonTorchBytes
		arith := math.Floor((total*0.834 - m.WeightBytesPerGPU(models.Parallel{TP: c.tp, Weights: models.BF16})) / (131072 / float64(c.tp)))
		if p.MaxTotalTokens != c.want || float64(c.want) > arith || p.Blocks*c.page != p.MaxTotalTokens {
			t.Errorf("tp %d page %d: max_total_num_tokens %d (blocks %d), want %d (formula %g)", c.tp, c.page, p.MaxTotalTokens, p.Blocks, c.want, arith)
		}
	}
	if n := SGLangMaxRunning(416522, 131072); n != 2048 {
		t.Errorf("SGLangMaxRunning(416522, 131072) = %d, want 2048", n)
	}
	if n := SGLangMaxRunning(3000, 4096); n != 1500 { // min(1500, min(max(375, 2048), 4096))
		t.Errorf("SGLangMaxRunning(3000, 4096) = %d, want 1500", n)
	}
	for _, bad := range []SGLangMemory{{MemFractionStatic: 1, PageSize: 1}, {MemFractionStatic: 0.1, PageSize: 1}, {MemFractionStatic: 0.8, PageSize: 0}} {
		if _, err := PlanMemorySGLang(m, g, models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}, bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
