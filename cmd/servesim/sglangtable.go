package main

// The flags of SGLang's launch_server (python -m sglang.launch_server,
// sglang serve) for the parallel layouts and the batch limits, and what
// `servesim run` does with each, read from ServerArgs in
// python/sglang/srt/server_args.py of github.com/sgl-project/sglang at
// 001067fffe33427bee0ed2f007fb7551a1d76b44 (the dataclass fields; argparse
// derives --tp-size from tp_size, and Arg.aliases adds the others). The
// notes quote three code paths read in other versions of the same
// repository: layers/dp_attention.py compute_dp_attention_world_info
// (attn_tp_size = tp_size // dp_size), server_args.py _handle_a2a_moe
// (DeepEP sets ep_size = tp_size) and
// model_executor/model_runner_kv_cache_mixin.py profile_max_num_token.
//
// An SGLang command line runs on the sglang engine model (its scheduler,
// its memory plan; experiments/engine_sglang.go) unless --engine (or the
// --config file) names another, and the run header names what each SGLang
// flag became. The classes are
// vllmFlags': honoured (the same scenario field as servesim's flag,
// recorded as set explicitly), no effect, or refused with the reason. A
// refused flag given SGLang's default value (dflt) changes nothing. A
// flag here and a vLLM-only spelling of the same field (vllm) on one
// command line are an error naming both. TestSGLangFlagWalk walks it.
//
// Shared spellings: SGLang also takes --tensor-parallel-size,
// --pipeline-parallel-size and --data-parallel-size (aliases of tp_size,
// pp_size, dp_size), --enable-eplb, --kv-cache-dtype and --quantization,
// which vllmflags.go binds already; --tp and --dp are servesim's.

type sglangFlag struct {
	name    string
	aliases []string // SGLang's other spellings (Arg.aliases)
	kind    vllmKind // vValue or vSwitch
	class   vllmClass
	equiv   string   // servesim's flag or field
	note    string   // what SGLang means, and how servesim reads it
	dflt    []string // values of a refused flag that are SGLang's default (no effect)
	vllm    []string // vLLM's (or servesim's) spellings of the same field
	bound   string   // bound elsewhere (run.go, vllmflags.go): where
}

var sglangFlags = []sglangFlag{
	{name: "tp-size", class: honoured, equiv: "--tp", vllm: []string{"tp", "tensor-parallel-size"}, note: "tensor-parallel GPUs; with --enable-dp-attention SGLang's tp_size is every GPU of the DP group, so servesim's tp is tp_size / dp_size (dp_attention.py: attn_tp_size = tp_size // dp_size)"},
	{name: "pp-size", class: honoured, equiv: "--pp", vllm: []string{"pp", "pipeline-parallel-size"}},
	{name: "dp-size", class: honoured, equiv: "--replicas, or --dp with --enable-dp-attention", vllm: []string{"data-parallel-size", "dp"},
		note: "without --enable-dp-attention SGLang's DP is whole replicas behind its DataParallelController (servesim: --replicas, behind servesim's router); with it, DP attention ranks (servesim: --dp, each rank its own scheduler and KV cache, MoE layers in lock-step). servesim's --dp and --data-parallel-size are vLLM's DP ranks either way"},
	{name: "enable-dp-attention", kind: vSwitch, class: honoured, equiv: "--dp", note: "--dp-size (or --dp) ranks of tp_size / dp_size GPUs each; needs --tp-size divisible by it"},
	{name: "ep-size", aliases: []string{"ep", "expert-parallel-size"}, class: honoured, equiv: "--expert-parallel", vllm: []string{"enable-expert-parallel", "no-enable-expert-parallel"},
		note: "1 is no EP; servesim shards the routed experts over every GPU of the DP group, so ep_size must equal tp_size (servesim's dp × tp, a stage's under --pp-size); SGLang's ep_size < tp_size (the MoE's own TP of tp_size / ep_size inside an EP rank) is refused"},
	{name: "moe-a2a-backend", class: honoured, equiv: "--all2all-backend", vllm: []string{"all2all-backend"},
		note: "none is the gather and scatter of the MoE layer's tokens (allgather_reducescatter); deepep with --deepep-mode normal (deepep_high_throughput) or low_latency (deepep_low_latency) also turns EP on, as SGLang sets ep_size = tp_size for it (server_args.py _handle_a2a_moe); mooncake, nixl, mori, flashinfer, megamoe, deepep_v2, pplx, ascend_* are refused"},
	{name: "deepep-mode", class: honoured, equiv: "--all2all-backend", note: "normal or low_latency; SGLang's default auto (low_latency for decode batches, normal for prefill batches) switches per batch, which servesim does not: refused with deepep (a disaggregated run gives each pool its own: --all2all-backend, --decode-all2all-backend)"},
	{name: "enable-two-batch-overlap", kind: vSwitch, class: honoured, equiv: "--two-batch-overlap", vllm: []string{"enable-dbo", "no-enable-dbo"}, bound: "run.go", note: "SGLang's split rule, thresholds 1 and 1, unless a threshold is given"},
	{name: "ep-num-redundant-experts", class: honoured, equiv: "--eplb-redundant-experts", vllm: []string{"num-redundant-experts"}},
	{name: "chunked-prefill-size", class: honoured, equiv: "--max-num-batched-tokens and --chunked-prefill", vllm: []string{"max-num-batched-tokens", "enable-chunked-prefill", "no-enable-chunked-prefill"},
		note: "-1 is chunked prefill off (--chunked-prefill=false); N > 0 is a chunk of N tokens, of N // dp_size a rank under --enable-dp-attention (SGLang divides it: _handle_data_parallelism): the sglang engine caps a prefill batch's chunk at N as SGLang does; under vllm-v1 N is its token budget, which counts a step's decode tokens too; unset, the sglang engine takes SGLang's default for the GPU"},
	{name: "max-running-requests", class: honoured, equiv: "--max-num-seqs", vllm: []string{"max-num-seqs"}, note: "under --enable-dp-attention max_running_requests // dp_size a rank (SGLang PR 20063: a DP-attention worker's request pool); with --pp-size > 1 the sglang engine runs (max_running_requests // pp_size) × pp_size, pp_size micro-batches of pp_max_micro_batch_size (scheduler.py), other engines refuse it; unset, the sglang engine derives it from the KV pool as SGLang does (tp_worker.py), vllm-v1 takes vLLM's default for the GPU"},
	{name: "context-length", class: honoured, equiv: "--max-model-len", vllm: []string{"max-model-len"}},
	{name: "schedule-policy", class: honoured, equiv: "--scheduler", vllm: []string{"scheduling-policy"}, note: "fcfs (SGLang's default) and priority; lpm and dfs-weight (radix-tree prefix order), lof (longest output first), random and routing-key are refused"},
	{name: "disable-radix-cache", kind: vSwitch, class: honoured, equiv: "--prefix-caching=false", vllm: []string{"enable-prefix-caching", "no-enable-prefix-caching"},
		note: "SGLang's radix cache is on by default, so an SGLang command line without this flag turns prefix caching on (as vllm serve's default does); servesim reuses whole KV blocks, the radix cache any token run"},
	{name: "page-size", class: honoured, equiv: "--block-size", vllm: []string{"block-size"}, note: "unset, the sglang engine pages one token at a time (SGLang's page_size 1); vllm-v1 keeps its 16-token blocks"},
	{name: "enable-mixed-chunk", kind: vSwitch, class: honoured, equiv: "engine.enable_mixed_chunk", bound: "engineflags.go", note: "the sglang engine's decodes join prefill batches (vllm-v1 always mixes them)"},
	{name: "max-prefill-tokens", class: honoured, equiv: "engine.max_prefill_tokens", bound: "engineflags.go", note: "the sglang engine's cap on a prefill batch's tokens (PrefillAdder rem_input_tokens)"},
	{name: "mem-fraction-static", class: honoured, equiv: "engine.mem_fraction_static", bound: "engineflags.go", vllm: []string{"gpu-memory-utilization"},
		note: "the sglang engine's KV pool: free memory × fraction − weights (model_runner.py profile_max_num_token); vLLM's --gpu-memory-utilization is another budget (it holds the activations and CUDA graphs too)"},
	{name: "schedule-conservativeness", class: honoured, equiv: "engine.schedule_conservativeness", bound: "engineflags.go", note: "scales the sglang engine's new_token_ratio"},
	{name: "cuda-graph-max-bs", class: honoured, equiv: "engine.cuda_graph_max_bs", bound: "engineflags.go"},
	{name: "disable-overlap-schedule", kind: vSwitch, class: honoured, equiv: "engine.disable_overlap_schedule", bound: "engineflags.go"},
	{name: "disable-cuda-graph", kind: vSwitch, class: honoured, equiv: "--enforce-eager", bound: "engineflags.go", vllm: []string{"enforce-eager"}, note: "every step eager, no CUDA-graph padding (and, under vllm-v1, no CUDA-graph memory)"},
}
