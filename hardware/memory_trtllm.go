package hardware

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/models"
)

// TRTLLMMemory is what TensorRT-LLM's KV-cache sizing needs beyond the
// model, the GPU and the parallel configuration (PlanMemoryTRTLLM).
type TRTLLMMemory struct {
	Fraction       float64 // kv_cache_config.free_gpu_memory_fraction, in (0, 1)
	TokensPerBlock int     // kv_cache_config.tokens_per_block
	MaxNumTokens   int     // the profiling run's tokens (max_num_tokens)
	MaxTokens      int     // kv_cache_config.max_tokens: > 0 caps the KV tokens
	NonTorch       float64 // bytes outside PyTorch's allocator other than CUDA graphs
	GraphBatch     int     // the largest captured CUDA-graph batch, 0: none
}

// TRTLLMMemoryPlan is a MemoryPlan with TensorRT-LLM's terms.
// ActivationReserve of the embedded plan is Activation + NonTorch +
// CUDAGraph.
type TRTLLMMemoryPlan struct {
	MemoryPlan
	Total      float64 // device memory the driver reports (GPU.DeviceMemory)
	Activation float64 // PyTorch activation peak of the profiling run
	NonTorch   float64
	CUDAGraph  float64 // CUDA-graph memory estimate
	Free       float64 // Total − weights − Activation − NonTorch − CUDAGraph
	Fraction   float64
	Capped     bool // kv_cache_config.max_tokens set the size
}

// PlanMemoryTRTLLM sizes the KV cache as TensorRT-LLM's PyTorch backend
// does (tensorrt_llm/_torch/pyexecutor/_util.py, KvCacheCreator: a
// profiling run of dummy context requests with a small KV cache, then
// configure_kv_cache_capacity and _cal_max_memory):
//
//	peak = torch peak (weights + activations + the estimation KV) + memory outside torch (NCCL, CUDA graphs)
//	KV   = (total − peak + estimation KV) × free_gpu_memory_fraction
//	     = (total − weights − activation − non-torch − CUDA graphs) × fraction
//	tokens = KV / KV bytes per token, at most kv_cache_config.max_tokens; blocks = tokens / tokens_per_block
//
// The activation peak is estimated as the forward activation over
// max_num_tokens tokens (ForwardActivation: the dummy requests fill the
// token budget); the CUDA-graph memory as the forward activation at the
// largest captured batch (graphs share one memory pool, which the largest
// sizes), as PlanMemoryVLLM estimates vLLM's; the non-torch memory is
// vLLM's published figure (DefaultNonTorchBytes), transferred: no
// TensorRT-LLM memory log is read here.
func PlanMemoryTRTLLM(m *models.Model, g *GPU, p models.Parallel, t TRTLLMMemory) (TRTLLMMemoryPlan, error) {
	switch {
	case m == nil || g == nil:
		return TRTLLMMemoryPlan{}, fmt.Errorf("hardware: PlanMemoryTRTLLM: nil model or GPU")
	case !(t.Fraction > 0 && t.Fraction < 1):
		// _util.py / kvCacheManager.cpp: "freeMemFraction (%f) must be smaller than 1.0f".
		return TRTLLMMemoryPlan{}, fmt.Errorf("hardware: kv_cache_free_gpu_memory_fraction must be in (0, 1), got %v", t.Fraction)
	case t.TokensPerBlock < 1:
		return TRTLLMMemoryPlan{}, fmt.Errorf("hardware: tokens_per_block must be >= 1, got %d", t.TokensPerBlock)
	case t.MaxNumTokens < 1:
		return TRTLLMMemoryPlan{}, fmt.Errorf("hardware: PlanMemoryTRTLLM: max_num_tokens %d must be >= 1", t.MaxNumTokens)
	case t.MaxTokens < 0 || t.GraphBatch < 0:
		return TRTLLMMemoryPlan{}, fmt.Errorf("hardware: PlanMemoryTRTLLM: max_tokens %d and CUDA-graph batch %d must be >= 0", t.MaxTokens, t.GraphBatch)
	case !(t.NonTorch >= 0) || math.IsInf(t.NonTorch, 0):
		return TRTLLMMemoryPlan{}, fmt.Errorf("hardware: non-torch memory must be finite and >= 0 bytes, got %v", t.NonTorch)
	}
	if err := m.CheckParallel(p); err != nil {
		return TRTLLMMemoryPlan{}, err
	}
	plan := TRTLLMMemoryPlan{Total: g.DeviceMemory(), NonTorch: t.NonTorch, Fraction: t.Fraction}
	plan.Activation = ForwardActivation(m, p.TP, t.MaxNumTokens)
	if t.GraphBatch > 0 {
		plan.CUDAGraph = ForwardActivation(m, p.TP, t.GraphBatch)
	}
	plan.WeightBytesPerGPU = m.WeightBytesPerGPU(p)
	plan.ActivationReserve = plan.Activation + plan.NonTorch + plan.CUDAGraph
	plan.KVBytesPerTokenPerGPU = m.KVBytesPerTokenPerGPU(p)
	plan.BlockSize = t.TokensPerBlock
	plan.Free = plan.Total - plan.WeightBytesPerGPU - plan.ActivationReserve
	if !(plan.KVBytesPerTokenPerGPU > 0) {
		return TRTLLMMemoryPlan{}, fmt.Errorf("hardware: %s: KV bytes per token per GPU is %v", m.Name, plan.KVBytesPerTokenPerGPU)
	}
	plan.KVBytesPerGPU = plan.Free * t.Fraction
	tokens := math.Floor(plan.KVBytesPerGPU / plan.KVBytesPerTokenPerGPU)
	if t.MaxTokens > 0 && float64(t.MaxTokens) < tokens {
		tokens, plan.Capped = float64(t.MaxTokens), true
		plan.KVBytesPerGPU = tokens * plan.KVBytesPerTokenPerGPU
	}
	blocks := math.Floor(tokens / float64(t.TokensPerBlock))
	gib := func(b float64) float64 { return b / (1 << 30) }
	if blocks < 1 {
		return TRTLLMMemoryPlan{}, fmt.Errorf("hardware: %s at tp %d on %s leaves %.2f GiB for the KV cache ((%.2f GiB − %.2f GiB weights − %.2f GiB activation peak − %.2f GiB non-torch − %.2f GiB CUDA graphs) × %.2f), less than one %d-token block: raise tp, use a larger GPU or lower max_num_tokens",
			m.Name, p.TP, g.Name, gib(plan.KVBytesPerGPU), gib(plan.Total), gib(plan.WeightBytesPerGPU), gib(plan.Activation), gib(plan.NonTorch), gib(plan.CUDAGraph), t.Fraction, t.TokensPerBlock)
	}
	plan.Blocks = int(min(blocks, math.MaxInt32))
	return plan, nil
}

// String gives the plan in TensorRT-LLM's terms, as its log prints them.
func (p TRTLLMMemoryPlan) String() string {
	gib := func(b float64) float64 { return b / (1 << 30) }
	s := fmt.Sprintf("total %.2f GiB; weights %.2f GiB, activation peak %.2f GiB, non-torch %.2f GiB, CUDA graphs %.2f GiB; free %.2f GiB × fraction %.2f; KV %.2f GiB = %d tokens = %d blocks of %d",
		gib(p.Total), gib(p.WeightBytesPerGPU), gib(p.Activation), gib(p.NonTorch), gib(p.CUDAGraph), gib(p.Free), p.Fraction,
		gib(p.KVBytesPerGPU), p.Blocks*p.BlockSize, p.Blocks, p.BlockSize)
	if p.Capped {
		s += " (capped by kv_cache_config.max_tokens)"
	}
	return s
}
