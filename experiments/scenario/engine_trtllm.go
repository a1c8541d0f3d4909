package scenario

import (
	"fmt"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim/serve"
)

// TRTLLMEngine is the [engine.trtllm] table: the TensorRT-LLM LLM-API
// options (tensorrt_llm/llmapi/llm_args.py, the keys of trtllm-serve's
// --extra_llm_api_options) that the trtllm engine model has, named as
// there. Its batch limits are the [batch] fields: max_batch_size is
// batch.max_num_seqs, max_num_tokens batch.max_num_batched_tokens,
// kv_cache_config.tokens_per_block batch.block_size.
type TRTLLMEngine struct {
	// CapacitySchedulerPolicy is scheduler_config.capacity_scheduler_policy:
	// GUARANTEED_NO_EVICT (default) or MAX_UTILIZATION.
	CapacitySchedulerPolicy string `toml:"capacity_scheduler_policy" json:"capacity_scheduler_policy,omitempty"`
	EnableChunkedPrefill    bool   `toml:"enable_chunked_prefill" json:"enable_chunked_prefill,omitempty"`
	// DisableBlockReuse is kv_cache_config.enable_block_reuse = false.
	DisableBlockReuse bool `toml:"disable_block_reuse" json:"disable_block_reuse,omitempty"`
	// FreeGPUMemoryFraction is kv_cache_config.free_gpu_memory_fraction
	// (trtllm-serve --kv_cache_free_gpu_memory_fraction), 0: 0.9.
	FreeGPUMemoryFraction float64 `toml:"free_gpu_memory_fraction" json:"free_gpu_memory_fraction,omitempty"`
	// MaxTokens is kv_cache_config.max_tokens, 0: not set.
	MaxTokens int `toml:"max_tokens" json:"max_tokens,omitempty"`
	// CUDA graphs: cuda_graph_config.max_batch_size (0: 128) and
	// enable_padding; NoCUDAGraphs is cuda_graph_config: null.
	CUDAGraphMaxBatchSize int  `toml:"cuda_graph_max_batch_size" json:"cuda_graph_max_batch_size,omitempty"`
	CUDAGraphPadding      bool `toml:"cuda_graph_padding" json:"cuda_graph_padding,omitempty"`
	NoCUDAGraphs          bool `toml:"no_cuda_graphs" json:"no_cuda_graphs,omitempty"`
	// DisableOverlapScheduler is disable_overlap_scheduler.
	DisableOverlapScheduler bool `toml:"disable_overlap_scheduler" json:"disable_overlap_scheduler,omitempty"`
}

// TensorRT-LLM's defaults, each from its source (TensorRT-LLM 1.0+,
// PyTorch backend; github.com/NVIDIA/TensorRT-LLM):
//   - max_batch_size 2048 and max_num_tokens 8192: tensorrt_llm/builder.py
//     BuildConfig, the defaults of trtllm-serve's --max_batch_size and
//     --max_num_tokens (tensorrt_llm/commands/serve.py);
//   - tokens_per_block 32: llm_args.py KvCacheConfig.tokens_per_block;
//   - free_gpu_memory_fraction 0.9: KvCacheConfig ("Default is 90%") and
//     serve.py --kv_cache_free_gpu_memory_fraction default=0.9;
//   - CUDA graphs up to batch 128 without padding: TorchLlmArgs.cuda_graph_config
//     default_factory=CudaGraphConfig (max_batch_size 0 → 128, enable_padding False).
const (
	TRTLLMMaxBatchSize    = 2048
	TRTLLMMaxNumTokens    = 8192
	TRTLLMTokensPerBlock  = 32
	TRTLLMFreeGPUFraction = 0.9
	TRTLLMGraphMaxBatch   = 128
)

// engineName returns the scenario's engine model name (DefaultEngine when unset).
func (s *Scenario) engineName() string {
	if s.Engine == nil || s.Engine.Name == "" {
		return DefaultEngine
	}
	return s.Engine.Name
}

func (s *Scenario) isTRTLLM() bool { return s.engineName() == serve.TRTLLMVersion }

// trtllmTable returns the [engine.trtllm] table (an empty one when omitted).
func (s *Scenario) trtllmTable() *TRTLLMEngine {
	if s.Engine == nil || s.Engine.TRTLLM == nil {
		return &TRTLLMEngine{}
	}
	return s.Engine.TRTLLM
}

// trtllmBatchDefaults fills a trtllm pool's block size before the pool
// resolves (the limits come through vllmBatchDefaults).
func (s *Scenario) trtllmBatchDefaults(b *Batch, f func(string) string) {
	if s.isTRTLLM() && b.BlockSize == 0 && !s.Explicit(f("batch.block_size")) {
		b.BlockSize = TRTLLMTokensPerBlock
	}
}

// trtllmPool checks a trtllm pool's [batch] fields and sets its batcher
// (policies.TRTLLM) and KV block reuse. [batch] fields that mean vLLM's
// mechanisms are refused with TensorRT-LLM's equivalent.
func (s *Scenario) trtllmPool(p *PoolPlan, b *Batch, f func(string) string) error {
	t := s.trtllmTable()
	if !(t.FreeGPUMemoryFraction >= 0 && t.FreeGPUMemoryFraction < 1) || (t.FreeGPUMemoryFraction == 0 && s.Explicit("engine.trtllm.free_gpu_memory_fraction")) {
		// kvCacheManager.cpp: "freeMemFraction (%f) must be smaller than 1.0f".
		return s.fieldError("engine.trtllm.free_gpu_memory_fraction", "kv_cache_free_gpu_memory_fraction", "%g must be in (0, 1) (TensorRT-LLM refuses 1.0)", t.FreeGPUMemoryFraction)
	}
	if t.MaxTokens < 0 || t.CUDAGraphMaxBatchSize < 0 {
		return s.fieldError("engine.trtllm", "", "max_tokens %d and cuda_graph_max_batch_size %d must be ≥ 0 (0: not set)", t.MaxTokens, t.CUDAGraphMaxBatchSize)
	}
	for _, c := range []struct{ field, why string }{
		{"batch.policy", "the scheduler is TensorRT-LLM's capacity and micro-batch schedulers: set engine.trtllm.capacity_scheduler_policy and enable_chunked_prefill"},
		{"batch.gpu_memory_utilization", "TensorRT-LLM sizes the KV cache as a fraction of the memory left after the weights and the profiling run: set engine.trtllm.free_gpu_memory_fraction (--kv_cache_free_gpu_memory_fraction)"},
		{"batch.prefix_caching", "KV block reuse is kv_cache_config.enable_block_reuse, on by default: set engine.trtllm.disable_block_reuse to turn it off"},
		{"batch.kv_cache_memory_bytes", "vLLM's override: set engine.trtllm.max_tokens (kv_cache_config.max_tokens)"},
		{"batch.num_gpu_blocks_override", "vLLM's override: set engine.trtllm.max_tokens (kv_cache_config.max_tokens)"},
		{"batch.refill", "a decode-first batcher's parameter"},
		{"batch.max_wait_ms", "a dynamic batcher's parameter"},
	} {
		if s.Explicit(f(c.field)) {
			return s.fieldError(f(c.field), "", "not a TensorRT-LLM setting under engine \"trtllm\": %s", c.why)
		}
	}
	if b.Preemption == serve.PreemptSwap {
		return s.fieldError(f("batch.preemption"), "preemption", "swap: TensorRT-LLM's MAX_UTILIZATION pauses a request by freeing its KV (recompute); GUARANTEED_NO_EVICT never evicts")
	}
	bt := policies.TRTLLM{Chunked: t.EnableChunkedPrefill, ChunkUnit: b.BlockSize}
	switch t.CapacitySchedulerPolicy {
	case "", "GUARANTEED_NO_EVICT":
	case "MAX_UTILIZATION":
		bt.Policy = policies.MaxUtilization
	case "STATIC_BATCH", "PREFILL_FIRST":
		return s.fieldError("engine.trtllm.capacity_scheduler_policy", "", "%s is not modelled (GUARANTEED_NO_EVICT and MAX_UTILIZATION are)", t.CapacitySchedulerPolicy)
	default:
		return s.fieldError("engine.trtllm.capacity_scheduler_policy", "", "unknown policy %q (TensorRT-LLM's CapacitySchedulerPolicy: GUARANTEED_NO_EVICT, MAX_UTILIZATION, STATIC_BATCH, PREFILL_FIRST)", t.CapacitySchedulerPolicy)
	}
	p.Batcher = bt
	if p.Limits.MaxNumSeqs > p.Limits.MaxNumBatchedTokens {
		return s.fieldError(f("batch.max_num_seqs"), "max-num-seqs", "max_batch_size %d is above max_num_tokens %d: TensorRT-LLM then leaves some generation requests out of a step, which servesim (every decode in every step) does not model",
			p.Limits.MaxNumSeqs, p.Limits.MaxNumBatchedTokens)
	}
	if bt.Chunked && p.Limits.MaxNumBatchedTokens < b.BlockSize {
		return s.fieldError(f("batch.max_num_batched_tokens"), "max-num-batched-tokens", "max_num_tokens %d is below tokens_per_block %d: a chunk is a multiple of the block", p.Limits.MaxNumBatchedTokens, b.BlockSize)
	}
	b.PrefixCaching = !t.DisableBlockReuse
	return nil
}

// planMemoryTRTLLM sizes a trtllm pool's KV cache (hardware.PlanMemoryTRTLLM).
func (s *Scenario) planMemoryTRTLLM(p *PoolPlan, m *models.Model, b *Batch, f func(string) string) error {
	t := s.trtllmTable()
	e := s.Engine
	fr := t.FreeGPUMemoryFraction
	if fr == 0 && !s.Explicit("engine.trtllm.free_gpu_memory_fraction") {
		fr = TRTLLMFreeGPUFraction
	}
	nonTorch := hardware.DefaultNonTorch(p.Parallel.TP)
	if e != nil && e.NonTorchGiB > 0 {
		nonTorch = e.NonTorchGiB * (1 << 30)
	}
	graph := 0
	if !t.NoCUDAGraphs {
		sizes := s.trtllmGraphSizes(p.Limits.MaxNumSeqs)
		graph = sizes[len(sizes)-1]
	}
	tp, err := hardware.PlanMemoryTRTLLM(m, p.GPU, p.Parallel, hardware.TRTLLMMemory{
		Fraction: fr, TokensPerBlock: b.BlockSize, MaxNumTokens: p.Limits.MaxNumBatchedTokens,
		MaxTokens: t.MaxTokens, NonTorch: nonTorch, GraphBatch: graph,
	})
	if err != nil {
		return fmt.Errorf("%w (fields %q, %q, %q, %q, %q: flags --tp, --block-size, --max-num-batched-tokens, --kv_cache_free_gpu_memory_fraction)",
			err, f("tp"), f("batch.block_size"), f("batch.max_num_batched_tokens"), "engine.trtllm.free_gpu_memory_fraction", "engine.trtllm.max_tokens")
	}
	p.Memory, p.TRTLLMMemory = tp.MemoryPlan, &tp
	return nil
}

// trtllmGraphSizes returns the captured CUDA-graph batch sizes for a
// max_batch_size of maxBatch: TensorRT-LLM's defaults for the table's
// cuda_graph_max_batch_size and padding, none above max_batch_size
// (ASSUMED: the model engine captures no batch it can never run).
func (s *Scenario) trtllmGraphSizes(maxBatch int) []int {
	t := s.trtllmTable()
	sizes := serve.TRTLLMGraphSizes(t.CUDAGraphMaxBatchSize, t.CUDAGraphPadding)
	out := sizes[:0:0]
	for _, v := range sizes {
		if v <= maxBatch {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		out = []int{maxBatch}
	}
	return out
}

// vllmOnlyFields are the [engine] fields that are vLLM's mechanisms, with
// TensorRT-LLM's equivalent.
var vllmOnlyFields = []struct {
	field, flag, instead string
	on                   func(*Engine) bool
}{
	{"no_async_scheduling", "no-async-scheduling", "engine.trtllm.disable_overlap_scheduler", func(e *Engine) bool { return e.NoAsyncScheduling }},
	{"enforce_eager", "enforce-eager", "engine.trtllm.no_cuda_graphs", func(e *Engine) bool { return e.EnforceEager }},
	{"no_memory_profile", "no-memory-profile", "engine.trtllm.free_gpu_memory_fraction", func(e *Engine) bool { return e.NoMemoryProfile }},
	{"no_cpu_overlap", "no-cpu-overlap", "engine.trtllm.disable_overlap_scheduler", func(e *Engine) bool { return e.NoCPUOverlap }},
	{"no_vllm_defaults", "no-vllm-defaults", "batch.max_num_seqs and max_num_batched_tokens", func(e *Engine) bool { return e.NoVLLMDefaults }},
	{"tokenize_us_per_token", "tokenize-us-per-token", "engine.front_end_request_ms", func(e *Engine) bool { return e.TokenizeUsPerToken != 0 }},
	{"front_end_token_ms", "front-end-token-ms", "engine.front_end_request_ms", func(e *Engine) bool { return e.TokenMs != 0 }},
}

// resolveTRTLLM fills p.Serve.Engine with the trtllm engine model and the
// run header's notes: every default applied, with its source, and what is
// assumed.
func (s *Scenario) resolveTRTLLM(p *Plan, e *Engine) error {
	for _, v := range vllmOnlyFields {
		if v.on(e) {
			return s.fieldError("engine."+v.field, v.flag, "a vLLM mechanism, not TensorRT-LLM's: under engine \"trtllm\" use %s", v.instead)
		}
	}
	if p.Decode != nil {
		return s.fieldError("disagg.decode_replicas", "decode-replicas", "disaggregated serving under engine \"trtllm\" is not modelled")
	}
	t := s.trtllmTable()
	if t.NoCUDAGraphs && (t.CUDAGraphMaxBatchSize != 0 || t.CUDAGraphPadding) {
		return s.fieldError("engine.trtllm.no_cuda_graphs", "", "no_cuda_graphs with cuda_graph_max_batch_size or cuda_graph_padding: give one")
	}
	v := serve.TRTLLM{Overlap: !t.DisableOverlapScheduler, FrontEnd: !e.NoFrontEnd, StepCPU: !e.NoStepCPU}
	var notes []string
	note := func(format string, a ...any) { notes = append(notes, fmt.Sprintf(format, a...)) }
	if !e.NoFrontEnd { // the per-token costs are vLLM's (vllmOnlyFields)
		v.RequestCost, _, _ = s.frontEndCosts(p, e, "; trtllm-serve's front end is not measured: vllm-v1's value, transferred")
	}
	var err error
	if v.PerRequestCPU, _, err = s.stepCPUPerRequest(p, e); err != nil {
		return err
	}
	if !e.NoLaunches {
		g := s.cudaGraphs(p, e)
		g.DecodeOnly, g.ExactOnly, g.Eager = true, !t.CUDAGraphPadding, t.NoCUDAGraphs
		g.Sizes = nil
		if !g.Eager {
			g.Sizes = s.trtllmGraphSizes(p.Limits.MaxNumSeqs)
		}
		v.Graphs = g
	}
	if err := setEngine(p, v); err != nil {
		return err
	}
	b := s.Batch
	def := func(field string, val any, src string) {
		if !s.Explicit(field) {
			note("%s = %v (default: %s)", field, val, src)
		}
	}
	def("batch.max_num_seqs", b.MaxNumSeqs, "max_batch_size 2048, tensorrt_llm/builder.py BuildConfig, trtllm-serve --max_batch_size")
	def("batch.max_num_batched_tokens", b.MaxNumBatchedTokens, "max_num_tokens 8192, BuildConfig, trtllm-serve --max_num_tokens")
	def("batch.block_size", b.BlockSize, "kv_cache_config.tokens_per_block 32, llmapi/llm_args.py KvCacheConfig")
	def("engine.trtllm.capacity_scheduler_policy", p.Batcher.(policies.TRTLLM).Policy, "llm_args.py SchedulerConfig")
	def("engine.trtllm.enable_chunked_prefill", t.EnableChunkedPrefill, "llm_args.py BaseLlmArgs")
	def("engine.trtllm.disable_block_reuse", t.DisableBlockReuse, "kv_cache_config.enable_block_reuse True, KvCacheConfig; reuse of whole blocks only (TensorRT-LLM's partial-block reuse is not modelled)")
	def("engine.trtllm.free_gpu_memory_fraction", TRTLLMFreeGPUFraction, "KvCacheConfig, trtllm-serve --kv_cache_free_gpu_memory_fraction")
	def("engine.trtllm.disable_overlap_scheduler", t.DisableOverlapScheduler, "TorchLlmArgs")
	if v.Graphs != nil && !v.Graphs.Eager {
		def("engine.trtllm.cuda_graph_max_batch_size", v.Graphs.Sizes[len(v.Graphs.Sizes)-1], "CudaGraphConfig.max_batch_size 0 → 128, at most max_batch_size")
		def("engine.trtllm.cuda_graph_padding", t.CUDAGraphPadding, "CudaGraphConfig.enable_padding")
	}
	note("max_new_tokens assumed equal to each request's output length (a benchmark client's max_tokens)")
	if st := kernelStack(p.Kernel); st != "" {
		note("kernels: %s", st)
	} else {
		note("kernels: %s (vLLM/PyTorch-measured), TensorRT-LLM kernels not measured", strings.SplitN(p.Kernel, ";", 2)[0])
	}
	note("step CPU: the kernel profile's per-iteration overhead and %.3g µs/request (Sarathi-Serve's vLLM-stack fit), transferred; launches %g µs each (assumption)", v.PerRequestCPU*1e6, launchUs(e))
	if p.Parallel.TP > 1 && !e.NoCustomAllReduce {
		note("TP all-reduces priced as vLLM's custom all-reduce inside an NVLink domain, standing in for TensorRT-LLM's own (AllReduceStrategy AUTO): assumption")
	}
	note("non-torch memory %.2f GiB: vLLM's published median, transferred", hardware.DefaultNonTorch(p.Parallel.TP)/(1<<30))
	p.EngineNotes = notes
	return nil
}

func launchUs(e *Engine) float64 {
	if e.LaunchUs > 0 {
		return e.LaunchUs
	}
	return DefaultLaunchUs
}

// describeTRTLLM writes the trtllm memory plan and notes of Describe.
func (p *Plan) describeTRTLLM(w interface{ Write([]byte) (int, error) }) error {
	if p.TRTLLMMemory != nil {
		if _, err := fmt.Fprintf(w, "TensorRT-LLM memory plan (%s, tp %d): %s.\n", p.GPU.Name, p.Parallel.TP, p.TRTLLMMemory); err != nil {
			return err
		}
	}
	if len(p.EngineNotes) > 0 {
		if _, err := fmt.Fprintf(w, "Engine defaults and assumptions: %s.\n", strings.Join(p.EngineNotes, "; ")); err != nil {
			return err
		}
	}
	return nil
}

// TRTLLMBase readies the embedded default scenario for the trtllm engine
// (servesim run --engine trtllm with no --config): its [batch] policy,
// block size and memory utilization are vLLM's settings, so they are
// cleared, and TensorRT-LLM's defaults apply, unless a flag set them.
// Under another engine it does nothing.
func (s *Scenario) TRTLLMBase() {
	if !s.isTRTLLM() {
		return
	}
	for _, f := range []struct {
		key   string
		clear func()
	}{
		{"batch.policy", func() { s.Batch.Policy = "" }},
		{"batch.block_size", func() { s.Batch.BlockSize = 0 }},
		{"batch.gpu_memory_utilization", func() { s.Batch.GPUMemUtil = 0 }},
	} {
		if o, ok := s.set[f.key]; !ok || o != byFlag {
			delete(s.set, f.key)
			f.clear()
		}
	}
}
