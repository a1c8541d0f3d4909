package serve

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/sim"
)

// Engine is the serving stack between the router and the kernels: the
// front end a request crosses before the engine core sees it, the
// scheduling pipeline that decides when a queued request becomes visible
// to the batcher, the path of a computed token back to the client, and
// the CPU work a step adds to its kernels. The World consults it at those
// four points and nowhere else; Ideal is kernels only.
//
// Each part is a mechanism with its own switch (see VLLMV1). Later
// mechanisms that change how a step is priced (CUDA-graph padding of
// decode batches, launch overheads paid outside a graph) belong in
// Kernels, which may wrap the timer in anything that prices a
// models.Batch; the interface need not change for them.
type Engine interface {
	// Name is the engine model's name and version, e.g. "vllm-v1".
	Name() string
	// Ingress is the time from a request's arrival at the endpoint to its
	// arrival in the engine core's queue, for a prompt of the given tokens.
	Ingress(prompt int) sim.Time
	// JoinLag is how many step ends after the step in flight a request
	// that reaches a busy engine core waits before the batcher sees it
	// (0: the batcher sees it when the step in flight ends). A request
	// that reaches an idle engine core is scheduled at once, whatever the
	// lag, and so is a held one when the batcher has nothing else to run.
	JoinLag() int
	// Egress is the time from the end of the step that computed a token to
	// the client's receipt of it.
	Egress() sim.Time
	// Kernels returns the timer an instance prices its steps with, given
	// the kernel-time model: k itself, or k plus what the engine adds.
	Kernels(k StepTimer) StepTimer
}

// Ideal is today's simulator: kernels only. A request reaches the queue
// when it arrives, the batcher sees it when the step in flight ends, a
// token reaches the client when its step ends, and a step costs the
// kernel-time model's time (which includes its own fixed per-iteration
// overhead).
type Ideal struct{}

func (Ideal) Name() string                  { return "ideal" }
func (Ideal) Ingress(int) sim.Time          { return 0 }
func (Ideal) JoinLag() int                  { return 0 }
func (Ideal) Egress() sim.Time              { return 0 }
func (Ideal) Kernels(k StepTimer) StepTimer { return k }

// VLLMV1 models vLLM's V1 serving stack (vLLM ≥ 0.12, where async
// scheduling is the default). Every mechanism has a switch; with all of
// them off it behaves exactly as Ideal (4, 5 and 8 act on the plan the
// instance is built from, not through this interface).
//
// 1. Scheduling pipeline (AsyncScheduling). vllm/v1/engine/core.py,
// EngineCore.step_with_batch_queue with a batch queue of 2
// (max_concurrent_batches is 2 under async scheduling, vLLM PRs 19970 and
// 27614): the loop schedules and submits step N+1 right after submitting
// step N, without blocking, and only then blocks on step N's result
// (future.result()), runs scheduler.update_from_output and returns step
// N's outputs. The busy loop (run_busy_loop → _process_input_queue) adds
// new requests between calls, so a request arriving while step N runs is
// added after N's result, when step N+1 is already planned and on its way
// to the GPU: it joins step N+2, one step later than with synchronous
// scheduling (EngineCore.step: schedule, execute, update). JoinLag is 1.
// When nothing was left to plan for N+1 (the batch queue holds only N),
// step_with_batch_queue blocks on N and the next call schedules the new
// request at once: a request reaching an idle engine, or one held while
// the batcher has nothing else to run, is scheduled without lag. The
// async scheduler (vllm/v1/core/sched/async_scheduler.py) plans decodes
// over output placeholders, so a running request's next decode or chunk
// never waits for its previous step's tokens: only joining lags. Tokens
// are not delayed by a step: step N's outputs leave update_from_output as
// soon as N's future resolves, while N+1 runs on the GPU (contrary to the
// issue's reading that each token reaches the client a step late); their
// path to the client is the front end's per-token cost below.
//
// 2. Front end (FrontEnd). vllm/entrypoints/openai (serving_completion's
// create_completion: request parsing, then the renderer's tokenization of
// the prompt), vllm/v1/engine/async_llm.py (AsyncLLM.add_request →
// input processing → EngineCoreClient over ZMQ to the engine core
// process) on the way in; on the way out the engine core's output thread
// sends EngineCoreOutputs over ZMQ, AsyncLLM's output handler runs
// vllm/v1/engine/output_processor.py (OutputProcessor.process_outputs:
// incremental detokenization per new token) and the OpenAI layer writes
// one SSE chunk per token. Ingress = RequestCost + TokenizeCost × prompt
// tokens; Egress = TokenCost. The constants are fitted to measured runs
// (see experiments/engine.go for which run fitted which).
//
// 3. CPU work per step (StepCPU). PerRequestCPU seconds per request in
// the batch (prefill chunks + decodes) are added to every step: the
// scheduler, input preparation, sampling and output processing that grow
// with the batch. The calibrated profiles' per-iteration overhead is the
// intercept of the same linear fit (hardware/calibrate/overhead.go, the
// Vidur/Sarathi-Serve cpu_overheads.csv) and their per_request_s the
// slope, recorded there but not applied; this applies the slope, so
// nothing is counted twice.
//
// 4. TP communication (CustomAllReduce). vLLM's TP group all-reduces small
// messages with its custom all-reduce inside an NVLink domain and large
// ones with NCCL (vllm/distributed/device_communicators/cuda_communicator.py
// and custom_all_reduce.py; hardware.CustomAllReduce has the rules and the
// cited latency). The all-reduce messages of a step are inside the step
// model, so this mechanism is applied where the pool's kernel model is
// built (experiments, hardware.CustomARKernel), not in Kernels: the flag
// here records it for reports.
//
// 6. CPU/GPU overlap (CPUOverlap, with AsyncScheduling). With a batch
// queue of 2 (step_with_batch_queue above), the engine core schedules
// step N+1 and the worker prepares its inputs and launches its kernels
// (vllm/v1/worker/gpu_model_runner.py execute_model → _prepare_inputs,
// then the forward; the sampled token IDs of step N feed N+1 on the GPU,
// _prepare_input_ids, and reach the CPU by a non-blocking copy,
// AsyncGPUModelRunnerOutput) while step N's kernels run; N's output
// processing (update_from_output) runs once N's future resolves, while
// N+1 runs. So in steady state every CPU part of a step hides behind the
// previous step's kernels: a step that follows another at once costs
// max(GPU, CPU) (v1Overlap), CPU being the kernel model's fixed
// per-iteration overhead (hardware.StepModel.IterOverhead: sarathi-serve's
// schedule + sampler + prepare_inputs + process_model_outputs, the 0.81 ms
// intercept of hardware/calibrate/overhead.go's fit), the per-request CPU
// (StepCPU, the slope of the same fit) and the kernel launches (7). Nothing
// is left serial: sampling is GPU work and its output transfer does not
// block. A step that starts an idle engine has no previous step to hide
// behind and costs CPU + GPU; under synchronous scheduling (EngineCore.step:
// schedule, execute and wait, update) every step does.
//
// 7. CUDA graphs and kernel launches (Graphs; nil: kernels only, no
// launches). See CUDAGraphs: a decode batch is padded to a captured size
// and replays as one graph; other batches run piecewise graphs or
// eagerly and pay their launches on the CPU, where they overlap the
// step's own kernels (and, with 6, the previous step's).
//
// 8. Fused residual add + RMSNorm (FusedAddNorm). vLLM's decoder layers
// pass the residual to the next RMSNorm instead of adding it themselves
// (vllm/model_executor/models/llama.py LlamaDecoderLayer.forward:
// input_layernorm(hidden_states, residual), post_attention_layernorm
// likewise), and RMSNorm with a residual adds and normalises in one kernel:
// eagerly the custom op fused_add_rms_norm (vllm/model_executor/layers/
// layernorm.py RMSNorm.forward_cuda); under torch.compile (mode
// VLLM_COMPILE, the V1 default) custom ops are off by default
// (vllm/config/compilation.py CompilationConfig.custom_ops: "disabled when
// running with Inductor ... Inductor generates (fused) Triton kernels for
// disabled custom ops"), so forward_native's add, cast and reduction
// compile into one Triton kernel inside the piecewise graph. Either way no
// add kernel runs; the kernel profiles fitted to Vidur's traces
// (Sarathi-Serve's stack, which times each residual add as its own kernel)
// price one. The add is priced at its bytes at the bandwidth bound
// (hardware.FusedAddNormKernel), applied where the pool's kernel model is
// built (experiments), as 4; the flag records it.
//
// 5. Memory as vLLM plans it (MemoryProfile). The KV cache is what vLLM's
// V1 worker leaves after a profiling pass (vllm/v1/worker/gpu_worker.py
// determine_available_memory; hardware.PlanMemoryVLLM), applied where the
// pool's memory is planned (experiments); the flag records it.
type VLLMV1 struct {
	AsyncScheduling bool
	FrontEnd        bool
	RequestCost     sim.Time // per request on the way in: HTTP/OpenAI layer and the hop to the engine core
	TokenizeCost    float64  // seconds per prompt token
	TokenCost       sim.Time // per output token on the way out: hop back, detokenization, streaming
	StepCPU         bool
	PerRequestCPU   float64 // seconds per request in a step's batch
	CustomAllReduce bool    // recorded: applied to the kernel model (see 4)
	FusedAddNorm    bool    // recorded: applied to the kernel model (see 8)
	MemoryProfile   bool    // recorded: applied to the memory plan (see 5)
	CPUOverlap      bool    // see 6; needs AsyncScheduling
	Graphs          *CUDAGraphs
}

// VLLMV1Version names the model of vLLM this implements.
const VLLMV1Version = "vllm-v1"

func (e VLLMV1) Name() string { return VLLMV1Version }

func (e VLLMV1) Ingress(prompt int) sim.Time {
	if !e.FrontEnd {
		return 0
	}
	return e.RequestCost + sim.FromSeconds(e.TokenizeCost*float64(prompt))
}

func (e VLLMV1) JoinLag() int {
	if e.AsyncScheduling {
		return 1
	}
	return 0
}

func (e VLLMV1) Egress() sim.Time {
	if !e.FrontEnd {
		return 0
	}
	return e.TokenCost
}

func (e VLLMV1) Kernels(k StepTimer) StepTimer {
	overlap := e.CPUOverlap && e.AsyncScheduling
	perRequest := 0.0
	if e.StepCPU {
		perRequest = e.PerRequestCPU
	}
	if perRequest == 0 && !overlap && e.Graphs == nil {
		return k
	}
	s := v1Step{k: k, kb: k, perRequest: perRequest, graphs: e.Graphs.indexed()}
	if f, ok := k.(iterOverheader); ok {
		s.fixed = f.IterOverhead()
	}
	pk, pipelined := k.(PipelinedTimer)
	if pipelined {
		s.kb = backTimer{pk}
	}
	switch {
	case overlap:
		return &v1Overlap{s}
	case pipelined:
		return &v1Back{s}
	}
	return &s
}

// Validate checks that every cost is finite and ≥ 0.
func (e VLLMV1) Validate() error {
	if err := checkFrontEnd("vllm-v1", e.RequestCost, e.TokenCost, e.TokenizeCost); err != nil {
		return err
	}
	return checkStepCPU("vllm-v1", e.PerRequestCPU, e.Graphs)
}

// checkFrontEnd checks an engine's front-end costs: per request and per
// output token ≥ 0, per prompt token finite and ≥ 0 (vllm-v1 and sglang).
func checkFrontEnd(engine string, request, token sim.Time, tokenize float64) error {
	switch {
	case request < 0, token < 0:
		return fmt.Errorf("serve: engine %s: front-end costs must be ≥ 0 (request %v, token %v)", engine, request, token)
	case !(tokenize >= 0) || math.IsInf(tokenize, 0):
		return fmt.Errorf("serve: engine %s: tokenization cost %g s/token must be finite and ≥ 0", engine, tokenize)
	}
	return nil
}

// checkStepCPU checks an engine's per-request step CPU (finite, ≥ 0) and
// its CUDA graphs, if any.
func checkStepCPU(engine string, perRequest float64, g *CUDAGraphs) error {
	if !(perRequest >= 0) || math.IsInf(perRequest, 0) {
		return fmt.Errorf("serve: engine %s: per-request step CPU %g s must be finite and ≥ 0", engine, perRequest)
	}
	if g != nil {
		return g.Validate()
	}
	return nil
}

// String describes the engine's mechanisms for reports.
func (e VLLMV1) String() string {
	s := "vllm-v1:"
	if e.AsyncScheduling {
		s += " async scheduling (joins one step late);"
	} else {
		s += " synchronous scheduling;"
	}
	if e.FrontEnd {
		s += fmt.Sprintf(" front end %.3g ms + %.3g µs/prompt token in, %.3g ms/token out;",
			e.RequestCost.Milliseconds(), e.TokenizeCost*1e6, e.TokenCost.Milliseconds())
	} else {
		s += " no front end;"
	}
	if e.StepCPU {
		s += fmt.Sprintf(" step CPU %.3g µs/request;", e.PerRequestCPU*1e6)
	} else {
		s += " no per-request step CPU;"
	}
	if e.CustomAllReduce {
		s += " custom all-reduce;"
	} else {
		s += " NCCL all-reduces;"
	}
	if e.FusedAddNorm {
		s += " residual adds fused into RMSNorm;"
	} else {
		s += " residual adds as their own kernels;"
	}
	switch {
	case e.CPUOverlap && e.AsyncScheduling:
		s += " step CPU overlaps the previous step's kernels;"
	default:
		s += " step CPU in series with the kernels;"
	}
	switch g := e.Graphs; {
	case g == nil:
		s += " no kernel launches;"
	case g.Eager || len(g.Sizes) == 0:
		s += fmt.Sprintf(" eager (%d launches/step, %.3g µs each);", g.EagerLaunches, g.Launch*1e6)
	default:
		s += fmt.Sprintf(" CUDA graphs up to %d tokens (%d sizes; eager %d, piecewise %d launches/step, %.3g µs each);",
			g.Sizes[len(g.Sizes)-1], len(g.Sizes), g.EagerLaunches, g.PiecewiseLaunches, g.Launch*1e6)
	}
	if e.MemoryProfile {
		s += " memory as vLLM profiles it"
	} else {
		s += " memory as the ideal engine plans it"
	}
	return s
}

var (
	_ Engine = Ideal{}
	_ Engine = VLLMV1{}
)
