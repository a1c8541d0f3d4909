package main

// Every flag of `vllm serve` and `vllm bench serve`, and what `servesim
// run` does with it, read from vLLM's argument parsers at these commits of
// github.com/vllm-project/vllm:
//
//	vllm/engine/arg_utils.py              99d7eb5d6a512cfcc5a2b104f24ebf2d6cda772b  EngineArgs.add_cli_args, AsyncEngineArgs.add_cli_args
//	vllm/entrypoints/openai/cli_args.py   789340fbad95a900ca3c467c9cee33b3d905fd61  make_arg_parser, FrontendArgs
//	vllm/benchmarks/serve.py              def9ce85ba1079af970a58ed3d42dd861ae35d58  add_cli_args
//	vllm/benchmarks/datasets/arg_utils.py 237145ea190a901f93c570f157091fe43835bc63  add_dataset_parser
//
// A flag is honoured (it sets the servesim field named in equiv; the flag
// is bound in run.go, vllmflags.go, engineflags.go, dataset.go or
// saveresult.go), has no effect in a simulation (accepted, and listed in
// the run header), or is refused (an error naming it and the servesim
// equivalent, where one exists). A refused flag given vLLM's default value
// (dflt: -pp 1, --cpu-offload-gb 0) changes nothing and counts as no
// effect. Boolean flags of argparse.BooleanOptionalAction (kind vBool) also
// have a --no- form. TestVLLMFlagWalk walks the whole table.
//
// Three names mean something else in servesim: --profile (the kernel-time
// model; vLLM bench's bare --profile switch is read as vllm-profile),
// --config (a scenario TOML; vLLM's YAML of serve options is refused by
// its extension) and -q (servesim's --quiet; spell vLLM's --quantization).

type vllmClass int

const (
	honoured vllmClass = iota
	noEffect
	refused
)

func (c vllmClass) String() string {
	return [...]string{"honoured", "no effect", "refused"}[c]
}

// vllmKind is how argparse reads the flag.
type vllmKind int

const (
	vValue  vllmKind = iota // one value
	vBool                   // BooleanOptionalAction: --NAME and --no-NAME
	vSwitch                 // store_true
	vList                   // nargs "+" or "*": the words up to the next flag
	vOpt                    // nargs "?": a value or none
)

type vllmFlag struct {
	name  string // without the dashes
	short string // vLLM's multi-letter shorthand (-pp), rewritten by vllmArgs
	src   string // "serve", "bench" or "both"
	kind  vllmKind
	class vllmClass
	equiv string // servesim's flag or field
	note  string
	dflt  []string // values of a refused flag that are vLLM's default (no effect)
	as    string   // the name servesim binds it under, when not name; "-": servesim's own flag of that name, which run checks
}

const (
	noLoad  = "loading is not simulated"
	noText  = "servesim's workloads are text only"
	noHTTP  = "the front end's HTTP and API options do not change its simulated cost"
	noLog   = "logging and tracing are not simulated"
	noTok   = "servesim has no tokenizer: prompts and outputs are token counts"
	noSamp  = "sampling does not change a step's cost, and output lengths come from the workload"
	noLoRA  = "LoRA adapters are not modelled"
	noEP    = "EPLB's JSON configuration is not read"
	noDP    = "one node's share of a multi-node DP launch is not simulated alone"
	noDS    = "a dataset servesim does not read"
	noGraph = "servesim pads decode batches to vLLM's default CUDA-graph capture sizes (sim/serve/engine_step.go)"
)

var vllmFlags = []vllmFlag{
	// vllm serve: ModelConfig (arg_utils.py).
	{name: "model", src: "both", class: honoured, equiv: "--model", note: "a catalog name or Hugging Face id"},
	{name: "runner", src: "serve", class: refused, note: "servesim simulates text generation", dflt: []string{"auto", "generate"}},
	{name: "convert", src: "serve", class: refused, note: "servesim simulates text generation", dflt: []string{"auto", "none"}},
	{name: "task", src: "serve", class: refused, note: "servesim simulates text generation", dflt: []string{"auto", "generate"}},
	{name: "tokenizer", src: "both", class: noEffect, note: noTok},
	{name: "tokenizer-mode", src: "both", class: noEffect, note: noTok},
	{name: "trust-remote-code", src: "both", kind: vBool, class: noEffect, note: "no code is loaded"},
	{name: "dtype", src: "serve", class: honoured, equiv: "--weights", note: "auto, bfloat16, half, float16 are bf16; float32 is refused"},
	{name: "seed", src: "both", class: honoured, equiv: "--seed"},
	{name: "hf-config-path", src: "serve", class: honoured, equiv: "--model-config"},
	{name: "allowed-local-media-path", src: "serve", class: noEffect, note: noText},
	{name: "allowed-media-domains", src: "serve", kind: vList, class: noEffect, note: noText},
	{name: "revision", src: "serve", class: noEffect, note: noLoad},
	{name: "code-revision", src: "serve", class: noEffect, note: noLoad},
	{name: "rope-scaling", src: "serve", class: refused, equiv: "--model-config with rope_scaling", note: "a context extension changes max_model_len: import a config.json that carries it"},
	{name: "rope-theta", src: "serve", class: noEffect, note: "the rotary base does not change any kernel's cost"},
	{name: "tokenizer-revision", src: "serve", class: noEffect, note: noTok},
	{name: "max-model-len", src: "serve", class: honoured, equiv: "--max-model-len"},
	{name: "quantization", src: "serve", class: honoured, equiv: "--weights", note: "fp8, modelopt_fp4, nvfp4; vLLM's -q is servesim's --quiet"},
	{name: "enforce-eager", src: "serve", kind: vBool, class: honoured, equiv: "engine.enforce_eager"},
	{name: "max-logprobs", src: "serve", class: noEffect, note: noSamp},
	{name: "logprobs-mode", src: "serve", class: noEffect, note: noSamp},
	{name: "disable-sliding-window", src: "serve", kind: vBool, class: noEffect, note: "servesim prices full attention on every layer already"},
	{name: "disable-cascade-attn", src: "serve", kind: vBool, class: noEffect, note: "cascade attention is not modelled"},
	{name: "skip-tokenizer-init", src: "serve", kind: vBool, class: noEffect, note: noTok},
	{name: "enable-prompt-embeds", src: "serve", kind: vBool, class: noEffect, note: "prompts are token counts"},
	{name: "served-model-name", src: "both", kind: vList, class: noEffect, note: "the API's name for the model"},
	{name: "config-format", src: "serve", class: noEffect, note: noLoad},
	{name: "hf-token", src: "serve", kind: vOpt, class: noEffect, note: noLoad},
	{name: "hf-overrides", src: "serve", class: refused, equiv: "--model-config", note: "overrides change the architecture: edit a config.json and import it"},
	{name: "pooler-config", src: "serve", class: refused, note: "pooling models are not modelled"},
	{name: "override-pooler-config", src: "serve", class: refused, note: "pooling models are not modelled"},
	{name: "logits-processor-pattern", src: "serve", class: noEffect, note: noSamp},
	{name: "generation-config", src: "serve", class: noEffect, note: noSamp},
	{name: "override-generation-config", src: "serve", class: noEffect, note: noSamp},
	{name: "enable-sleep-mode", src: "serve", kind: vBool, class: noEffect, note: "the server never sleeps in a run"},
	{name: "model-impl", src: "serve", class: refused, note: "kernels are priced as vLLM's own model code", dflt: []string{"auto", "vllm"}},
	{name: "override-attention-dtype", src: "serve", class: refused, equiv: "--kv", note: "attention runs in the KV cache's precision"},
	{name: "logits-processors", src: "serve", kind: vList, class: noEffect, note: noSamp},
	{name: "io-processor-plugin", src: "serve", class: noEffect, note: "pooling I/O plugins"},
	// LoadConfig.
	{name: "load-format", src: "serve", class: noEffect, note: noLoad},
	{name: "download-dir", src: "serve", class: noEffect, note: noLoad},
	{name: "safetensors-load-strategy", src: "serve", class: noEffect, note: noLoad},
	{name: "model-loader-extra-config", src: "serve", class: noEffect, note: noLoad},
	{name: "ignore-patterns", src: "serve", kind: vList, class: noEffect, note: noLoad},
	{name: "use-tqdm-on-load", src: "serve", kind: vBool, class: noEffect, note: noLoad},
	{name: "pt-load-map-location", src: "serve", class: noEffect, note: noLoad},
	// StructuredOutputsConfig (and its deprecated guided-decoding flags).
	{name: "reasoning-parser", src: "serve", class: noEffect, note: "output parsing"},
	{name: "guided-decoding-backend", src: "serve", class: noEffect, note: "structured outputs are not modelled"},
	{name: "guided-decoding-disable-fallback", src: "serve", class: noEffect, note: "structured outputs are not modelled"},
	{name: "guided-decoding-disable-any-whitespace", src: "serve", class: noEffect, note: "structured outputs are not modelled"},
	{name: "guided-decoding-disable-additional-properties", src: "serve", class: noEffect, note: "structured outputs are not modelled"},
	// ParallelConfig.
	{name: "distributed-executor-backend", src: "serve", class: noEffect, note: "one process per GPU either way"},
	{name: "pipeline-parallel-size", short: "pp", src: "serve", class: honoured, equiv: "--pp", note: "layers split over the stages as vLLM's get_pp_indices, up to pp micro-batches in flight; with -ep each stage's experts over that stage's dp × tp GPUs"},
	{name: "tensor-parallel-size", short: "tp", src: "serve", class: honoured, equiv: "--tp"},
	{name: "decode-context-parallel-size", short: "dcp", src: "serve", class: refused, note: "decode context parallelism is not modelled", dflt: []string{"1"}},
	{name: "data-parallel-size", short: "dp", src: "serve", class: honoured, equiv: "--dp", note: "each rank an instance with its own scheduler and KV cache, behind vLLM's DP load balancer (waiting × 4 + running)"},
	{name: "data-parallel-rank", short: "dpn", src: "serve", class: refused, equiv: "--dp", note: noDP},
	{name: "data-parallel-start-rank", short: "dpr", src: "serve", class: refused, equiv: "--dp", note: noDP},
	{name: "data-parallel-size-local", short: "dpl", src: "serve", class: refused, equiv: "--dp", note: noDP},
	{name: "data-parallel-address", short: "dpa", src: "serve", class: noEffect, note: noHTTP},
	{name: "data-parallel-rpc-port", short: "dpp", src: "serve", class: noEffect, note: noHTTP},
	{name: "data-parallel-backend", short: "dpb", src: "serve", class: noEffect, note: "only with data parallelism"},
	{name: "data-parallel-hybrid-lb", src: "serve", kind: vBool, class: refused, note: "per-node load balancing is not modelled: one DP load balancer routes to every rank"},
	{name: "enable-expert-parallel", short: "ep", src: "serve", kind: vBool, class: honoured, equiv: "--expert-parallel", note: "routed experts sharded over the dp × tp GPUs (of each pipeline stage: vLLM's EP group per PP rank), with the dispatch and combine all-to-all"},
	{name: "all2all-backend", src: "serve", class: honoured, equiv: "--all2all-backend", note: "allgather_reducescatter, deepep_high_throughput, deepep_low_latency"},
	{name: "enable-dbo", src: "serve", kind: vBool, class: honoured, equiv: "--two-batch-overlap", note: "an expert-parallel step above the threshold runs as two micro-batches whose all-to-all overlaps the other's compute"},
	{name: "dbo-decode-token-threshold", src: "serve", class: honoured, equiv: "--tbo-decode-token-threshold", note: "decodes-only batches split above it (default 32)"},
	{name: "dbo-prefill-token-threshold", src: "serve", class: honoured, equiv: "--tbo-prefill-token-threshold", note: "batches with a prefill split above it (default 512)"},
	{name: "disable-nccl-for-dp-synchronization", src: "serve", kind: vBool, class: noEffect, note: "only with data parallelism"},
	{name: "enable-eplb", src: "serve", kind: vBool, class: honoured, equiv: "--eplb", note: "the expert load skew falls to EPLB's measured 1.008 (vLLM PR 50647)"},
	{name: "eplb-config", src: "serve", class: refused, equiv: "--eplb-redundant-experts", note: noEP},
	{name: "expert-placement-strategy", src: "serve", class: refused, note: "experts sit on the EP ranks in vLLM's linear order", dflt: []string{"linear"}},
	{name: "num-redundant-experts", src: "serve", class: honoured, equiv: "--eplb-redundant-experts", note: "EPLB's extra expert copies, held beside the logical experts"},
	{name: "eplb-window-size", src: "serve", class: noEffect, note: "only with --enable-eplb"},
	{name: "eplb-step-interval", src: "serve", class: noEffect, note: "only with --enable-eplb"},
	{name: "eplb-log-balancedness", src: "serve", kind: vBool, class: noEffect, note: noLog},
	{name: "max-parallel-loading-workers", src: "serve", class: noEffect, note: noLoad},
	{name: "ray-workers-use-nsight", src: "serve", kind: vBool, class: noEffect, note: noLog},
	{name: "disable-custom-all-reduce", src: "serve", kind: vBool, class: honoured, equiv: "--no-custom-all-reduce"},
	{name: "worker-cls", src: "serve", class: noEffect, note: "the worker's class"},
	{name: "worker-extension-cls", src: "serve", class: noEffect, note: "the worker's class"},
	{name: "enable-multimodal-encoder-data-parallel", src: "serve", kind: vSwitch, class: noEffect, note: noText},
	// CacheConfig.
	{name: "block-size", src: "serve", class: honoured, equiv: "--block-size"},
	{name: "gpu-memory-utilization", src: "serve", class: honoured, equiv: "--gpu-memory-utilization"},
	{name: "kv-cache-memory-bytes", src: "serve", class: honoured, equiv: "--kv-cache-memory-bytes"},
	{name: "swap-space", src: "serve", class: honoured, equiv: "batch.swap_space_gb", note: "GiB, as vLLM"},
	{name: "kv-offloading-size", src: "serve", class: honoured, equiv: "offload.cpu_gib", note: "GiB over the instance's GPUs, as vLLM (CacheConfig.kv_offloading_size, after the pinned commit)"},
	{name: "kv-offloading-backend", src: "serve", class: honoured, equiv: "offload.backend", note: "native or lmcache (CacheConfig.kv_offloading_backend, after the pinned commit)"},
	{name: "kv-cache-dtype", src: "serve", class: honoured, equiv: "--kv"},
	{name: "num-gpu-blocks-override", src: "serve", class: honoured, equiv: "--num-gpu-blocks-override"},
	{name: "enable-prefix-caching", src: "serve", kind: vBool, class: honoured, equiv: "--prefix-caching"},
	{name: "prefix-caching-hash-algo", src: "serve", class: noEffect, note: "hashing is not priced"},
	{name: "cpu-offload-gb", src: "serve", class: refused, note: "weight offload to CPU is not modelled", dflt: []string{"0"}},
	{name: "calculate-kv-scales", src: "serve", kind: vBool, class: noEffect, note: "FP8 KV costs what it costs with fixed scales"},
	{name: "kv-sharing-fast-prefill", src: "serve", kind: vBool, class: noEffect, note: "no catalog model shares KV across layers"},
	{name: "mamba-cache-dtype", src: "serve", class: noEffect, note: "servesim's models have no Mamba layers"},
	{name: "mamba-ssm-cache-dtype", src: "serve", class: noEffect, note: "servesim's models have no Mamba layers"},
	{name: "mamba-block-size", src: "serve", class: noEffect, note: "servesim's models have no Mamba layers"},
	// MultiModalConfig.
	{name: "limit-mm-per-prompt", src: "serve", class: noEffect, note: noText},
	{name: "enable-mm-embeds", src: "serve", kind: vBool, class: noEffect, note: noText},
	{name: "media-io-kwargs", src: "serve", class: noEffect, note: noText},
	{name: "mm-processor-kwargs", src: "serve", class: noEffect, note: noText},
	{name: "mm-processor-cache-gb", src: "serve", class: noEffect, note: noText},
	{name: "disable-mm-preprocessor-cache", src: "serve", kind: vSwitch, class: noEffect, note: noText},
	{name: "mm-processor-cache-type", src: "serve", class: noEffect, note: noText},
	{name: "mm-shm-cache-max-object-size-mb", src: "serve", class: noEffect, note: noText},
	{name: "mm-encoder-tp-mode", src: "serve", class: noEffect, note: noText},
	{name: "mm-encoder-attn-backend", src: "serve", class: noEffect, note: noText},
	{name: "interleave-mm-strings", src: "serve", kind: vBool, class: noEffect, note: noText},
	{name: "skip-mm-profiling", src: "serve", kind: vBool, class: noEffect, note: noText},
	{name: "video-pruning-rate", src: "serve", class: noEffect, note: noText},
	// LoRAConfig.
	{name: "enable-lora", src: "serve", kind: vBool, class: refused, note: noLoRA},
	{name: "max-loras", src: "serve", class: refused, note: noLoRA},
	{name: "max-lora-rank", src: "serve", class: refused, note: noLoRA},
	{name: "lora-extra-vocab-size", src: "serve", class: refused, note: noLoRA},
	{name: "lora-dtype", src: "serve", class: refused, note: noLoRA},
	{name: "max-cpu-loras", src: "serve", class: refused, note: noLoRA},
	{name: "fully-sharded-loras", src: "serve", kind: vBool, class: refused, note: noLoRA},
	{name: "default-mm-loras", src: "serve", class: refused, note: noLoRA},
	// ObservabilityConfig.
	{name: "show-hidden-metrics-for-version", src: "serve", class: noEffect, note: noLog},
	{name: "otlp-traces-endpoint", src: "serve", class: noEffect, note: noLog},
	{name: "collect-detailed-traces", src: "serve", kind: vList, class: noEffect, note: noLog},
	// SchedulerConfig.
	{name: "max-num-batched-tokens", src: "serve", class: honoured, equiv: "--max-num-batched-tokens"},
	{name: "max-num-seqs", src: "serve", class: honoured, equiv: "--max-num-seqs"},
	{name: "max-num-partial-prefills", src: "serve", class: refused, note: "concurrent partial prefills are not modelled", dflt: []string{"1"}},
	{name: "max-long-partial-prefills", src: "serve", class: refused, note: "concurrent partial prefills are not modelled", dflt: []string{"1"}},
	{name: "long-prefill-token-threshold", src: "serve", class: refused, note: "the long-prefill cap is not modelled", dflt: []string{"0"}},
	{name: "num-lookahead-slots", src: "serve", class: noEffect, note: "speculation reserves num_speculative_tokens lookahead slots, as vLLM sets them"},
	{name: "scheduling-policy", src: "serve", class: honoured, equiv: "--scheduler", note: "fcfs, priority"},
	{name: "enable-chunked-prefill", src: "serve", kind: vBool, class: honoured, equiv: "--chunked-prefill"},
	{name: "disable-chunked-mm-input", src: "serve", kind: vBool, class: noEffect, note: noText},
	{name: "scheduler-cls", src: "serve", class: refused, equiv: "--policy", note: "a custom scheduler class cannot be simulated; servesim's batching policies can"},
	{name: "external_parameters", src: "serve", class: refused, note: "a custom scheduler's parameters (spelled with an underscore at this commit)"},
	{name: "disable-hybrid-kv-cache-manager", src: "serve", kind: vBool, class: noEffect, note: "servesim's KV cache is one pool of full-attention blocks"},
	{name: "async-scheduling", src: "serve", kind: vBool, class: honoured, equiv: "--no-async-scheduling"},
	// CompilationConfig and VllmConfig.
	{name: "cudagraph-capture-sizes", src: "serve", kind: vList, class: refused, note: noGraph},
	{name: "cuda-graph-sizes", src: "serve", kind: vList, class: refused, note: noGraph},
	{name: "max-cudagraph-capture-size", src: "serve", class: refused, note: noGraph},
	{name: "speculative-config", src: "serve", class: honoured, equiv: "[speculative]", note: "methods ngram, eagle, eagle3, mtp, draft_model; acceptance from acceptance_rates, acceptance_trace or the method's sourced default"},
	{name: "kv-transfer-config", src: "serve", class: honoured, equiv: "offload", note: "OffloadingConnector and LMCacheConnectorV1 become KV offload tiers; the transfer connectors are refused (prefill/decode disaggregation: --decode-replicas)"},
	{name: "kv-events-config", src: "serve", class: noEffect, note: noLog},
	{name: "compilation-config", short: "O", src: "serve", class: refused, equiv: "--enforce-eager", note: "servesim prices vLLM's default compilation (CUDA graphs, fused ops)"},
	{name: "additional-config", src: "serve", class: noEffect, note: "platform plugins' options"},
	{name: "structured-outputs-config", src: "serve", class: noEffect, note: "structured outputs are not modelled"},
	{name: "disable-log-stats", src: "serve", kind: vSwitch, class: noEffect, note: noLog},
	{name: "aggregate-engine-logging", src: "serve", kind: vSwitch, class: noEffect, note: noLog},
	{name: "enable-log-requests", src: "serve", kind: vBool, class: noEffect, note: noLog},
	{name: "disable-log-requests", src: "serve", kind: vBool, class: noEffect, note: noLog},
	// make_arg_parser and FrontendArgs (cli_args.py).
	{name: "headless", src: "serve", kind: vSwitch, class: noEffect, note: noHTTP},
	{name: "api-server-count", short: "asc", src: "serve", class: refused, note: "the front end is fitted with one API server process", dflt: []string{"1"}},
	{name: "config", src: "serve", as: "-", class: refused, equiv: "--config (a scenario TOML)", note: "vLLM's YAML of serve options is not read; give its options as flags"},
	{name: "host", src: "both", class: noEffect, note: noHTTP},
	{name: "port", src: "both", class: noEffect, note: noHTTP},
	{name: "uds", src: "serve", class: noEffect, note: noHTTP},
	{name: "uvicorn-log-level", src: "serve", class: noEffect, note: noLog},
	{name: "disable-uvicorn-access-log", src: "serve", kind: vBool, class: noEffect, note: noLog},
	{name: "allow-credentials", src: "serve", kind: vBool, class: noEffect, note: noHTTP},
	{name: "allowed-origins", src: "serve", class: noEffect, note: noHTTP},
	{name: "allowed-methods", src: "serve", class: noEffect, note: noHTTP},
	{name: "allowed-headers", src: "serve", class: noEffect, note: noHTTP},
	{name: "api-key", src: "serve", kind: vList, class: noEffect, note: noHTTP},
	{name: "lora-modules", src: "both", kind: vList, class: refused, note: noLoRA},
	{name: "chat-template", src: "serve", class: noEffect, note: noTok},
	{name: "chat-template-content-format", src: "serve", class: noEffect, note: noTok},
	{name: "trust-request-chat-template", src: "serve", kind: vBool, class: noEffect, note: noTok},
	{name: "response-role", src: "serve", class: noEffect, note: noHTTP},
	{name: "ssl-keyfile", src: "serve", class: noEffect, note: noHTTP},
	{name: "ssl-certfile", src: "serve", class: noEffect, note: noHTTP},
	{name: "ssl-ca-certs", src: "serve", class: noEffect, note: noHTTP},
	{name: "enable-ssl-refresh", src: "serve", kind: vBool, class: noEffect, note: noHTTP},
	{name: "ssl-cert-reqs", src: "serve", class: noEffect, note: noHTTP},
	{name: "root-path", src: "serve", class: noEffect, note: noHTTP},
	{name: "middleware", src: "serve", class: noEffect, note: noHTTP},
	{name: "return-tokens-as-token-ids", src: "serve", kind: vBool, class: noEffect, note: noHTTP},
	{name: "disable-frontend-multiprocessing", src: "serve", kind: vBool, class: noEffect, note: "the front end's fitted cost is the same in either process layout (an assumption)"},
	{name: "enable-request-id-headers", src: "serve", kind: vBool, class: noEffect, note: noHTTP},
	{name: "enable-auto-tool-choice", src: "serve", kind: vBool, class: noEffect, note: "output parsing"},
	{name: "exclude-tools-when-tool-choice-none", src: "serve", kind: vBool, class: noEffect, note: "prompts are token counts"},
	{name: "tool-call-parser", src: "serve", class: noEffect, note: "output parsing"},
	{name: "tool-parser-plugin", src: "serve", class: noEffect, note: "output parsing"},
	{name: "tool-server", src: "serve", class: noEffect, note: noHTTP},
	{name: "log-config-file", src: "serve", class: noEffect, note: noLog},
	{name: "max-log-len", src: "serve", class: noEffect, note: noLog},
	{name: "disable-fastapi-docs", src: "serve", kind: vBool, class: noEffect, note: noHTTP},
	{name: "enable-prompt-tokens-details", src: "serve", kind: vBool, class: noEffect, note: noHTTP},
	{name: "enable-server-load-tracking", src: "serve", kind: vBool, class: noEffect, note: noHTTP},
	{name: "enable-force-include-usage", src: "serve", kind: vBool, class: noEffect, note: noHTTP},
	{name: "enable-tokenizer-info-endpoint", src: "serve", kind: vBool, class: noEffect, note: noHTTP},
	{name: "enable-log-outputs", src: "serve", kind: vBool, class: noEffect, note: noLog},
	{name: "h11-max-incomplete-event-size", src: "serve", class: noEffect, note: noHTTP},
	{name: "h11-max-header-count", src: "serve", class: noEffect, note: noHTTP},
	{name: "log-error-stack", src: "serve", kind: vBool, class: noEffect, note: noLog},
	{name: "tokens-only", src: "serve", kind: vBool, class: noEffect, note: noHTTP},

	// vllm bench serve: add_dataset_parser (datasets/arg_utils.py).
	{name: "num-prompts", src: "bench", class: honoured, equiv: "-n, --requests"},
	{name: "dataset-name", src: "bench", class: honoured, equiv: "--prompt-len/--output-len or a trace", note: "random, sharegpt, burstgpt; others are refused"},
	{name: "no-stream", src: "bench", kind: vSwitch, class: noEffect, note: "how the dataset file is read"},
	{name: "dataset-path", src: "bench", class: honoured, equiv: "--trace (sampled as vLLM does)"},
	{name: "no-oversample", src: "bench", kind: vSwitch, class: refused, note: "ShareGPT samples are topped up by repeats as vLLM's default"},
	{name: "skip-chat-template", src: "bench", kind: vSwitch, class: noEffect, note: noTok},
	{name: "disable-shuffle", src: "bench", kind: vSwitch, class: refused, note: "dataset samples are shuffled with servesim's seed"},
	{name: "custom-output-len", src: "bench", class: noEffect, note: "only with --dataset-name custom: " + noDS},
	{name: "spec-bench-output-len", src: "bench", class: noEffect, note: "only with --dataset-name spec_bench: " + noDS},
	{name: "spec-bench-category", src: "bench", class: noEffect, note: "only with --dataset-name spec_bench: " + noDS},
	{name: "sonnet-input-len", src: "bench", class: noEffect, note: "only with --dataset-name sonnet: " + noDS},
	{name: "sonnet-output-len", src: "bench", class: noEffect, note: "only with --dataset-name sonnet: " + noDS},
	{name: "sonnet-prefix-len", src: "bench", class: noEffect, note: "only with --dataset-name sonnet: " + noDS},
	{name: "sharegpt-output-len", src: "bench", class: honoured, equiv: "(sharegpt sampling)"},
	{name: "blazedit-min-distance", src: "bench", class: noEffect, note: "only with the blazedit dataset: " + noDS},
	{name: "blazedit-max-distance", src: "bench", class: noEffect, note: "only with the blazedit dataset: " + noDS},
	{name: "random-input-len", src: "bench", class: honoured, equiv: "--prompt-len"},
	{name: "random-output-len", src: "bench", class: honoured, equiv: "--output-len"},
	{name: "random-range-ratio", src: "bench", class: honoured, equiv: "--prompt-len/--output-len uniform"},
	{name: "random-prefix-len", src: "bench", class: refused, equiv: "--shared-prefix-tokens", note: "vLLM's fixed prefix before the random context", dflt: []string{"0"}},
	{name: "random-batch-size", src: "bench", class: refused, note: "embedding benchmarks are not modelled", dflt: []string{"1"}},
	{name: "no-reranker", src: "bench", kind: vSwitch, class: noEffect, note: "only for reranker benchmarks"},
	{name: "random-mm-base-items-per-request", src: "bench", class: noEffect, note: "only with random-mm: " + noText},
	{name: "random-mm-num-mm-items-range-ratio", src: "bench", class: noEffect, note: "only with random-mm: " + noText},
	{name: "random-mm-limit-mm-per-prompt", src: "bench", class: noEffect, note: "only with random-mm: " + noText},
	{name: "random-mm-bucket-config", src: "bench", class: noEffect, note: "only with random-mm: " + noText},
	{name: "hf-subset", src: "bench", class: noEffect, note: "only with --dataset-name hf: " + noDS},
	{name: "hf-split", src: "bench", class: noEffect, note: "only with --dataset-name hf: " + noDS},
	{name: "hf-name", src: "bench", class: noEffect, note: "only with --dataset-name hf: " + noDS},
	{name: "hf-output-len", src: "bench", class: noEffect, note: "only with --dataset-name hf: " + noDS},
	{name: "prefix-repetition-prefix-len", src: "bench", class: noEffect, note: "only with prefix_repetition: " + noDS},
	{name: "prefix-repetition-suffix-len", src: "bench", class: noEffect, note: "only with prefix_repetition: " + noDS},
	{name: "prefix-repetition-num-prefixes", src: "bench", class: noEffect, note: "only with prefix_repetition: " + noDS},
	{name: "prefix-repetition-output-len", src: "bench", class: noEffect, note: "only with prefix_repetition: " + noDS},
	// add_cli_args (serve.py).
	{name: "label", src: "bench", class: honoured, equiv: "--label"},
	{name: "backend", src: "bench", class: noEffect, note: "the simulated server is the backend"},
	{name: "base-url", src: "bench", class: noEffect, note: noHTTP},
	{name: "endpoint", src: "bench", class: noEffect, note: noHTTP},
	{name: "header", src: "bench", kind: vList, class: noEffect, note: noHTTP},
	{name: "max-concurrency", src: "bench", class: honoured, equiv: "--max-concurrency"},
	{name: "input-len", src: "bench", class: honoured, equiv: "--random-input-len", note: "vLLM maps it to the random dataset's input length"},
	{name: "output-len", src: "bench", class: honoured, equiv: "--output-len", note: "servesim's flag: a bare N is vLLM's (constant:N, or the random and sharegpt datasets' output length)"},
	{name: "use-beam-search", src: "bench", kind: vSwitch, class: refused, note: "beam search is not modelled"},
	{name: "logprobs", src: "bench", class: noEffect, note: noSamp},
	{name: "request-rate", src: "bench", class: honoured, equiv: "--rate"},
	{name: "burstiness", src: "bench", class: honoured, equiv: "--burstiness", note: "implies gamma arrivals, as vLLM"},
	{name: "disable-tqdm", src: "bench", kind: vSwitch, class: noEffect, note: "servesim's progress goes to a terminal only"},
	{name: "num-warmups", src: "bench", class: noEffect, note: "warm-up requests are not measured, and a simulated server is warm"},
	{name: "profile", src: "bench", kind: vSwitch, class: noEffect, note: "the torch profiler; servesim's --profile VALUE is the kernel-time model", as: "vllm-profile"},
	{name: "save-result", src: "bench", kind: vSwitch, class: honoured, equiv: "--save-result"},
	{name: "save-detailed", src: "bench", kind: vSwitch, class: noEffect, note: "per-request data is in requests.csv"},
	{name: "append-result", src: "bench", kind: vSwitch, class: refused, equiv: "--result-filename", note: "result files are written whole"},
	{name: "metadata", src: "bench", kind: vList, class: noEffect, note: "not written to the result file"},
	{name: "result-dir", src: "bench", class: honoured, equiv: "--result-dir"},
	{name: "result-filename", src: "bench", class: honoured, equiv: "--result-filename"},
	{name: "ignore-eos", src: "bench", kind: vSwitch, class: noEffect, note: "servesim's outputs always run to their drawn length, as with ignore_eos"},
	{name: "percentile-metrics", src: "bench", class: honoured, equiv: "--percentile-metrics"},
	{name: "metric-percentiles", src: "bench", class: honoured, equiv: "--metric-percentiles"},
	{name: "goodput", src: "bench", kind: vList, class: honoured, equiv: "--slo-ttft --slo-tpot --slo-e2e", note: "only the SLOs named count"},
	{name: "request-id-prefix", src: "bench", class: noEffect, note: noHTTP},
	{name: "top-p", src: "bench", class: noEffect, note: noSamp},
	{name: "top-k", src: "bench", class: noEffect, note: noSamp},
	{name: "min-p", src: "bench", class: noEffect, note: noSamp},
	{name: "temperature", src: "bench", class: noEffect, note: noSamp},
	{name: "frequency-penalty", src: "bench", class: noEffect, note: noSamp},
	{name: "presence-penalty", src: "bench", class: noEffect, note: noSamp},
	{name: "repetition-penalty", src: "bench", class: noEffect, note: noSamp},
	{name: "common-prefix-len", src: "bench", class: refused, equiv: "--shared-prefix-tokens", note: "vLLM's prefix shared by all random prompts", dflt: []string{"0"}},
	{name: "ramp-up-strategy", src: "bench", class: refused, equiv: "--stages", note: "a rate ramp is a schedule of stages"},
	{name: "ramp-up-start-rps", src: "bench", class: refused, equiv: "--stages", note: "a rate ramp is a schedule of stages"},
	{name: "ramp-up-end-rps", src: "bench", class: refused, equiv: "--stages", note: "a rate ramp is a schedule of stages"},
	{name: "ready-check-timeout-sec", src: "bench", class: noEffect, note: "a simulated server is ready at once"},
	{name: "extra-body", src: "bench", class: noEffect, note: noSamp},
}
