package main

import (
	"github.com/servesim/servesim/experiments/scenario"
	"github.com/spf13/pflag"
)

// engineFlags binds the [engine] table's flags on fs (run and validate
// share them), and the [batch] fields of vLLM's memory plan, filling s.
func engineFlags(fs *pflag.FlagSet, s *scenario.Scenario) {
	e := &scenario.Engine{}
	s.Engine = e
	fs.StringVar(&e.Name, "engine", "", "engine model: "+scenario.EngineNames+" (default "+scenario.DefaultEngine+")")
	fs.BoolVar(&e.NoAsyncScheduling, "no-async-scheduling", false, "vllm-v1: synchronous scheduling (vLLM --no-async-scheduling)")
	fs.BoolVar(&e.NoFrontEnd, "no-front-end", false, "vllm-v1: no front-end costs")
	fs.BoolVar(&e.NoStepCPU, "no-step-cpu", false, "vllm-v1: no per-request CPU time per step")
	fs.Float64Var(&e.RequestMs, "front-end-request-ms", 0, "vllm-v1: front-end time per request in ms (default: the GPU catalog entry's front_end_request_ms, else the H100 fit)")
	fs.Float64Var(&e.TokenizeUsPerToken, "tokenize-us-per-token", 0, "vllm-v1: tokenization µs per prompt token")
	fs.Float64Var(&e.TokenMs, "front-end-token-ms", 0, "vllm-v1: front-end time per output token in ms")
	fs.Float64Var(&e.CPUPerRequestUs, "step-cpu-per-request-us", 0, "vllm-v1: step CPU µs per request in the batch (default: the profile's)")
	fs.BoolVar(&e.NoCustomAllReduce, "no-custom-all-reduce", false, "vllm-v1: NCCL for every all-reduce (vLLM --disable-custom-all-reduce)")
	fs.BoolVar(&e.NoFusedAddNorm, "no-fused-add-norm", false, "vllm-v1: residual adds as their own kernels, as the profile times them (not fused into RMSNorm)")
	fs.Float64Var(&e.CustomARLatencyUs, "custom-all-reduce-latency-us", 0, "vllm-v1: custom all-reduce µs per stage (default 5)")
	fs.Float64Var(&e.CustomARLinkEff, "custom-all-reduce-link-efficiency", 0, "vllm-v1: custom all-reduce fraction of link_bw (default 0.7)")
	fs.Float64Var(&e.CustomARMaxBytes, "custom-all-reduce-max-bytes", 0, "vllm-v1: messages of at least this many bytes take NCCL (default 8 MiB)")
	fs.BoolVar(&e.NoMemoryProfile, "no-memory-profile", false, "vllm-v1: plan the KV cache as the ideal engine does")
	fs.BoolVar(&e.EnforceEager, "enforce-eager", false, "vllm-v1: no CUDA graphs, so no CUDA-graph memory (vLLM --enforce-eager)")
	fs.BoolVar(&e.NoCPUOverlap, "no-cpu-overlap", false, "vllm-v1: step CPU in series with the kernels under async scheduling too")
	fs.BoolVar(&e.NoLaunches, "no-kernel-launches", false, "vllm-v1: price no kernel launches and no CUDA-graph padding")
	fs.Float64Var(&e.LaunchUs, "kernel-launch-us", 0, "vllm-v1: CPU µs per kernel or graph launch (default 5)")
	fs.BoolVar(&e.NoVLLMDefaults, "no-vllm-defaults", false, "vllm-v1: the simulator's max_num_seqs/max_num_batched_tokens defaults, not vLLM's for the GPU")
	fs.Float64Var(&e.NonTorchGiB, "non-torch-memory-gib", 0, "vllm-v1: non-torch memory per GPU in GiB (default 0.32 at any TP)")
	fs.Float64Var(&s.Batch.KVCacheMemoryBytes, "kv-cache-memory-bytes", 0, "KV-cache bytes per GPU, replacing the memory plan's (vLLM --kv-cache-memory-bytes)")
	fs.IntVar(&s.Batch.NumGPUBlocksOverride, "num-gpu-blocks-override", 0, "KV blocks per GPU, replacing the memory plan's (vLLM --num-gpu-blocks-override)")
	// The sglang engine's (SGLang's launch_server spellings, sglangtable.go).
	fs.Float64Var(&e.MemFractionStatic, "mem-fraction-static", 0, "sglang: fraction of free GPU memory for weights and the KV pool (default: SGLang's for the GPU)")
	fs.Float64Var(&e.ScheduleConservativeness, "schedule-conservativeness", 0, "sglang: scales new_token_ratio's start (0.7) and floor (default 1)")
	fs.BoolVar(&e.EnableMixedChunk, "enable-mixed-chunk", false, "sglang: decodes join prefill batches")
	fs.IntVar(&e.CUDAGraphMaxBS, "cuda-graph-max-bs", 0, "sglang: largest decode batch captured in a CUDA graph (default: SGLang's for the GPU)")
	fs.IntVar(&e.MaxPrefillTokens, "max-prefill-tokens", 0, "sglang: tokens of a prefill batch at most (default 16384)")
	fs.BoolVar(&e.DisableOverlapSchedule, "disable-overlap-schedule", false, "sglang: schedule, run and wait in series (no overlap scheduling)")
	switchVar(fs, boolTo{&e.EnforceEager, true}, "disable-cuda-graph", "SGLang's name of --enforce-eager: no CUDA graphs")
	fs.Var(specConfig{s}, "speculative-config", `speculative decoding, vLLM's JSON: '{"method": "eagle3", "num_speculative_tokens": 3}' (methods `+scenario.SpecMethods+`; also acceptance_rates, acceptance_trace, draft_vocab, proposer_cpu_us, verify: decode or batch-expansion)`)
}

// engineScenarioFlags are the [engine] entries of scenarioFlags: src.Engine
// is always set (engineFlags binds it).
var engineScenarioFlags = map[string]scenarioFlag{
	"engine":                  {"engine.name", func(d, s *scenario.Scenario) { engineOf(d).Name = s.Engine.Name }},
	"no-async-scheduling":     {"engine.no_async_scheduling", func(d, s *scenario.Scenario) { engineOf(d).NoAsyncScheduling = s.Engine.NoAsyncScheduling }},
	"no-front-end":            {"engine.no_front_end", func(d, s *scenario.Scenario) { engineOf(d).NoFrontEnd = s.Engine.NoFrontEnd }},
	"no-step-cpu":             {"engine.no_step_cpu", func(d, s *scenario.Scenario) { engineOf(d).NoStepCPU = s.Engine.NoStepCPU }},
	"front-end-request-ms":    {"engine.front_end_request_ms", func(d, s *scenario.Scenario) { engineOf(d).RequestMs = s.Engine.RequestMs }},
	"tokenize-us-per-token":   {"engine.tokenize_us_per_token", func(d, s *scenario.Scenario) { engineOf(d).TokenizeUsPerToken = s.Engine.TokenizeUsPerToken }},
	"front-end-token-ms":      {"engine.front_end_token_ms", func(d, s *scenario.Scenario) { engineOf(d).TokenMs = s.Engine.TokenMs }},
	"step-cpu-per-request-us": {"engine.step_cpu_per_request_us", func(d, s *scenario.Scenario) { engineOf(d).CPUPerRequestUs = s.Engine.CPUPerRequestUs }},
	"no-custom-all-reduce":    {"engine.no_custom_all_reduce", func(d, s *scenario.Scenario) { engineOf(d).NoCustomAllReduce = s.Engine.NoCustomAllReduce }},
	"no-fused-add-norm":       {"engine.no_fused_add_norm", func(d, s *scenario.Scenario) { engineOf(d).NoFusedAddNorm = s.Engine.NoFusedAddNorm }},
	"custom-all-reduce-latency-us": {"engine.custom_all_reduce_latency_us", func(d, s *scenario.Scenario) {
		engineOf(d).CustomARLatencyUs = s.Engine.CustomARLatencyUs
	}},
	"custom-all-reduce-link-efficiency": {"engine.custom_all_reduce_link_efficiency", func(d, s *scenario.Scenario) {
		engineOf(d).CustomARLinkEff = s.Engine.CustomARLinkEff
	}},
	"custom-all-reduce-max-bytes": {"engine.custom_all_reduce_max_bytes", func(d, s *scenario.Scenario) { engineOf(d).CustomARMaxBytes = s.Engine.CustomARMaxBytes }},
	"no-memory-profile":           {"engine.no_memory_profile", func(d, s *scenario.Scenario) { engineOf(d).NoMemoryProfile = s.Engine.NoMemoryProfile }},
	"enforce-eager":               {"engine.enforce_eager", func(d, s *scenario.Scenario) { engineOf(d).EnforceEager = s.Engine.EnforceEager }},
	"no-cpu-overlap":              {"engine.no_cpu_overlap", func(d, s *scenario.Scenario) { engineOf(d).NoCPUOverlap = s.Engine.NoCPUOverlap }},
	"no-kernel-launches":          {"engine.no_kernel_launches", func(d, s *scenario.Scenario) { engineOf(d).NoLaunches = s.Engine.NoLaunches }},
	"kernel-launch-us":            {"engine.kernel_launch_us", func(d, s *scenario.Scenario) { engineOf(d).LaunchUs = s.Engine.LaunchUs }},
	"no-vllm-defaults":            {"engine.no_vllm_defaults", func(d, s *scenario.Scenario) { engineOf(d).NoVLLMDefaults = s.Engine.NoVLLMDefaults }},
	"non-torch-memory-gib":        {"engine.non_torch_memory_gib", func(d, s *scenario.Scenario) { engineOf(d).NonTorchGiB = s.Engine.NonTorchGiB }},
	"kv-cache-memory-bytes":       {"batch.kv_cache_memory_bytes", func(d, s *scenario.Scenario) { d.Batch.KVCacheMemoryBytes = s.Batch.KVCacheMemoryBytes }},
	"num-gpu-blocks-override":     {"batch.num_gpu_blocks_override", func(d, s *scenario.Scenario) { d.Batch.NumGPUBlocksOverride = s.Batch.NumGPUBlocksOverride }},
	"mem-fraction-static":         {"engine.mem_fraction_static", func(d, s *scenario.Scenario) { engineOf(d).MemFractionStatic = s.Engine.MemFractionStatic }},
	"schedule-conservativeness": {"engine.schedule_conservativeness", func(d, s *scenario.Scenario) {
		engineOf(d).ScheduleConservativeness = s.Engine.ScheduleConservativeness
	}},
	"enable-mixed-chunk":       {"engine.enable_mixed_chunk", func(d, s *scenario.Scenario) { engineOf(d).EnableMixedChunk = s.Engine.EnableMixedChunk }},
	"cuda-graph-max-bs":        {"engine.cuda_graph_max_bs", func(d, s *scenario.Scenario) { engineOf(d).CUDAGraphMaxBS = s.Engine.CUDAGraphMaxBS }},
	"max-prefill-tokens":       {"engine.max_prefill_tokens", func(d, s *scenario.Scenario) { engineOf(d).MaxPrefillTokens = s.Engine.MaxPrefillTokens }},
	"disable-cuda-graph":       {"engine.enforce_eager", func(d, s *scenario.Scenario) { engineOf(d).EnforceEager = s.Engine.EnforceEager }},
	"disable-overlap-schedule": {"engine.disable_overlap_schedule", func(d, s *scenario.Scenario) { engineOf(d).DisableOverlapSchedule = s.Engine.DisableOverlapSchedule }},
	"speculative-config": {"speculative", func(d, s *scenario.Scenario) {
		if s.Speculative != nil {
			c := *s.Speculative
			d.Speculative = &c
		}
	}},
}

func init() {
	for k, v := range engineScenarioFlags {
		scenarioFlags[k] = v
	}
}

// engineOf returns d's [engine] table, creating it (a copy: d may share
// its table with the scenario it was copied from).
func engineOf(d *scenario.Scenario) *scenario.Engine {
	e := scenario.Engine{}
	if d.Engine != nil {
		e = *d.Engine
	}
	d.Engine = &e
	return d.Engine
}
