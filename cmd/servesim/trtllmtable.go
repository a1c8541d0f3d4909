package main

// The flags of trtllm-serve (TensorRT-LLM's OpenAI server, `trtllm-serve
// MODEL [flags]`) and what `servesim run` does with each, read from the
// click options of tensorrt_llm/commands/serve.py in
// github.com/NVIDIA/TensorRT-LLM (the serve command: --max_batch_size
// default BuildConfig.max_batch_size, --max_num_tokens
// BuildConfig.max_num_tokens, --max_seq_len, --tp_size 1, --pp_size 1,
// --ep_size None, --kv_cache_free_gpu_memory_fraction 0.9,
// --extra_llm_api_options: "Path to a YAML file that overwrites the
// parameters specified by trtllm-serve"). A trtllm-serve flag runs the
// trtllm engine model (sim/serve/engine_trtllm.go), as its command line
// means; with --engine naming another engine it is an error.
//
// The classes are vllmFlags': honoured (the scenario field in equiv,
// recorded as set explicitly), no effect (accepted, listed in the run
// header), or refused with the reason; a refused flag given TensorRT-LLM's
// default (dflt) changes nothing. A flag here and servesim's or vLLM's
// spelling of the same field (other) on one command line are an error
// naming both. TestTRTLLMFlagWalk walks the table. trtllm-serve's --host,
// --port, --tokenizer and --backend are spelled as vLLM's flags and read
// as vllmtable.go says (no effect); its --config (the YAML of LLM-API
// options) is servesim's scenario file: give --extra_llm_api_options. The keys of the
// --extra_llm_api_options file are trtllmconfig.go's.

type trtllmFlag struct {
	name  string
	kind  vllmKind // vValue or vSwitch
	class vllmClass
	equiv string   // servesim's flag or field
	note  string   // what TensorRT-LLM means, and how servesim reads it
	dflt  []string // values of a refused flag that are TensorRT-LLM's default (no effect)
	other []string // servesim's or vLLM's spellings of the same field
}

var trtllmFlags = []trtllmFlag{
	{name: "max_batch_size", class: honoured, equiv: "--max-num-seqs", other: []string{"max-num-seqs"}, note: "requests in a step at most (default 2048)"},
	{name: "max_num_tokens", class: honoured, equiv: "--max-num-batched-tokens", other: []string{"max-num-batched-tokens"}, note: "tokens in a step at most (default 8192); without chunked prefill also the longest prompt"},
	{name: "max_seq_len", class: honoured, equiv: "--max-model-len", other: []string{"max-model-len"}, note: "prompt + output at most (default: the model's context)"},
	{name: "tp_size", class: honoured, equiv: "--tp", other: []string{"tp", "tensor-parallel-size"}},
	{name: "pp_size", class: honoured, equiv: "--pp", other: []string{"pp", "pipeline-parallel-size"}},
	{name: "ep_size", class: honoured, equiv: "--expert-parallel", other: []string{"enable-expert-parallel", "no-enable-expert-parallel", "expert-parallel"},
		note: "1 is no EP; servesim shards the routed experts over every GPU of the TP group, so ep_size must equal tp_size (an MoE TP inside an EP rank is not modelled)"},
	{name: "kv_cache_free_gpu_memory_fraction", class: honoured, equiv: "engine.trtllm.free_gpu_memory_fraction", other: []string{"gpu-memory-utilization"},
		note: "the fraction of the memory left after the weights and the profiling run that the KV cache takes (default 0.9); not vLLM's gpu_memory_utilization"},
	{name: "enable_chunked_prefill", kind: vSwitch, class: honoured, equiv: "engine.trtllm.enable_chunked_prefill", other: []string{"chunked-prefill", "enable-chunked-prefill", "no-enable-chunked-prefill"}},
	{name: "extra_llm_api_options", class: honoured, equiv: "[engine.trtllm] and [batch] fields", note: "a JSON file, or a YAML file of block mappings and scalars, of LLM-API options (trtllmconfig.go lists the keys read)"},
	{name: "max_beam_width", class: refused, dflt: []string{"1"}, note: "beam search is not modelled"},
	{name: "log_level", class: noEffect, note: noLog},
	{name: "gpus_per_node", class: noEffect, note: "GPUs are placed by --tp and --pp"},
	{name: "num_postprocess_workers", class: noEffect, note: "detokenization workers: the front end's cost is one per-request value"},
	{name: "trust_remote_code", kind: vSwitch, class: noEffect, note: "no code is loaded"},
	{name: "reasoning_parser", class: noEffect, note: noTok},
	{name: "server_role", class: refused, note: "disaggregated serving under the trtllm engine is not modelled"},
	{name: "metadata_server_config_file", class: refused, note: "disaggregated serving under the trtllm engine is not modelled"},
}
