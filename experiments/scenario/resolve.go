package scenario

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/serve"
	"github.com/servesim/servesim/sim/workload/trace"
)

// resolvePool resolves one pool's instance; prefix ("" or "disagg.decode_")
// names its fields in errors. An explicit zero where zero is not a legal
// value is an error (see orDefault), not the default.
func (s *Scenario) resolvePool(gc *hardware.Catalog, m *models.Model, prefix, gpuName string, tp *int, b *Batch) (*PoolPlan, error) {
	f := func(name string) string { return prefix + name }
	// fl names a field's flag: the decode pool's batch has none.
	fl := func(name string) string {
		switch {
		case prefix == "":
			return name
		case name == "tp":
			return "decode-tp"
		}
		return ""
	}
	p := &PoolPlan{}
	var err error
	if p.GPU, err = gc.Get(gpuName); err != nil {
		return nil, fmt.Errorf("%w (field %q)", err, f("gpu"))
	}
	if err := orDefault(s, tp, 1, f("tp"), fl("tp"), "≥ 1", "1"); err != nil {
		return nil, err
	}
	if *tp < 0 {
		return nil, s.fieldError(f("tp"), fl("tp"), "%d must be ≥ 1", *tp)
	}
	p.Parallel.TP = *tp
	if p.Parallel.Weights, err = models.ParseDType(s.Weights); err != nil {
		return nil, s.fieldError("weights", "weights", "%v", err)
	}
	if p.Parallel.KV, err = models.ParseDType(s.KV); err != nil {
		return nil, s.fieldError("kv", "kv", "%v", err)
	}
	if err := m.CheckParallel(p.Parallel); err != nil {
		return nil, fmt.Errorf("%w (field %q, flag --%s)", err, f("tp"), fl("tp"))
	}
	pe := s.prefillEP()
	if prefix != "" {
		pe = s.decodeEP()
	}
	if p.Parallel.EP, p.layerSkews, err = s.checkEP(m, *tp, pe); err != nil {
		return nil, err
	}
	if p.layerSkews != nil && s.poolPPOf(pe) > 1 {
		field := "expert_skew_layers"
		if s.ExpertSkewFile != "" {
			field = "expert_skew_file"
		}
		return nil, s.fieldError(field, "", "per-layer expert skews are modelled without pipeline stages (pp = %d here): give one expert_skew for every stage's MoE layers", s.poolPPOf(pe))
	}
	s.trtllmBatchDefaults(b, f)
	if err := s.sglangPoolDefaults(p, b, *tp, prefix); err != nil {
		return nil, err
	}
	if err := orDefault(s, &b.BlockSize, 16, f("batch.block_size"), fl("block-size"), "≥ 1", "16"); err != nil {
		return nil, err
	}
	if b.BlockSize < 0 {
		return nil, s.fieldError(f("batch.block_size"), fl("block-size"), "%d must be ≥ 1", b.BlockSize)
	}
	if err := orDefault(s, &b.GPUMemUtil, 0.9, f("batch.gpu_memory_utilization"), fl("gpu-memory-utilization"), "in (0, 1]", "0.9"); err != nil {
		return nil, err
	}
	if !(b.GPUMemUtil > 0 && b.GPUMemUtil <= 1) {
		return nil, s.fieldError(f("batch.gpu_memory_utilization"), fl("gpu-memory-utilization"), "%g must be in (0, 1]", b.GPUMemUtil)
	}
	if err := orDefault(s, &b.MaxModelLen, m.MaxContext, f("batch.max_model_len"), fl("max-model-len"), "≥ 1",
		fmt.Sprintf("the model's context, %d tokens", m.MaxContext)); err != nil {
		return nil, err
	}
	if b.MaxModelLen < 0 {
		return nil, s.fieldError(f("batch.max_model_len"), fl("max-model-len"), "%d must be ≥ 1", b.MaxModelLen)
	}
	if b.MaxModelLen > m.MaxContext {
		// vLLM refuses a max_model_len above the model's max_position_embeddings too (unless overridden).
		return nil, s.fieldError(f("batch.max_model_len"), fl("max-model-len"), "%d tokens is longer than %s's context of %d tokens; lower it, or omit it for the model's context",
			b.MaxModelLen, m.Name, m.MaxContext)
	}
	p.MaxModelLen = b.MaxModelLen
	defSeqs, defTokens, defWhy := s.vllmBatchDefaults(p.GPU)
	if defWhy != "" {
		defWhy = ", " + defWhy
	}
	if err := orDefault(s, &b.MaxNumSeqs, defSeqs, f("batch.max_num_seqs"), fl("max-num-seqs"), "≥ 1", fmt.Sprint(defSeqs, defWhy)); err != nil {
		return nil, err
	}
	if b.MaxNumSeqs < 0 {
		return nil, s.fieldError(f("batch.max_num_seqs"), fl("max-num-seqs"), "%d must be ≥ 1", b.MaxNumSeqs)
	}
	if b.Policy == "" {
		b.Policy = "chunked"
	}
	if b.Refill < 0 || (b.Refill == 0 && s.Explicit(f("batch.refill"))) {
		// Refill 0 would never admit a prompt while anything decodes: 0 means "half of max_num_seqs" only when omitted.
		return nil, s.fieldError(f("batch.refill"), fl("refill"), "%d must be ≥ 1; omit it for the default (half of max_num_seqs)", b.Refill)
	}
	maxWait, err := s.duration(f("batch.max_wait_ms"), fl("max-wait-ms"), b.MaxWaitMs, 1e-3, "ms")
	if err != nil {
		return nil, err
	}
	ok := true
	switch {
	case p.SGLang != nil:
		p.Batcher, err = s.sglangBatcher(p, b)
		if err != nil {
			return nil, err
		}
	case s.isTRTLLM():
		p.Batcher = policies.TRTLLM{} // trtllmPool sets its options once the limits are known
	default:
		p.Batcher, ok = policies.ByName(b.Policy, policies.BatchParams{Refill: b.Refill, MaxWait: maxWait})
	}
	if !ok {
		return nil, s.fieldError(f("batch.policy"), fl("policy"), "unknown policy %q (known: %s)", b.Policy, policies.BatcherNames)
	}
	budget, budgetFlag := f("batch.max_num_batched_tokens"), fl("max-num-batched-tokens")
	if b.MaxNumBatchedTokens < 0 || (b.MaxNumBatchedTokens == 0 && s.Explicit(budget)) {
		return nil, s.fieldError(budget, budgetFlag, "%d must be ≥ 1; omit it for the default (%d with chunked prefill%s, else max(max_model_len, 2048))", b.MaxNumBatchedTokens, defTokens, defWhy)
	}
	if _, whole := p.Batcher.(interface{ MaxPrompt(policies.Limits) int }); whole && !s.isTRTLLM() {
		if b.MaxNumBatchedTokens == 0 {
			// vLLM's default with chunked prefill off.
			b.MaxNumBatchedTokens = max(b.MaxModelLen, 2048)
		}
		if b.MaxNumBatchedTokens < b.MaxModelLen {
			return nil, s.fieldError(budget, budgetFlag,
				"%d is smaller than max_model_len %d: without chunked prefill a whole prompt must fit one iteration (as vLLM requires); raise it, lower max_model_len, or use policy \"chunked\"",
				b.MaxNumBatchedTokens, b.MaxModelLen)
		}
	} else if b.MaxNumBatchedTokens == 0 {
		b.MaxNumBatchedTokens = defTokens
	}
	p.Limits = policies.Limits{MaxNumSeqs: b.MaxNumSeqs, MaxNumBatchedTokens: b.MaxNumBatchedTokens}
	if s.isTRTLLM() {
		if err := s.trtllmPool(p, b, f); err != nil {
			return nil, err
		}
	}
	var stages []int
	if prefix == "" {
		stages, err = s.checkPP(m)
	} else {
		stages, err = s.checkDecodePP(m)
	}
	if err != nil {
		return nil, err
	}
	if stages != nil {
		if err := s.planStages(p, m, b, stages, prefix); err != nil {
			return nil, err
		}
	} else if err := s.planMemory(p, m, b, prefix); err != nil {
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
	if stages != nil {
		if err := s.newPipeline(p, m, kern, overhead, stages, prefix == "" && (s.PPChunked || (p.SGLang != nil && p.SGLang.PPChunked)), pe); err != nil {
			return nil, err
		}
		return p, nil
	}
	if p.Step, err = hardware.NewStepModel(m, p.GPU, p.Parallel, kern, overhead); err != nil {
		return nil, err
	}
	if p.Parallel.EP.On() {
		if err := s.newExpertStep(p, pe); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// MaxReplicas bounds replicas and disagg.decode_replicas: each instance
// holds its own state, so a count past any real cluster (100,000 instances)
// would only exhaust memory before the first event.
const MaxReplicas = 100_000

// LookupModel returns the scenario's model: the catalog's (and
// models_file's) entry named by model, or the HuggingFace config.json of
// model_config.
func (s *Scenario) LookupModel() (*models.Model, error) {
	mc := models.Builtin()
	if s.ModelsFile != "" {
		if err := mc.LoadFile(s.Path(s.ModelsFile)); err != nil {
			return nil, err
		}
	}
	switch {
	case s.ModelConfig != "" && s.Model != "":
		return nil, s.fieldError("model_config", "model-config", "set model_config (a HuggingFace config.json) or model (%q), not both", s.Model)
	case s.ModelConfig != "":
		m, err := models.ReadHFConfig(s.Path(s.ModelConfig))
		if err != nil {
			return nil, fmt.Errorf("%w (field \"model_config\", flag --model-config)", err)
		}
		return m, nil
	case s.Model == "":
		return nil, s.fieldError("model", "model", "missing (see `servesim models`, or import a HuggingFace config.json with model_config)")
	}
	m, err := mc.Lookup(s.Model)
	if err != nil {
		return nil, fmt.Errorf("%w (field \"model\", flag --model)", err)
	}
	return m, nil
}

// Resolve fills defaults, checks every field and looks up the model and GPU.
func (s Scenario) Resolve() (*Plan, error) {
	p := &Plan{}
	var err error
	if p.Model, err = s.LookupModel(); err != nil {
		return nil, err
	}
	gc := hardware.Builtin()
	if s.GPUsFile != "" {
		if err := gc.LoadFile(s.Path(s.GPUsFile)); err != nil {
			return nil, err
		}
	}
	if s.GPU == "" {
		return nil, s.fieldError("gpu", "gpu", "missing (see `servesim gpus`)")
	}
	if inf := p.Model.Inferred.Weights; inf != "" {
		// A quantized checkpoint (Qwen/Qwen3-8B-FP8, a config.json with an
		// FP8 quantization_config) stores its weights so: they are read at
		// that size, as vLLM loads them.
		if s.Weights == "" {
			s.Weights = inf
		} else if d, err := models.ParseDType(s.Weights); err == nil && d.String() != inf {
			return nil, s.fieldError("weights", "weights", "%q, but the checkpoint stores %s weights (%s): drop weights, or name the %s checkpoint",
				s.Weights, inf, strings.Join(p.Model.Inferred.Notes, "; "), s.Weights)
		}
	}
	if s.Weights == "" {
		s.Weights = "bf16"
	}
	if s.KV == "" {
		s.KV = "bf16"
	}
	if _, err := s.duration("hardware.iteration_overhead_ms", "iteration-overhead-ms", s.Hardware.IterOverheadMs, 1e-3, "ms"); err != nil {
		return nil, err
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
		if err := orDefault(&s, &d.DecodeTP, s.TP, "disagg.decode_tp", "decode-tp", "≥ 1", fmt.Sprintf("the prefill pool's TP, %d", s.TP)); err != nil {
			return nil, err
		}
		if p.Decode, err = s.resolvePool(gc, p.Model, "disagg.decode_", d.DecodeGPU, &d.DecodeTP, &d.DecodeBatch); err != nil {
			return nil, err
		}
		if s.Disagg.DecodeReplicas > MaxReplicas {
			return nil, s.fieldError("disagg.decode_replicas", "decode-replicas", "%d is out of range (at most %d instances)", s.Disagg.DecodeReplicas, MaxReplicas)
		}
	} else if s.Disagg.DecodeReplicas < 0 {
		return nil, s.fieldError("disagg.decode_replicas", "decode-replicas", "%d must be ≥ 0 (0 = colocated)", s.Disagg.DecodeReplicas)
	}
	if err := s.checkDecodeLayout(p); err != nil {
		return nil, err
	}

	if s.Workload.Burstiness == 0 && s.Explicit("workload.burstiness") {
		// A gamma shape of 0 is no process; 0 means 1 (Poisson) only when omitted.
		return nil, s.fieldError("workload.burstiness", "burstiness", "0 must be > 0; omit it for the default (1, Poisson)")
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
		if *f.dst, err = s.duration(f.name, f.flag, f.v, 1e-3, "ms"); err != nil {
			return nil, err
		}
	}
	if err := s.resolveServe(p); err != nil {
		return nil, err
	}
	if err := s.resolveEngine(p); err != nil {
		return nil, err
	}
	if err := s.resolveSpeculative(p); err != nil {
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
	if p.Serve.Instance.Spec != nil && s.Speculative.AcceptanceTrace != "" {
		d, err := fileDigest(s.Path(s.Speculative.AcceptanceTrace))
		if err != nil {
			return nil, fmt.Errorf("%w (field \"speculative.acceptance_trace\")", err)
		}
		parts = append(parts, d)
	}
	p.Inputs = DigestOf(parts...)
	p.Scenario = s
	return p, nil
}

// resolveServe checks the policy sections and fills p.Serve.
func (s *Scenario) resolveServe(p *Plan) error {
	if err := orDefault(s, &s.Replicas, 1, "replicas", "replicas", "≥ 1", "1"); err != nil {
		return err
	}
	if s.Replicas < 0 {
		return s.fieldError("replicas", "replicas", "%d must be ≥ 1", s.Replicas)
	}
	if s.Replicas > MaxReplicas {
		return s.fieldError("replicas", "replicas", "%d is out of range (at most %d instances)", s.Replicas, MaxReplicas)
	}
	if s.Replicas*s.Ranks() > MaxReplicas {
		return s.fieldError("dp", "dp", "%d ranks × %d replicas is out of range (at most %d instances)", s.Ranks(), s.Replicas, MaxReplicas)
	}
	p.Replicas = s.Replicas * s.Ranks() // each DP rank is an instance
	b := &s.Batch
	if b.Preemption == "" {
		b.Preemption = serve.PreemptRecompute
	}
	if b.Preemption != serve.PreemptRecompute && b.Preemption != serve.PreemptSwap {
		return s.fieldError("batch.preemption", "preemption", "%q: want recompute or swap", b.Preemption)
	}
	if b.Victim == "" {
		b.Victim = serve.VictimNewest
	}
	if b.Victim != serve.VictimNewest && b.Victim != serve.VictimLowestPriority && b.Victim != serve.VictimFewestOutput {
		return s.fieldError("batch.victim", "victim", "%q: want newest, lowest-priority or fewest-output", b.Victim)
	}
	if b.SwapSpaceGB == 0 && !s.Explicit("batch.swap_space_gb") { // an explicit 0: no host memory to swap to
		b.SwapSpaceGB = 4 * 1.073741824 // vLLM's default swap_space of 4 GiB per GPU
	}
	if !(b.SwapSpaceGB >= 0) || math.IsInf(b.SwapSpaceGB, 0) {
		return s.fieldError("batch.swap_space_gb", "swap-space-gb", "%g must be ≥ 0", b.SwapSpaceGB)
	}
	sc := &s.Scheduler
	if sc.Policy == "" {
		sc.Policy = "fcfs"
	}
	sched, err := policies.SchedulerByName(sc.Policy, sc.Priorities)
	if err != nil {
		return s.fieldError("scheduler.policy", "scheduler", "%v", err)
	}
	if !(sc.PredictError >= 0) || math.IsInf(sc.PredictError, 0) {
		return s.fieldError("scheduler.predict_error", "predict-error", "%g must be ≥ 0", sc.PredictError)
	}
	if err := s.checkPriorities(p); err != nil {
		return err
	}
	ad := &s.Admission
	if ad.Policy == "" {
		ad.Policy = "none"
	}
	if err := s.checkAdmission(p); err != nil {
		return err
	}
	adm, err := s.newAdmission()
	if err != nil {
		return s.fieldError("admission.policy", "admission", "%v", err)
	}
	rt := &s.Router
	if rt.Policy == "" {
		rt.Policy = "round-robin"
		if s.Ranks() > 1 || (p.Decode != nil && s.decodeDP() > 1) {
			rt.Policy = "dp-coordinator" // vLLM's DP load balancer
		}
	}
	router, err := s.newRouter(serve.StreamRouting)
	if err != nil {
		return s.fieldError("router.policy", "router", "%v", err)
	}
	staleness, err := s.duration("router.staleness_ms", "router-staleness-ms", rt.StalenessMs, 1e-3, "ms")
	if err != nil {
		return err
	}
	if s.Workload.SharedPrefix < 0 || s.Workload.PrefixGroups < 0 || (s.Workload.SharedPrefix > 0 && s.Workload.PrefixGroups == 0) {
		return s.fieldError("workload.prefix_groups", "prefix-groups", "shared_prefix_tokens %d with prefix_groups %d: both ≥ 0, and groups ≥ 1 when a prefix is set",
			s.Workload.SharedPrefix, s.Workload.PrefixGroups)
	}
	p.Serve = serve.Config{
		Instance: serve.InstanceConfig{
			Step: p.Step, Blocks: p.Memory.Blocks, BlockSize: p.Memory.BlockSize, Limits: p.Limits,
			Batcher: p.Batcher, MaxModelLen: p.MaxModelLen,
			Preempt: b.Preemption, Victim: b.Victim, HostBW: p.GPU.HostBW, SwapSpace: b.SwapSpaceGB * 1e9,
			KVBytesPerToken: p.Memory.KVBytesPerTokenPerGPU, PrefixCache: b.PrefixCaching,
		},
		Replicas: p.Replicas, Router: router, Scheduler: sched, Admission: adm,
		RouterStaleness: staleness, PredictError: sc.PredictError,
		TTFTSLO: p.SLO.TTFT, Seed: s.Seed,
	}
	if p.Serve.Instance.Tiers, err = s.offloadTiers(p.Parallel.TP*s.pp(), p.GPU.HostBW, float64(p.Memory.BlockSize)*p.Memory.KVBytesPerTokenPerGPU); err != nil {
		return err
	}
	if p.Pipeline != nil {
		// A round runs up to pp micro-batches, each with the token budget.
		p.Serve.Instance.Step = p.Pipeline
		p.Serve.Instance.Limits.MaxNumBatchedTokens *= len(p.Stages)
		if p.Parallel.EP.On() && s.Ranks() > 1 {
			// The DP ranks' stages run each MoE layer together (pipeline_expert.go).
			p.Serve.DPLockstep = serve.DPLockstep{Ranks: s.Ranks(), Agree: p.Pipeline.SetGroupBatches}
		}
	}
	if p.Expert != nil {
		p.Serve.Instance.Step = p.Expert
		if s.Ranks() > 1 {
			// vLLM's DP engine cores step in lock-step for an MoE model.
			p.Serve.DPLockstep = serve.DPLockstep{Ranks: s.Ranks(), Load: p.Expert.SetGroupLoad}
			if p.Expert.TBO() != nil {
				p.Serve.DPLockstep.Agree = p.Expert.SetGroupBatches
			}
		}
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
		return s.fieldError("disagg.link", "link", "unknown link %q (known: nvlink, ib, roce, pcie)", d.Link)
	}
	perGPU := preset.gbPerS * 1e9
	switch d.Link {
	case "nvlink":
		perGPU = p.GPU.LinkBW
	case "pcie":
		perGPU = p.GPU.HostBW
	}
	if d.LinkGBps != 0 || s.Explicit("disagg.link_gb_per_s") {
		perGPU = d.LinkGBps * 1e9
	}
	if !(perGPU > 0) || math.IsInf(perGPU, 0) {
		return s.fieldError("disagg.link_gb_per_s", "link-gb-per-s", "%g must be > 0", d.LinkGBps)
	}
	if d.LinkLatencyUs == 0 && !s.Explicit("disagg.link_latency_us") { // an explicit 0: an instant link
		d.LinkLatencyUs = preset.latencyUs
	}
	latency, err := s.duration("disagg.link_latency_us", "link-latency-us", d.LinkLatencyUs, 1e-6, "µs")
	if err != nil {
		return err
	}
	if d.MaxPending < 0 || (d.MaxPending == 0 && s.Explicit("disagg.max_pending")) {
		return s.fieldError("disagg.max_pending", "max-pending", "%d must be ≥ 1; omit it for the default (the prefill pool's max_num_seqs)", d.MaxPending)
	}
	dp := p.Decode
	decodeStep := serve.StepTimer(dp.Step)
	decodeLimits := dp.Limits
	var lock serve.DPLockstep
	if dp.Pipeline != nil {
		decodeStep = dp.Pipeline
		decodeLimits.MaxNumBatchedTokens *= len(dp.Stages)
		if dp.Parallel.EP.On() && s.decodeDP() > 1 {
			lock = serve.DPLockstep{Ranks: s.decodeDP(), Agree: dp.Pipeline.SetGroupBatches}
		}
	}
	if dp.Expert != nil {
		decodeStep = dp.Expert
		if s.decodeDP() > 1 {
			lock = serve.DPLockstep{Ranks: s.decodeDP(), Load: dp.Expert.SetGroupLoad}
			if dp.Expert.TBO() != nil {
				lock.Agree = dp.Expert.SetGroupBatches
			}
		}
	}
	router, err := s.newRouter(decodeRoutingStream)
	if err != nil {
		return err
	}
	p.Serve.Disagg = &serve.Disagg{
		Decode: serve.InstanceConfig{
			Step: decodeStep, Blocks: dp.Memory.Blocks, BlockSize: dp.Memory.BlockSize, Limits: decodeLimits,
			Batcher: dp.Batcher, MaxModelLen: dp.MaxModelLen,
			Preempt: s.Batch.Preemption, Victim: s.Batch.Victim, HostBW: dp.GPU.HostBW, SwapSpace: s.Batch.SwapSpaceGB * 1e9,
			KVBytesPerToken: dp.Memory.KVBytesPerTokenPerGPU,
		},
		DecodeReplicas: p.DecodeInstances,
		DecodeLockstep: lock,
		DecodeRouter:   router,
		// Each GPU of the prefill group sends its shard over its own link;
		// with pipeline stages, each stage's GPUs send its layers' KV.
		Link:            serve.Link{Bandwidth: perGPU * float64(p.Parallel.TP) * kvLanes(p.Model.Layers, p.Stages), Latency: latency},
		KVBytesPerToken: p.Model.KVBytesPerToken(p.Parallel.KV),
		Streaming:       d.Streaming,
		Layers:          p.Model.Layers,
		MaxPending:      d.MaxPending,
	}
	return s.sglangDisagg(p)
}

// checkPriorities checks scheduler.priorities against the workload's
// classes. The priority scheduler orders requests by class, so it needs
// classes (a class mix, or a trace that may carry a class column) and a
// priority for them; a priority naming a class the mix does not have is a
// typo that would silently leave that class at the default priority 0.
func (s *Scenario) checkPriorities(p *Plan) error {
	sc := &s.Scheduler
	if sc.Policy != "priority" {
		return nil
	}
	if p.Mix == nil && p.Trace == nil {
		return s.fieldError("scheduler.policy", "scheduler", "\"priority\" orders requests by class, but the workload has no classes: give workload.classes, or a trace with a class column, or choose another scheduler")
	}
	if len(sc.Priorities) == 0 {
		return s.fieldError("scheduler.policy", "scheduler", "\"priority\" needs a priority per class (lower first) in scheduler.priorities, e.g. priorities = {chat = 0, batch = 1}")
	}
	if p.Mix == nil {
		return nil // a trace's classes are known only when it is read
	}
	var known []string
	for _, c := range p.Mix.Classes {
		known = append(known, fmt.Sprintf("%q", c.Name))
	}
	names := slices.Sorted(maps.Keys(sc.Priorities))
	for _, name := range names {
		if !slices.ContainsFunc(p.Mix.Classes, func(c trace.Class) bool { return c.Name == name }) {
			return s.fieldError("scheduler.priorities."+name, "", "unknown class %q (the workload's classes: %s)", name, strings.Join(known, ", "))
		}
	}
	return nil
}

// checkAdmission checks what the admission policy needs besides its own
// parameters: SLO-aware admission compares a request's predicted TTFT with
// its deadline, arrival + TTFT SLO, and admits every request without one,
// so it needs slo.ttft_ms or a ttft_ms in every class. A token bucket's
// rate must let a deferred request's wait, at most 1/rate, fit the clock.
func (s *Scenario) checkAdmission(p *Plan) error {
	ad := &s.Admission
	switch strings.ToLower(ad.Policy) {
	case "slo-aware":
		if s.SLO.TTFTms > 0 || p.Trace != nil { // a trace's rows may carry their own ttft_slo_ms
			return nil
		}
		if p.Mix == nil {
			return s.fieldError("admission.policy", "admission", "\"slo-aware\" rejects requests predicted to miss their TTFT deadline, but no TTFT SLO is set: give slo.ttft_ms (flag --slo-ttft)")
		}
		for i, c := range s.Workload.Classes {
			if c.TTFTms == 0 {
				return s.fieldError("admission.policy", "admission", "\"slo-aware\" needs a TTFT SLO for every request, but class %q (workload.classes[%d]) has no ttft_ms and slo.ttft_ms is not set", c.Name, i)
			}
		}
	case "token-bucket":
		if ad.Rate > 0 && !(ad.Rate >= 1/MaxDurationS && ad.Rate <= math.MaxFloat64) {
			return s.fieldError("admission.rate", "", "%g requests/s is out of range (from %g, one per %g s, to a finite rate)", ad.Rate, 1/MaxDurationS, MaxDurationS)
		}
		if !(ad.Burst <= math.MaxFloat64) {
			return s.fieldError("admission.burst", "", "%g is out of range (a finite number ≥ 1)", ad.Burst)
		}
	}
	return nil
}
