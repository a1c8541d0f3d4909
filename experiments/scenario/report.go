package scenario

import (
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/servesim/servesim/sim/metrics"
)

// SummaryFile is the layout of summary.json.
type SummaryFile struct {
	Servesim RunInfo          `json:"servesim"`
	Scenario Scenario         `json:"scenario"`
	Instance InstanceInfo     `json:"instance"`
	Counts   Counts           `json:"counts"`
	Trace    *TraceCounts     `json:"trace,omitempty"`
	Tiers    []TierCounts     `json:"kv_tiers,omitempty"` // KV offload tiers (offload.go)
	Metrics  metrics.Summary  `json:"metrics"`
	Pipeline *PipelineSummary `json:"pipeline,omitempty"` // pp ≥ 2
	// DecodePipeline is the decode pool's (disaggregated, decode_pp ≥ 2).
	DecodePipeline *PipelineSummary `json:"decode_pipeline,omitempty"`
	Experts        *ExpertSummary   `json:"expert_parallel,omitempty"` // dp ≥ 2 or expert parallelism
	// DecodeExperts is the decode pool's (disaggregated, decode_dp ≥ 2 or
	// expert parallelism).
	DecodeExperts *ExpertSummary `json:"decode_expert_parallel,omitempty"`
	// Speculative is speculative decoding's counts (omitted with it off).
	Speculative *SpecSummary `json:"speculative,omitempty"`
}

// RunInfo records what produced the results: the servesim version, the
// kernel-time model and its provenance (builtin, roofline, or a profile
// file, with a digest of its content), and the engine model.
type RunInfo struct {
	Version          string `json:"version"`
	Kernel           string `json:"kernel"`
	KernelProvenance string `json:"kernel_provenance"`
	Engine           string `json:"engine"`
}

// Version is servesim's version: the main module's from the build
// information (a tagged `go install` gives v1.2.3), else "devel".
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return "devel"
}

func (r *Report) runInfo() RunInfo {
	p := r.Plan
	return RunInfo{Version: Version(), Kernel: p.Kernel, KernelProvenance: p.kernelID, Engine: p.EngineName()}
}

// EngineName describes the plan's engine model: "ideal", or the engine's
// own description (vllm-v1 and its switches).
func (p *Plan) EngineName() string {
	if e, ok := p.Serve.Engine.(fmt.Stringer); ok {
		return e.String()
	}
	return "ideal"
}

// InstanceInfo describes the resolved instance.
type InstanceInfo struct {
	Model           string  `json:"model"`
	GPU             string  `json:"gpu"`
	TP              int     `json:"tp"`
	Weights         string  `json:"weights"`
	KV              string  `json:"kv"`
	Policy          string  `json:"policy"`
	WeightGBPerGPU  float64 `json:"weight_gb_per_gpu"`
	KVGBPerGPU      float64 `json:"kv_gb_per_gpu"`
	KVBlocks        int     `json:"kv_blocks"`
	BlockSize       int     `json:"block_size"`
	KVTokens        int     `json:"kv_tokens"`
	MaxModelLen     int     `json:"max_model_len"`
	PricePerGPUHour float64 `json:"price_per_gpu_hour"`
}

// Counts are the run's conservation counts.
type Counts struct {
	Arrived         int64   `json:"arrived"`
	Finished        int64   `json:"finished"`
	Rejected        int64   `json:"rejected"`
	Deferrals       int64   `json:"deferrals"`
	Preemptions     int64   `json:"preemptions"`
	RecomputeTokens int64   `json:"recompute_tokens"`
	SwapOuts        int64   `json:"swap_outs"`
	SwapSeconds     float64 `json:"swap_s"`
	PrefixHitTokens int64   `json:"prefix_hit_tokens"`
	// PreemptHitTokens: tokens recompute-preempted requests found in their
	// own cached blocks (prefix caching; omitted when none).
	PreemptHitTokens int64   `json:"preempt_hit_tokens,omitempty"`
	PrefixHitRate    float64 `json:"prefix_hit_rate"`
	PrefixEvictions  int64   `json:"prefix_evictions"`
	Steps            int64   `json:"steps"`
	Events           uint64  `json:"events"`
	EndS             float64 `json:"end_s"`
}

func (r *Report) instanceInfo() InstanceInfo {
	p := r.Plan
	return InstanceInfo{
		Model: p.Model.Name, GPU: p.GPU.Name, TP: p.Parallel.TP,
		Weights: p.Parallel.Weights.String(), KV: p.Parallel.KV.String(), Policy: p.Batcher.Name(),
		WeightGBPerGPU: p.Memory.WeightBytesPerGPU / 1e9, KVGBPerGPU: p.Memory.KVBytesPerGPU / 1e9,
		KVBlocks: p.Memory.Blocks, BlockSize: p.Memory.BlockSize, KVTokens: p.Memory.Blocks * p.Memory.BlockSize,
		MaxModelLen: p.MaxModelLen, PricePerGPUHour: p.GPU.PricePerHour,
	}
}

func (r *Report) SummaryJSON() SummaryFile {
	return SummaryFile{
		Servesim:       r.runInfo(),
		Scenario:       r.Plan.Scenario,
		Instance:       r.instanceInfo(),
		Counts:         r.Counts(),
		Metrics:        r.Summary,
		Pipeline:       r.pipelineSummary(),
		DecodePipeline: r.decodePipelineSummary(),
		Experts:        r.expertSummary(),
		DecodeExperts:  r.decodeExpertSummary(),
		Speculative:    r.specSummary(),
		Tiers:          r.tierCounts(),
	}
}

// Describe writes what the plan runs, in one paragraph.
func (p *Plan) Describe(w io.Writer) error {
	s := p.Scenario
	wl := s.Workload
	work := fmt.Sprintf("%s, %s, seed %d", p.DescribeShape(), p.DescribeLengths(), s.Seed)
	switch {
	case p.Trace != nil:
		work = fmt.Sprintf("trace %s (format %s)", p.Trace.File, orAuto(p.Trace.Format))
		if p.MaxConcurrency > 0 {
			work += fmt.Sprintf(", at most %d in flight (vLLM --max-concurrency)", p.MaxConcurrency)
		}
	case p.Mix != nil:
		names := make([]string, len(wl.Classes))
		for i, c := range wl.Classes {
			names[i] = fmt.Sprintf("%s ×%g", c.Name, c.Weight)
		}
		work = fmt.Sprintf("%s, classes %s, seed %d", p.DescribeShape(), strings.Join(names, ", "), s.Seed)
	}
	for _, n := range p.Model.Inferred.Notes {
		if _, err := fmt.Fprintf(w, "Inferred: %s.\n", n); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w,
		"Scenario %q: %s (%s weights, %s KV) on %d× %s, TP %d; %s batching, max_num_seqs %d, max_num_batched_tokens %d.\n"+
			"KV cache: %d blocks of %d tokens (%d tokens, %.1f GB per GPU; weights %.1f GB per GPU).\n"+
			"Policies: %d replica(s), router %s, scheduler %s, admission %s, preemption %s (victim %s), prefix caching %v.\n"+
			"Kernel times: %s.\n"+
			"Workload: %s.\n",
		s.Name, p.Model.Name, p.Parallel.Weights, p.Parallel.KV, p.Parallel.TP*s.pp(), p.GPU.Name, p.Parallel.TP,
		p.Batcher.Name(), p.Limits.MaxNumSeqs, p.Limits.MaxNumBatchedTokens,
		p.Memory.Blocks, p.Memory.BlockSize, p.Memory.Blocks*p.Memory.BlockSize, p.Memory.KVBytesPerGPU/1e9, p.Memory.WeightBytesPerGPU/1e9,
		p.Replicas, s.Router.Policy, s.Scheduler.Policy, s.Admission.Policy, s.Batch.Preemption, s.Batch.Victim, s.Batch.PrefixCaching,
		p.Kernel, work)
	if err == nil && p.Decode != nil {
		d, dp := s.Disagg, p.Decode
		l := p.Serve.Disagg.Link
		_, err = fmt.Fprintf(w, "Disaggregated: %d prefill instance(s) (above) and %d decode instance(s) of %d× %s, TP %d, %s batching, max_num_seqs %d, %d KV blocks; KV link %s at %.0f GB/s per prefill instance, %v latency, streaming %v.\n",
			p.Replicas, p.DecodeInstances, dp.Parallel.TP*dp.pp(), dp.GPU.Name, dp.Parallel.TP, dp.Batcher.Name(), dp.Limits.MaxNumSeqs, dp.Memory.Blocks,
			d.Link, l.Bandwidth/1e9, l.Latency, d.Streaming)
		if err == nil && p.Pipeline != nil {
			_, err = fmt.Fprintf(w, "  KV leaves each of the prefill pool's %d stages from that stage's GPUs (its layers' KV, all stages at once): the link is %.2f × one stage's.\n",
				len(p.Stages), kvLanes(p.Model.Layers, p.Stages))
		}
	}
	if err == nil {
		err = p.describePipeline(w)
	}
	if err == nil {
		err = p.describeExperts(w)
	}
	if err == nil {
		err = p.describeEngine(w)
	}
	return err
}

// WriteText writes the run's summary, laid out like vLLM's bench serve,
// then what the engine's policies did (when they did anything).
func (r *Report) WriteText(w io.Writer) error {
	gpus := r.Plan.Parallel.TP * r.Plan.Scenario.pp() // per instance
	title := fmt.Sprintf("%s on %d× %s", r.Plan.Model.Name, gpus, r.Plan.GPU.Name)
	if r.Plan.Replicas > 1 {
		title = fmt.Sprintf("%s on %d × %d× %s", r.Plan.Model.Name, r.Plan.Replicas, gpus, r.Plan.GPU.Name)
	}
	if err := r.Summary.WriteText(w, title); err != nil {
		return err
	}
	if err := r.writePipelineResults(w); err != nil {
		return err
	}
	if err := r.writeExpertResults(w); err != nil {
		return err
	}
	if err := r.writeSpecResults(w); err != nil {
		return err
	}
	return r.writeEngineCounts(w)
}

func (r *Report) Counts() Counts {
	res := r.Result
	c := Counts{
		Arrived: res.Arrived, Finished: res.Finished, Rejected: res.Rejected, Deferrals: res.Deferrals,
		Preemptions: res.Preemptions, RecomputeTokens: res.RecomputeTokens, SwapOuts: res.SwapOuts,
		SwapSeconds: res.SwapOutSeconds + res.SwapInSeconds, PrefixHitTokens: res.PrefixHitTokens,
		PreemptHitTokens: res.PreemptHitTokens,
		PrefixEvictions:  res.PrefixEvictions, Steps: res.Steps, Events: res.Events, EndS: res.End.Seconds(),
	}
	if res.PromptTokensAdmitted > 0 {
		c.PrefixHitRate = float64(res.PrefixHitTokens) / float64(res.PromptTokensAdmitted)
	}
	return c
}

// writeEngineCounts prints what the engine's policies did, when they did
// anything, in the summary's "{:<40} {:<10}" layout.
func (r *Report) writeEngineCounts(w io.Writer) error {
	c := r.Counts()
	var err error
	line := func(label string, v any) {
		if err == nil {
			_, err = fmt.Fprintf(w, "%-40s %-10v\n", label, v)
		}
	}
	nonzero := func(label string, v int64) {
		if v > 0 {
			line(label, v)
		}
	}
	if t := r.Trace; t != nil {
		line("Trace rows read:", t.Rows)
		nonzero("Trace rows skipped as bad:", t.Bad)
		nonzero("Trace rows filtered out:", t.Filtered)
		nonzero("Trace rows with no output (failed):", t.Failed)
		nonzero("Trace requests clipped to context:", t.Clipped)
	}
	nonzero("Admission deferrals:", c.Deferrals)
	nonzero("Tokens recomputed after preemption:", c.RecomputeTokens)
	nonzero("Tokens reused from own blocks after preemption:", c.PreemptHitTokens)
	if c.SwapOuts > 0 {
		line("Swap-outs:", c.SwapOuts)
		line("Swap transfer time (s):", fmt.Sprintf("%.2f", c.SwapSeconds))
	}
	if r.Plan.Decode != nil {
		sum, res := r.Summary, r.Result
		P, D := r.Plan.Replicas, r.Plan.DecodeInstances
		var pb, db float64
		for i, b := range sum.BusyByInstance {
			if i < P {
				pb += b
			} else {
				db += b
			}
		}
		if sum.Duration > 0 {
			line("Prefill pool utilization (%):", fmt.Sprintf("%.2f", 100*pb/(float64(P)*sum.Duration)))
			line("Decode pool utilization (%):", fmt.Sprintf("%.2f", 100*db/(float64(D)*sum.Duration)))
			bw := r.Plan.Serve.Disagg.Link.Bandwidth
			line("KV link utilization (%):", fmt.Sprintf("%.2f", 100*res.TransferBytes/(bw*float64(P)*sum.Duration)))
		}
		line("KV transfers:", res.Transfers)
		line("KV bytes moved (GB):", fmt.Sprintf("%.2f", res.TransferBytes/1e9))
		ph := sum.Phases
		for _, x := range []struct {
			name string
			st   metrics.Stats
		}{{"queue", ph.Queue}, {"prefill", ph.Prefill}, {"transfer wait", ph.TransferWait}, {"transfer", ph.Transfer}, {"decode", ph.Decode}} {
			line(fmt.Sprintf("Phase %s mean/p99 (ms):", x.name), fmt.Sprintf("%.2f / %.2f", x.st.Mean, x.st.P99))
		}
	}
	if len(r.Summary.ByClass) > 0 {
		names := make([]string, 0, len(r.Summary.ByClass))
		for n := range r.Summary.ByClass {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			c := r.Summary.ByClass[n]
			line(fmt.Sprintf("Class %s: served/rejected:", n), fmt.Sprintf("%d/%d", c.Completed, c.Rejected))
			line(fmt.Sprintf("Class %s: SLO attainment (%%):", n), fmt.Sprintf("%.2f", 100*c.Attainment))
			line(fmt.Sprintf("Class %s: TTFT p50/p99 (ms):", n), fmt.Sprintf("%.2f / %.2f", c.TTFT.Median, c.TTFT.P99))
			line(fmt.Sprintf("Class %s: TPOT p50/p99 (ms):", n), fmt.Sprintf("%.2f / %.2f", c.TPOT.Median, c.TPOT.P99))
		}
	}
	if r.Plan.Scenario.Batch.PrefixCaching {
		line("Prefix cache hit rate (% of prompt):", fmt.Sprintf("%.2f", 100*c.PrefixHitRate))
		line("Prefix cache evictions (units):", c.PrefixEvictions)
	}
	r.writeTierCounts(line)
	return err
}

// GPUs returns the GPUs the run's deployment uses.
func (r *Report) GPUs() int {
	p := r.Plan
	n := p.Replicas * p.Parallel.TP * p.Scenario.pp()
	if p.Decode != nil {
		n += p.DecodeInstances * p.Decode.Parallel.TP * p.Decode.pp()
	}
	return n
}

// CostPerHour returns the deployment's price per hour from the GPUs'
// prices per GPU-hour.
func (r *Report) CostPerHour() float64 {
	p := r.Plan
	c := p.GPU.PricePerHour * float64(p.Replicas*p.Parallel.TP*p.Scenario.pp())
	if p.Decode != nil {
		c += p.Decode.GPU.PricePerHour * float64(p.DecodeInstances*p.Decode.Parallel.TP*p.Decode.pp())
	}
	return c
}

func orAuto(f string) string {
	if f == "" {
		return "auto"
	}
	return f
}

// SteadyOutputThroughput is the output tok/s the deployment sustains at the
// run's load, over the arrival window (metrics.Saturation): the offered
// rate's when the queue stays bounded, the measured capacity when it kept
// growing; the first-arrival-to-last-completion throughput only for a run
// with no arrival window (one arrival instant). Cost per token divides by
// it, so two deployments at one price serving the same arrivals cost the
// same per token, however long each one's drain tail.
func (r *Report) SteadyOutputThroughput() float64 {
	if st := r.Summary.Saturation; st.WindowS > 0 {
		return st.SteadyOutputThroughput
	}
	return r.Summary.OutputThroughput
}

// SteadyTotalThroughput is SteadyOutputThroughput scaled by the served
// requests' (input + output)/output tokens.
func (r *Report) SteadyTotalThroughput() float64 {
	s := r.Summary
	if s.OutputTokens == 0 {
		return 0
	}
	return r.SteadyOutputThroughput() * float64(s.InputTokens+s.OutputTokens) / float64(s.OutputTokens)
}

// PerMillion is the cost of a million tokens at a price per hour and a
// throughput in tokens per second (0 when nothing was produced).
func PerMillion(perHour, tokPerSec float64) float64 {
	if tokPerSec <= 0 {
		return 0
	}
	return perHour / 3600 / tokPerSec * 1e6
}

// CSVField quotes a CSV field when it needs it.
func CSVField(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}
