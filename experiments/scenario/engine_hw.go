package scenario

import (
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/sim/serve"
)

// The engine mechanisms that act on a pool's hardware plan rather than on
// the serving world: vLLM's custom all-reduce and its fused residual add +
// RMSNorm (kernel-model wrappers, as the step's all-reduce messages and
// adds live inside the step model) and vLLM's memory planning. All are
// resolved with the pool, before resolveEngine.

// vllmTable returns the [engine] table and whether the scenario runs
// vllm-v1.
func (s *Scenario) vllmTable() (*Engine, bool) {
	e := s.Engine
	if e == nil {
		e = &Engine{}
	}
	name := e.Name
	if name == "" {
		name = DefaultEngine
	}
	return e, name == serve.VLLMV1Version
}

// customAllReduce returns the table's custom all-reduce parameters.
func (e *Engine) customAllReduce() (hardware.CustomAllReduce, error) {
	ar := hardware.DefaultCustomAllReduce()
	if e.CustomARLatencyUs > 0 {
		ar.Latency = e.CustomARLatencyUs / 1e6
	}
	if e.CustomARLinkEff > 0 {
		ar.Link = e.CustomARLinkEff
	}
	if e.CustomARMaxBytes > 0 {
		ar.MaxBytes = e.CustomARMaxBytes
	}
	if e.CustomARLinkEff > 1 {
		return ar, fieldError("engine.custom_all_reduce_link_efficiency", "custom-all-reduce-link-efficiency", "%g must be in (0, 1] (0 = the default)", e.CustomARLinkEff)
	}
	if err := ar.Validate(); err != nil {
		return ar, fmt.Errorf("scenario: field \"engine\": %w", err)
	}
	return ar, nil
}

// engineKernel wraps the pool's kernel model in what vllm-v1 changes in
// its kernels, each when the scenario runs vllm-v1 with it on: the residual
// adds fused into RMSNorm (hardware.FusedAddNormKernel), and the custom
// all-reduce (hardware.CustomARKernel) when the TP group has all-reduces;
// desc and id say so.
func (s *Scenario) engineKernel(k hardware.KernelModel, desc, id string, g *hardware.GPU, tp int) (hardware.KernelModel, string, string, error) {
	e, vllm := s.vllmTable()
	if _, sg := s.sglangTable(); !vllm && !sg && !s.isTRTLLM() {
		return k, desc, id, nil
	}
	if !e.NoFusedAddNorm {
		k, desc, id = hardware.FusedAddNormKernel{K: k, GPU: g}, desc+"; residual adds fused into RMSNorm (bandwidth bound)", id+" fused-add-norm"
	}
	if e.NoCustomAllReduce {
		return k, desc, id, nil
	}
	if err := s.checkNumbers(e); err != nil {
		return nil, "", "", err
	}
	ar, err := e.customAllReduce()
	if err != nil {
		return nil, "", "", err
	}
	if tp < 2 {
		return k, desc, id, nil
	}
	if !ar.Enabled(g, tp) {
		return k, desc + fmt.Sprintf("; NCCL all-reduces (no vLLM custom all-reduce at tp %d on %s)", tp, g.Name), id, nil
	}
	desc += fmt.Sprintf("; vLLM custom all-reduce below %.3g MiB (%.3g µs/stage)", ar.MaxBytes/(1<<20), ar.Latency*1e6)
	return hardware.CustomARKernel{K: k, GPU: g, TP: tp, AR: ar}, desc, id + " custom-ar " + DigestOf(ar), nil
}

// planMemory sizes the pool's KV cache: as vLLM's memory profiling does
// (hardware.PlanMemoryVLLM) under vllm-v1 with it on, else as DESIGN §4
// (hardware.PlanMemory); b's kv_cache_memory_bytes and
// num_gpu_blocks_override apply to either.
func (s *Scenario) planMemory(p *PoolPlan, m *models.Model, b *Batch, prefix string) error {
	f := func(name string) string { return prefix + name }
	if !(b.KVCacheMemoryBytes >= 0) || math.IsInf(b.KVCacheMemoryBytes, 0) {
		return s.fieldError(f("batch.kv_cache_memory_bytes"), "kv-cache-memory-bytes", "%g must be finite and ≥ 0 (0 = not set)", b.KVCacheMemoryBytes)
	}
	if b.NumGPUBlocksOverride < 0 {
		return s.fieldError(f("batch.num_gpu_blocks_override"), "num-gpu-blocks-override", "%d must be ≥ 0 (0 = not set)", b.NumGPUBlocksOverride)
	}
	if s.isTRTLLM() {
		return s.planMemoryTRTLLM(p, m, b, f)
	}
	if e, sg := s.sglangTable(); sg && !e.NoMemoryProfile {
		return s.planMemorySGLang(p, m, b, f)
	}
	e, vllm := s.vllmTable()
	if vllm && !e.NoMemoryProfile {
		if err := s.checkNumbers(e); err != nil {
			return err
		}
		nonTorch := hardware.DefaultNonTorch(p.Parallel.TP)
		if e.NonTorchGiB > 0 {
			nonTorch = e.NonTorchGiB * (1 << 30)
		}
		vp, err := hardware.PlanMemoryVLLM(m, p.GPU, p.Parallel, hardware.VLLMMemory{
			Utilization: b.GPUMemUtil, BlockSize: b.BlockSize,
			MaxNumBatchedTokens: b.MaxNumBatchedTokens, MaxNumSeqs: b.MaxNumSeqs,
			NonTorch: nonTorch, CUDAGraphs: !e.EnforceEager,
			KVCacheBytes: b.KVCacheMemoryBytes, BlocksOverride: b.NumGPUBlocksOverride,
		})
		if err != nil {
			return memoryFields(err, f, true)
		}
		p.Memory, p.VLLMMemory = vp.MemoryPlan, &vp
		return s.checkKVFits(p, b, f)
	}
	var err error
	if p.Memory, err = hardware.PlanMemory(m, p.GPU, p.Parallel, b.GPUMemUtil, b.BlockSize, hardware.DefaultActivationReserve); err != nil {
		return memoryFields(err, f, false)
	}
	if b.KVCacheMemoryBytes > 0 {
		blockBytes := float64(p.Memory.BlockSize) * p.Memory.KVBytesPerTokenPerGPU
		p.Memory.KVBytesPerGPU = b.KVCacheMemoryBytes
		if blocks := math.Floor(b.KVCacheMemoryBytes / blockBytes); blocks >= 1 {
			p.Memory.Blocks = int(min(blocks, math.MaxInt32))
		} else if b.NumGPUBlocksOverride == 0 {
			return s.fieldError(f("batch.kv_cache_memory_bytes"), "kv-cache-memory-bytes", "%g bytes hold less than one %d-token block of %g bytes", b.KVCacheMemoryBytes, p.Memory.BlockSize, blockBytes)
		}
	}
	if b.NumGPUBlocksOverride > 0 {
		p.Memory.Blocks = b.NumGPUBlocksOverride
	}
	return s.checkKVFits(p, b, f)
}

// checkKVFits refuses a KV cache, set by --kv-cache-memory-bytes or
// --num-gpu-blocks-override, larger than the GPU's device memory less the
// weights it holds: vLLM takes either value as given and then fails
// allocating the cache tensors (a CUDA out-of-memory error at start-up),
// so a simulation of it would be of a server that cannot start.
func (s *Scenario) checkKVFits(p *PoolPlan, b *Batch, f func(string) string) error {
	if b.KVCacheMemoryBytes == 0 && b.NumGPUBlocksOverride == 0 {
		return nil
	}
	free := p.GPU.DeviceMemory() - p.Memory.WeightBytesPerGPU
	kv := float64(p.Memory.Blocks) * float64(p.Memory.BlockSize) * p.Memory.KVBytesPerTokenPerGPU
	if b.KVCacheMemoryBytes > 0 {
		kv = max(kv, b.KVCacheMemoryBytes)
	}
	if kv <= free {
		return nil
	}
	field, flag := "batch.kv_cache_memory_bytes", "kv-cache-memory-bytes"
	if b.NumGPUBlocksOverride > 0 {
		field, flag = "batch.num_gpu_blocks_override", "num-gpu-blocks-override"
	}
	return s.fieldError(f(field), flag, "a KV cache of %.2f GiB per GPU (%d blocks of %d tokens) does not fit beside the %.2f GiB of weights in the %s's %.2f GiB of device memory (%.2f GiB free): vLLM would fail allocating it",
		kv/(1<<30), p.Memory.Blocks, p.Memory.BlockSize, p.Memory.WeightBytesPerGPU/(1<<30), p.GPU.Name, p.GPU.DeviceMemory()/(1<<30), free/(1<<30))
}

// cudaGraphs returns vLLM's CUDA-graph dispatch for the plan's pool
// (serve.CUDAGraphs): capture sizes from its limits, launches from the
// model's operators. An eager step launches every kernel of a forward
// pass (the operators' occurrences, one attention call a layer, as vLLM's
// attention backends take prefills and decodes in one call); a piecewise
// one launches attention eagerly and a graph for each piece between, so
// 2·layers + 1. A disaggregated decode pool takes the prefill pool's
// capture sizes (one engine model serves both).
func (s *Scenario) cudaGraphs(p *Plan, e *Engine) *serve.CUDAGraphs {
	g := &serve.CUDAGraphs{Eager: e.EnforceEager, Launch: DefaultLaunchUs / 1e6}
	if e.LaunchUs > 0 || s.Explicit("engine.kernel_launch_us") {
		g.Launch = e.LaunchUs / 1e6
	}
	if !g.Eager {
		g.Sizes = serve.CaptureSizes(p.Limits.MaxNumSeqs, p.Limits.MaxNumBatchedTokens)
	}
	for _, op := range p.Model.Ops(models.Batch{Decodes: 1, DecodeCtx: 1}, p.Parallel, nil) {
		if op.Kind != models.OpAttnPrefill {
			g.EagerLaunches += op.Count
		}
	}
	g.PiecewiseLaunches = 2*p.Model.Layers + 1
	return g
}

// vllmBatchDefaults returns the max_num_seqs and max_num_batched_tokens a
// scenario gets when it sets neither: the simulator's (256, 8192), or,
// under vllm-v1 unless no_vllm_defaults, vLLM's for its OpenAI API server
// on the GPU (vllm/engine/arg_utils.py EngineArgs.get_batch_defaults,
// vLLM ≥ 0.10: a device of ≥ 70 GiB whose name is not an A100, such as
// H100, H200 and B200, gets 1024 and 8192; any other 256 and 2048, the
// A100 kept small because a large budget lowers its throughput, vLLM PR
// 17885). The device memory is the total CUDA reports
// (hardware.GPU.DeviceMemory), as current_platform.get_device_total_memory.
func (s *Scenario) vllmBatchDefaults(g *hardware.GPU) (seqs, tokens int, desc string) {
	if s.isTRTLLM() {
		return TRTLLMMaxBatchSize, TRTLLMMaxNumTokens, "TensorRT-LLM's default (BuildConfig)"
	}
	e, vllm := s.vllmTable()
	if !vllm || e.NoVLLMDefaults {
		return 256, 8192, ""
	}
	if g.DeviceMemory() >= 70*(1<<30) && !strings.Contains(strings.ToLower(g.Name+" "+g.FullName), "a100") {
		return 1024, 8192, "vLLM's default for a GPU of ≥ 70 GiB other than the A100"
	}
	return 256, 2048, "vLLM's default for a GPU below 70 GiB or an A100"
}

// memoryFields names the fields that set a memory plan that failed (f
// prefixes a pool's fields). Under vLLM's plan (profiled) the token budget
// and max_num_seqs size the profiling pass (its forward and its sampler
// rows), so they are named too.
func memoryFields(err error, f func(string) string, profiled bool) error {
	if profiled {
		return fmt.Errorf("%w (fields %q, %q, %q, %q, %q, %q, %q: flags --tp, --block-size, --gpu-memory-utilization, --kv-cache-memory-bytes, --max-num-batched-tokens, --max-num-seqs, --non-torch-memory-gib)",
			err, f("tp"), f("batch.block_size"), f("batch.gpu_memory_utilization"), f("batch.kv_cache_memory_bytes"),
			f("batch.max_num_batched_tokens"), f("batch.max_num_seqs"), "engine.non_torch_memory_gib")
	}
	return fmt.Errorf("%w (fields %q, %q, %q, %q, %q: flags --tp, --block-size, --gpu-memory-utilization, --kv-cache-memory-bytes, --non-torch-memory-gib)",
		err, f("tp"), f("batch.block_size"), f("batch.gpu_memory_utilization"), f("batch.kv_cache_memory_bytes"), "engine.non_torch_memory_gib")
}
