package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/hardware/calibrate"
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
	Serve          serve.Config // policies and engine settings; Source and Collector are set per run
	// Inputs digests what the plan read besides the scenario: the model
	// and GPU definitions, each pool's kernel-time profile and a replayed
	// trace's bytes (see inputs.go). Sweep point keys include it.
	Inputs string
}

// PoolPlan is one pool's resolved instance: GPU, parallelism, batch policy,
// memory and step model.
type PoolPlan struct {
	GPU         *hardware.GPU
	Parallel    models.Parallel
	Memory      hardware.MemoryPlan
	VLLMMemory  *hardware.VLLMMemoryPlan // the vllm-v1 memory plan's terms, nil under other plans
	Step        *hardware.StepModel
	Batcher     policies.Batcher
	Limits      policies.Limits
	MaxModelLen int
	Kernel      string // which kernel-time model, for reports
	kernelID    string // digest of the kernel-time model's definition
}

// resolvePool resolves one pool's instance; prefix ("" or "disagg.decode_")
// names its fields in errors.
func (s *Scenario) resolvePool(gc *hardware.Catalog, m *models.Model, prefix, gpuName string, tp *int, b *Batch) (*PoolPlan, error) {
	f := func(name string) string { return prefix + name }
	p := &PoolPlan{}
	var err error
	if p.GPU, err = gc.Get(gpuName); err != nil {
		return nil, fmt.Errorf("%w (field %q)", err, f("gpu"))
	}
	if *tp == 0 {
		*tp = 1
	}
	if *tp < 0 {
		return nil, fieldError(f("tp"), "tp", "%d must be ≥ 1", *tp)
	}
	p.Parallel.TP = *tp
	if p.Parallel.Weights, err = models.ParseDType(s.Weights); err != nil {
		return nil, fieldError("weights", "weights", "%v", err)
	}
	if p.Parallel.KV, err = models.ParseDType(s.KV); err != nil {
		return nil, fieldError("kv", "kv", "%v", err)
	}
	if err := m.CheckParallel(p.Parallel); err != nil {
		return nil, fmt.Errorf("%w (field %q, flag --tp)", err, f("tp"))
	}
	if b.BlockSize == 0 {
		b.BlockSize = 16
	}
	if b.BlockSize < 0 {
		return nil, fieldError(f("batch.block_size"), "block-size", "%d must be > 0", b.BlockSize)
	}
	if b.GPUMemUtil == 0 {
		b.GPUMemUtil = 0.9
	}
	if !(b.GPUMemUtil > 0 && b.GPUMemUtil <= 1) {
		return nil, fieldError(f("batch.gpu_memory_utilization"), "gpu-memory-utilization", "%g must be in (0, 1]", b.GPUMemUtil)
	}
	if b.MaxModelLen == 0 {
		b.MaxModelLen = m.MaxContext
	}
	if b.MaxModelLen < 0 {
		return nil, fieldError(f("batch.max_model_len"), "max-model-len", "%d must be > 0", b.MaxModelLen)
	}
	p.MaxModelLen = b.MaxModelLen
	if b.MaxNumSeqs == 0 {
		b.MaxNumSeqs = 256
	}
	if b.MaxNumSeqs < 0 {
		return nil, fieldError(f("batch.max_num_seqs"), "max-num-seqs", "%d must be > 0", b.MaxNumSeqs)
	}
	if b.Policy == "" {
		b.Policy = "chunked"
	}
	if b.Refill < 0 {
		return nil, fieldError(f("batch.refill"), "refill", "%d must be ≥ 0", b.Refill)
	}
	if !(b.MaxWaitMs >= 0) || math.IsInf(b.MaxWaitMs, 0) {
		return nil, fieldError(f("batch.max_wait_ms"), "max-wait-ms", "%g must be ≥ 0", b.MaxWaitMs)
	}
	var ok bool
	p.Batcher, ok = policies.ByName(b.Policy, policies.BatchParams{Refill: b.Refill, MaxWait: sim.FromSeconds(b.MaxWaitMs / 1e3)})
	if !ok {
		return nil, fieldError(f("batch.policy"), "policy", "unknown policy %q (known: %s)", b.Policy, policies.BatcherNames)
	}
	if _, whole := p.Batcher.(interface{ MaxPrompt(policies.Limits) int }); whole {
		if b.MaxNumBatchedTokens == 0 {
			// vLLM's default with chunked prefill off.
			b.MaxNumBatchedTokens = max(b.MaxModelLen, 2048)
		}
		if b.MaxNumBatchedTokens < b.MaxModelLen {
			return nil, fieldError(f("batch.max_num_batched_tokens"), "max-num-batched-tokens",
				"%d is smaller than max_model_len %d: without chunked prefill a whole prompt must fit one iteration (as vLLM requires); raise it, lower max_model_len, or use policy \"chunked\"",
				b.MaxNumBatchedTokens, b.MaxModelLen)
		}
	} else if b.MaxNumBatchedTokens == 0 {
		b.MaxNumBatchedTokens = 8192
	}
	if b.MaxNumBatchedTokens < 0 {
		return nil, fieldError(f("batch.max_num_batched_tokens"), "max-num-batched-tokens", "%d must be > 0", b.MaxNumBatchedTokens)
	}
	p.Limits = policies.Limits{MaxNumSeqs: b.MaxNumSeqs, MaxNumBatchedTokens: b.MaxNumBatchedTokens}
	if err := s.planMemory(p, m, b, prefix); err != nil {
		return nil, err
	}
	kern, overhead, desc, id, err := s.kernelModel(p.GPU, *tp)
	if err != nil {
		return nil, err
	}
	if kern, desc, id, err = s.engineKernel(kern, desc, id, p.GPU, *tp); err != nil {
		return nil, err
	}
	p.Kernel, p.kernelID = desc, id
	if p.Step, err = hardware.NewStepModel(m, p.GPU, p.Parallel, kern, overhead); err != nil {
		return nil, err
	}
	return p, nil
}

// kernelModel returns the kernel-time model of hardware.profile for GPU g
// at tp, the per-iteration overhead in seconds (the scenario's
// iteration_overhead_ms when set, else the profile's, else
// DefaultIterOverheadMs), and a description for reports.
//
//   - "" or "builtin": the GPU's built-in calibrated profile (a100, h100,
//     h200, b200); a GPU without one, or whose numbers a gpus_file changed,
//     uses the roofline, and the description says so;
//   - "roofline": the roofline with hardware.DefaultEfficiency;
//   - anything else: a profile file (servesim calibrate -o), which must be
//     for this GPU.
func (s *Scenario) kernelModel(g *hardware.GPU, tp int) (hardware.KernelModel, float64, string, string, error) {
	overhead := func(profile float64) float64 {
		if s.Hardware.IterOverheadMs > 0 {
			return s.Hardware.IterOverheadMs / 1e3
		}
		return profile
	}
	roofline := hardware.Roofline{GPU: g, Eff: hardware.DefaultEfficiency(), TP: tp}
	rooflineID := "roofline " + digestOf(roofline.Eff)
	switch prof := s.Hardware.Profile; prof {
	case "roofline":
		return roofline, overhead(DefaultIterOverheadMs / 1e3), "roofline (default efficiencies)", rooflineID, nil
	case "", "builtin":
		p, ok := calibrate.Builtin(g.Name)
		if !ok {
			return roofline, overhead(DefaultIterOverheadMs / 1e3), fmt.Sprintf("roofline (no built-in calibrated profile for %s)", g.Name), rooflineID, nil
		}
		k, err := p.Kernel(g, tp)
		if err != nil {
			return roofline, overhead(DefaultIterOverheadMs / 1e3), fmt.Sprintf("roofline (the built-in %s profile does not fit this GPU's numbers: %v)", g.Name, err), rooflineID, nil
		}
		return k, overhead(p.IterOverhead()), "calibrated: " + p.Describe(), "builtin " + builtinDigest(p.GPU, p.WriteTOML), nil
	default:
		path := s.path(prof)
		p, err := calibrate.LoadProfile(path)
		if err != nil {
			return nil, 0, "", "", fmt.Errorf("%w (field \"hardware.profile\", flag --profile)", err)
		}
		k, err := p.Kernel(g, tp)
		if err != nil {
			return nil, 0, "", "", fmt.Errorf("%w (field \"hardware.profile\", flag --profile)", err)
		}
		d, err := fileDigest(path)
		if err != nil {
			return nil, 0, "", "", fmt.Errorf("%w (field \"hardware.profile\", flag --profile)", err)
		}
		return k, overhead(p.IterOverhead()), "calibrated: " + p.Describe(), "file " + d, nil
	}
}

// fieldError names the scenario field (and the flag that sets it).
func fieldError(field, flag, format string, args ...any) error {
	return fmt.Errorf("experiments: field %q (flag --%s): %s", field, flag, fmt.Sprintf(format, args...))
}

// Resolve fills defaults, checks every field and looks up the model and GPU.
func (s Scenario) Resolve() (*Plan, error) {
	mc := models.Builtin()
	if s.ModelsFile != "" {
		if err := mc.LoadFile(s.path(s.ModelsFile)); err != nil {
			return nil, err
		}
	}
	gc := hardware.Builtin()
	if s.GPUsFile != "" {
		if err := gc.LoadFile(s.path(s.GPUsFile)); err != nil {
			return nil, err
		}
	}
	p := &Plan{}
	var err error
	if s.Model == "" {
		return nil, fieldError("model", "model", "missing (see `servesim models`)")
	}
	if p.Model, err = mc.Get(s.Model); err != nil {
		return nil, fmt.Errorf("%w (field \"model\", flag --model)", err)
	}
	if s.GPU == "" {
		return nil, fieldError("gpu", "gpu", "missing (see `servesim gpus`)")
	}
	if s.Weights == "" {
		s.Weights = "bf16"
	}
	if s.KV == "" {
		s.KV = "bf16"
	}
	if s.Hardware.IterOverheadMs < 0 || math.IsNaN(s.Hardware.IterOverheadMs) {
		return nil, fieldError("hardware.iteration_overhead_ms", "iteration-overhead-ms", "%g must be ≥ 0", s.Hardware.IterOverheadMs)
	}
	pp, err := s.resolvePool(gc, p.Model, "", s.GPU, &s.TP, &s.Batch)
	if err != nil {
		return nil, err
	}
	p.PoolPlan = *pp
	if s.Disagg.DecodeReplicas > 0 {
		d := &s.Disagg
		if d.DecodeGPU == "" {
			d.DecodeGPU = s.GPU
		}
		if d.DecodeTP == 0 {
			d.DecodeTP = s.TP
		}
		if p.Decode, err = s.resolvePool(gc, p.Model, "disagg.decode_", d.DecodeGPU, &d.DecodeTP, &d.DecodeBatch); err != nil {
			return nil, err
		}
	} else if s.Disagg.DecodeReplicas < 0 {
		return nil, fieldError("disagg.decode_replicas", "decode-replicas", "%d must be ≥ 0 (0 = colocated)", s.Disagg.DecodeReplicas)
	}

	if err := s.resolveWorkload(p); err != nil {
		return nil, err
	}

	for _, f := range []struct {
		v          float64
		name, flag string
		dst        *sim.Time
	}{
		{s.SLO.TTFTms, "slo.ttft_ms", "slo-ttft", &p.SLO.TTFT},
		{s.SLO.TPOTms, "slo.tpot_ms", "slo-tpot", &p.SLO.TPOT},
		{s.SLO.E2Ems, "slo.e2e_ms", "slo-e2e", &p.SLO.E2E},
	} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return nil, fieldError(f.name, f.flag, "%g ms must be ≥ 0 (0 = not set)", f.v)
		}
		*f.dst = sim.FromSeconds(f.v / 1e3)
	}
	if err := s.resolveServe(p); err != nil {
		return nil, err
	}
	if err := s.resolveEngine(p); err != nil {
		return nil, err
	}
	parts := []any{p.Model, p.GPU, p.kernelID}
	if p.Decode != nil {
		parts = append(parts, p.Decode.GPU, p.Decode.kernelID)
	}
	if p.Trace != nil {
		d, err := fileDigest(p.Trace.File)
		if err != nil {
			return nil, fmt.Errorf("%w (field \"workload.trace.file\")", err)
		}
		parts = append(parts, d)
	}
	p.Inputs = digestOf(parts...)
	p.Scenario = s
	return p, nil
}

// resolveServe checks the policy sections and fills p.Serve.
func (s *Scenario) resolveServe(p *Plan) error {
	if s.Replicas == 0 {
		s.Replicas = 1
	}
	if s.Replicas < 0 {
		return fieldError("replicas", "replicas", "%d must be ≥ 1", s.Replicas)
	}
	p.Replicas = s.Replicas
	b := &s.Batch
	if b.Preemption == "" {
		b.Preemption = serve.PreemptRecompute
	}
	if b.Preemption != serve.PreemptRecompute && b.Preemption != serve.PreemptSwap {
		return fieldError("batch.preemption", "preemption", "%q: want recompute or swap", b.Preemption)
	}
	if b.Victim == "" {
		b.Victim = serve.VictimNewest
	}
	if b.Victim != serve.VictimNewest && b.Victim != serve.VictimLowestPriority {
		return fieldError("batch.victim", "victim", "%q: want newest or lowest-priority", b.Victim)
	}
	if b.SwapSpaceGB == 0 {
		b.SwapSpaceGB = 4 * 1.073741824 // vLLM's default swap_space of 4 GiB per GPU
	}
	if !(b.SwapSpaceGB >= 0) || math.IsInf(b.SwapSpaceGB, 0) {
		return fieldError("batch.swap_space_gb", "swap-space-gb", "%g must be ≥ 0", b.SwapSpaceGB)
	}
	sc := &s.Scheduler
	if sc.Policy == "" {
		sc.Policy = "fcfs"
	}
	sched, err := policies.SchedulerByName(sc.Policy, sc.Priorities)
	if err != nil {
		return fieldError("scheduler.policy", "scheduler", "%v", err)
	}
	if !(sc.PredictError >= 0) || math.IsInf(sc.PredictError, 0) {
		return fieldError("scheduler.predict_error", "predict-error", "%g must be ≥ 0", sc.PredictError)
	}
	ad := &s.Admission
	if ad.Policy == "" {
		ad.Policy = "none"
	}
	adm, err := s.newAdmission()
	if err != nil {
		return fieldError("admission.policy", "admission", "%v", err)
	}
	rt := &s.Router
	if rt.Policy == "" {
		rt.Policy = "round-robin"
	}
	router, err := s.newRouter(serve.StreamRouting)
	if err != nil {
		return fieldError("router.policy", "router", "%v", err)
	}
	if !(rt.StalenessMs >= 0) || math.IsInf(rt.StalenessMs, 0) {
		return fieldError("router.staleness_ms", "router-staleness-ms", "%g must be ≥ 0", rt.StalenessMs)
	}
	if s.Workload.SharedPrefix < 0 || s.Workload.PrefixGroups < 0 || (s.Workload.SharedPrefix > 0 && s.Workload.PrefixGroups == 0) {
		return fieldError("workload.prefix_groups", "prefix-groups", "shared_prefix_tokens %d with prefix_groups %d: both ≥ 0, and groups ≥ 1 when a prefix is set",
			s.Workload.SharedPrefix, s.Workload.PrefixGroups)
	}
	p.Serve = serve.Config{
		Instance: serve.InstanceConfig{
			Step: p.Step, Blocks: p.Memory.Blocks, BlockSize: p.Memory.BlockSize, Limits: p.Limits,
			Batcher: p.Batcher, MaxModelLen: p.MaxModelLen,
			Preempt: b.Preemption, Victim: b.Victim, HostBW: p.GPU.HostBW, SwapSpace: b.SwapSpaceGB * 1e9,
			KVBytesPerToken: p.Memory.KVBytesPerTokenPerGPU, PrefixCache: b.PrefixCaching,
		},
		Replicas: s.Replicas, Router: router, Scheduler: sched, Admission: adm,
		RouterStaleness: sim.FromSeconds(rt.StalenessMs / 1e3), PredictError: sc.PredictError,
		TTFTSLO: p.SLO.TTFT, Seed: s.Seed,
	}
	if p.Decode != nil {
		if err := s.resolveDisagg(p); err != nil {
			return err
		}
	}
	return nil
}

// Link presets: per-GPU bandwidth per direction and latency of the KV link
// between a prefill and a decode instance. Bandwidths are the interconnects'
// nominal rates; latencies are assumptions of the order NCCL reports for a
// small send/recv, not measurements.
var linkPresets = map[string]struct {
	gbPerS    float64 // per GPU, GB/s per direction; 0 = the GPU's own figure
	latencyUs float64
	note      string
}{
	"nvlink": {0, 10, "the prefill GPU's NVLink bandwidth per direction (same node)"},
	"ib":     {50, 10, "InfiniBand NDR, 400 Gb/s per GPU"},
	"roce":   {25, 20, "RoCE / Ethernet, 200 Gb/s per GPU"},
	"pcie":   {0, 10, "the prefill GPU's host PCIe link (through host memory)"},
}

// resolveDisagg fills p.Serve.Disagg from the [disagg] section.
func (s *Scenario) resolveDisagg(p *Plan) error {
	d := &s.Disagg
	if d.Link == "" {
		d.Link = "ib"
	}
	preset, ok := linkPresets[d.Link]
	if !ok {
		return fieldError("disagg.link", "link", "unknown link %q (known: nvlink, ib, roce, pcie)", d.Link)
	}
	perGPU := preset.gbPerS * 1e9
	switch d.Link {
	case "nvlink":
		perGPU = p.GPU.LinkBW
	case "pcie":
		perGPU = p.GPU.HostBW
	}
	if d.LinkGBps != 0 {
		perGPU = d.LinkGBps * 1e9
	}
	if !(perGPU > 0) || math.IsInf(perGPU, 0) {
		return fieldError("disagg.link_gb_per_s", "link-gb-per-s", "%g must be > 0", d.LinkGBps)
	}
	if d.LinkLatencyUs == 0 {
		d.LinkLatencyUs = preset.latencyUs
	}
	if !(d.LinkLatencyUs >= 0) || math.IsInf(d.LinkLatencyUs, 0) {
		return fieldError("disagg.link_latency_us", "link-latency-us", "%g must be ≥ 0", d.LinkLatencyUs)
	}
	if d.MaxPending < 0 {
		return fieldError("disagg.max_pending", "max-pending", "%d must be ≥ 0", d.MaxPending)
	}
	dp := p.Decode
	router, err := s.newRouter(decodeRoutingStream)
	if err != nil {
		return err
	}
	p.Serve.Disagg = &serve.Disagg{
		Decode: serve.InstanceConfig{
			Step: dp.Step, Blocks: dp.Memory.Blocks, BlockSize: dp.Memory.BlockSize, Limits: dp.Limits,
			Batcher: dp.Batcher, MaxModelLen: dp.MaxModelLen,
			Preempt: s.Batch.Preemption, Victim: s.Batch.Victim, HostBW: dp.GPU.HostBW, SwapSpace: s.Batch.SwapSpaceGB * 1e9,
			KVBytesPerToken: dp.Memory.KVBytesPerTokenPerGPU,
		},
		DecodeReplicas: d.DecodeReplicas,
		DecodeRouter:   router,
		// Each GPU of the prefill group sends its shard over its own link.
		Link:            serve.Link{Bandwidth: perGPU * float64(p.Parallel.TP), Latency: sim.FromSeconds(d.LinkLatencyUs / 1e6)},
		KVBytesPerToken: p.Model.KVBytesPerToken(p.Parallel.KV),
		Streaming:       d.Streaming,
		Layers:          p.Model.Layers,
		MaxPending:      d.MaxPending,
	}
	return nil
}

func (s Scenario) path(p string) string {
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
}

// TraceCounts are a replay's row counts.
type TraceCounts struct {
	trace.Counts
	Clipped int64 `json:"clipped"`
}

// Run simulates the plan. If outDir is not empty it writes requests.csv,
// steps.csv and summary.json there, each whole or not at all (written to a
// temporary file, then renamed), after removing the temporaries earlier
// runs left there (SweepStale).
func Run(p *Plan, outDir string) (*Report, error) {
	return RunContext(context.Background(), p, outDir)
}

// RunContext is Run stopped early when ctx is cancelled: it then removes
// its temporary files, writes no result file and returns an error that
// says "interrupted" and wraps ctx.Err() (errors.Is(err, context.Canceled)).
// The library installs no signal handler: the caller (the CLI) cancels ctx.
func RunContext(ctx context.Context, p *Plan, outDir string) (*Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("experiments: run interrupted before it started (%w)", err)
	}
	src, closeSrc, err := p.source()
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	coll := metrics.NewCollector(p.SLO)
	for i := range p.Replicas {
		coll.SetPeak(i, p.GPU.PeakFLOPS(p.Parallel.Weights), p.GPU.MemBW)
	}
	if d := p.Decode; d != nil {
		for i := range p.Scenario.Disagg.DecodeReplicas {
			coll.SetPeak(p.Replicas+i, d.GPU.PeakFLOPS(d.Parallel.Weights), d.GPU.MemBW)
		}
	}
	cfg := p.Serve
	cfg.Source, cfg.Collector = src, coll
	// Stateful policies start fresh in every run of the plan.
	if err := p.Scenario.freshPolicies(&cfg); err != nil {
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
	res, err := serve.Run(cfg)
	if errors.Is(err, serve.ErrStopped) {
		return nil, fmt.Errorf("experiments: run interrupted: %w (%w)", err, ctx.Err())
	}
	if err != nil {
		return nil, err
	}
	rep := &Report{Plan: p, Result: res, Summary: coll.Summary()}
	if l, ok := src.(*workload.Limited); ok {
		src = l.Unwrap()
	}
	if t, ok := src.(*trace.Trace); ok {
		rep.Trace = &TraceCounts{Counts: t.Counts(), Clipped: t.Clipped()}
	}
	if files != nil {
		if err := files.commit(rep); err != nil {
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

// freshPolicies rebuilds the stateful policies (routers, admission) so that
// running one plan twice gives identical results.
func (s Scenario) freshPolicies(cfg *serve.Config) error {
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
		return fmt.Errorf("experiments: output directory: %w", err)
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
			return fieldError("workload.classes", "classes", "a trace and a class mix exclude each other")
		}
		t := *wl.Trace
		t.File = s.path(t.File)
		if err := t.Validate(); err != nil {
			return fmt.Errorf("experiments: workload.trace: %w", err)
		}
		p.Trace = &t
		return nil
	}
	staged := len(wl.Stages) > 0
	if !staged && !(wl.Rate > 0) {
		return fieldError("workload.rate", "rate", "%g requests/s: must be a positive number, or inf (every request at t = 0, as vLLM bench's default)", wl.Rate)
	}
	if wl.Requests < 0 {
		return fieldError("workload.requests", "requests", "%d must be ≥ 0", wl.Requests)
	}
	if !(wl.DurationS >= 0) || math.IsInf(wl.DurationS, 0) {
		return fieldError("workload.duration_s", "duration", "%g must be ≥ 0", wl.DurationS)
	}
	if !staged && wl.Requests == 0 && wl.DurationS == 0 {
		return fieldError("workload.requests", "requests", "give a number of requests or a duration_s")
	}
	if wl.Requests > 0 && wl.DurationS > 0 {
		return fieldError("workload.duration_s", "duration", "give requests or duration_s, not both (requests %d, duration_s %g)", wl.Requests, wl.DurationS)
	}
	if math.IsInf(wl.Rate, 1) && wl.Requests == 0 {
		return fieldError("workload.rate", "rate", "rate inf sends every request at t = 0: give a number of requests, not a duration")
	}
	arrival := workload.Arrival{Process: wl.Arrival, Rate: wl.Rate, Burstiness: wl.Burstiness}
	if staged {
		arrival.Rate = wl.Stages[0].Rate // each stage's own; checked by resolveShape
	}
	if err := arrival.Validate(); err != nil {
		return fieldError("workload.arrival", "arrival", "%v", err)
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
				return fieldError(field+".prompt", "classes", "%v", err)
			}
			od, err := trace.ParseDist(c.Output, s.dir)
			if err != nil {
				return fieldError(field+".output", "classes", "%v", err)
			}
			if !(c.TTFTms >= 0) || !(c.TPOTms >= 0) {
				return fieldError(field, "classes", "SLOs must be ≥ 0")
			}
			m.Classes = append(m.Classes, trace.Class{Name: c.Name, Weight: c.Weight, Prompt: pd, Output: od,
				TTFTSLO: sim.FromSeconds(c.TTFTms / 1e3), TPOTSLO: sim.FromSeconds(c.TPOTms / 1e3)})
		}
		if err := m.Validate(); err != nil {
			return fieldError("workload.classes", "classes", "%v", err)
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
			return fmt.Errorf("experiments: workload: %w", err)
		}
		return nil
	}
	if wl.Prompt == "" || wl.Output == "" {
		return fieldError("workload.prompt", "prompt-len", "prompt and output length distributions are required, e.g. \"lognormal:6.5,0.8\"")
	}
	var err error
	if p.Workload.Prompt, err = workload.ParseDist(wl.Prompt); err != nil {
		return fieldError("workload.prompt", "prompt-len", "%v", err)
	}
	if p.Workload.Output, err = workload.ParseDist(wl.Output); err != nil {
		return fieldError("workload.output", "output-len", "%v", err)
	}
	if err := p.Workload.Validate(); err != nil {
		return fmt.Errorf("experiments: workload: %w", err)
	}
	return nil
}

// source opens the plan's workload, through a client of MaxConcurrency
// slots when set; close releases a trace file.
func (p *Plan) source() (src workload.Source, close func() error, err error) {
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
