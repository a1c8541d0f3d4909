package scenario

import (
	"fmt"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim/serve"
)

// The sglang engine: SGLang's scheduler (policies.SGLang), its KV pool
// (hardware.PlanMemorySGLang), its radix cache (the instance's prefix cache
// at page size 1, on by default) and its serving loop (serve.SGLang), each
// default taken from SGLang's code and named in the run header.

// SGLangArgs are the [engine] fields of the sglang engine, named as
// SGLang's launch_server flags. Zero means SGLang's default.
type SGLangArgs struct {
	// MemFractionStatic is --mem-fraction-static: the fraction of the free
	// memory that weights and the KV pool may take (default: SGLang's for
	// the GPU, hardware.SGLangGPUDefaults).
	MemFractionStatic float64 `toml:"mem_fraction_static" json:"mem_fraction_static,omitempty"`
	// ScheduleConservativeness is --schedule-conservativeness (default 1;
	// an explicit 0 reserves no KV for running requests' output).
	ScheduleConservativeness float64 `toml:"schedule_conservativeness" json:"schedule_conservativeness,omitempty"`
	// EnableMixedChunk is --enable-mixed-chunk: decodes join prefill batches.
	EnableMixedChunk bool `toml:"enable_mixed_chunk" json:"enable_mixed_chunk,omitempty"`
	// CUDAGraphMaxBS is --cuda-graph-max-bs (default: SGLang's for the GPU).
	CUDAGraphMaxBS int `toml:"cuda_graph_max_bs" json:"cuda_graph_max_bs,omitempty"`
	// MaxPrefillTokens is --max-prefill-tokens (default 16384).
	MaxPrefillTokens int `toml:"max_prefill_tokens" json:"max_prefill_tokens,omitempty"`
	// DisableOverlapSchedule is --disable-overlap-schedule.
	DisableOverlapSchedule bool `toml:"disable_overlap_schedule" json:"disable_overlap_schedule,omitempty"`
	// NumReservedDecodeTokens is SGLANG_NUM_RESERVED_DECODE_TOKENS, the KV
	// a PD decode server keeps free per request before it preallocates
	// another (default SGLangReservedDecodeTokens; an explicit 0: none).
	NumReservedDecodeTokens int `toml:"num_reserved_decode_tokens" json:"num_reserved_decode_tokens,omitempty"`
}

// SGLangReservedDecodeTokens is SGLang's default num_reserved_decode_tokens
// (disaggregation/decode.py DecodePreallocQueue: the environment variable
// SGLANG_NUM_RESERVED_DECODE_TOKENS, default 512).
const SGLangReservedDecodeTokens = 512

// sglangDisagg sets, under the sglang engine, what SGLang's PD
// disaggregation does differently from the pull servesim models for vLLM
// (disaggregation/decode.py, sgl-router mini_lb.py): the decode server
// preallocates a request's KV only when num_reserved_decode_tokens for
// each request it holds stays free besides, and the client's tokens,
// the first included, are the decode server's stream.
func (s *Scenario) sglangDisagg(p *Plan) error {
	d := p.Serve.Disagg
	e, sg := s.sglangTable()
	if !sg {
		if e.NumReservedDecodeTokens != 0 {
			return s.fieldError("engine.num_reserved_decode_tokens", "", "is SGLang's: it needs engine \"sglang\"")
		}
		return nil
	}
	n := e.NumReservedDecodeTokens
	if n < 0 || n > 1<<20 {
		return s.fieldError("engine.num_reserved_decode_tokens", "", "%d must be in [0, %d]", n, 1<<20)
	}
	if n == 0 && !s.Explicit("engine.num_reserved_decode_tokens") {
		n = SGLangReservedDecodeTokens
	}
	d.DecodeReserveTokens, d.FirstTokenAtDecode = n, true
	if sp := p.PoolPlan.SGLang; sp != nil {
		sp.Notes = append(sp.Notes, fmt.Sprintf("PD: the decode server preallocates a request's KV while %d tokens stay free for each request it holds (decode.py DecodePreallocQueue, SGLANG_NUM_RESERVED_DECODE_TOKENS); the client's tokens, the first included, come from the decode server (mini_lb.py relays its stream)", n))
	}
	return nil
}

// setFields names the SGLang fields set, for the error under another engine.
func (a SGLangArgs) setFields() string {
	var set []string
	for _, f := range []struct {
		on   bool
		name string
	}{
		{a.MemFractionStatic != 0, "mem_fraction_static"}, {a.ScheduleConservativeness != 0, "schedule_conservativeness"},
		{a.EnableMixedChunk, "enable_mixed_chunk"}, {a.CUDAGraphMaxBS != 0, "cuda_graph_max_bs"},
		{a.MaxPrefillTokens != 0, "max_prefill_tokens"}, {a.DisableOverlapSchedule, "disable_overlap_schedule"},
		{a.NumReservedDecodeTokens != 0, "num_reserved_decode_tokens"},
	} {
		if f.on {
			set = append(set, "engine."+f.name)
		}
	}
	return strings.Join(set, ", ")
}

// SGLangPlan is what the sglang engine resolved for a pool: SGLang's
// GPU-memory defaults, its KV pool, and a note per default applied.
type SGLangPlan struct {
	Defaults    hardware.SGLangDefaults
	Memory      hardware.SGLangMemoryPlan
	Notes       []string
	PPChunked   bool // pp > 1: SGLang's chunked pipelining
	ctxGiB      float64
	seqsDefault bool // max_running_requests is SGLang's default, set once the pool is sized
}

// sglangTable returns the [engine] table and whether the scenario runs sglang.
func (s *Scenario) sglangTable() (*Engine, bool) {
	e := s.Engine
	if e == nil {
		return &Engine{}, false
	}
	return e, e.Name == serve.SGLangVersion
}

// sglangPoolDefaults fills, under the sglang engine, the batch fields whose
// defaults are SGLang's: page size 1, chunked_prefill_size by GPU memory,
// the radix cache on, retraction's victim order; and refuses what the
// engine does not model.
func (s *Scenario) sglangPoolDefaults(p *PoolPlan, b *Batch, tp int, prefix string) error {
	e, sg := s.sglangTable()
	if !sg {
		return nil
	}
	switch {
	case s.pp() > models.MaxPP:
		return s.fieldError("pp", "pp", "%d must be in [1, %d]; omit it for the default (1, no pipeline)", s.PP, models.MaxPP)
	case s.pp() > 1 && b.Policy == "prefill-first":
		return s.fieldError("pp", "pp", "%d with chunked_prefill_size -1: the sglang engine's pipeline is SGLang's chunked pipelining (event_loop_pp), which needs chunked prefill", s.pp())
	case s.pp() > 1 && s.Explicit("pp_chunked") && !s.PPChunked:
		return s.fieldError("pp_chunked", "pp-chunked", "false: SGLang's pipeline loop (scheduler_pp_mixin.py event_loop_pp) always feeds a prefill's chunks to successive micro-batches")
	case s.Explicit("batch.gpu_memory_utilization"):
		return s.fieldError("batch.gpu_memory_utilization", "gpu-memory-utilization", "is vLLM's: SGLang sizes its KV pool by engine.mem_fraction_static (--mem-fraction-static)")
	case b.KVCacheMemoryBytes != 0 || b.NumGPUBlocksOverride != 0:
		return s.fieldError("batch.kv_cache_memory_bytes", "kv-cache-memory-bytes", "and num_gpu_blocks_override are vLLM's: SGLang sizes its KV pool by engine.mem_fraction_static (--mem-fraction-static)")
	case b.Policy != "" && b.Policy != "chunked" && b.Policy != "prefill-first":
		return s.fieldError("batch.policy", "policy", "%q: the sglang engine batches with SGLang's scheduler; its policy is chunked (chunked_prefill_size > 0) or prefill-first (chunked_prefill_size -1)", b.Policy)
	case e.NoAsyncScheduling || e.NoVLLMDefaults:
		return s.fieldError("engine.name", "engine", "no_async_scheduling and no_vllm_defaults are vllm-v1's: SGLang's overlap is engine.disable_overlap_schedule")
	}
	for _, c := range []struct {
		v, max int
		field  string
	}{{e.CUDAGraphMaxBS, 1 << 16, "cuda_graph_max_bs"}, {e.MaxPrefillTokens, 1 << 30, "max_prefill_tokens"}} {
		if c.v < 0 || c.v > c.max {
			return s.fieldError("engine."+c.field, strings.ReplaceAll(c.field, "_", "-"), "%d must be in [1, %d] (0 = SGLang's default)", c.v, c.max)
		}
	}
	if f := e.MemFractionStatic; f != 0 && !(f > 0 && f < 1) {
		return s.fieldError("engine.mem_fraction_static", "mem-fraction-static", "%g must be in (0, 1)", f)
	}
	if c := e.ScheduleConservativeness; !(c >= 0) || c > 100 {
		return s.fieldError("engine.schedule_conservativeness", "schedule-conservativeness", "%g must be in [0, 100]", c)
	}
	chunk := b.MaxNumBatchedTokens
	if b.Policy == "prefill-first" {
		chunk = -1
	}
	maxPrefill := e.MaxPrefillTokens
	if maxPrefill == 0 {
		maxPrefill = policies.SGLangMaxPrefillTokens
	}
	d := hardware.SGLangGPUDefaults(p.GPU, tp, s.pp(), chunk, e.CUDAGraphMaxBS, maxPrefill)
	if e.MemFractionStatic == 0 && !(d.MemFractionStatic > 0) {
		// SGLang's reserve for activations (1.5 MiB a chunk token) and CUDA
		// graphs (2 MiB a captured request) takes the whole GPU.
		field, flag := "batch.max_num_batched_tokens", "max-num-batched-tokens"
		if float64(d.CUDAGraphMaxBS)*2 > float64(max(chunk, 2048))*1.5 {
			field, flag = "engine.cuda_graph_max_bs", "cuda-graph-max-bs"
		}
		return s.fieldError(field, flag, "SGLang reserves %.0f MiB for activations and CUDA graphs (chunked_prefill_size %d, cuda_graph_max_bs %d), more than the %s's %.0f MiB: mem_fraction_static would be %g; lower it, or give engine.mem_fraction_static (--mem-fraction-static)",
			d.ReservedMiB, d.ChunkedPrefill, d.CUDAGraphMaxBS, p.GPU.Name, d.GPUMemMiB, d.MemFractionStatic)
	}
	sp := &SGLangPlan{Defaults: d}
	note := func(format string, a ...any) { sp.Notes = append(sp.Notes, fmt.Sprintf(format, a...)) }
	src := fmt.Sprintf("server_args.py _handle_gpu_memory_settings, %.0f MiB GPU, tp %d", d.GPUMemMiB, tp)
	if b.BlockSize == 0 && !s.Explicit("batch.block_size") {
		b.BlockSize = 1
		note("page_size 1 (ServerArgs default)")
	}
	if chunk == 0 && !s.Explicit("batch.max_num_batched_tokens") {
		b.MaxNumBatchedTokens = d.ChunkedPrefill
		note("chunked_prefill_size %d (%s)", d.ChunkedPrefill, src)
	}
	if e.CUDAGraphMaxBS == 0 {
		note("cuda_graph_max_bs %d (%s)", d.CUDAGraphMaxBS, src)
	}
	if e.MemFractionStatic == 0 {
		note("mem_fraction_static %.3g = (%.0f − reserved %.0f MiB) / %.0f MiB (%s)", d.MemFractionStatic, d.GPUMemMiB, d.ReservedMiB, d.GPUMemMiB, src)
	}
	if prefix != "" {
		note("PD decode server: no radix cache (decode.py: \"Upstream PD Decode normally uses ChunkCache\", unless server_args.disaggregation_decode_enable_radix_cache)")
	} else if !b.PrefixCaching && !s.Explicit("batch.prefix_caching") {
		b.PrefixCaching = true
		note("radix cache on (ServerArgs disable_radix_cache false; reused at the workload's prefix-block granularity, LRU eviction)")
	}
	if b.Victim == "" {
		b.Victim = serve.VictimFewestOutput
		note("retraction victim: fewest output tokens, longest prompt on ties (ScheduleBatch.retract_decode)")
	}
	sp.seqsDefault = b.MaxNumSeqs == 0
	if s.pp() > 1 {
		// scheduler_pp_mixin.py event_loop_pp: pp_loop_size micro-batches,
		// each formed by get_next_batch_to_run while the others run; the
		// chunked request is shared, so its next chunk goes to the next
		// micro-batch (chunked pipelining).
		sp.PPChunked = true
		note("chunked pipelining over pp %d (scheduler_pp_mixin.py event_loop_pp); layers split by distributed/utils.py get_pp_indices (vLLM's; SGLANG_PP_LAYER_PARTITION is pp_layers)", s.pp())
	}
	p.SGLang = sp
	return nil
}

// sglangBatcher returns SGLang's scheduler for the pool.
func (s *Scenario) sglangBatcher(p *PoolPlan, b *Batch) (policies.Batcher, error) {
	e, _ := s.sglangTable()
	c := e.ScheduleConservativeness
	if c == 0 && !s.Explicit("engine.schedule_conservativeness") {
		c = 1
	}
	bt := &policies.SGLang{Ratio: policies.NewSGLangRatio(c), MaxPrefillTokens: e.MaxPrefillTokens,
		Chunked: b.Policy != "prefill-first", Mixed: e.EnableMixedChunk, PageSize: b.BlockSize}
	if bt.MaxPrefillTokens == 0 {
		bt.MaxPrefillTokens = policies.SGLangMaxPrefillTokens
	}
	p.SGLang.Notes = append(p.SGLang.Notes, fmt.Sprintf("new_token_ratio from %.3g to %.3g, −%.3g a decode step (schedule_conservativeness %g; environ.py SGLANG_INIT_NEW_TOKEN_RATIO 0.7, MIN_NEW_TOKEN_RATIO_FACTOR 0.14, DECAY_STEPS 600)",
		bt.Ratio.Init, bt.Ratio.Min, bt.Ratio.Decay, c), fmt.Sprintf("max_prefill_tokens %d", bt.MaxPrefillTokens))
	switch {
	case bt.Mixed:
		p.SGLang.Notes = append(p.SGLang.Notes, "mixed chunked prefill (--enable-mixed-chunk)")
	case p.SGLang.PPChunked:
		// event_loop_pp: each micro-batch has its own running batch and
		// get_next_batch_to_run, so while one carries a prefill chunk the
		// others carry decodes; servesim's round (the pp micro-batches of
		// one batcher decision, hardware.PipelineStep) holds both.
		bt.Mixed = true
		p.SGLang.Notes = append(p.SGLang.Notes, "a round's micro-batches carry prefill chunks and decodes together (event_loop_pp: a running batch and a batch choice per micro-batch; servesim decides a round at once)")
	default:
		p.SGLang.Notes = append(p.SGLang.Notes, "prefill and decode in separate batches (get_next_batch_to_run)")
	}
	p.SGLang.Notes = append(p.SGLang.Notes, "max_new_tokens = each request's output length (as sglang.bench_serving sends it)")
	return bt, nil
}

// planMemorySGLang sizes the pool's KV as SGLang does and sets
// max_running_requests' default from it.
func (s *Scenario) planMemorySGLang(p *PoolPlan, m *models.Model, b *Batch, f func(string) string) error {
	e, _ := s.sglangTable()
	if err := s.checkNumbers(e); err != nil {
		return err
	}
	sp := p.SGLang
	frac := e.MemFractionStatic
	if frac == 0 {
		frac = sp.Defaults.MemFractionStatic
	}
	ctx := hardware.DefaultNonTorch(p.Parallel.TP)
	if e.NonTorchGiB > 0 {
		ctx = e.NonTorchGiB * (1 << 30)
	}
	plan, err := hardware.PlanMemorySGLang(m, p.GPU, p.Parallel, hardware.SGLangMemory{MemFractionStatic: frac, PageSize: b.BlockSize, Context: ctx})
	if err != nil {
		return fmt.Errorf("%w (fields %q, %q, %q: flags --tp, --mem-fraction-static, --page-size)", err, f("tp"), "engine.mem_fraction_static", f("batch.block_size"))
	}
	sp.Memory, p.Memory = plan, plan.MemoryPlan
	sp.ctxGiB = ctx / (1 << 30)
	if len(p.Stages) == 0 {
		s.sglangRunning(p, b)
	} // a pipeline stage: planStages keeps the fewest tokens, then calls sglangRunning
	return nil
}

// sglangRunning notes the pool's memory plan and sets max_running_requests'
// default from its tokens: SGLang's, and under pp a micro-batch's share
// pp_max_micro_batch_size = max_running_requests // pp_size (scheduler.py)
// on each of the pp micro-batches a round carries.
func (s *Scenario) sglangRunning(p *PoolPlan, b *Batch) {
	sp := p.SGLang
	sp.Notes = append(sp.Notes, fmt.Sprintf("%.2f GiB taken before SGLang reads free memory (CUDA context; assumed: vLLM's non-torch default)", sp.ctxGiB))
	if pp := p.pp(); pp > 1 {
		sp.Notes = append(sp.Notes, fmt.Sprintf("every stage runs the fewest tokens any stage's pool holds (%d; assumed: each PP rank's scheduler repeats the first rank's decisions, so the pools must agree)", sp.Memory.MaxTotalTokens))
	}
	if !sp.seqsDefault {
		return
	}
	n := hardware.SGLangMaxRunning(sp.Memory.MaxTotalTokens, b.MaxModelLen)
	sp.Notes = append(sp.Notes, fmt.Sprintf("max_running_requests %d = min(max_total_num_tokens // 2, request pool min(max(%d / context %d × 512, 2048), 4096)) (tp_worker.py, model_runner.py init_memory_pool)",
		n, sp.Memory.MaxTotalTokens, b.MaxModelLen))
	if pp := p.pp(); pp > 1 {
		micro := max(n/pp, 1)
		sp.Notes = append(sp.Notes, fmt.Sprintf("pp_max_micro_batch_size %d = max_running_requests // pp_size, %d running over the %d micro-batches (scheduler.py)", micro, micro*pp, pp))
		n = micro * pp
	}
	b.MaxNumSeqs, p.Limits.MaxNumSeqs = n, n
}

// SGLangDetokenizeShare is the part of the profile's per-request step CPU
// that SGLang's scheduler does not run. Every built-in per_request_s is
// fitted on sarathi-serve's A100 cpu_overheads.csv as schedule + sampler_e2e
// + prepare_inputs_e2e + process_model_outputs (medians, 26 rows at TP 1:
// 42.314 µs a request); process_model_outputs alone fits 15.439 µs a request
// (TestSGLangDetokenizeShare refits both). In sarathi-serve (a vLLM v0 fork)
// that phase is EngineSequenceManager.on_step_completed: append the token,
// _decode_seq (detokenize_incrementally), check stop, build the outputs, on
// the engine's critical path. SGLang's scheduler only appends token ids and
// checks finish (scheduler_output_processor_mixin.py
// process_batch_result_decode) and sends the ids to the DetokenizerManager,
// a process of its own (managers/detokenizer_manager.py), so the share is
// left out: 15.439 / 42.314. SGLang's own append and check_finish are then
// assumed free (no SGLang timing here): the remaining 26.875 µs is
// scheduling, sampling and input preparation, which SGLang's scheduler does
// (get_next_batch_to_run, ForwardBatch.init_new, the sampler) as vLLM's does.
const SGLangDetokenizeShare = 15.439 / 42.314

// resolveSGLang fills p.Serve.Engine for the sglang engine.
func (s *Scenario) resolveSGLang(p *Plan, e *Engine) error {
	if p.SGLang == nil {
		return fmt.Errorf("scenario: engine sglang: the pool was not resolved for it")
	}
	v := serve.SGLang{Overlap: !e.DisableOverlapSchedule, FrontEnd: !e.NoFrontEnd, StepCPU: !e.NoStepCPU,
		CustomAllReduce: !e.NoCustomAllReduce, FusedAddNorm: !e.NoFusedAddNorm}
	if e.NoCPUOverlap {
		return s.fieldError("engine.no_cpu_overlap", "no-cpu-overlap", "is vllm-v1's: under sglang the CPU/GPU overlap is the overlap scheduler's (engine.disable_overlap_schedule)")
	}
	if !e.NoLaunches {
		g := s.cudaGraphs(p, e)
		g.DecodeOnly = true
		if !g.Eager {
			g.Sizes = nil
			// cuda_graph_runner.py: sizes within the request pool.
			g.Sizes = hardware.SGLangCUDAGraphBS(min(p.SGLang.Defaults.CUDAGraphMaxBS, p.Limits.MaxNumSeqs))
		}
		v.Graphs = g
	}
	v.RequestCost, v.TokenizeCost, v.TokenCost = s.frontEndCosts(p, e, "; transferred from the vllm-v1 fit on H100 (no SGLang front-end data here)")
	cpu, fromProfile, err := s.stepCPUPerRequest(p, e)
	if err != nil {
		return err
	}
	v.PerRequestCPU = cpu
	if fromProfile {
		v.PerRequestCPU = cpu * (1 - SGLangDetokenizeShare)
		p.SGLang.Notes = append(p.SGLang.Notes, fmt.Sprintf("step CPU %.3g µs a request = the profile's %.3g µs less sarathi-serve's process_model_outputs share %.3f (detokenization: SGLang's DetokenizerManager process)",
			v.PerRequestCPU*1e6, cpu*1e6, SGLangDetokenizeShare))
	}
	return setEngine(p, v)
}
