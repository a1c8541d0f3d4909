package realrun

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ArgEffect says what a replay does with one engine argument of a real run.
type ArgEffect int

const (
	// Modelled: the replay reads the argument into its scenario
	// (experiments.RunScenario, StageScenario).
	Modelled ArgEffect = iota
	// NoEffect: the argument does not change what the replay simulates
	// (timing of the same requests on the same deployment).
	NoEffect
	// Refused: the argument changes the deployment and servesim does not
	// model it; a value other than the argument's inert one (its vLLM
	// default, which deploys nothing extra) stops validate.
	Refused
)

func (e ArgEffect) String() string {
	switch e {
	case Modelled:
		return "modelled"
	case NoEffect:
		return "no effect"
	}
	return "refused"
}

// EngineArg is one row of the engine-argument table.
type EngineArg struct {
	Name   string // vLLM's EngineArgs field name (vllm/engine/arg_utils.py)
	Effect ArgEffect
	// Inert reports whether a Refused argument's value deploys nothing
	// servesim does not model (data_parallel_size 1, speculative_config
	// null); nil for Modelled and NoEffect arguments.
	Inert  func(v string) bool
	Reason string
}

// EngineArgs is the table, by vLLM's argument name (the names of
// vllm/engine/arg_utils.py EngineArgs, which LLMServingSim's bench writes
// into meta.json engine_kwargs and vLLM's config classes keep in
// meta.json resolved_config), plus the column names of the inference-perf
// tables that stand for one (tp, precision, the sim2real tables' logged
// KV blocks). Values reach Inert as text: JSON null is "null", booleans
// "true"/"false" (Python's "True"/"False" from bench --metadata compare
// alike), numbers as written, objects as their JSON.
var EngineArgs = map[string]EngineArg{}

func init() {
	add := func(effect ArgEffect, inert func(string) bool, reason string, names ...string) {
		for _, n := range names {
			EngineArgs[n] = EngineArg{Name: n, Effect: effect, Inert: inert, Reason: reason}
		}
	}
	add(Modelled, nil, "the model, looked up by its Hugging Face id", "model")
	add(NoEffect, nil, "the name the API serves the model under", "served_model_name")
	add(Modelled, nil, "the GPU, looked up by name or alias", "hardware")
	add(Modelled, nil, "tensor parallelism: weights, heads and KV split by TP, two all-reduces per layer", "tensor_parallel_size", "tp")
	add(Modelled, nil, "pipeline parallelism: layers over pp stages as vLLM splits them, up to pp micro-batches in flight (servesim's --pp)", "pipeline_parallel_size")
	add(Modelled, nil, "data parallelism: each DP rank an instance with its own scheduler and KV cache behind vLLM's DP load balancer (servesim's --dp)", "data_parallel_size")
	add(Modelled, nil, "expert parallelism: routed experts over the DP × TP GPUs with the dispatch/combine all-to-all, and EPLB's lower expert load skew (servesim's --expert-parallel, --eplb)", "enable_expert_parallel", "enable_eplb")
	add(Modelled, nil, "the scheduler's limits", "max_num_seqs", "max_num_batched_tokens", "max_model_len")
	add(Modelled, nil, "weight precision (bf16, fp16, fp8)", "dtype", "precision")
	add(Modelled, nil, "weight quantization: fp8 and the FP4 formats are modelled, others are refused", "quantization")
	add(Modelled, nil, "KV-cache precision", "kv_cache_dtype")
	add(Modelled, nil, "the KV cache's paging and size", "block_size", "gpu_memory_utilization", "num_gpu_blocks", "num_gpu_blocks_override", "gpu_kv_blocks_logged")
	add(Modelled, nil, "prefix caching by block hash", "enable_prefix_caching")
	add(Modelled, nil, "chunked prefill (on: policy chunked; off: policy mixed, vLLM V1's whole prompts beside the decodes)", "enable_chunked_prefill")
	add(Modelled, nil, "engine switches of the vllm-v1 engine model (--enforce-eager, --no-custom-all-reduce, --no-async-scheduling)", "enforce_eager", "disable_custom_all_reduce", "async_scheduling")
	add(NoEffect, nil, "sampling seed: the replay takes each request's recorded lengths", "seed")
	add(NoEffect, nil, "tokenizer and model loading: the replay starts after the server is up and takes token counts", "tokenizer", "tokenizer_mode", "revision", "trust_remote_code", "download_dir", "load_format")
	add(NoEffect, nil, "logging only", "disable_log_stats", "disable_log_requests", "enable_log_requests")
	add(NoEffect, nil, "one process per rank or Ray: the same kernels and collectives", "distributed_executor_backend")

	one := func(v string) bool { return isNull(v) || num(v) == 1 }
	off := func(v string) bool { return isNull(v) || isFalse(v) }
	none := func(v string) bool { return isNull(v) || v == "{}" || strings.EqualFold(v, "none") }
	zero := func(v string) bool { return isNull(v) || num(v) == 0 }
	add(Refused, one, "one node's share of a multi-node DP launch is not replayed alone", "data_parallel_size_local")
	add(Refused, one, "context parallelism is not modelled", "decode_context_parallel_size", "prefill_context_parallel_size")
	add(Refused, off, "elastic expert parallelism (the EP group resized while serving) is not modelled", "enable_elastic_ep")
	add(Modelled, nil, "dual batch overlap: an expert-parallel step above the threshold as two micro-batches whose all-to-all overlaps the other's compute (servesim's --two-batch-overlap)", "enable_dbo", "dbo_decode_token_threshold", "dbo_prefill_token_threshold")
	add(Modelled, nil, "speculative decoding: the config's method, num_speculative_tokens and model (servesim's [speculative]; acceptance from the method's sourced default, which the run does not record)", "speculative_config")
	add(Refused, none, "speculative decoding recorded without speculative_config (vLLM's JSON: method, num_speculative_tokens), which is what the replay reads", "speculative_model", "num_speculative_tokens")
	add(Refused, none, "KV-cache transfer (disaggregated prefill through a KV connector) is not modelled in a replay", "kv_transfer_config")
	add(Refused, zero, "a CPU KV-cache offload tier is not modelled in a replay", "kv_offloading_size", "cpu_kv_blocks_logged")
	add(Refused, zero, "weights offloaded to CPU memory are not modelled", "cpu_offload_gb")
	add(Refused, off, "LoRA adapters are not modelled", "enable_lora")
	add(Refused, func(v string) bool { return isNull(v) || strings.EqualFold(v, "fcfs") }, "the replay serves in arrival order (vLLM's fcfs); its requests carry no priorities", "scheduling_policy")
	add(Refused, func(v string) bool { return isNull(v) || num(v) <= 1 }, "concurrent partial prefills are not modelled (servesim's chunked policy is vLLM's default, one)", "max_num_partial_prefills")
	add(Refused, zero, "a long-prefill chunk cap is not modelled", "long_prefill_token_threshold")
}

func isNull(v string) bool  { return v == "" || v == "null" || strings.EqualFold(v, "none") }
func isFalse(v string) bool { return strings.EqualFold(v, "false") || v == "0" }

// num is v as a number; NaN (equal to nothing) when it is not one.
func num(v string) float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// argChecker applies the table to one source's arguments: refused
// arguments with a value that deploys something are collected for one
// error naming each, its value and the reason; names not in the table are
// collected for a note.
type argChecker struct {
	file    string
	line    int
	refused []string // "field = value: reason"
	unknown []string
}

// check applies the table to the argument name (field is where it sits,
// e.g. "engine_kwargs.data_parallel_size"); known reports whether name is
// in the table.
func (c *argChecker) check(field, name, value string) (known bool) {
	a, ok := EngineArgs[name]
	if !ok {
		return false
	}
	if a.Effect == Refused && !a.Inert(value) {
		c.refused = append(c.refused, fmt.Sprintf("%s = %s: %s", field, value, a.Reason))
	}
	return true
}

// err is the error for the refused arguments, nil for none.
func (c *argChecker) err() error {
	if len(c.refused) == 0 {
		return nil
	}
	return fmt.Errorf("realrun: %s: engine arguments servesim does not model (validate stops rather than replay the run without them): %s",
		where(c.file, c.line), strings.Join(c.refused, "; "))
}

// note is the header note listing the arguments not in the table, "" for none.
func (c *argChecker) note(source string) string {
	if len(c.unknown) == 0 {
		return ""
	}
	sort.Strings(c.unknown)
	return fmt.Sprintf("%s: %s not in servesim's engine-argument table (experiments/realrun/engineargs.go): assumed not to change the deployment", source, strings.Join(c.unknown, ", "))
}

// applyArg sets the Engine field of a Modelled argument from its text
// (bench --metadata values, table columns); null leaves it unset. The
// error says what value is wanted.
func applyArg(e *Engine, name, v string) error {
	if isNull(v) {
		return nil
	}
	whole := func(dst *int, min int) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < min {
			return fmt.Errorf("%q: want a whole number ≥ %d", v, min)
		}
		*dst = n
		return nil
	}
	boolean := func() (bool, error) {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "1":
			return true, nil
		case "false", "0":
			return false, nil
		}
		return false, fmt.Errorf("%q: want true or false", v)
	}
	switch name {
	case "model":
		e.Model = v
	case "hardware":
		e.GPU = v
	case "tensor_parallel_size", "tp":
		return whole(&e.TP, 1)
	case "pipeline_parallel_size":
		return whole(&e.PP, 1)
	case "data_parallel_size":
		return whole(&e.DP, 1)
	case "enable_expert_parallel", "enable_eplb", "enable_dbo":
		b, err := boolean()
		if err != nil {
			return err
		}
		switch name {
		case "enable_eplb":
			e.EPLB = b
		case "enable_dbo":
			e.DBO = b
		default:
			e.ExpertParallel = b
		}
	case "dbo_decode_token_threshold":
		return whole(&e.DBODecodeThreshold, 1)
	case "dbo_prefill_token_threshold":
		return whole(&e.DBOPrefillThreshold, 1)
	case "max_num_seqs":
		return whole(&e.MaxNumSeqs, 1)
	case "max_num_batched_tokens":
		return whole(&e.MaxNumBatchedTokens, 1)
	case "max_model_len":
		return whole(&e.MaxModelLen, 1)
	case "block_size":
		return whole(&e.BlockSize, 1)
	case "num_gpu_blocks", "num_gpu_blocks_override", "gpu_kv_blocks_logged":
		return whole(&e.KVBlocks, 1)
	case "dtype", "precision":
		e.DType = v
	case "kv_cache_dtype":
		e.KVDType = v
	case "quantization":
		e.Quantization = v
	case "gpu_memory_utilization":
		f := num(v)
		if !(f > 0 && f <= 1) {
			return fmt.Errorf("%q: want (0, 1]", v)
		}
		e.GPUMemUtil = f
	case "enable_prefix_caching", "enable_chunked_prefill", "async_scheduling", "enforce_eager", "disable_custom_all_reduce":
		b, err := boolean()
		if err != nil {
			return err
		}
		switch name {
		case "enable_prefix_caching":
			e.PrefixCaching = &b
		case "enable_chunked_prefill":
			e.ChunkedPrefill = &b
		case "async_scheduling":
			e.AsyncScheduling = &b
		case "enforce_eager":
			e.EnforceEager = b
		default:
			e.NoCustomAllReduce = b
		}
	case "speculative_config":
		if v == "{}" {
			return nil
		}
		if !strings.HasPrefix(strings.TrimSpace(v), "{") {
			return fmt.Errorf("%q: want vLLM's speculative config, a JSON object", v)
		}
		e.Speculative = v
	default:
		return fmt.Errorf("not an argument the reader sets (a programmer error in the table)")
	}
	return nil
}
