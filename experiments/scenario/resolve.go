package scenario

import (
	"fmt"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
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
	sharePrices(p.Step, m, p.GPU, p.Parallel, kern, id)
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

// ModelCatalog returns the built-in model catalog with the scenario's
// models_file (relative to its directory) loaded over it.
func (s Scenario) ModelCatalog() (*models.Catalog, error) {
	return withFile(s, models.Builtin(), s.ModelsFile)
}

// GPUCatalog returns the built-in GPU catalog with the scenario's
// gpus_file (relative to its directory) loaded over it.
func (s Scenario) GPUCatalog() (*hardware.Catalog, error) {
	return withFile(s, hardware.Builtin(), s.GPUsFile)
}

// withFile loads s's file (none when "") over the catalog c.
func withFile[C interface{ LoadFile(string) error }](s Scenario, c C, file string) (C, error) {
	if file != "" {
		if err := c.LoadFile(s.Path(file)); err != nil {
			var none C
			return none, err
		}
	}
	return c, nil
}

// LookupModel returns the scenario's model: the catalog's (and
// models_file's) entry named by model, or the HuggingFace config.json of
// model_config.
func (s *Scenario) LookupModel() (*models.Model, error) {
	mc, err := s.ModelCatalog()
	if err != nil {
		return nil, err
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
	gc, err := s.GPUCatalog()
	if err != nil {
		return nil, err
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
