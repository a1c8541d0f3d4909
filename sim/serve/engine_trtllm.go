package serve

import (
	"fmt"

	"github.com/servesim/servesim/sim"
)

// TRTLLMVersion names the model of TensorRT-LLM this implements: its
// PyTorch backend (the default since TensorRT-LLM 1.0) behind trtllm-serve.
const TRTLLMVersion = "trtllm"

// TRTLLM models TensorRT-LLM's PyTorch-backend serving stack
// (tensorrt_llm/_torch/pyexecutor). Its scheduling policy is a batcher
// (policies.TRTLLM: the capacity scheduler and the micro-batch
// scheduler), its memory plan hardware.PlanMemoryTRTLLM and its KV block
// reuse the prefix cache at tokens_per_block; this type holds the parts
// the World consults.
//
// 1. Executor loop (Overlap). py_executor.py PyExecutor._executor_loop_overlap,
// the loop unless disable_overlap_scheduler (llmapi/llm_args.py
// TorchLlmArgs: default False): each pass fetches new requests
// (_fetch_new_requests), schedules batch N+1, launches its forward, and
// only then waits for batch N's sampled tokens (_process_previous_batch:
// update the requests, send their responses). A pass starts once N−1's
// outputs are handled, i.e. as N starts on the GPU, so a request arriving
// while N runs is fetched after N+1 was scheduled: it joins N+2, one step
// late (JoinLag 1), as vLLM's async scheduling. With no request active the
// fetch blocks, so a request reaching an idle executor is scheduled at
// once. Batch N's responses go out right after N ends (while N+1 runs), so
// a token is not delayed by a step. The CPU side of step N+1 (scheduling,
// input preparation, launches) runs while step N's kernels do: as
// VLLMV1's CPU/GPU overlap (mechanism 6), a step that follows another at
// once costs max(GPU, CPU). Without the overlap scheduler
// (_executor_loop): schedule, forward, sample, respond in series, JoinLag 0.
//
// 2. Front end (FrontEnd). trtllm-serve's OpenAI server
// (tensorrt_llm/serve/openai_server.py) tokenizes and hands the request to
// the executor's request queue; RequestCost is the whole front end on the
// way in, as VLLMV1's (no TensorRT-LLM front end is measured here: the
// experiments layer says which value it transferred).
//
// 3. CPU work per step (StepCPU, PerRequestCPU) and 4. CUDA graphs
// (Graphs): priced as VLLMV1 prices them (serve.CUDAGraphs with
// DecodeOnly, and ExactOnly unless cuda_graph_config.enable_padding:
// TensorRT-LLM captures graphs of generation-only batches, and without
// padding replays one only at a captured batch size).
type TRTLLM struct {
	Overlap       bool
	FrontEnd      bool
	RequestCost   sim.Time
	StepCPU       bool
	PerRequestCPU float64
	Graphs        *CUDAGraphs
}

func (e TRTLLM) Name() string { return TRTLLMVersion }

func (e TRTLLM) Ingress(prompt int) sim.Time {
	if !e.FrontEnd {
		return 0
	}
	return e.RequestCost
}

func (e TRTLLM) JoinLag() int {
	if e.Overlap {
		return 1
	}
	return 0
}

func (e TRTLLM) Egress() sim.Time { return 0 }

// Kernels prices a step as VLLMV1 does with the same parts: the overlap
// scheduler is VLLMV1's async scheduling with CPU/GPU overlap.
func (e TRTLLM) Kernels(k StepTimer) StepTimer {
	return VLLMV1{AsyncScheduling: e.Overlap, CPUOverlap: e.Overlap, StepCPU: e.StepCPU,
		PerRequestCPU: e.PerRequestCPU, Graphs: e.Graphs}.Kernels(k)
}

// Validate checks that every cost is finite and ≥ 0.
func (e TRTLLM) Validate() error {
	if e.RequestCost < 0 {
		return fmt.Errorf("serve: engine trtllm: front-end cost must be ≥ 0 (request %v)", e.RequestCost)
	}
	return checkStepCPU("trtllm", e.PerRequestCPU, e.Graphs)
}

// String describes the engine's mechanisms for reports.
func (e TRTLLM) String() string {
	s := "trtllm (TensorRT-LLM PyTorch backend):"
	if e.Overlap {
		s += " overlap scheduler (joins one step late; step CPU overlaps the previous step's kernels);"
	} else {
		s += " no overlap scheduler (step CPU in series);"
	}
	if e.FrontEnd {
		s += fmt.Sprintf(" front end %.3g ms per request;", e.RequestCost.Milliseconds())
	} else {
		s += " no front end;"
	}
	if e.StepCPU {
		s += fmt.Sprintf(" step CPU %.3g µs/request;", e.PerRequestCPU*1e6)
	}
	switch g := e.Graphs; {
	case g == nil:
		s += " no kernel launches"
	case g.Eager || len(g.Sizes) == 0:
		s += fmt.Sprintf(" eager (%d launches/step, %.3g µs each)", g.EagerLaunches, g.Launch*1e6)
	default:
		pad := "padded to the next captured size"
		if g.ExactOnly {
			pad = "at captured sizes only, no padding"
		}
		s += fmt.Sprintf(" CUDA graphs of generation-only batches up to %d (%d sizes, %s; other steps eager, %d launches, %.3g µs each)",
			g.Sizes[len(g.Sizes)-1], len(g.Sizes), pad, g.EagerLaunches, g.Launch*1e6)
	}
	return s
}

var _ Engine = TRTLLM{}

// TRTLLMGraphSizes returns TensorRT-LLM's default CUDA-graph batch sizes
// for a largest size of maxBatch (tensorrt_llm/llmapi/llm_args.py
// CudaGraphConfig._generate_cuda_graph_batch_sizes; maxBatch is
// cuda_graph_config.max_batch_size, 0 meaning 128): with padding
// [1, 2, 4] + 8·[1..16], without 1..31 + [32, 64, 128]; then the powers
// of two 2^8 … 2^(ceil(log2 maxBatch) − 1); those ≤ maxBatch, sorted, and
// maxBatch itself last if not already.
func TRTLLMGraphSizes(maxBatch int, padding bool) []int {
	if maxBatch <= 0 {
		maxBatch = 128
	}
	var s []int
	if padding {
		s = []int{1, 2, 4}
		for i := 1; i <= 16; i++ {
			s = append(s, 8*i)
		}
	} else {
		for i := 1; i < 32; i++ {
			s = append(s, i)
		}
		s = append(s, 32, 64, 128)
	}
	for p := 256; p < maxBatch; p *= 2 { // 2^i for i in range(8, ceil(log2(max)))
		s = append(s, p)
	}
	out := s[:0]
	for _, v := range s {
		if v <= maxBatch {
			out = append(out, v)
		}
	}
	if out[len(out)-1] != maxBatch {
		out = append(out, maxBatch)
	}
	return out
}
