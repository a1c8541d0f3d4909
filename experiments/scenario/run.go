package scenario

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/serve"
	"github.com/servesim/servesim/sim/workload"
	"github.com/servesim/servesim/sim/workload/trace"
)

// DefaultIterOverheadMs is the per-iteration CPU and scheduling time when a
// scenario gives none: 0.5 ms. It is an assumption, not a measurement: a
// CUDA-graph decode iteration of a small model in a modern engine adds a few
// hundred microseconds of host work to the kernel time. Calibrated profiles
// replace it with a fitted value.
const DefaultIterOverheadMs = 0.5

// Plan is a validated scenario with every name resolved: what a run needs.
type Plan struct {
	Scenario Scenario
	Model    *models.Model
	PoolPlan           // the colocated instances, or the prefill pool when disaggregated
	Decode   *PoolPlan // the decode pool when disaggregated
	Workload workload.Synthetic
	Trace    *trace.Options   // replay this trace instead, when set
	Mix      *trace.Mix       // or this class mix
	Replay   *workload.Replay // or replay these exact requests (servesim validate; see validate.go)
	// MaxConcurrency > 0 sends the workload through a client with that many
	// slots (workload.Limit), each held Think longer after its request.
	MaxConcurrency int
	Think          sim.Time
	SLO            metrics.SLO
	Replicas       int
	// DecodeInstances is the decode pool's instances when disaggregated:
	// disagg.decode_replicas × decode_dp ranks.
	DecodeInstances int
	Serve           serve.Config // policies and engine settings; Source and Collector are set per run
	// Inputs digests what the plan read besides the scenario: the model
	// and GPU definitions, each pool's kernel-time profile and a replayed
	// trace's bytes (see inputs.go). Sweep point keys include it.
	Inputs string
	// FrontEnd says which front-end time per request vllm-v1 took and
	// where it came from (the scenario, the GPU's catalog entry or the
	// assumed default; frontEndRequest), for the run header; "" under other
	// engines or with the front end off.
	FrontEnd string
	// EngineNotes are the engine model's defaults applied (with their
	// sources) and its assumptions, for the run header; nil under vllm-v1
	// and ideal.
	EngineNotes []string
	// SpecAccept describes speculative decoding's acceptance model and its
	// source, for the run header; "" with speculation off.
	SpecAccept string
}

// PoolPlan is one pool's resolved instance: GPU, parallelism, batch policy,
// memory and step model.
type PoolPlan struct {
	GPU         *hardware.GPU
	Parallel    models.Parallel
	Memory      hardware.MemoryPlan
	VLLMMemory  *hardware.VLLMMemoryPlan // the vllm-v1 memory plan's terms, nil under other plans
	SGLang      *SGLangPlan              // the sglang engine's memory plan and defaults, nil under other engines
	Step        *hardware.StepModel
	Batcher     policies.Batcher
	Limits      policies.Limits
	MaxModelLen int
	Kernel      string // which kernel-time model, for reports
	// Pipeline prices the rounds of a pipeline-parallel instance (pp ≥ 2;
	// Step is then its whole-model step model), and Stages its stages'
	// memory; nil at pp = 1.
	Pipeline *hardware.PipelineStep
	Stages   []StagePlan
	chunked  bool // the pipeline runs SGLang's chunked pipelining
	// Expert prices the steps of an expert-parallel instance (Step with
	// the all-to-all); nil without expert parallelism.
	Expert     *hardware.ExpertStep
	layerSkews []float64 // per-MoE-layer skews (expert_skew_layers or _file); nil: Parallel.EP.Skew for all
	kernelID   string    // digest of the kernel-time model's definition

	// TRTLLMMemory is the trtllm memory plan's terms, nil under other plans.
	TRTLLMMemory *hardware.TRTLLMMemoryPlan
}

func (s Scenario) Path(p string) string {
	if filepath.IsAbs(p) || s.dir == "" {
		return p
	}
	return filepath.Join(s.dir, p)
}

// Report is the outcome of one run.
type Report struct {
	Plan    *Plan
	Result  serve.Result
	Summary metrics.Summary
	// Trace counts a replayed trace's rows: read, skipped as bad, filtered,
	// failed (zero output tokens), replayed; and requests clipped.
	Trace *TraceCounts
	// PipelineStats sums the run's pipeline rounds (pp ≥ 2).
	PipelineStats hardware.PipelineStats
	// DecodePipelineStats sums the decode pool's (disaggregated, decode_pp ≥ 2).
	DecodePipelineStats hardware.PipelineStats
	// ExpertStats sums the run's expert-parallel steps over all ranks.
	ExpertStats hardware.ExpertStats
	// DecodeExpertStats sums the decode pool's (disaggregated).
	DecodeExpertStats hardware.ExpertStats
	// SharedDir lists the temporary set directories of other runs found
	// writing into the same output directory while this one ran (see
	// runset.go): the last run to finish leaves its files there, whole.
	SharedDir []string
}

// TraceCounts are a replay's row counts.
type TraceCounts struct {
	trace.Counts
	Clipped int64 `json:"clipped"`
}

// Run simulates the plan. If outDir is not empty it writes requests.csv,
// steps.csv and summary.json there as one set, all three or none (see
// runset.go), after removing the temporaries dead runs left there
// (SweepStale). An output file that is one of the plan's inputs (a trace
// at outDir/requests.csv) is refused before the run (CheckOutputs).
func Run(p *Plan, outDir string) (*Report, error) {
	return RunContext(context.Background(), p, outDir)
}

// RunContext is Run stopped early when ctx is cancelled: it then removes
// its temporary files, writes no result file and returns an error that
// says "interrupted" and wraps ctx.Err() (errors.Is(err, context.Canceled)).
// The library installs no signal handler: the caller (the CLI) cancels ctx.
func RunContext(ctx context.Context, p *Plan, outDir string) (*Report, error) {
	return RunWith(ctx, p, RunOptions{Out: outDir})
}

// RunOptions configure RunWith.
type RunOptions struct {
	Out string // the directory of the run's files, as Run's outDir ("": none)
	// Crowded says the run is one of several keeping every core busy (a
	// sweep's points on as many workers as cores): it then starts no
	// goroutine of its own to sort its samples while it runs
	// (metrics.Collector.SortInline). The results are the same.
	Crowded bool
}

// RunWith is RunContext with options.
func RunWith(ctx context.Context, p *Plan, o RunOptions) (*Report, error) {
	outDir := o.Out
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("scenario: run interrupted before it started (%w)", err)
	}
	if outDir != "" {
		var outs []string
		for _, f := range runFiles {
			outs = append(outs, filepath.Join(outDir, f))
		}
		if err := CheckOutputs(outs, p.InputFiles()); err != nil {
			return nil, err
		}
	}
	src, closeSrc, err := p.Source()
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	coll := metrics.NewCollector(p.SLO)
	if o.Crowded {
		coll.SortInline()
	}
	for i := range p.Replicas {
		coll.SetPeak(i, p.GPU.PeakFLOPS(p.Parallel.Weights), p.GPU.MemBW)
	}
	if d := p.Decode; d != nil {
		for i := range p.DecodeInstances {
			coll.SetPeak(p.Replicas+i, d.GPU.PeakFLOPS(d.Parallel.Weights), d.GPU.MemBW)
		}
	}
	cfg := p.Serve
	cfg.Source, cfg.Collector = src, coll
	// Stateful policies start fresh in every run of the plan.
	if err := p.Scenario.FreshPolicies(&cfg); err != nil {
		return nil, err
	}
	var files *fileSink
	if outDir != "" {
		if files, err = newFileSink(outDir); err != nil {
			return nil, err
		}
		defer files.abort()
		cfg.Sink = files
	}
	cfg.Done = ctx.Done()
	if p.Pipeline != nil {
		// serve prices one probe round per instance as it builds them.
		p.Pipeline.Reset(p.Replicas)
	}
	if p.Expert != nil {
		p.Expert.Reset(p.Replicas) // the same probes, one a rank
	}
	if p.Decode != nil && p.Decode.Expert != nil {
		p.Decode.Expert.Reset(p.DecodeInstances)
	}
	if p.Decode != nil && p.Decode.Pipeline != nil {
		p.Decode.Pipeline.Reset(p.DecodeInstances)
	}
	res, err := serve.Run(cfg)
	if errors.Is(err, serve.ErrStopped) {
		return nil, fmt.Errorf("scenario: run interrupted: %w (%w)", err, ctx.Err())
	}
	if err != nil {
		return nil, err
	}
	rep := &Report{Plan: p, Result: res, Summary: coll.Summary()}
	if p.Pipeline != nil {
		rep.PipelineStats = p.Pipeline.Stats()
	}
	if p.Expert != nil {
		rep.ExpertStats = p.Expert.Stats()
	}
	if p.Decode != nil && p.Decode.Expert != nil {
		rep.DecodeExpertStats = p.Decode.Expert.Stats()
	}
	if p.Decode != nil && p.Decode.Pipeline != nil {
		rep.DecodePipelineStats = p.Decode.Pipeline.Stats()
	}
	if l, ok := src.(*workload.Limited); ok {
		src = l.Unwrap()
	}
	if t, ok := src.(*trace.Trace); ok {
		rep.Trace = &TraceCounts{Counts: t.Counts(), Clipped: t.Clipped()}
	}
	if files != nil {
		if rep.SharedDir, err = files.commit(rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// decodeRoutingStream is the decode pool's routing stream, beside the
// prefill (or colocated) pool's serve.StreamRouting.
const decodeRoutingStream = serve.StreamRouting + 1

// newRouter builds the scenario's router with its own seeded stream.
func (s Scenario) newRouter(stream uint64) (policies.Router, error) {
	return policies.RouterByName(s.Router.Policy, rand.New(rand.NewPCG(s.Seed, stream)))
}

// newAdmission builds the scenario's admission policy.
func (s Scenario) newAdmission() (policies.Admission, error) {
	ad := s.Admission
	return policies.AdmissionByName(ad.Policy, policies.AdmissionParams{QueueCap: ad.QueueCap, Rate: ad.Rate, Burst: ad.Burst, Defer: ad.Defer})
}

// FreshPolicies rebuilds the stateful policies (routers, admission) so that
// running one plan twice gives identical results.
func (s Scenario) FreshPolicies(cfg *serve.Config) error {
	var err error
	if cfg.Router, err = s.newRouter(serve.StreamRouting); err != nil {
		return err
	}
	if cfg.Admission, err = s.newAdmission(); err != nil {
		return err
	}
	if cfg.Disagg != nil {
		d := *cfg.Disagg
		if d.DecodeRouter, err = s.newRouter(decodeRoutingStream); err != nil {
			return err
		}
		cfg.Disagg = &d
	}
	return nil
}

// MkdirAll creates an output directory.
func MkdirAll(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("scenario: output directory: %w", err)
	}
	return nil
}

// resolveWorkload checks the workload: a trace, a class mix, or synthetic.
func (s *Scenario) resolveWorkload(p *Plan) error {
	wl := &s.Workload
	if wl.Arrival == "" {
		wl.Arrival = "poisson"
	}
	if wl.Burstiness == 0 && wl.Arrival != workload.ProcessConstant {
		wl.Burstiness = 1 // constant gaps take none
	}
	other := ""
	switch {
	case wl.Trace != nil:
		other = "a trace"
	case len(wl.Classes) > 0:
		other = "a class mix"
	}
	if err := s.resolveShape(p, other); err != nil {
		return err
	}
	if wl.Trace != nil {
		if len(wl.Classes) > 0 {
			return s.fieldError("workload.classes", "", "a trace and a class mix exclude each other")
		}
		t := *wl.Trace
		f, err := s.dataPath(t.File)
		if err != nil {
			return fmt.Errorf("scenario: workload.trace: %w", err)
		}
		t.File = f
		if err := t.Validate(); err != nil {
			return fmt.Errorf("scenario: workload.trace: %w", err)
		}
		p.Trace = &t
		return nil
	}
	staged := len(wl.Stages) > 0
	if !staged && !(wl.Rate > 0) {
		return s.fieldError("workload.rate", "rate", "%g requests/s: must be a positive number, or inf (every request at t = 0, as vLLM bench's default)", wl.Rate)
	}
	if !staged && !math.IsInf(wl.Rate, 1) && 1/wl.Rate > MaxDurationS {
		return s.fieldError("workload.rate", "rate", "%g requests/s is out of range: one gap (1/rate = %g s) is past the longest run (%g s)", wl.Rate, 1/wl.Rate, MaxDurationS)
	}
	if wl.Requests < 0 {
		return s.fieldError("workload.requests", "requests", "%d must be ≥ 0", wl.Requests)
	}
	for _, f := range []struct {
		v           int
		field, flag string
	}{
		{wl.SharedPrefix, "workload.shared_prefix_tokens", "shared-prefix-tokens"},
		{wl.PrefixGroups, "workload.prefix_groups", "prefix-groups"},
		{wl.Turns, "workload.turns", "turns"},
		{wl.Conversations, "workload.conversations", "conversations"},
	} {
		if f.v < 0 {
			return s.fieldError(f.field, f.flag, "%d must be ≥ 0", f.v)
		}
	}
	if wl.SharedPrefix > 0 && wl.PrefixGroups == 0 {
		return s.fieldError("workload.shared_prefix_tokens", "shared-prefix-tokens", "a shared prefix of %d tokens needs prefix_groups ≥ 1 (flag --prefix-groups)", wl.SharedPrefix)
	}
	if wl.Turns >= 2 && wl.Conversations == 0 {
		return s.fieldError("workload.turns", "turns", "%d-turn conversations need conversations ≥ 1 (flag --conversations: how many are in flight at once)", wl.Turns)
	}
	if _, err := s.duration("workload.duration_s", "duration", wl.DurationS, 1, "s"); err != nil {
		return err
	}
	if !staged && wl.Requests == 0 && wl.DurationS == 0 {
		return s.fieldError("workload.requests", "requests", "give a number of requests or a duration_s")
	}
	if wl.Requests > 0 && wl.DurationS > 0 {
		return s.fieldError("workload.duration_s", "duration", "give requests or duration_s, not both (requests %d, duration_s %g)", wl.Requests, wl.DurationS)
	}
	if math.IsInf(wl.Rate, 1) && wl.Requests == 0 {
		return s.fieldError("workload.rate", "rate", "rate inf sends every request at t = 0: give a number of requests, not a duration")
	}
	arrival := workload.Arrival{Process: wl.Arrival, Rate: wl.Rate, Burstiness: wl.Burstiness}
	if staged {
		arrival.Rate = wl.Stages[0].Rate // each stage's own; checked by resolveShape
	}
	if err := arrival.Validate(); err != nil {
		return s.fieldError("workload.arrival", "arrival", "%v", err)
	}
	var dur sim.Time
	if wl.DurationS > 0 {
		dur = sim.FromSeconds(wl.DurationS)
	}
	if len(wl.Classes) > 0 {
		m := &trace.Mix{Arrival: arrival, Count: wl.Requests, Duration: dur, Seed: s.Seed}
		for i, c := range wl.Classes {
			field := fmt.Sprintf("workload.classes[%d]", i)
			pd, err := trace.ParseDist(c.Prompt, s.dir)
			if err != nil {
				return s.fieldError(field+".prompt", "", "%v", err)
			}
			od, err := trace.ParseDist(c.Output, s.dir)
			if err != nil {
				return s.fieldError(field+".output", "", "%v", err)
			}
			ttft, err := s.duration(field+".ttft_ms", "", c.TTFTms, 1e-3, "ms")
			if err != nil {
				return err
			}
			tpot, err := s.duration(field+".tpot_ms", "", c.TPOTms, 1e-3, "ms")
			if err != nil {
				return err
			}
			m.Classes = append(m.Classes, trace.Class{Name: c.Name, Weight: c.Weight, Prompt: pd, Output: od,
				TTFTSLO: ttft, TPOTSLO: tpot})
		}
		if err := m.Validate(); err != nil {
			return s.fieldError("workload.classes", "", "%v", err)
		}
		p.Mix = m
		return nil
	}
	shape := p.Workload // stages, drain, gap, rescale, data from resolveShape
	p.Workload = workload.Synthetic{Arrival: arrival, Count: wl.Requests, Duration: dur, Seed: s.Seed,
		SharedPrefix: wl.SharedPrefix, PrefixGroups: wl.PrefixGroups, Turns: wl.Turns, Conversations: wl.Conversations,
		Stages: shape.Stages, Drain: shape.Drain, Gap: shape.Gap, Rescale: shape.Rescale, Data: shape.Data}
	if shape.Data != nil {
		if err := p.Workload.Validate(); err != nil {
			return fmt.Errorf("scenario: workload: %w", err)
		}
		return nil
	}
	if wl.Prompt == "" || wl.Output == "" {
		return s.fieldError("workload.prompt", "prompt-len", "prompt and output length distributions are required, e.g. \"lognormal:6.5,0.8\"")
	}
	var err error
	if p.Workload.Prompt, err = workload.ParseDist(wl.Prompt); err != nil {
		return s.fieldError("workload.prompt", "prompt-len", "%v", err)
	}
	if p.Workload.Output, err = workload.ParseDist(wl.Output); err != nil {
		return s.fieldError("workload.output", "output-len", "%v", err)
	}
	if err := p.Workload.Validate(); err != nil {
		return fmt.Errorf("scenario: workload: %w", err)
	}
	return nil
}

// Source opens the plan's workload, through a client of MaxConcurrency
// slots when set; close releases a trace file.
func (p *Plan) Source() (src workload.Source, close func() error, err error) {
	src, close, err = p.openSource()
	if err == nil && p.MaxConcurrency > 0 {
		src = workload.Limit(src, p.MaxConcurrency, p.Think)
	}
	return src, close, err
}

func (p *Plan) openSource() (src workload.Source, close func() error, err error) {
	switch {
	case p.Replay != nil:
		s, err := p.Replay.Source()
		return s, func() error { return nil }, err
	case p.Trace != nil:
		t, err := trace.Open(*p.Trace, p.Scenario.Seed)
		if err != nil {
			return nil, nil, err
		}
		return t, t.Close, nil
	case p.Mix != nil:
		m, err := p.Mix.Source()
		return m, func() error { return nil }, err
	}
	s, err := p.Workload.Source()
	return s, func() error { return nil }, err
}
