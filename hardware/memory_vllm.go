package hardware

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/models"
)

// VLLMMemory is what vLLM's memory planning needs beyond the model, the GPU
// and the parallel configuration (PlanMemoryVLLM).
type VLLMMemory struct {
	Utilization         float64 // gpu_memory_utilization, in (0, 1]
	BlockSize           int     // tokens per KV block
	MaxNumBatchedTokens int     // the profiling pass's tokens
	MaxNumSeqs          int     // the profiling pass's requests (and the sampler's rows)
	NonTorch            float64 // bytes outside PyTorch's allocator (DefaultNonTorch)
	CUDAGraphs          bool    // decode CUDA graphs are captured (not enforce_eager)
	KVCacheBytes        float64 // kv_cache_memory_bytes: > 0 replaces the profiled budget
	BlocksOverride      int     // num_gpu_blocks_override: > 0 replaces the block count
}

// VLLMMemoryPlan is a MemoryPlan with vLLM's terms. ActivationReserve of
// the embedded plan is Activation + NonTorch + CUDAGraph.
type VLLMMemoryPlan struct {
	MemoryPlan
	Total      float64 // device memory the driver reports (GPU.DeviceMemory)
	Requested  float64 // ceil(Total × utilization)
	Activation float64 // PyTorch activation peak of the profiling pass
	NonTorch   float64 // non-torch memory
	CUDAGraph  float64 // CUDA-graph memory estimate
}

// DefaultNonTorchBytes is the non-torch memory default, an ASSUMPTION from
// published vLLM logs: 0.32 GiB, the median of seven V1 memory-profiling
// log lines for 8B-class models on one 80 GB GPU quoted in public vLLM
// issues and guides (0.09, 0.12, 0.26, 0.32, 0.35, 0.65, 1.39 GiB): CUDA
// and library allocations made after vLLM's initial memory snapshot.
//
// It does not grow with tensor parallelism. vLLM PR 10511's log of
// Meta-Llama-3-8B on H100 showed non_torch_memory 3.58 GiB at TP 2 against
// 1.79 GiB at TP 1 (NCCL and custom all-reduce buffers), but since vLLM
// 0.11 (PR 25359, "ensuring consistent NCCL memory accounting")
// Worker.init_device runs init_worker_distributed_environment before it
// takes the snapshot (vllm/v1/worker/gpu_worker.py: "Initialize the
// distributed environment BEFORE taking memory snapshot"), so those buffers
// sit outside both the snapshot's growth and the requested budget, and no
// longer come out of the KV cache.
const DefaultNonTorchBytes = 0.32 * (1 << 30)

// DefaultNonTorch returns the non-torch memory default at tp:
// DefaultNonTorchBytes at every tp (see there).
func DefaultNonTorch(tp int) float64 { return DefaultNonTorchBytes }

// activationBytes is the width of activations in the profiling pass (BF16).
const activationBytes = 2

// ForwardActivation estimates the PyTorch activation peak of one forward
// pass over tokens tokens on one GPU of a TP group: the tensors one layer
// holds at once, which the next layer reuses,
//
//	tokens × 2 B × (hidden + (q + 2·kv)/TP + (u+1)·ffn/TP)
//
// with q and kv the query and key-value widths (heads × head_dim), ffn the
// MLP intermediate size (for MoE: top_k × the expert's) and u the up
// matrices (2 for a gated MLP, whose gate_up output and activation output
// are alive together: 3·ffn; 1 otherwise: 2·ffn). An estimate from the
// shapes, not a measurement.
func ForwardActivation(m *models.Model, tp, tokens int) float64 {
	t := float64(max(tp, 1))
	ffn := float64(m.FFN)
	if m.IsMoE() {
		ffn = float64(m.TopK) * float64(m.ExpertFFN)
	}
	u := 1.0
	if m.GatedMLP {
		u = 2
	}
	q := float64(m.Heads) * float64(m.HeadDim)
	kv := float64(m.KVHeads) * float64(m.HeadDim)
	return float64(tokens) * activationBytes * (float64(m.Hidden) + (q+2*kv)/t + (u+1)*ffn/t)
}

// SamplerActivation estimates the peak of the dummy sampler run of vLLM's
// profile_run over seqs requests. gpu_model_runner.py _dummy_sampler_run
// samples with temperature 0.5, top_p 0.9 and top_k = vocab − 1, which
// takes the PyTorch top-k/top-p path (sample/ops/topk_topp_sampler.py
// apply_top_k_top_p: a full sort of the vocabulary, then the masks and a
// scatter back). Alive at once, per logit: the BF16 logits of
// compute_logits (2 B), their FP32 copy in Sampler.forward (4 B), the
// sorted FP32 values and their int64 indices (4 + 8 B), the top-k mask
// (1 B), the FP32 softmax of the sorted values (4 B) and the top-p mask
// (1 B), 24 B:
//
//	seqs × vocab × 24 B
//
// An estimate from the code path, not a measurement; a FlashInfer sampler
// (no sort) holds less, a scatter that is not in place 4 B more.
func SamplerActivation(m *models.Model, seqs int) float64 {
	return float64(seqs) * float64(m.Vocab) * samplerBytesPerLogit
}

// samplerBytesPerLogit is the bytes per logit alive at the sampler's peak
// (SamplerActivation).
const samplerBytesPerLogit = 2 + 4 + 4 + 8 + 1 + 4 + 1

// HiddenStates is the output of the profiling forward pass over tokens
// tokens, which profile_run keeps alive while the sampler runs: tokens ×
// hidden × 2 B (BF16).
func HiddenStates(m *models.Model, tokens int) float64 {
	return float64(tokens) * float64(m.Hidden) * activationBytes
}

// ProfileActivation estimates the PyTorch activation peak of vLLM's
// profile_run (gpu_model_runner.py): a dummy forward over tokens tokens,
// whose intermediate tensors are freed when it returns, then the dummy
// sampler run over min(tokens, seqs) requests while only the forward's
// hidden states stay alive, so the peak is the larger of the two:
//
//	max(ForwardActivation, HiddenStates + SamplerActivation)
func ProfileActivation(m *models.Model, tp, tokens, seqs int) float64 {
	return max(ForwardActivation(m, tp, tokens), HiddenStates(m, tokens)+SamplerActivation(m, min(tokens, seqs)))
}

// MaxCUDAGraphSize is vLLM's default largest captured batch
// (vllm/config/compilation.py: max_cudagraph_capture_size defaults to
// min(max_num_seqs × 2, 512)).
// A max_num_seqs of 256 or more gives 512 (no overflow of 2 × max_num_seqs).
func MaxCUDAGraphSize(maxNumSeqs int) int {
	if maxNumSeqs >= 256 {
		return 512
	}
	return 2 * maxNumSeqs
}

// PlanMemoryVLLM sizes the KV cache as vLLM's V1 worker does
// (vllm/v1/worker/gpu_worker.py, Worker.init_device and
// determine_available_memory; vllm/utils/mem_utils.py, memory_profiling):
//
//	requested = ceil(total × gpu_memory_utilization)      total: GPU.DeviceMemory, as the driver reports it
//	KV        = requested − weights − activation peak − non-torch − CUDA graphs
//	blocks    = floor(KV / (block_size × KV bytes per token per GPU))
//
// The activation peak is that of profile_run (gpu_model_runner.py: a dummy
// forward over max_num_batched_tokens tokens spread over
// min(tokens, max_num_seqs) requests, then a dummy sampler run), estimated
// by ProfileActivation. The CUDA-graph memory (profile_cudagraph_memory,
// subtracted when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is on: off when
// vLLM PR 30515 added it, on by default since vLLM 0.21, as its
// gpu_worker.py log line says) is estimated as the forward activation at
// the largest captured size: graphs are captured largest first into one
// shared memory pool, which the largest one sizes. kv_cache_memory_bytes replaces
// the KV budget (vLLM then skips the arithmetic), and
// num_gpu_blocks_override the block count (vLLM logs the override and uses
// it).
func PlanMemoryVLLM(m *models.Model, g *GPU, p models.Parallel, v VLLMMemory) (VLLMMemoryPlan, error) {
	switch {
	case m == nil || g == nil:
		return VLLMMemoryPlan{}, fmt.Errorf("hardware: PlanMemoryVLLM: nil model or GPU")
	case !(v.Utilization > 0 && v.Utilization <= 1):
		return VLLMMemoryPlan{}, fmt.Errorf("hardware: memory utilization must be in (0, 1], got %v", v.Utilization)
	case v.BlockSize < 1:
		return VLLMMemoryPlan{}, fmt.Errorf("hardware: KV block size must be >= 1 token, got %d", v.BlockSize)
	case v.MaxNumBatchedTokens < 1 || v.MaxNumSeqs < 1:
		return VLLMMemoryPlan{}, fmt.Errorf("hardware: PlanMemoryVLLM: max_num_batched_tokens %d and max_num_seqs %d must be >= 1", v.MaxNumBatchedTokens, v.MaxNumSeqs)
	case !(v.NonTorch >= 0) || math.IsInf(v.NonTorch, 0):
		return VLLMMemoryPlan{}, fmt.Errorf("hardware: non-torch memory must be finite and >= 0 bytes, got %v", v.NonTorch)
	case !(v.KVCacheBytes >= 0) || math.IsInf(v.KVCacheBytes, 0):
		return VLLMMemoryPlan{}, fmt.Errorf("hardware: kv_cache_memory_bytes must be finite and >= 0, got %v", v.KVCacheBytes)
	case v.BlocksOverride < 0:
		return VLLMMemoryPlan{}, fmt.Errorf("hardware: num_gpu_blocks_override must be >= 0, got %d", v.BlocksOverride)
	}
	if err := m.CheckParallel(p); err != nil {
		return VLLMMemoryPlan{}, err
	}
	tp := p.TP
	plan := VLLMMemoryPlan{Total: g.DeviceMemory(), NonTorch: v.NonTorch}
	plan.Requested = math.Ceil(plan.Total * v.Utilization)
	plan.Activation = ProfileActivation(m, tp, v.MaxNumBatchedTokens, v.MaxNumSeqs)
	if v.CUDAGraphs {
		plan.CUDAGraph = ForwardActivation(m, tp, MaxCUDAGraphSize(v.MaxNumSeqs))
	}
	plan.WeightBytesPerGPU = m.WeightBytesPerGPU(p)
	plan.ActivationReserve = plan.Activation + plan.NonTorch + plan.CUDAGraph
	plan.KVBytesPerTokenPerGPU = m.KVBytesPerTokenPerGPU(p)
	plan.BlockSize = v.BlockSize
	blockBytes := float64(v.BlockSize) * plan.KVBytesPerTokenPerGPU
	if !(blockBytes > 0) {
		return VLLMMemoryPlan{}, fmt.Errorf("hardware: %s: KV bytes per token per GPU is %v", m.Name, plan.KVBytesPerTokenPerGPU)
	}
	if v.KVCacheBytes > 0 {
		plan.KVBytesPerGPU = v.KVCacheBytes
	} else {
		plan.KVBytesPerGPU = plan.Requested - plan.WeightBytesPerGPU - plan.ActivationReserve
	}
	gib := func(b float64) float64 { return b / (1 << 30) }
	if v.BlocksOverride == 0 && plan.KVBytesPerGPU < blockBytes {
		return VLLMMemoryPlan{}, fmt.Errorf("hardware: %s at tp %d on %s leaves %.2f GiB for the KV cache (%.2f GiB requested = %.2f GiB × %.2f − %.2f GiB weights − %.2f GiB activation peak − %.2f GiB non-torch − %.2f GiB CUDA graphs), less than one %d-token block: raise tp, use a larger GPU or lower max_num_batched_tokens or max_num_seqs",
			m.Name, tp, g.Name, gib(plan.KVBytesPerGPU), gib(plan.Requested), gib(plan.Total), v.Utilization,
			gib(plan.WeightBytesPerGPU), gib(plan.Activation), gib(plan.NonTorch), gib(plan.CUDAGraph), v.BlockSize)
	}
	blocks := math.Floor(plan.KVBytesPerGPU / blockBytes)
	if v.BlocksOverride > 0 {
		blocks = float64(v.BlocksOverride)
	}
	plan.Blocks = int(min(blocks, math.MaxInt32))
	return plan, nil
}

// String gives the plan in vLLM's own terms, as its log prints them.
func (p VLLMMemoryPlan) String() string {
	gib := func(b float64) float64 { return b / (1 << 30) }
	return fmt.Sprintf("total %.2f GiB, requested %.2f GiB; weights %.2f GiB, activation peak %.2f GiB, non-torch %.2f GiB, CUDA graphs %.2f GiB; KV %.2f GiB = %d blocks",
		gib(p.Total), gib(p.Requested), gib(p.WeightBytesPerGPU), gib(p.Activation), gib(p.NonTorch), gib(p.CUDAGraph), gib(p.KVBytesPerGPU), p.Blocks)
}
