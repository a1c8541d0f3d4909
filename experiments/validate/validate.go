package validate

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/serve"
	"github.com/servesim/servesim/sim/workload"
)

// RunScenario builds the scenario of a real run from its own engine
// arguments and GPU. base carries what the user set: a non-empty Model or
// GPU replaces the run's (a ModelConfig, an imported config.json, replaces
// the run's model too), and ModelsFile / GPUsFile extend the catalogs
// the run's names are looked up in. Models are found by their Hugging Face
// id (models/builtin.toml's hf_name), GPUs by name or alias (the driver's
// device name, e.g. "NVIDIA GeForce RTX 4090"). A model or GPU missing from
// the catalog is an error that says how to add it. Other scenario fields of
// base are not applied here: the caller overrides what its flags set.
func RunScenario(run *realrun.Run, base scenario.Scenario) (scenario.Scenario, error) {
	e := run.Engine
	s := scenario.Scenario{Name: run.Name, ModelsFile: base.ModelsFile, GPUsFile: base.GPUsFile}
	s.SetDir(base.Dir())
	s.Model, s.GPU, s.ModelConfig = base.Model, base.GPU, base.ModelConfig
	if s.Model == "" && s.ModelConfig == "" {
		mc, err := s.ModelCatalog()
		if err != nil {
			return s, err
		}
		m, err := mc.ByHFName(e.Model)
		if err != nil {
			return s, fmt.Errorf("validate: run %s: model %q is not in the catalog: add it with --models-file FILE (a [[model]] with hf_name = %q, shaped like models/builtin.toml), import its config.json with --model-config, or name a catalog model with --model (see `servesim models`)", run.Name, e.Model, e.Model)
		}
		s.Model = m.Name
	}
	if s.GPU == "" {
		if e.GPU == "" {
			return s, fmt.Errorf("validate: run %s records no GPU: name one with --gpu (see `servesim gpus`)", run.Name)
		}
		gc, err := s.GPUCatalog()
		if err != nil {
			return s, err
		}
		g, err := gc.Get(e.GPU)
		if err != nil {
			return s, fmt.Errorf("validate: run %s: GPU %q is not in the catalog: add it with --gpus-file FILE (a [[gpu]] whose name or aliases include %q, shaped like hardware/gpus.toml), or name a catalog GPU with --gpu (see `servesim gpus`)", run.Name, e.GPU, strings.ToLower(strings.ReplaceAll(e.GPU, " ", "-")))
		}
		s.GPU = g.Name
	}
	s.TP = max(e.TP, 1)
	if e.PP > 1 {
		s.PP = e.PP // left unset at one stage, as a scenario without pp
	}
	s.Replicas = 1
	if e.DP > 1 {
		s.DP = e.DP // each DP rank an instance; left unset at one rank
	}
	s.ExpertParallel, s.EPLB = e.ExpertParallel, e.EPLB
	if e.DBO {
		s.TwoBatchOverlap, s.TBODecodeThreshold, s.TBOPrefillThreshold = true, e.DBODecodeThreshold, e.DBOPrefillThreshold
	}
	var err error
	if s.Weights, err = vllmDType(e.DType, "bf16"); err != nil {
		return s, fmt.Errorf("validate: run %s: dtype: %w", run.Name, err)
	}
	if s.KV, err = vllmDType(e.KVDType, s.Weights); err != nil {
		return s, fmt.Errorf("validate: run %s: kv_cache_dtype: %w", run.Name, err)
	}
	if q := strings.ToLower(e.Quantization); q != "" {
		// vLLM's --quantization names the weights' format; the KV cache
		// keeps the model dtype unless kv_cache_dtype says otherwise
		// (vLLM's --kv-cache-dtype: "auto" will use model data type).
		w, ok := vllmQuantizations[q]
		if !ok {
			return s, fmt.Errorf("validate: run %s: quantization %q: servesim models fp8, modelopt_fp4 and nvfp4 weights only", run.Name, e.Quantization)
		}
		s.Weights = w
	}
	if e.CPUKVBlocks > 0 {
		// vLLM's OffloadingConnector with the logged CPU blocks.
		s.Offload = &scenario.Offload{CPUBlocks: e.CPUKVBlocks}
	}
	s.Batch = scenario.Batch{Policy: "chunked", MaxNumSeqs: e.MaxNumSeqs, MaxNumBatchedTokens: e.MaxNumBatchedTokens,
		MaxModelLen: e.MaxModelLen, BlockSize: e.BlockSize, GPUMemUtil: e.GPUMemUtil, PrefixCaching: true}
	if e.PrefixCaching != nil {
		s.Batch.PrefixCaching = *e.PrefixCaching
	}
	if e.ChunkedPrefill != nil && !*e.ChunkedPrefill {
		// vLLM V1 with chunked prefill off still runs the decodes beside
		// whole prompts that fit the token budget
		// (vllm/v1/core/sched/scheduler.py, schedule(): a waiting request
		// longer than the budget stops the scan): policies.Mixed.
		s.Batch.Policy = "mixed"
	}
	if noAsync := e.AsyncScheduling != nil && !*e.AsyncScheduling; e.EnforceEager || e.NoCustomAllReduce || noAsync {
		// The run's own switches of the vllm-v1 engine model (nil, the
		// default engine, when it sets none).
		s.Engine = &scenario.Engine{EnforceEager: e.EnforceEager, NoCustomAllReduce: e.NoCustomAllReduce, NoAsyncScheduling: noAsync}
	}
	if e.Speculative != "" {
		// vLLM's SpeculativeConfig JSON: method, num_speculative_tokens and
		// model are read; its other keys change no simulated cost.
		var sp struct {
			Method string `json:"method"`
			K      int    `json:"num_speculative_tokens"`
			Model  string `json:"model"`
		}
		if err := json.Unmarshal([]byte(e.Speculative), &sp); err != nil {
			return s, fmt.Errorf("validate: run %s: speculative_config %s: %v", run.Name, e.Speculative, err)
		}
		s.Speculative = &scenario.Speculative{Method: sp.Method, NumSpeculativeTokens: sp.K}
		if sp.Method == "draft_model" {
			s.Speculative.Model = sp.Model // the draft, looked up in the catalog; an EAGLE head's repository is not needed
		}
	}
	return s, nil
}

// vllmQuantizations maps vLLM's --quantization values servesim models to
// weight precisions (the same map as the CLI's --quantization alias).
var vllmQuantizations = map[string]string{"fp8": "fp8", "modelopt_fp4": "fp4", "nvfp4": "fp4"}

// vllmDType maps a vLLM dtype ("auto", "bfloat16", "float16", "fp8",
// "fp8_e4m3", ...) to a servesim precision; "" and "auto" give def.
func vllmDType(d, def string) (string, error) {
	switch strings.ToLower(d) {
	case "", "auto":
		return def, nil
	case "bfloat16", "bf16", "float16", "half", "fp16":
		return "bf16", nil // 16-bit either way: same bytes and tensor-core rate
	case "fp8", "fp8_e4m3", "fp8_e5m2", "float8":
		return "fp8", nil
	}
	return "", fmt.Errorf("%q is not a precision servesim models (bf16, fp8)", d)
}

// Validation is one real run beside its simulation.
type Validation struct {
	Run    *realrun.Run
	Plan   *scenario.Plan // nil when Status is set
	Status string
	Notes  []string
	Real   metrics.Summary // measured (zero for aggregate-only runs; see Metrics)
	Sim    metrics.Summary // simulated (inference-perf rows: the row's scope only)
	// Fitted lists the parameters fitted on this run (the suite file's
	// fitted field); empty = held out.
	Fitted []string
	// Workload is the suite file's workload name ("" outside the suite).
	Workload string
	// Overlap marks a summary row whose stage rows are compared too: it
	// holds the same requests again, so the median errors leave it out.
	Overlap  bool
	Metrics  []MetricRow
	SimRecs  []metrics.Record // the simulation's per-request records
	SimTicks []realrun.Tick   // the simulation's per-second running requests and throughput
}

// MetricRow is one metric, measured and simulated. Missing values are NaN.
type MetricRow struct {
	Metric string  // e.g. "ttft_mean"
	Unit   string  // "ms", "req/s", "tok/s"
	Real   float64 //
	Sim    float64
}

// Err is the signed relative error (sim − real)/real, NaN when either is
// missing or real is 0.
func (m MetricRow) Err() float64 {
	if math.IsNaN(m.Real) || math.IsNaN(m.Sim) || m.Real == 0 {
		return math.NaN()
	}
	return (m.Sim - m.Real) / m.Real
}

// Validate replays run on the scenario s (from RunScenario, with the
// user's overrides applied) and compares. When the run records its KV-cache
// size (meta.json kv_cache.num_gpu_blocks), the simulated instance gets that
// many blocks rather than servesim's own memory plan, so the comparison is
// of scheduling and kernel times, not of the memory planner; a note gives
// both numbers.
func Validate(run *realrun.Run, s scenario.Scenario) (*Validation, error) {
	v := &Validation{Run: run, Notes: append([]string(nil), run.Notes...)}
	if run.Format == realrun.FormatStages {
		vs, err := ValidateStages([]*realrun.Run{run}, s)
		if err != nil {
			return nil, err
		}
		return vs[0], nil
	}
	reqs := make([]workload.Request, len(run.Requests))
	for i, q := range run.Requests {
		if !(q.Arrival >= 0 && q.Arrival <= scenario.MaxDurationS) {
			return nil, fmt.Errorf("validate: run %s (%s): request %s arrives %g s after the first: outside the longest run servesim replays (%g s)", run.Name, run.Path, q.ID, q.Arrival, scenario.MaxDurationS)
		}
		reqs[i] = workload.Request{Arrival: sim.FromSeconds(q.Arrival), PromptTokens: q.Input, OutputTokens: q.Output}
	}
	// The synthetic workload is a placeholder that passes Resolve's checks;
	// the plan replays reqs instead.
	s.Workload = scenario.Workload{Arrival: "poisson", Rate: 1, Requests: len(reqs), Prompt: "constant:1", Output: "constant:1"}
	p, err := s.Resolve()
	if err != nil {
		return nil, fmt.Errorf("%w (run %s)", err, run.Name)
	}
	p.Workload, p.Scenario.Workload = workload.Synthetic{}, scenario.Workload{}
	p.Replay = &workload.Replay{Requests: reqs}
	p.Inputs = scenario.DigestOf(p.Inputs, "replay", reqs)
	if mc := run.MaxConcurrency; mc > 0 {
		// vLLM bench semantics (workload.Limit): each request arrives on
		// the replay's schedule, waits at the client for one of mc slots,
		// and its TTFT counts from when it has one.
		p.MaxConcurrency, p.Think = mc, 0
		p.Inputs = scenario.DigestOf(p.Inputs, "max_concurrency", mc)
		v.Notes = append(v.Notes, fmt.Sprintf("max_concurrency %d applied: each request waits at the client for one of %d slots (vLLM bench --max-concurrency), TTFT counted from when it has one", mc, mc))
	}
	if p.VLLMMemory != nil {
		v.Notes = append(v.Notes, "vLLM memory plan: "+p.VLLMMemory.String())
	}
	note, err := applyLoggedKV(run, p)
	if err != nil {
		return nil, err
	}
	v.Notes = append(v.Notes, note)
	if p.Scenario.Batch.PrefixCaching {
		v.Notes = append(v.Notes, "prefix caching is on but the replay has no token ids, so no prefix is shared; a recompute-preempted request reuses its own cached blocks")
	}
	v.Plan = p
	sink := &validateSink{}
	v.Sim, err = runWithSink(p, sink)
	if err != nil {
		return nil, fmt.Errorf("%w (run %s)", err, run.Name)
	}
	if r := sink.res; r.Preemptions > 0 {
		prefilled := int64(0)
		for _, st := range sink.steps {
			prefilled += int64(st.prompt)
		}
		v.Notes = append(v.Notes, fmt.Sprintf("simulated: %d preemptions, %d KV tokens recomputed, %d found in the preempted requests' own cached blocks; %d prompt tokens prefilled for %d admitted",
			r.Preemptions, r.RecomputeTokens, r.PreemptHitTokens, prefilled, r.PromptTokensAdmitted))
	}
	v.SimRecs = sink.recs
	v.SimTicks = sink.ticks(sim.Second)
	if v.Real, err = measured(run); err != nil {
		return nil, err
	}
	v.Metrics = compareSummaries(v.Real, v.Sim)
	return v, nil
}

// applyLoggedKV gives the plan the run's logged KV blocks when the run
// records them (in the plan's block size, or with no block size given),
// and returns the header note, planned beside logged. The logged cache
// must fit the GPU it was logged on: blocks × block size × the model's KV
// bytes per token per GPU at most the device's whole memory (the run's
// own figure, else the catalog's); more is an error naming both.
func applyLoggedKV(run *realrun.Run, p *scenario.Plan) (string, error) {
	e := run.Engine
	if e.KVBlocks > 0 {
		bs := e.BlockSize
		if bs == 0 {
			bs = p.Memory.BlockSize
		}
		mem, from := e.GPUMemBytes, "the run's hardware.device_total_memory_bytes"
		if mem == 0 {
			mem, from = p.GPU.DeviceMemory(), "the catalog's "+p.GPU.Name
		}
		if need := float64(e.KVBlocks) * float64(bs) * p.Memory.KVBytesPerTokenPerGPU; need > mem {
			return "", fmt.Errorf("validate: run %s (%s): the logged KV cache, %d blocks × %d tokens × %.0f bytes per token per GPU (%s, TP %d) = %.4g GB, is more than the GPU's whole memory, %.4g GB (%s)",
				run.Name, run.Path, e.KVBlocks, bs, p.Memory.KVBytesPerTokenPerGPU, p.Model.Name, p.Parallel.TP, need/1e9, mem/1e9, from)
		}
	}
	if e.KVBlocks > 0 && (e.BlockSize == 0 || e.BlockSize == p.Memory.BlockSize) {
		note := fmt.Sprintf("KV cache: the run's %d blocks (servesim's own plan: %d)", e.KVBlocks, p.Memory.Blocks)
		p.Memory.Blocks = e.KVBlocks
		p.Serve.Instance.Blocks = e.KVBlocks
		return note, nil
	}
	return fmt.Sprintf("KV cache: servesim's plan, %d blocks (the run does not record its own)", p.Memory.Blocks), nil
}

// runWithSink runs the plan like Run (without output files), handing every
// record and step to sink as well.
func runWithSink(p *scenario.Plan, sink serve.Sink) (metrics.Summary, error) {
	src, closeSrc, err := p.Source()
	if err != nil {
		return metrics.Summary{}, err
	}
	defer closeSrc()
	coll := metrics.NewCollector(p.SLO)
	for i := range p.Replicas {
		coll.SetPeak(i, p.GPU.PeakFLOPS(p.Parallel.Weights), p.GPU.MemBW)
	}
	cfg := p.Serve
	cfg.Source, cfg.Collector, cfg.Sink = src, coll, sink
	if err := p.Scenario.FreshPolicies(&cfg); err != nil {
		return metrics.Summary{}, err
	}
	res, err := serve.Run(cfg)
	if err != nil {
		return metrics.Summary{}, err
	}
	if s, ok := sink.(*validateSink); ok {
		s.res = res
	}
	return coll.Summary(), nil
}

// validateSink keeps the records and the steps' running requests and tokens.
type validateSink struct {
	recs  []metrics.Record
	steps []stepLite
	res   serve.Result
}

type stepLite struct {
	end                      sim.Time
	running, prompt, decodes int
}

func (s *validateSink) Record(r *metrics.Record) error { s.recs = append(s.recs, *r); return nil }
func (s *validateSink) Step(st *metrics.Step) error {
	s.steps = append(s.steps, stepLite{st.Start + st.Duration, st.Prefills + st.Decodes, st.PrefillTokens, st.Decodes})
	return nil
}

// ticks bins the steps into ticks of width w as vLLM's stat logger does:
// prompt and generated tokens per second over the tick, running requests
// at the tick's last step. Generated tokens count decodes (a prefill's
// first token is not counted). T is the tick's end.
func (s *validateSink) ticks(w sim.Time) []realrun.Tick {
	var out []realrun.Tick
	for _, st := range s.steps {
		k := int((st.end - 1) / w)
		for len(out) <= k {
			out = append(out, realrun.Tick{T: float64(len(out)+1) * w.Seconds(), KVPct: math.NaN()})
			if n := len(out); n > 1 {
				out[n-1].Running = out[n-2].Running // no step in the tick: unchanged
			}
		}
		t := &out[k]
		t.PromptTPS += float64(st.prompt) / w.Seconds()
		t.GenTPS += float64(st.decodes) / w.Seconds()
		t.Running = st.running
	}
	return out
}

// measured summarizes a run's requests with the simulator's own metric code
// (sim/metrics), so both sides are computed alike: TTFT, TPOT, E2E per
// request and ITL from the recorded gaps. A format that reports its own
// benchmark duration (vLLM bench) has its throughputs over that duration.
//
// A time outside the simulator's clock is an error naming the request (the
// readers bound every time by realrun.MaxSpanS, so it is not reached from
// a file).
func measured(run *realrun.Run) (metrics.Summary, error) {
	c := metrics.NewCollector(metrics.SLO{})
	for i, q := range run.Requests {
		var ts [4]sim.Time
		for k, v := range []float64{q.Start, q.FirstToken, q.Finish, q.Scheduled} {
			if k == 3 && math.IsNaN(v) {
				continue
			}
			t, err := sim.FromSecondsChecked(v)
			if err != nil {
				return metrics.Summary{}, fmt.Errorf("validate: run %s (%s): request %s: measured time: %w", run.Name, run.Path, q.ID, err)
			}
			ts[k] = t
		}
		r := metrics.Record{ID: int64(i), Arrival: ts[0], FirstToken: ts[1], Finish: ts[2], Scheduled: ts[3],
			PromptTokens: q.Input, OutputTokens: q.Output}
		c.Add(&r)
		for _, g := range q.ITLs {
			t, err := sim.FromSecondsChecked(g)
			if err != nil {
				return metrics.Summary{}, fmt.Errorf("validate: run %s (%s): request %s: measured ITL: %w", run.Name, run.Path, q.ID, err)
			}
			c.AddITL(t, 1)
		}
	}
	s := c.Summary()
	if d := run.Duration; d > 0 {
		s.Duration = d
		s.RequestThroughput = float64(s.Completed) / d
		s.OutputThroughput = float64(s.OutputTokens) / d
		s.TotalThroughput = float64(s.InputTokens+s.OutputTokens) / d
	}
	return s, nil
}

// compareSummaries lists mean, median, p90 and p99 of TTFT, TPOT, ITL and
// E2E (ms) and the three throughputs. A latency with no samples is NaN.
func compareSummaries(real, simd metrics.Summary) []MetricRow {
	var rows []MetricRow
	for _, m := range []struct {
		name string
		r, s metrics.Stats
	}{{"ttft", real.TTFT, simd.TTFT}, {"tpot", real.TPOT, simd.TPOT}, {"itl", real.ITL, simd.ITL}, {"e2e", real.E2E, simd.E2E}} {
		for _, q := range []struct {
			name string
			f    func(metrics.Stats) float64
		}{
			{"mean", func(s metrics.Stats) float64 { return s.Mean }},
			{"median", func(s metrics.Stats) float64 { return s.Median }},
			{"p90", func(s metrics.Stats) float64 { return s.P90 }},
			{"p99", func(s metrics.Stats) float64 { return s.P99 }},
		} {
			rows = append(rows, MetricRow{Metric: m.name + "_" + q.name, Unit: "ms", Real: statOrNaN(m.r, q.f), Sim: statOrNaN(m.s, q.f)})
		}
	}
	return append(rows,
		MetricRow{"request_throughput", "req/s", real.RequestThroughput, simd.RequestThroughput},
		MetricRow{"output_throughput", "tok/s", real.OutputThroughput, simd.OutputThroughput},
		MetricRow{"total_throughput", "tok/s", real.TotalThroughput, simd.TotalThroughput})
}

func statOrNaN(s metrics.Stats, f func(metrics.Stats) float64) float64 {
	if s.N == 0 {
		return math.NaN()
	}
	return f(s)
}
