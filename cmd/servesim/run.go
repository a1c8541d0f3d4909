package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/sim/workload/trace"
)

const runUsage = `Usage: servesim run [--config FILE] [flags]

Simulates one serving instance (model × GPU × TP) under a synthetic workload
and prints a summary laid out like vLLM's bench serve. Results go to --out:
requests.csv (one row per request), steps.csv (one row per iteration) and
summary.json. Flags override the --config file; with neither, the embedded
default scenario runs (print it with --print-default).

Examples:
  servesim run
  servesim run --model llama-3.1-70b --gpu h200 --tp 4 --rate 8 --requests 2000
  servesim run --model meta-llama/Llama-3.1-8B-Instruct --gpu h100-pcie
  servesim run --model-config ~/models/Qwen3-8B --gpu h100
  servesim run --config scenario.toml --rate 12 --slo-ttft 300 --slo-tpot 40
  servesim run --prompt-len lognormal:7,0.6 --output-len uniform:50,400 --arrival gamma --burstiness 0.5
  servesim run --trace ../shared/data/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv --replicas 2
  servesim run --rate inf -n 500 --max-concurrency 32
  servesim run --stages 8:600,20:600 --drain --rescale --requests 0
  servesim run --engine vllm-v1 --no-async-scheduling
  servesim run --engine vllm-v1 --ablation
  servesim run -tp 2 --request-rate 4 --num-prompts 100 --host 0.0.0.0 --trust-remote-code

vLLM's flags carry over: each flag of vllm serve and vllm bench serve is
honoured (the same servesim field: -tp is --tp), accepted with no effect
in a simulation (--host, --port, --tokenizer, ...; the header lists them),
or refused with a message naming it and servesim's equivalent
(--kv-transfer-config, ...). docs/vllm-sglang.md, "From vllm serve and
vllm bench serve", has the table; only the honoured ones are listed below.
`

func runCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", runUsage, stderr)
	config := fs.String("config", "", "scenario TOML file (flags override it)")
	out := fs.StringP("out", "o", "servesim-out", "output directory for requests.csv, steps.csv, summary.json (\"\" writes none)")
	printDefault := fs.Bool("print-default", false, "print the embedded default scenario and exit")
	quiet := fs.BoolP("quiet", "q", false, "print only the summary block")

	// Scenario fields; applied only when set on the command line.
	var s scenario.Scenario
	w, b := &s.Workload, &s.Batch
	fs.StringVar(&s.Name, "name", "", "scenario name")
	fs.StringVar(&s.Model, "model", "", "model name or Hugging Face id (list them: servesim models)")
	fs.StringVar(&s.GPU, "gpu", "", "GPU name, or nvidia-smi's name of it (list them: servesim gpus)")
	fs.IntVar(&s.TP, "tp", 0, "tensor-parallel degree (default 1)")
	fs.IntVar(&s.PP, "pp", 0, "pipeline-parallel degree: stages of tp GPUs each (default 1)")
	fs.IntSliceVar(&s.PPLayers, "pp-layers", nil, "layers per pipeline stage, e.g. 41,39 (vLLM's VLLM_PP_LAYER_PARTITION; default vLLM's even split)")
	fs.BoolVar(&s.PPChunked, "pp-chunked", false, "SGLang's chunked pipelining: a long prefill's chunks fill successive micro-batches")
	fs.IntVar(&s.DP, "dp", 0, "data-parallel ranks per replica, each an instance of tp GPUs (default 1)")
	fs.BoolVar(&s.ExpertParallel, "expert-parallel", false, "shard an MoE model's routed experts over the dp × tp GPUs (vLLM --enable-expert-parallel)")
	fs.BoolVar(&s.EPLB, "eplb", false, "expert-parallel load balancing: the expert load skew falls to EPLB's (vLLM --enable-eplb)")
	fs.IntVar(&s.RedundantExperts, "eplb-redundant-experts", 0, "EPLB's redundant experts (vLLM num_redundant_experts)")
	fs.Float64Var(&s.ExpertSkew, "expert-skew", 0, "the busiest EP rank's routed tokens over the mean (default 1.069, 1.008 with --eplb)")
	fs.StringVar(&s.All2All, "all2all-backend", "", "expert-parallel all-to-all: allgather_reducescatter (default), deepep_high_throughput, deepep_low_latency")
	fs.BoolVar(&s.TwoBatchOverlap, "two-batch-overlap", false, "split expert-parallel steps in two micro-batches whose all-to-all overlaps the other's compute (vLLM --enable-dbo; SGLang --enable-two-batch-overlap, whose rule is thresholds 1 and 1)")
	switchVar(fs, boolTo{&s.TwoBatchOverlap, true}, "enable-two-batch-overlap", "SGLang's name of --two-batch-overlap, with SGLang's split rule (any batch of 2 tokens or more) unless the thresholds are given")
	fs.IntVar(&s.TBODecodeThreshold, "tbo-decode-token-threshold", 0, "two-batch overlap splits a batch of decodes only above this many tokens (default vLLM's 32)")
	fs.IntVar(&s.TBOPrefillThreshold, "tbo-prefill-token-threshold", 0, "two-batch overlap splits a batch with a prefill above this many tokens (default vLLM's 512)")
	fs.StringVar(&s.Weights, "weights", "", "weight precision: bf16, fp8, fp4 (default bf16)")
	fs.StringVar(&s.KV, "kv", "", "KV-cache precision: bf16, fp8, fp4 (default bf16)")
	fs.Uint64Var(&s.Seed, "seed", 0, "random seed")
	fs.StringVar(&s.ModelsFile, "models-file", "", "TOML file of extra models")
	fs.StringVar(&s.ModelConfig, "model-config", "", "HuggingFace config.json (or its directory) to import as the model, instead of --model")
	fs.StringVar(&s.GPUsFile, "gpus-file", "", "TOML file of extra GPUs")
	fs.StringVar(&w.Arrival, "arrival", "", "arrival process: poisson, gamma, constant")
	fs.Float64Var(&w.Rate, "rate", 0, "request rate (requests/s); inf sends every request at t = 0, as vLLM bench")
	fs.Float64Var(&w.Burstiness, "burstiness", 0, "gamma arrivals' shape, as vLLM --burstiness (1 = Poisson, <1 burstier)")
	fs.IntVarP(&w.Requests, "requests", "n", 0, "number of requests")
	fs.Float64Var(&w.DurationS, "duration", 0, "or (not both): seconds of arrivals")
	fs.StringVar(&w.Prompt, "prompt-len", "", "prompt length distribution: constant:N, uniform:lo,hi, normal:mean,std, lognormal:mu,sigma")
	fs.StringVar(&w.Output, "output-len", "", "output length distribution (same forms)")
	addShapeFlags(fs, &s)
	fs.StringVar(&b.Policy, "policy", "", "batching: chunked (Sarathi/vLLM V1), prefill-first (vLLM V0), mixed (Orca), decode-first, static, dynamic")
	chunked := fs.Bool("chunked-prefill", true, "chunked prefill on (policy chunked) or off (policy prefill-first)")
	fs.IntVar(&b.MaxNumSeqs, "max-num-seqs", 0, "running requests at most (default: vLLM's for the GPU under vllm-v1, 1024 on a GPU of ≥ 70 GiB other than the A100, else 256)")
	fs.IntVar(&b.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "tokens per iteration at most (default: vLLM's for the GPU under vllm-v1, 8192 or 2048, max_model_len unchunked; ideal: 8192 chunked, max(max_model_len, 2048) otherwise)")
	fs.IntVar(&b.MaxModelLen, "max-model-len", 0, "longest prompt+output (default: the model's context)")
	fs.IntVar(&b.BlockSize, "block-size", 0, "KV block size in tokens (default 16)")
	fs.Float64Var(&b.GPUMemUtil, "gpu-memory-utilization", 0, "fraction of GPU memory for weights, activations and KV (default 0.9)")
	fs.Float64Var(&s.SLO.TTFTms, "slo-ttft", 0, "TTFT SLO in ms (0 = none)")
	fs.Float64Var(&s.SLO.TPOTms, "slo-tpot", 0, "TPOT SLO in ms (0 = none)")
	fs.Float64Var(&s.SLO.E2Ems, "slo-e2e", 0, "E2E latency SLO in ms (0 = none)")
	fs.Float64Var(&s.Hardware.IterOverheadMs, "iteration-overhead-ms", 0, "per-iteration CPU overhead in ms (default: the profile's; 0.5 for the roofline; 0 = none)")
	fs.StringVar(&s.Hardware.Profile, "profile", "", "kernel-time model: builtin (calibrated, default), roofline, or a profile file from servesim calibrate")
	fs.IntVar(&s.Replicas, "replicas", 0, "identical instances behind the router (default 1)")
	fs.StringVar(&s.Router.Policy, "router", "", "routing: round-robin, least-outstanding, least-kv, power-of-two, prefix-affinity")
	fs.Float64Var(&s.Router.StalenessMs, "router-staleness-ms", 0, "how stale the router's view of the instances may be, in ms")
	fs.StringVar(&s.Scheduler.Policy, "scheduler", "", "queue order: fcfs, sjf, sjf-predicted, edf, priority")
	fs.Float64Var(&s.Scheduler.PredictError, "predict-error", 0, "σ of the output-length predictor's lognormal error (sjf-predicted)")
	fs.StringVar(&s.Admission.Policy, "admission", "", "admission control: none, queue-cap, token-bucket, slo-aware")
	fs.IntVar(&s.Admission.QueueCap, "queue-cap", 0, "queue-cap admission: most requests waiting")
	fs.BoolVar(&s.Batch.PrefixCaching, "prefix-caching", false, "reuse the KV of shared prompt prefixes")
	fs.StringVar(&s.Batch.Preemption, "preemption", "", "preemption when KV runs out: recompute or swap")
	fs.StringVar(&s.Batch.Victim, "victim", "", "preemption victim: newest, lowest-priority or fewest-output (SGLang's retraction order; the sglang engine's default)")
	fs.Float64Var(&s.Batch.MaxWaitMs, "max-wait-ms", 0, "dynamic batching: the longest a batch waits to fill")
	fs.IntVar(&s.Batch.Refill, "refill", 0, "decode-first batching: admit prompts while fewer than this many requests decode")
	fs.IntVar(&w.SharedPrefix, "shared-prefix-tokens", 0, "synthetic shared system prompt length")
	fs.IntVar(&w.PrefixGroups, "prefix-groups", 0, "number of distinct shared system prompts")
	fs.IntVar(&w.Turns, "turns", 0, "multi-turn conversations: turns per conversation (≥ 2)")
	fs.IntVar(&w.Conversations, "conversations", 0, "multi-turn conversations in flight at once")
	traceFile := fs.String("trace", "", "replay a request trace (Azure, Mooncake, BurstGPT, length-only or servesim; detected) instead of the synthetic workload")
	traceScale := fs.Float64("trace-scale", 0, "multiply the trace's request rate by this factor")
	skipBad := fs.Bool("skip-bad-rows", false, "skip (and count) malformed trace rows instead of failing")
	fs.IntVar(&s.Disagg.DecodeReplicas, "decode-replicas", 0, "disaggregate: decode instances (the others flags describe the prefill pool)")
	fs.StringVar(&s.Disagg.DecodeGPU, "decode-gpu", "", "decode pool GPU (default: the prefill GPU)")
	fs.IntVar(&s.Disagg.DecodeTP, "decode-tp", 0, "decode pool TP (default: the prefill TP)")
	fs.IntVar(&s.Disagg.DecodeDP, "decode-dp", 0, "decode pool data-parallel ranks per decode replica (default 1)")
	fs.IntVar(&s.Disagg.DecodePP, "decode-pp", 0, "decode pool pipeline stages of decode-tp GPUs each (default 1; --pp is the prefill pool's)")
	fs.BoolVar(&s.Disagg.DecodeExpertParallel, "decode-expert-parallel", false, "decode pool expert parallelism over decode-dp × decode-tp GPUs (default: --expert-parallel)")
	fs.StringVar(&s.Disagg.DecodeAll2All, "decode-all2all-backend", "", "decode pool all-to-all backend (default: --all2all-backend)")
	fs.BoolVar(&s.Disagg.DecodeTwoBatchOverlap, "decode-two-batch-overlap", false, "decode pool two-batch overlap (default: --two-batch-overlap)")
	fs.StringVar(&s.Disagg.Link, "link", "", "KV link: nvlink, ib (default), roce, pcie")
	fs.BoolVar(&s.Disagg.Streaming, "streaming", false, "stream KV layer by layer during prefill")
	// The engine model ([engine]).
	engineFlags(fs, &s)
	ablation := fs.Bool("ablation", false, "run the scenario with vllm-v1, each engine mechanism off in turn, and ideal; print a Markdown table")
	// vLLM's spelling (vllmflags.go) and vllm bench serve's datasets and
	// result file (dataset.go, vllmresult.go).
	vllmEngineAliases(fs, &s)
	vllmOffloadFlags(fs, &s)
	var goodput goodputValue
	vllmRunAliases(fs, &s, chunked, &goodput)
	var ds datasetFlags
	addDatasetFlags(fs, &ds)
	var save saveResultFlags
	addSaveResultFlags(fs, &save)
	// Every other flag of vllm serve and vllm bench serve (vllmtable.go).
	vllmTable := addVLLMTable(fs)
	// SGLang's launch_server spelling (sglangflags.go, sglangtable.go).
	sglang := addSGLangFlags(fs, &s)
	// trtllm-serve's spelling (trtllmflags.go, trtllmtable.go).
	trtllm := addTRTLLMFlags(fs, &s)

	if err := parseFlags(fs, vllmArgs(args)); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("run: unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	ignored, err := vllmTable.check()
	if err != nil {
		return err
	}
	sglangIgnored, err := sglang.pre()
	if err != nil {
		return err
	}
	trtllmIgnored, err := trtllm.pre()
	if err != nil {
		return err
	}
	if ext := strings.ToLower(filepath.Ext(*config)); ext == ".yaml" || ext == ".yml" {
		return fmt.Errorf("run: --config %s: vLLM's YAML file of serve options is not read (servesim: --config (a scenario TOML)); give its options as flags", *config)
	}
	if *printDefault {
		_, err := io.WriteString(stdout, scenario.DefaultTOML())
		return err
	}
	// Every phase from here on stops on SIGINT or SIGTERM: reading the
	// inputs, building the plan, simulating, writing (see interruptible).
	ctx, stop := interruptible()
	defer stop()
	base := scenario.Default()
	what := "the embedded default scenario (servesim run --print-default shows it)"
	if *config != "" {
		var err error
		if base, err = scenario.LoadScenario(*config); err != nil {
			return err
		}
		what = *config
	}
	if chunkedChanged(fs) && fs.Changed("policy") && *chunked != (b.Policy == "chunked") {
		return fmt.Errorf("run: %s and --policy %s contradict each other (chunked prefill %s is policy %s): give one", chunkedFlag(fs), b.Policy, map[bool]string{true: "on", false: "off"}[*chunked],
			map[bool]string{true: "chunked", false: "prefill-first, or another unchunked policy"}[*chunked])
	}
	if chunkedChanged(fs) && !fs.Changed("policy") {
		if *chunked {
			b.Policy = "chunked"
		} else {
			b.Policy = "prefill-first"
		}
	}
	override(fs, &base, &s)
	if *config == "" {
		base.TRTLLMBase() // the embedded default's vLLM batch settings give way to TensorRT-LLM's
	}
	if err := sglang.post(*config, &base); err != nil {
		return err
	}
	if err := trtllm.post(&base); err != nil {
		return err
	}
	goodputLine := goodput.apply(fs, &base)
	defaultsChanged := vllmDefaults(fs, *config, &base, &ds)
	// --model-config: import a Hugging Face config.json as the model; it
	// replaces the base scenario's model unless --model is given too.
	// vLLM's --hf-config-path always does: there the config defines the
	// architecture and --model names the weights.
	modelFlag := fs.Changed("model") || fs.Changed("model-config") || fs.Changed("hf-config-path")
	if modelFlag && !fs.Changed("weights") && !fs.Changed("dtype") && !fs.Changed("quantization") && base.Weights == "bf16" {
		// The base's bf16 (the embedded default's) described its own
		// model: a quantized checkpoint named here (Qwen/Qwen3-8B-FP8)
		// runs at its own precision (experiments.Resolve infers it).
		base.Weights = ""
	}
	if fs.Changed("hf-config-path") || (fs.Changed("model-config") && !fs.Changed("model")) {
		base.Model = ""
	}
	if fs.Changed("burstiness") && !fs.Changed("arrival") && base.Workload.Burstiness != 1 &&
		(base.Workload.Arrival == "" || base.Workload.Arrival == "poisson") {
		// vllm bench serve draws gamma gaps of shape --burstiness (1:
		// Poisson), so the flag alone implies gamma arrivals.
		base.Workload.Arrival = "gamma"
		base.SetByFlag("workload.arrival")
	}
	if (fs.Changed("policy") || chunkedChanged(fs)) && !base.Explicit("batch.max_num_batched_tokens") {
		// A token budget nobody chose — the embedded default's 8192 is
		// chunked prefill's — is derived for the policy the flag chose, as
		// docs/scenario.md documents: 8192 chunked, max(max_model_len, 2048) otherwise.
		base.Batch.MaxNumBatchedTokens = 0
	}
	if *traceFile != "" {
		if fs.Changed("dataset-name") {
			return fmt.Errorf("run: --trace and --dataset-name exclude each other")
		}
		base.Workload.Trace = &trace.Options{File: *traceFile}
	}
	saveOpts, err := save.options(fs)
	if err != nil {
		return err
	}
	cleanup, err := applyDataset(fs, &ds, &base, *out)
	defer cleanup()
	if err != nil {
		return err
	}
	if fs.Changed("skip-bad-rows") {
		if base.Workload.Trace == nil {
			return fmt.Errorf("run: --skip-bad-rows needs a trace (--trace or [workload.trace])")
		}
		base.Workload.Trace.SkipBadRows = *skipBad
	}
	if fs.Changed("trace-scale") {
		if base.Workload.Trace == nil {
			return fmt.Errorf("run: --trace-scale needs a trace (--trace or [workload.trace])")
		}
		base.Workload.Trace.Scale = *traceScale
	}
	if *ablation {
		rows, err := scenario.Ablation(base)
		if err != nil {
			return err
		}
		return scenario.WriteAblation(stdout, rows)
	}
	plan, err := base.Resolve()
	if err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintf(stdout, "servesim: running %s", what)
		if n := changedScenarioFlags(fs); n > 0 {
			fmt.Fprintf(stdout, " with %d flag override(s)", n)
		}
		fmt.Fprintln(stdout, ".")
		if len(ignored) > 0 {
			fmt.Fprintf(stdout, "vLLM flags with no effect in a simulation: %s.\n", strings.Join(ignored, ", "))
		}
		if len(sglangIgnored) > 0 {
			fmt.Fprintf(stdout, "SGLang flags with no effect in a simulation: %s.\n", strings.Join(sglangIgnored, ", "))
		}
		if line := sglang.line(engineName(base)); line != "" {
			fmt.Fprintln(stdout, line)
		}
		if len(trtllmIgnored) > 0 {
			fmt.Fprintf(stdout, "trtllm-serve flags with no effect in a simulation: %s.\n", strings.Join(trtllmIgnored, ", "))
		}
		if line := trtllm.line(); line != "" {
			fmt.Fprintln(stdout, line)
		}
		if len(defaultsChanged) > 0 {
			fmt.Fprintln(stdout, vllmDefaultsLine(defaultsChanged))
		}
		if goodputLine != "" {
			fmt.Fprintln(stdout, goodputLine)
		}
		if err := plan.Describe(stdout); err != nil {
			return err
		}
	}
	if err := save.check(*out, plan); err != nil {
		return err
	}
	rep, err := scenario.RunContext(ctx, plan, *out)
	if err != nil {
		return err
	}
	// Every file is written before anything more is printed, so that a
	// closed stdout (`| head -1`) cannot leave the run's files half done.
	saved, err := save.write(rep, saveOpts)
	if err != nil {
		return err
	}
	if n := len(rep.SharedDir); n > 0 {
		fmt.Fprintf(stderr, "servesim: warning: %d other run(s) wrote into %s while this one ran (%s): the files there are one run's set, whole, the last to finish — give each run its own -o to keep every result\n", n, *out, strings.Join(rep.SharedDir, ", "))
	}
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if *quiet {
		return nil
	}
	if *out != "" {
		if _, err := fmt.Fprintf(stdout, "Wrote %s/requests.csv, %s/steps.csv and %s/summary.json.\n", *out, *out, *out); err != nil {
			return err
		}
	}
	if saved != "" {
		_, err = fmt.Fprintf(stdout, "Wrote %s (vllm bench serve --save-result's keys).\n", saved)
	}
	return err
}

// scenarioFlag is a scenario flag's field: its TOML key, and a function
// copying it from the flag-bound scenario into the base.
type scenarioFlag struct {
	key   string
	apply func(dst, src *scenario.Scenario)
}

// scenarioFlags maps each scenario flag to its field.
var scenarioFlags = map[string]scenarioFlag{
	"name":                   {"name", func(d, s *scenario.Scenario) { d.Name = s.Name }},
	"model":                  {"model", func(d, s *scenario.Scenario) { d.Model = s.Model }},
	"gpu":                    {"gpu", func(d, s *scenario.Scenario) { d.GPU = s.GPU }},
	"tp":                     {"tp", func(d, s *scenario.Scenario) { d.TP = s.TP }},
	"pp":                     {"pp", func(d, s *scenario.Scenario) { d.PP = s.PP }},
	"pp-layers":              {"pp_layers", func(d, s *scenario.Scenario) { d.PPLayers = s.PPLayers }},
	"pp-chunked":             {"pp_chunked", func(d, s *scenario.Scenario) { d.PPChunked = s.PPChunked }},
	"dp":                     {"dp", func(d, s *scenario.Scenario) { d.DP = s.DP }},
	"expert-parallel":        {"expert_parallel", func(d, s *scenario.Scenario) { d.ExpertParallel = s.ExpertParallel }},
	"eplb":                   {"eplb", func(d, s *scenario.Scenario) { d.EPLB = s.EPLB }},
	"eplb-redundant-experts": {"eplb_redundant_experts", func(d, s *scenario.Scenario) { d.RedundantExperts = s.RedundantExperts }},
	"expert-skew":            {"expert_skew", func(d, s *scenario.Scenario) { d.ExpertSkew = s.ExpertSkew }},
	"all2all-backend":        {"all2all_backend", func(d, s *scenario.Scenario) { d.All2All = s.All2All }},
	"two-batch-overlap":      {"two_batch_overlap", func(d, s *scenario.Scenario) { d.TwoBatchOverlap = s.TwoBatchOverlap }},
	"enable-two-batch-overlap": {"two_batch_overlap", func(d, s *scenario.Scenario) {
		// SGLang splits any batch it can (two_batch_overlap.py), not at
		// vLLM's thresholds: 1 and 1 unless a threshold is given.
		d.TwoBatchOverlap = true
		if d.TBOSchedule == "" {
			d.TBOSchedule = hardware.TBOScheduleSGLang // operations_strategy.py
		}
		if d.TBODecodeThreshold == 0 {
			d.TBODecodeThreshold = hardware.SGLangTBO.DecodeThreshold
		}
		if d.TBOPrefillThreshold == 0 {
			d.TBOPrefillThreshold = hardware.SGLangTBO.PrefillThreshold
		}
	}},
	"tbo-decode-token-threshold":  {"tbo_decode_token_threshold", func(d, s *scenario.Scenario) { d.TBODecodeThreshold = s.TBODecodeThreshold }},
	"tbo-prefill-token-threshold": {"tbo_prefill_token_threshold", func(d, s *scenario.Scenario) { d.TBOPrefillThreshold = s.TBOPrefillThreshold }},
	"weights":                     {"weights", func(d, s *scenario.Scenario) { d.Weights = s.Weights }},
	"kv":                          {"kv", func(d, s *scenario.Scenario) { d.KV = s.KV }},
	"seed":                        {"seed", func(d, s *scenario.Scenario) { d.Seed = s.Seed }},
	"models-file":                 {"models_file", func(d, s *scenario.Scenario) { d.ModelsFile = s.ModelsFile }},
	"model-config":                {"model_config", func(d, s *scenario.Scenario) { d.ModelConfig = s.ModelConfig }},
	"gpus-file":                   {"gpus_file", func(d, s *scenario.Scenario) { d.GPUsFile = s.GPUsFile }},
	"arrival":                     {"workload.arrival", func(d, s *scenario.Scenario) { d.Workload.Arrival = s.Workload.Arrival }},
	"rate":                        {"workload.rate", func(d, s *scenario.Scenario) { d.Workload.Rate = s.Workload.Rate }},
	"burstiness":                  {"workload.burstiness", func(d, s *scenario.Scenario) { d.Workload.Burstiness = s.Workload.Burstiness }},
	"requests":                    {"workload.requests", func(d, s *scenario.Scenario) { d.Workload.Requests = s.Workload.Requests }},
	"duration":                    {"workload.duration_s", func(d, s *scenario.Scenario) { d.Workload.DurationS = s.Workload.DurationS }},
	"prompt-len":                  {"workload.prompt", func(d, s *scenario.Scenario) { d.Workload.Prompt = s.Workload.Prompt }},
	"output-len":                  {"workload.output", func(d, s *scenario.Scenario) { d.Workload.Output = s.Workload.Output }},
	"policy":                      {"batch.policy", func(d, s *scenario.Scenario) { d.Batch.Policy = s.Batch.Policy }},
	"chunked-prefill":             {"batch.policy", func(d, s *scenario.Scenario) { d.Batch.Policy = s.Batch.Policy }},
	"max-num-seqs":                {"batch.max_num_seqs", func(d, s *scenario.Scenario) { d.Batch.MaxNumSeqs = s.Batch.MaxNumSeqs }},
	"max-num-batched-tokens":      {"batch.max_num_batched_tokens", func(d, s *scenario.Scenario) { d.Batch.MaxNumBatchedTokens = s.Batch.MaxNumBatchedTokens }},
	"max-model-len":               {"batch.max_model_len", func(d, s *scenario.Scenario) { d.Batch.MaxModelLen = s.Batch.MaxModelLen }},
	"block-size":                  {"batch.block_size", func(d, s *scenario.Scenario) { d.Batch.BlockSize = s.Batch.BlockSize }},
	"gpu-memory-utilization":      {"batch.gpu_memory_utilization", func(d, s *scenario.Scenario) { d.Batch.GPUMemUtil = s.Batch.GPUMemUtil }},
	"slo-ttft":                    {"slo.ttft_ms", func(d, s *scenario.Scenario) { d.SLO.TTFTms = s.SLO.TTFTms }},
	"slo-tpot":                    {"slo.tpot_ms", func(d, s *scenario.Scenario) { d.SLO.TPOTms = s.SLO.TPOTms }},
	"slo-e2e":                     {"slo.e2e_ms", func(d, s *scenario.Scenario) { d.SLO.E2Ems = s.SLO.E2Ems }},
	"iteration-overhead-ms":       {"hardware.iteration_overhead_ms", func(d, s *scenario.Scenario) { d.Hardware.IterOverheadMs = s.Hardware.IterOverheadMs }},
	"profile":                     {"hardware.profile", func(d, s *scenario.Scenario) { d.Hardware.Profile = s.Hardware.Profile }},
	"replicas":                    {"replicas", func(d, s *scenario.Scenario) { d.Replicas = s.Replicas }},
	"router":                      {"router.policy", func(d, s *scenario.Scenario) { d.Router.Policy = s.Router.Policy }},
	"router-staleness-ms":         {"router.staleness_ms", func(d, s *scenario.Scenario) { d.Router.StalenessMs = s.Router.StalenessMs }},
	"scheduler":                   {"scheduler.policy", func(d, s *scenario.Scenario) { d.Scheduler.Policy = s.Scheduler.Policy }},
	"predict-error":               {"scheduler.predict_error", func(d, s *scenario.Scenario) { d.Scheduler.PredictError = s.Scheduler.PredictError }},
	"admission":                   {"admission.policy", func(d, s *scenario.Scenario) { d.Admission.Policy = s.Admission.Policy }},
	"queue-cap":                   {"admission.queue_cap", func(d, s *scenario.Scenario) { d.Admission.QueueCap = s.Admission.QueueCap }},
	"prefix-caching":              {"batch.prefix_caching", func(d, s *scenario.Scenario) { d.Batch.PrefixCaching = s.Batch.PrefixCaching }},
	"preemption":                  {"batch.preemption", func(d, s *scenario.Scenario) { d.Batch.Preemption = s.Batch.Preemption }},
	"victim":                      {"batch.victim", func(d, s *scenario.Scenario) { d.Batch.Victim = s.Batch.Victim }},
	"max-wait-ms":                 {"batch.max_wait_ms", func(d, s *scenario.Scenario) { d.Batch.MaxWaitMs = s.Batch.MaxWaitMs }},
	"refill":                      {"batch.refill", func(d, s *scenario.Scenario) { d.Batch.Refill = s.Batch.Refill }},
	"shared-prefix-tokens":        {"workload.shared_prefix_tokens", func(d, s *scenario.Scenario) { d.Workload.SharedPrefix = s.Workload.SharedPrefix }},
	"prefix-groups":               {"workload.prefix_groups", func(d, s *scenario.Scenario) { d.Workload.PrefixGroups = s.Workload.PrefixGroups }},
	"turns":                       {"workload.turns", func(d, s *scenario.Scenario) { d.Workload.Turns = s.Workload.Turns }},
	"conversations":               {"workload.conversations", func(d, s *scenario.Scenario) { d.Workload.Conversations = s.Workload.Conversations }},
	"decode-replicas":             {"disagg.decode_replicas", func(d, s *scenario.Scenario) { d.Disagg.DecodeReplicas = s.Disagg.DecodeReplicas }},
	"decode-gpu":                  {"disagg.decode_gpu", func(d, s *scenario.Scenario) { d.Disagg.DecodeGPU = s.Disagg.DecodeGPU }},
	"decode-tp":                   {"disagg.decode_tp", func(d, s *scenario.Scenario) { d.Disagg.DecodeTP = s.Disagg.DecodeTP }},
	"decode-dp":                   {"disagg.decode_dp", func(d, s *scenario.Scenario) { d.Disagg.DecodeDP = s.Disagg.DecodeDP }},
	"decode-pp":                   {"disagg.decode_pp", func(d, s *scenario.Scenario) { d.Disagg.DecodePP = s.Disagg.DecodePP }},
	"decode-expert-parallel":      {"disagg.decode_expert_parallel", func(d, s *scenario.Scenario) { d.Disagg.DecodeExpertParallel = s.Disagg.DecodeExpertParallel }},
	"decode-all2all-backend":      {"disagg.decode_all2all_backend", func(d, s *scenario.Scenario) { d.Disagg.DecodeAll2All = s.Disagg.DecodeAll2All }},
	"decode-two-batch-overlap":    {"disagg.decode_two_batch_overlap", func(d, s *scenario.Scenario) { d.Disagg.DecodeTwoBatchOverlap = s.Disagg.DecodeTwoBatchOverlap }},
	"link":                        {"disagg.link", func(d, s *scenario.Scenario) { d.Disagg.Link = s.Disagg.Link }},
	"streaming":                   {"disagg.streaming", func(d, s *scenario.Scenario) { d.Disagg.Streaming = s.Disagg.Streaming }},
}

// override copies the flags set on the command line into dst and records
// their fields as set explicitly (so that --max-num-seqs 0 is an error, not
// the default).
func override(fs *pflag.FlagSet, dst, src *scenario.Scenario) {
	for name, f := range scenarioFlags {
		if fs.Changed(name) {
			f.apply(dst, src)
			dst.SetByFlag(f.key)
		}
	}
}

func changedScenarioFlags(fs *pflag.FlagSet) int {
	n := 0
	for name := range scenarioFlags {
		if fs.Changed(name) {
			n++
		}
	}
	return n
}
