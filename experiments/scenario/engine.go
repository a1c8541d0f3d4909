package scenario

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/hardware/calibrate"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/serve"
)

// DefaultEngine is the engine model a scenario runs when it names none.
// vllm-v1 became the default once servesim validate showed it closer to
// the real runs than ideal on every metric (docs/validation.md).
const DefaultEngine = "vllm-v1"

// EngineNames lists the engine models.
const EngineNames = "ideal, vllm-v1, sglang, trtllm"

// Engine is a scenario's [engine] table: which engine model serves the
// requests (serve.Engine), and for vllm-v1 a switch per mechanism and its
// parameters. A zero parameter means its default; a mechanism is turned
// off by its switch.
type Engine struct {
	// Name is "ideal" (kernels only) or "vllm-v1" (default DefaultEngine).
	Name string `toml:"name" json:"name"`
	// Switches, named like vLLM's --no-async-scheduling.
	NoAsyncScheduling bool `toml:"no_async_scheduling" json:"no_async_scheduling"`
	NoFrontEnd        bool `toml:"no_front_end" json:"no_front_end"`
	NoStepCPU         bool `toml:"no_step_cpu" json:"no_step_cpu"`
	// NoCustomAllReduce is vLLM's --disable-custom-all-reduce: every
	// all-reduce takes the kernel profile's NCCL price.
	NoCustomAllReduce bool `toml:"no_custom_all_reduce" json:"no_custom_all_reduce,omitempty"`
	// NoFusedAddNorm prices the residual adds as the kernel profile does
	// (their own kernels, as Vidur's traces time them) instead of fused
	// into the RMSNorm after them, as vLLM runs them
	// (hardware.FusedAddNormKernel).
	NoFusedAddNorm bool `toml:"no_fused_add_norm" json:"no_fused_add_norm,omitempty"`
	// NoMemoryProfile plans the KV cache as the ideal engine does (datasheet
	// memory × utilization − weights − a fixed 3 GiB) instead of as vLLM's
	// memory profiling does.
	NoMemoryProfile bool `toml:"no_memory_profile" json:"no_memory_profile,omitempty"`
	// EnforceEager is vLLM's --enforce-eager: no CUDA graphs, so no
	// CUDA-graph memory in the memory plan.
	EnforceEager bool `toml:"enforce_eager" json:"enforce_eager,omitempty"`
	// NoCPUOverlap puts a step's CPU work in series with its kernels under
	// async scheduling too (serve.VLLMV1 mechanism 6).
	NoCPUOverlap bool `toml:"no_cpu_overlap" json:"no_cpu_overlap,omitempty"`
	// NoLaunches prices no kernel launches and no CUDA-graph padding
	// (kernels only, as the ideal engine); EnforceEager, with launches
	// priced, runs every step eagerly (serve.CUDAGraphs).
	NoLaunches bool `toml:"no_kernel_launches" json:"no_kernel_launches,omitempty"`
	// LaunchUs is the CPU cost of one kernel or graph launch in µs
	// (default DefaultLaunchUs).
	LaunchUs float64 `toml:"kernel_launch_us" json:"kernel_launch_us,omitempty"`
	// NoVLLMDefaults keeps the simulator's batch defaults (max_num_seqs
	// 256, max_num_batched_tokens 8192) instead of vLLM's for the GPU
	// (vllmBatchDefaults).
	NoVLLMDefaults bool `toml:"no_vllm_defaults" json:"no_vllm_defaults,omitempty"`
	// Custom all-reduce (default: hardware.DefaultCustomAllReduce).
	CustomARLatencyUs float64 `toml:"custom_all_reduce_latency_us" json:"custom_all_reduce_latency_us,omitempty"`
	CustomARLinkEff   float64 `toml:"custom_all_reduce_link_efficiency" json:"custom_all_reduce_link_efficiency,omitempty"`
	CustomARMaxBytes  float64 `toml:"custom_all_reduce_max_bytes" json:"custom_all_reduce_max_bytes,omitempty"`
	// Non-torch memory per GPU in GiB (default: hardware.DefaultNonTorch).
	NonTorchGiB float64 `toml:"non_torch_memory_gib" json:"non_torch_memory_gib,omitempty"`
	// Front end (default: the fitted values below).
	RequestMs          float64 `toml:"front_end_request_ms" json:"front_end_request_ms"`
	TokenizeUsPerToken float64 `toml:"tokenize_us_per_token" json:"tokenize_us_per_token"`
	TokenMs            float64 `toml:"front_end_token_ms" json:"front_end_token_ms"`
	// CPU per request in a step's batch (default: the kernel profile's
	// per_request_s).
	CPUPerRequestUs float64 `toml:"step_cpu_per_request_us" json:"step_cpu_per_request_us"`
	// TRTLLM is [engine.trtllm], the trtllm engine's options (engine_trtllm.go).
	TRTLLM *TRTLLMEngine `toml:"trtllm" json:"trtllm,omitempty"`
	// SGLang's settings (engine "sglang", engine_sglang.go), named as its
	// launch_server flags.
	SGLangArgs
}

// Front-end defaults of vllm-v1, fitted to measured data only.
//
// The data identify one sum: a client's TTFT holds ingress + egress, and
// E2E − TTFT holds neither (a constant per-token egress shifts the first
// and the last token alike). So the whole front end is one constant on the
// way in, DefaultFrontEndRequestMs, and the per-token and per-prompt-token
// parts default to 0 until data with client-side token times and varied
// prompt lengths separate them.
//
// DefaultFrontEndRequestMs is fitted on one run and held out on the
// others (TestEngineFit refits it and prints the table):
//   - fitted: vllm-h100-runs/runs.csv, 20260217-155451-llama-2-7b-tp1-codegen,
//     stage_0 (5 req/s, the lightest load; client-side TTFT mean 25.0 ms):
//     the measured mean TTFT minus vllm-v1's simulated mean TTFT with the
//     front end off, simulated as the validation suite simulates the run
//     (StageScenario: its stages and its shared_prefix prompts cycled as
//     inference-perf sends them, the stage_0 requests compared), at least 0
//     (a front end takes no negative time): 25.0 − 19.7 ms = 5.33 ms. With
//     the earlier fit's approximate workload (100 prefix groups drawn at
//     random, a Poisson stream) the same subtraction gave 4.06 ms, and
//     2.96 ms once freed KV blocks share vLLM's one FIFO queue with cached
//     prefixes (sim/serve/prefix.go), which that random draw evicts but the
//     cycled prompts keep; before that, 3.82 ms with the residual adds priced
//     as separate kernels, 3.42 ms with the older decode attention form,
//     1.26 ms before CPU/GPU overlap and kernel launches;
//   - held out: the roleplay, general stage_0, 70B TP4 and 34B TP2 stage_0
//     rows of the same file. The two LLMServingSim runs are not used:
//     they are overloaded (seconds of queueing, which would swamp a
//     millisecond cost), and they submit token IDs from an in-process
//     client, so they hold no HTTP layer and no tokenization.
const (
	DefaultFrontEndRequestMs  = 5.504
	DefaultTokenizeUsPerToken = 0
	DefaultFrontEndTokenMs    = 0
	fallbackCPUPerRequestGPU  = "a100" // the profile whose per_request_s a roofline run takes
)

// DefaultLaunchUs is the CPU time of one kernel (or graph) launch from
// vLLM's eager PyTorch path, in µs. An assumption, fitted to no run: a
// CUDA launch through PyTorch's dispatcher costs a few µs of host time,
// and no profile here times a step eagerly and under graphs on the same
// GPU (the LLMServingSim profiles are CUDA kernel time only, and its
// RTX 4090 run with graphs is on a GPU outside the catalog).
const DefaultLaunchUs = 5.0

// resolveEngine fills p.Serve.Engine from the [engine] table.
func (s *Scenario) resolveEngine(p *Plan) error {
	e := s.Engine
	if e == nil {
		e = &Engine{}
	}
	name := e.Name
	if name == "" {
		if s.Explicit("engine.name") {
			return s.fieldError("engine.name", "engine", "\"\" names no engine: want one of %s, or omit it for the default (%s)", EngineNames, DefaultEngine)
		}
		name = DefaultEngine
	}
	if err := s.checkNumbers(e); err != nil {
		return err
	}
	if err := s.checkSwitches(e); err != nil {
		return err
	}
	if e.TRTLLM != nil && name != serve.TRTLLMVersion {
		return s.fieldError("engine.trtllm", "engine", "[engine.trtllm] is the trtllm engine's table, but the engine is %q", name)
	}
	if set := e.SGLangArgs.setFields(); set != "" && name != serve.SGLangVersion && name != "ideal" {
		return s.fieldError("engine.name", "engine", "%s are SGLang's settings: they need engine \"sglang\", not %q", set, name)
	}
	switch name {
	case serve.TRTLLMVersion:
		return s.resolveTRTLLM(p, e)
	case "ideal":
		if *e != (Engine{Name: e.Name}) {
			return s.fieldError("engine.name", "engine", "engine %q has no mechanisms to set (%s given): the switches and parameters of [engine] are for vllm-v1", name, e.setFields())
		}
		p.Serve.Engine = serve.Ideal{}
		return nil
	case serve.VLLMV1Version:
	case serve.SGLangVersion:
		return s.resolveSGLang(p, e)
	default:
		return s.fieldError("engine.name", "engine", "unknown engine %q (known: %s)", name, EngineNames)
	}
	v := serve.VLLMV1{AsyncScheduling: !e.NoAsyncScheduling, FrontEnd: !e.NoFrontEnd, StepCPU: !e.NoStepCPU,
		CustomAllReduce: !e.NoCustomAllReduce, MemoryProfile: !e.NoMemoryProfile, CPUOverlap: !e.NoCPUOverlap,
		FusedAddNorm: !e.NoFusedAddNorm}
	if !e.NoLaunches {
		v.Graphs = s.cudaGraphs(p, e)
	}
	v.RequestCost, v.TokenizeCost, v.TokenCost = s.frontEndCosts(p, e, "")
	var err error
	if v.PerRequestCPU, _, err = s.stepCPUPerRequest(p, e); err != nil {
		return err
	}
	return setEngine(p, v)
}

// frontEndCosts returns the front end's costs under e, per request
// (frontEndRequest), per prompt token in seconds and per output token, and
// sets p.FrontEnd to the per-request line with why after it ("" under
// no_front_end).
func (s *Scenario) frontEndCosts(p *Plan, e *Engine, why string) (request sim.Time, tokenize float64, token sim.Time) {
	requestMs, from := s.frontEndRequest(p.GPU, e)
	p.FrontEnd = fmt.Sprintf("%.4g ms per request, %s%s", requestMs, from, why)
	if e.NoFrontEnd {
		p.FrontEnd = ""
	}
	return sim.FromSeconds(requestMs / 1e3),
		s.unsetDefault("engine.tokenize_us_per_token", e.TokenizeUsPerToken, DefaultTokenizeUsPerToken) / 1e6,
		sim.FromSeconds(s.unsetDefault("engine.front_end_token_ms", e.TokenMs, DefaultFrontEndTokenMs) / 1e3)
}

// stepCPUPerRequest returns the step CPU per request in seconds:
// engine.step_cpu_per_request_us where given (an explicit 0: none), else
// the kernel profile's (profilePerRequest; fromProfile true).
func (s *Scenario) stepCPUPerRequest(p *Plan, e *Engine) (sec float64, fromProfile bool, err error) {
	if e.CPUPerRequestUs > 0 || s.Explicit("engine.step_cpu_per_request_us") {
		return e.CPUPerRequestUs / 1e6, false, nil
	}
	sec, err = s.profilePerRequest(p)
	return sec, true, err
}

// setEngine makes the resolved engine model v p's once it validates.
func setEngine[E interface {
	serve.Engine
	Validate() error
}](p *Plan, v E) error {
	if err := v.Validate(); err != nil {
		return fmt.Errorf("scenario: field \"engine\": %w", err)
	}
	p.Serve.Engine = v
	return nil
}

// frontEndRequest returns vllm-v1's front-end time per request in ms and
// where it comes from, first that applies: the scenario's
// engine.front_end_request_ms (file or --front-end-request-ms; an explicit
// 0 means none), the serving GPU's catalog entry (hardware.GPU's
// FrontEndRequestMs: a measurement on that host, with its source), or
// DefaultFrontEndRequestMs, the H100 host's fit, assumed for a host with
// no measurement.
func (s *Scenario) frontEndRequest(g *hardware.GPU, e *Engine) (float64, string) {
	const field = "engine.front_end_request_ms"
	if o, ok := s.Origin(field); ok || e.RequestMs != 0 {
		switch {
		case ok && o == byFlag:
			return e.RequestMs, "set by --front-end-request-ms"
		case s.file != "":
			return e.RequestMs, fmt.Sprintf("set by %s in %s", field, filepath.Base(s.file)) // the base: a header reads alike on every machine
		}
		return e.RequestMs, "set by the scenario's " + field
	}
	if g != nil && g.FrontEndRequestMs > 0 {
		return g.FrontEndRequestMs, fmt.Sprintf("from the %s catalog entry (%s)", g.Name, g.FrontEndSource())
	}
	name := "this GPU"
	if g != nil {
		name = g.Name
	}
	return DefaultFrontEndRequestMs, fmt.Sprintf("assumed: the %s catalog entry has no front_end_request_ms, so the H100 host's fit applies (set engine.front_end_request_ms or --front-end-request-ms for this host)", name)
}

// unsetDefault is v, or def when v is zero and the scenario did not set
// the field explicitly (an explicit 0 means no cost).
func (s *Scenario) unsetDefault(field string, v, def float64) float64 {
	if v == 0 && !s.Explicit(field) {
		return def
	}
	return v
}

// profilePerRequest returns the per_request_s of the kernel profile the
// plan uses (the profile file, or the GPU's built-in one); a roofline run,
// or a GPU without a built-in profile, takes the A100 built-in profile's,
// which is where every built-in value comes from (Sarathi-Serve's A100
// cpu_overheads.csv; a CPU cost, not a GPU one).
func (s *Scenario) profilePerRequest(p *Plan) (float64, error) {
	switch prof := s.Hardware.Profile; prof {
	case "", "builtin":
		if b, ok := calibrate.Builtin(p.GPU.Name); ok {
			return b.Iteration.PerRequestS, nil
		}
	case "roofline":
	default:
		b, err := calibrate.LoadProfile(s.Path(prof))
		if err != nil {
			return 0, fmt.Errorf("%w (field \"hardware.profile\", flag --profile)", err)
		}
		return b.Iteration.PerRequestS, nil
	}
	b, ok := calibrate.Builtin(fallbackCPUPerRequestGPU)
	if !ok {
		return 0, fmt.Errorf("scenario: no built-in %s profile for the per-request step CPU", fallbackCPUPerRequestGPU)
	}
	return b.Iteration.PerRequestS, nil
}

// describeEngine writes the engine line of Describe, for engines other
// than ideal (whose plans print as they always have).
func (p *Plan) describeEngine(w io.Writer) error {
	e, ok := p.Serve.Engine.(fmt.Stringer)
	if !ok {
		return nil
	}
	if _, err := fmt.Fprintf(w, "Engine: %s.\n", e); err != nil {
		return err
	}
	if p.FrontEnd != "" {
		if _, err := fmt.Fprintf(w, "Front end: %s.\n", p.FrontEnd); err != nil {
			return err
		}
	}
	if sg := p.PoolPlan.SGLang; sg != nil {
		if _, err := fmt.Fprintf(w, "SGLang memory plan (%s, tp %d): %s.\nSGLang defaults: %s.\n", p.GPU.Name, p.Parallel.TP, sg.Memory, strings.Join(sg.Notes, "; ")); err != nil {
			return err
		}
	}
	if p.Decode != nil && p.Decode.SGLang != nil {
		if _, err := fmt.Fprintf(w, "SGLang memory plan (decode pool, %s, tp %d): %s.\nSGLang defaults (decode pool): %s.\n", p.Decode.GPU.Name, p.Decode.Parallel.TP, p.Decode.SGLang.Memory, strings.Join(p.Decode.SGLang.Notes, "; ")); err != nil {
			return err
		}
	}
	if err := p.describeTRTLLM(w); err != nil {
		return err
	}
	if err := p.describeSpeculative(w); err != nil {
		return err
	}
	for i, pp := range []*PoolPlan{&p.PoolPlan, p.Decode} {
		if pp != nil && pp.VLLMMemory != nil {
			pool := "" // colocated: one pool, no name
			if p.Decode != nil {
				pool = [...]string{"prefill pool, ", "decode pool, "}[i]
			}
			if _, err := fmt.Fprintf(w, "vLLM memory plan (%s%s, tp %d): %s.\n", pool, pp.GPU.Name, pp.Parallel.TP, pp.VLLMMemory); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkNumbers checks that every parameter of s's [engine] table e is
// finite, ≥ 0 and at most its physical bound (a CPU cost over a second per
// request, token, kernel or step is no serving stack; non-torch memory over
// a TiB is no GPU), naming the field (and its file and line, or its flag).
func (s *Scenario) checkNumbers(e *Engine) error {
	for _, f := range []struct {
		v, max     float64
		unit       string
		field, flg string
	}{
		{e.RequestMs, 1e3, "ms", "front_end_request_ms", "front-end-request-ms"},
		{e.TokenizeUsPerToken, 1e6, "µs", "tokenize_us_per_token", "tokenize-us-per-token"},
		{e.TokenMs, 1e3, "ms", "front_end_token_ms", "front-end-token-ms"},
		{e.CPUPerRequestUs, 1e6, "µs", "step_cpu_per_request_us", "step-cpu-per-request-us"},
		{e.CustomARLatencyUs, 1e6, "µs", "custom_all_reduce_latency_us", "custom-all-reduce-latency-us"},
		{e.CustomARLinkEff, 1, "", "custom_all_reduce_link_efficiency", "custom-all-reduce-link-efficiency"},
		{e.CustomARMaxBytes, 1 << 40, "bytes", "custom_all_reduce_max_bytes", "custom-all-reduce-max-bytes"},
		{e.NonTorchGiB, 1024, "GiB", "non_torch_memory_gib", "non-torch-memory-gib"},
		{e.LaunchUs, 1e6, "µs", "kernel_launch_us", "kernel-launch-us"},
	} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return s.fieldError("engine."+f.field, f.flg, "%g must be finite and ≥ 0", f.v)
		}
		if f.v > f.max {
			return s.fieldError("engine."+f.field, f.flg, "%s is out of range (at most %s)", strings.TrimSpace(fmt.Sprintf("%g %s", f.v, f.unit)), strings.TrimSpace(fmt.Sprintf("%g %s", f.max, f.unit)))
		}
	}
	return nil
}

// checkSwitches refuses a mechanism switched off beside a parameter of it
// (no_front_end with front_end_request_ms: the parameter would be dropped
// without a word), naming both fields (or flags).
func (s *Scenario) checkSwitches(e *Engine) error {
	for _, c := range []struct {
		off          bool
		offField     string
		param        float64
		field, flag  string
		offFlagShown string
	}{
		{e.NoFrontEnd, "no_front_end", e.RequestMs, "front_end_request_ms", "front-end-request-ms", "no-front-end"},
		{e.NoFrontEnd, "no_front_end", e.TokenizeUsPerToken, "tokenize_us_per_token", "tokenize-us-per-token", "no-front-end"},
		{e.NoFrontEnd, "no_front_end", e.TokenMs, "front_end_token_ms", "front-end-token-ms", "no-front-end"},
		{e.NoStepCPU, "no_step_cpu", e.CPUPerRequestUs, "step_cpu_per_request_us", "step-cpu-per-request-us", "no-step-cpu"},
		{e.NoCustomAllReduce, "no_custom_all_reduce", e.CustomARLatencyUs, "custom_all_reduce_latency_us", "custom-all-reduce-latency-us", "no-custom-all-reduce"},
		{e.NoCustomAllReduce, "no_custom_all_reduce", e.CustomARLinkEff, "custom_all_reduce_link_efficiency", "custom-all-reduce-link-efficiency", "no-custom-all-reduce"},
		{e.NoCustomAllReduce, "no_custom_all_reduce", e.CustomARMaxBytes, "custom_all_reduce_max_bytes", "custom-all-reduce-max-bytes", "no-custom-all-reduce"},
		{e.NoLaunches, "no_kernel_launches", e.LaunchUs, "kernel_launch_us", "kernel-launch-us", "no-kernel-launches"},
		{e.NoMemoryProfile, "no_memory_profile", e.NonTorchGiB, "non_torch_memory_gib", "non-torch-memory-gib", "no-memory-profile"},
	} {
		if c.off && c.param != 0 { // an explicit 0 agrees with "off"
			return s.fieldError("engine."+c.field, c.flag, "%g is given, but engine.%s (--%s) turns that mechanism off: give one of the two", c.param, c.offField, c.offFlagShown)
		}
	}
	return nil
}

// setFields names the [engine] fields other than name that are set, with
// their flags, for the error that says ideal has none.
func (e *Engine) setFields() string {
	var set []string
	for _, f := range []struct {
		on          bool
		field, flag string
	}{
		{e.NoAsyncScheduling, "no_async_scheduling", "no-async-scheduling"},
		{e.NoFrontEnd, "no_front_end", "no-front-end"},
		{e.NoStepCPU, "no_step_cpu", "no-step-cpu"},
		{e.RequestMs != 0, "front_end_request_ms", "front-end-request-ms"},
		{e.TokenizeUsPerToken != 0, "tokenize_us_per_token", "tokenize-us-per-token"},
		{e.TokenMs != 0, "front_end_token_ms", "front-end-token-ms"},
		{e.CPUPerRequestUs != 0, "step_cpu_per_request_us", "step-cpu-per-request-us"},
		{e.NoCustomAllReduce, "no_custom_all_reduce", "no-custom-all-reduce"},
		{e.NoFusedAddNorm, "no_fused_add_norm", "no-fused-add-norm"},
		{e.NoMemoryProfile, "no_memory_profile", "no-memory-profile"},
		{e.EnforceEager, "enforce_eager", "enforce-eager"},
		{e.CustomARLatencyUs != 0, "custom_all_reduce_latency_us", "custom-all-reduce-latency-us"},
		{e.CustomARLinkEff != 0, "custom_all_reduce_link_efficiency", "custom-all-reduce-link-efficiency"},
		{e.CustomARMaxBytes != 0, "custom_all_reduce_max_bytes", "custom-all-reduce-max-bytes"},
		{e.NonTorchGiB != 0, "non_torch_memory_gib", "non-torch-memory-gib"},
		{e.NoCPUOverlap, "no_cpu_overlap", "no-cpu-overlap"},
		{e.NoLaunches, "no_kernel_launches", "no-kernel-launches"},
		{e.LaunchUs != 0, "kernel_launch_us", "kernel-launch-us"},
		{e.NoVLLMDefaults, "no_vllm_defaults", "no-vllm-defaults"},
	} {
		if f.on {
			set = append(set, fmt.Sprintf("engine.%s (--%s)", f.field, f.flag))
		}
	}
	return strings.Join(set, ", ")
}
