package serve

import (
	"fmt"

	"github.com/servesim/servesim/sim"
)

// SGLangVersion names the model of SGLang this implements.
const SGLangVersion = "sglang"

// SGLang models SGLang's serving stack (github.com/sgl-project/sglang,
// python/sglang/srt). Its scheduler's batch choice and admission by
// predicted tokens are policies.SGLang, its KV pool hardware.PlanMemorySGLang
// and its radix cache the instance's prefix cache at page size 1 (see
// experiments, which builds all three); this type is the rest:
//
//  1. Overlap scheduling (Overlap). managers/scheduler.py
//     Scheduler.event_loop_overlap: each pass receives requests, forms batch
//     N+1 (get_next_batch_to_run) and launches it on the GPU stream behind
//     batch N, and only then waits for N's result (process_batch_result of
//     the previous batch) and streams its tokens. A request that arrives
//     while N runs is received in the pass that starts when N's result is
//     back, by which time N+1 is already formed: it joins N+2, so JoinLag is
//     1, and a request reaching an idle scheduler is formed into a batch at
//     once. Decodes of the running batch never wait for their previous
//     token (the next batch reads it from the GPU's future token map), and
//     a batch's tokens leave as soon as it ends, so tokens are not delayed
//     by a step. The CPU work of a batch (scheduling, ForwardBatch
//     preparation, launches) runs while the previous batch's kernels do:
//     a batch that follows another at once costs max(GPU, CPU), as
//     VLLMV1's mechanism 6 (v1Overlap). --disable-overlap-schedule runs
//     event_loop_normal: schedule, run, wait, in series.
//  2. Front end (FrontEnd). SGLang's HTTP server and TokenizerManager
//     (managers/tokenizer_manager.py) tokenize in the server process and send
//     to the scheduler over ZMQ; the DetokenizerManager
//     (managers/detokenizer_manager.py) detokenizes in its own process. That
//     is vLLM V1's layout (the API server's AsyncLLM tokenizes, and its
//     OutputProcessor detokenizes, off the EngineCore process), so the
//     request cost, vllm-v1's front end fitted on an H100 host, is
//     transferred, and the run header says so.
//  3. CPU work per step (StepCPU): the kernel profile's per-request slope
//     less the part that is detokenization in the data it was fitted on
//     (experiments.SGLangDetokenizeShare): SGLang's scheduler sends token
//     ids, and its DetokenizerManager, another process, turns them into text
//     off the scheduler's critical path.
//  4. CUDA graphs (Graphs, DecodeOnly set). model_executor/cuda_graph_runner.py
//     CudaGraphRunner.can_run: a decode batch of at most cuda_graph_max_bs
//     requests replays the graph captured for the next size in cuda_graph_bs
//     (its rows padded, CudaGraphRunner.replay_prepare); prefill (extend)
//     batches and mixed ones run eagerly (piecewise CUDA graphs are off by
//     default: enable_piecewise_cuda_graph).
//  5. Custom all-reduce and fused residual add + RMSNorm (recorded; applied to
//     the kernel model as for vllm-v1): SGLang's TP group all-reduces small
//     messages with its custom all-reduce (--disable-custom-all-reduce turns
//     it off) and its RMSNorm with a residual calls fused_add_rmsnorm
//     (layers/layernorm.py RMSNorm.forward_cuda).
type SGLang struct {
	Overlap         bool
	FrontEnd        bool
	RequestCost     sim.Time // per request on the way in
	TokenizeCost    float64  // seconds per prompt token
	TokenCost       sim.Time // per output token on the way out
	StepCPU         bool
	PerRequestCPU   float64 // seconds per request in a step's batch
	CustomAllReduce bool    // recorded: applied to the kernel model
	FusedAddNorm    bool    // recorded: applied to the kernel model
	Graphs          *CUDAGraphs
}

func (e SGLang) Name() string { return SGLangVersion }

func (e SGLang) Ingress(prompt int) sim.Time {
	if !e.FrontEnd {
		return 0
	}
	return e.RequestCost + sim.FromSeconds(e.TokenizeCost*float64(prompt))
}

func (e SGLang) JoinLag() int {
	if e.Overlap {
		return 1
	}
	return 0
}

func (e SGLang) Egress() sim.Time {
	if !e.FrontEnd {
		return 0
	}
	return e.TokenCost
}

// Kernels prices steps as vllm-v1 does with its mechanisms 3, 6 and 7
// (engine_step.go), the overlap being SGLang's.
func (e SGLang) Kernels(k StepTimer) StepTimer {
	return VLLMV1{AsyncScheduling: e.Overlap, CPUOverlap: e.Overlap, StepCPU: e.StepCPU, PerRequestCPU: e.PerRequestCPU, Graphs: e.Graphs}.Kernels(k)
}

// Validate checks that every cost is finite and ≥ 0.
func (e SGLang) Validate() error {
	if err := checkFrontEnd("sglang", e.RequestCost, e.TokenCost, e.TokenizeCost); err != nil {
		return err
	}
	return checkStepCPU("sglang", e.PerRequestCPU, e.Graphs)
}

// String describes the engine's mechanisms for reports.
func (e SGLang) String() string {
	s := "sglang:"
	if e.Overlap {
		s += " overlap scheduling (joins one step late; step CPU overlaps the previous step's kernels);"
	} else {
		s += " no overlap scheduling (step CPU in series);"
	}
	if e.FrontEnd {
		s += fmt.Sprintf(" front end %.3g ms + %.3g µs/prompt token in, %.3g ms/token out (vllm-v1's, transferred);",
			e.RequestCost.Milliseconds(), e.TokenizeCost*1e6, e.TokenCost.Milliseconds())
	} else {
		s += " no front end;"
	}
	if e.StepCPU {
		s += fmt.Sprintf(" step CPU %.3g µs/request;", e.PerRequestCPU*1e6)
	}
	if e.CustomAllReduce {
		s += " custom all-reduce;"
	} else {
		s += " NCCL all-reduces;"
	}
	if e.FusedAddNorm {
		s += " fused_add_rmsnorm;"
	}
	switch g := e.Graphs; {
	case g == nil:
		s += " no kernel launches"
	case g.Eager || len(g.Sizes) == 0:
		s += fmt.Sprintf(" eager (%d launches/step, %.3g µs each)", g.EagerLaunches, g.Launch*1e6)
	default:
		s += fmt.Sprintf(" decode CUDA graphs up to %d requests (%d sizes), prefill eager (%d launches/step, %.3g µs each)",
			g.Sizes[len(g.Sizes)-1], len(g.Sizes), g.EagerLaunches, g.Launch*1e6)
	}
	return s
}

var _ Engine = SGLang{}

// policies.OutputView, for SGLang's admission by predicted tokens. Each
// walks the running list: O(running), only when the batcher asks.

func (in *Instance) DecodeLeft(clip int) int64 {
	var s int64
	for r := in.head; r != nil; r = r.next {
		if r.state == stateDecode {
			s += int64(min(r.output-r.g0-int(in.decCounter-r.d0), clip))
		}
	}
	return s
}

func (in *Instance) DecodeTotals() (generated, output int64) {
	for r := in.head; r != nil; r = r.next {
		if r.state == stateDecode {
			generated += int64(r.g0 + int(in.decCounter-r.d0))
			output += int64(r.output)
		}
	}
	return generated, output
}

func (in *Instance) Preemptions() int64 { return in.retracted }

// fewestOutput is SGLang's retraction victim (ScheduleBatch.retract_decode
// sorts by (output tokens, −prompt tokens) descending and retracts from the
// end): the decoding request with the fewest output tokens, the longest
// prompt on ties, the newest after that. With no decoding request it is the
// newest running one.
func (in *Instance) fewestOutput() *request {
	var v *request
	var vg int
	for r := in.tail; r != nil; r = r.prev {
		if r.state != stateDecode {
			continue
		}
		g := r.g0 + int(in.decCounter-r.d0)
		if v == nil || g < vg || (g == vg && r.prompt > v.prompt) {
			v, vg = r, g
		}
	}
	if v == nil {
		return in.tail
	}
	return v
}
