package hardware

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/models"
)

// SGLang's memory plan and the defaults it derives from the GPU's memory,
// read from github.com/sgl-project/sglang (python/sglang/srt/server_args.py
// ServerArgs._handle_gpu_memory_settings and _generate_cuda_graph_batch_sizes;
// python/sglang/srt/model_executor/model_runner.py profile_max_num_token and
// init_memory_pool; python/sglang/srt/managers/tp_worker.py, the
// max_running_requests default).

// SGLangDefaults are the settings SGLang's server_args derives from the
// GPU's memory and the parallel layout when the command line gives none.
type SGLangDefaults struct {
	GPUMemMiB         float64 // the capacity the heuristics read (total device memory in MiB)
	ChunkedPrefill    int     // chunked_prefill_size
	CUDAGraphMaxBS    int     // cuda_graph_max_bs
	ReservedMiB       float64 // reserved_mem: activations, CUDA graphs, metadata
	MemFractionStatic float64 // (gpu_mem − reserved_mem) / gpu_mem, rounded to 3 places
}

// SGLangGPUDefaults returns SGLang's defaults for a GPU of g's memory at
// tp × pp (ServerArgs._handle_gpu_memory_settings, no DP attention, no
// speculative decoding, no piecewise CUDA graphs):
//
//	gpu_mem < 20 GiB: chunk 2048, max bs 8; < 35: 2048, 24 (80 at tp ≥ 4);
//	< 60: 4096, 32 (160); < 90: 8192, 256 (512); < 160: 8192, 256 (512);
//	else 16384, 512.
//	reserved_mem = 512 + max(chunk, 2048) × 1.5 + max_bs × 2 + tp × pp / 8 × 1024 MiB,
//	at least 10 GiB on a GPU above 60 GiB;
//	mem_fraction_static = round((gpu_mem − reserved_mem) / gpu_mem, 3).
//
// chunk and maxBS, when > 0, are the command line's (--chunked-prefill-size,
// --cuda-graph-max-bs) and enter reserved_mem as SGLang's do; chunk −1
// (chunked prefill off) reserves for max_prefill_tokens (maxPrefill).
func SGLangGPUDefaults(g *GPU, tp, pp, chunk, maxBS, maxPrefill int) SGLangDefaults {
	mem := g.DeviceMemory() / (1 << 20) // get_device_memory_capacity: MiB
	d := SGLangDefaults{GPUMemMiB: mem}
	small := tp < 4
	var c, bs int
	switch {
	case mem < 20*1024: // T4, 4080
		c, bs = 2048, 8
	case mem < 35*1024: // A10, 4090, 5090
		c, bs = 2048, pick(small, 24, 80)
	case mem < 60*1024: // A100 40GB, L40
		c, bs = 4096, pick(small, 32, 160)
	case mem < 90*1024: // H100, A100 80GB
		c, bs = 8192, pick(small, 256, 512)
	case mem < 160*1024: // H20, H200
		c, bs = 8192, pick(small, 256, 512)
	default: // B200, MI300
		c, bs = 16384, 512
	}
	if chunk != 0 {
		c = chunk
	}
	if maxBS > 0 {
		bs = maxBS
	}
	d.ChunkedPrefill, d.CUDAGraphMaxBS = c, bs
	r := 512.0 // constant metadata (attention backend)
	if c > 0 {
		r += float64(max(c, 2048)) * 1.5 // activations of a large prefill
	} else {
		r += float64(max(maxPrefill, 2048)) * 1.5
	}
	r += float64(bs) * 2                           // CUDA graphs
	r += float64(max(tp, 1)*max(pp, 1)) / 8 * 1024 // large parallel sizes
	if mem > 60*1024 {
		r = max(r, 10*1024)
	}
	d.ReservedMiB = r
	d.MemFractionStatic = math.Round((mem-r)/mem*1000) / 1000
	return d
}

func pick(small bool, a, b int) int {
	if small {
		return a
	}
	return b
}

// SGLangCUDAGraphBS returns SGLang's default captured decode batch sizes
// (ServerArgs._generate_cuda_graph_batch_sizes, no speculative decoding):
// [1, 2, 4, 8, 12] + range(16, 257, 8) + range(272, 512, 16) +
// range(512, max_bs + 1, 32), each ≤ max_bs.
func SGLangCUDAGraphBS(maxBS int) []int {
	var s []int
	add := func(v int) {
		if v <= maxBS {
			s = append(s, v)
		}
	}
	for _, v := range []int{1, 2, 4, 8, 12} {
		add(v)
	}
	for v := 16; v < 257; v += 8 {
		add(v)
	}
	for v := 272; v < 512; v += 16 {
		add(v)
	}
	for v := 512; v <= maxBS; v += 32 {
		add(v)
	}
	return s
}

// SGLangMemory is what SGLang's KV pool sizing needs beyond the model, the
// GPU and the layout (PlanMemorySGLang).
type SGLangMemory struct {
	MemFractionStatic float64 // mem_fraction_static, in (0, 1)
	PageSize          int     // page_size (SGLang's default 1)
	// Context is the device memory taken before SGLang's first reading of
	// free memory (CUDA context, NCCL): total_gpu_memory is the free memory
	// then (model_runner.py init_torch_distributed).
	Context float64
	// MaxTotalTokens is --max-total-tokens: > 0 caps the pool
	// (init_memory_pool keeps the smaller).
	MaxTotalTokens int
}

// SGLangMemoryPlan is a MemoryPlan with SGLang's terms.
type SGLangMemoryPlan struct {
	MemoryPlan
	Total          float64 // total_gpu_memory: free device memory before the weights load
	Fraction       float64 // mem_fraction_static
	MaxTotalTokens int     // max_total_num_tokens (Blocks × PageSize)
}

// PlanMemorySGLang sizes SGLang's KV pool (model_runner.py
// profile_max_num_token): with total = device memory − Context (free
// memory before the weights load) and available = total − weights (free
// memory after),
//
//	rest_memory          = available − total × (1 − mem_fraction_static)
//	max_total_num_tokens = floor(rest_memory / cell_size), cell_size = the
//	                       KV bytes of one token on one GPU (2 × layers ×
//	                       kv_heads/TP × head_dim × dtype bytes)
//
// then aligned down to whole pages (init_memory_pool). The activations and
// CUDA graphs live in the (1 − fraction) left outside.
func PlanMemorySGLang(m *models.Model, g *GPU, p models.Parallel, o SGLangMemory) (SGLangMemoryPlan, error) {
	switch {
	case m == nil || g == nil:
		return SGLangMemoryPlan{}, fmt.Errorf("hardware: PlanMemorySGLang: nil model or GPU")
	case !(o.MemFractionStatic > 0 && o.MemFractionStatic < 1):
		return SGLangMemoryPlan{}, fmt.Errorf("hardware: mem_fraction_static must be in (0, 1), got %v", o.MemFractionStatic)
	case o.PageSize < 1:
		return SGLangMemoryPlan{}, fmt.Errorf("hardware: page size must be >= 1 token, got %d", o.PageSize)
	case !(o.Context >= 0) || math.IsInf(o.Context, 0):
		return SGLangMemoryPlan{}, fmt.Errorf("hardware: context memory must be finite and >= 0 bytes, got %v", o.Context)
	}
	if err := m.CheckParallel(p); err != nil {
		return SGLangMemoryPlan{}, err
	}
	total := g.DeviceMemory() - o.Context
	w := m.WeightBytesPerGPU(p)
	cell := m.KVBytesPerTokenPerGPU(p)
	rest := (total - w) - total*(1-o.MemFractionStatic)
	plan := SGLangMemoryPlan{Total: total, Fraction: o.MemFractionStatic, MemoryPlan: MemoryPlan{
		WeightBytesPerGPU: w, ActivationReserve: total * (1 - o.MemFractionStatic), KVBytesPerTokenPerGPU: cell, BlockSize: o.PageSize}}
	if !(cell > 0) {
		return plan, fmt.Errorf("hardware: %s: KV bytes per token per GPU is %v", m.Name, cell)
	}
	tokens := math.Floor(rest / cell)
	if o.MaxTotalTokens > 0 {
		tokens = min(tokens, float64(o.MaxTotalTokens))
	}
	pages := math.Floor(tokens / float64(o.PageSize))
	if pages < 1 {
		return plan, fmt.Errorf("hardware: %s at tp %d on %s leaves %.2f GiB for SGLang's KV pool (%.2f GiB free × mem_fraction_static %.3g − %.2f GiB weights), less than one %d-token page: raise tp, raise --mem-fraction-static or use a larger GPU",
			m.Name, p.TP, g.Name, rest/(1<<30), total/(1<<30), o.MemFractionStatic, w/(1<<30), o.PageSize)
	}
	plan.Blocks = int(min(pages, math.MaxInt32))
	plan.MaxTotalTokens = plan.Blocks * o.PageSize
	plan.KVBytesPerGPU = float64(plan.MaxTotalTokens) * cell
	return plan, nil
}

// SGLangMaxRunning returns SGLang's max_running_requests when the command
// line gives none (tp_worker.py: min(max_total_num_tokens // 2, the request
// pool), the pool being model_runner.py init_memory_pool's max_num_reqs =
// min(max(int(max_total_num_tokens / context_len × 512), 2048), 4096)).
func SGLangMaxRunning(maxTotalTokens, contextLen int) int {
	pool := min(max(int(float64(maxTotalTokens)/float64(max(contextLen, 1))*512), 2048), 4096)
	return max(min(maxTotalTokens/2, pool), 1)
}

// String describes the plan for the run header.
func (p SGLangMemoryPlan) String() string {
	return fmt.Sprintf("%.2f GiB free before weights × mem_fraction_static %.3g − %.2f GiB weights = %.2f GiB KV pool, max_total_num_tokens %d (%d-token pages of %.0f B a token)",
		p.Total/(1<<30), p.Fraction, p.WeightBytesPerGPU/(1<<30), p.KVBytesPerGPU/(1<<30), p.MaxTotalTokens, p.BlockSize, p.KVBytesPerTokenPerGPU)
}
