package scenario

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/sim/serve"
)

// Speculative is the scenario's [speculative] table: vLLM's
// --speculative-config (vllm/config/speculative.py SpeculativeConfig:
// method, num_speculative_tokens, model) plus how acceptance is drawn.
// Absent, or num_speculative_tokens = 0, it is off and nothing changes.
type Speculative struct {
	// Method is ngram, eagle, eagle3, mtp or draft_model.
	Method string `toml:"method" json:"method"`
	// NumSpeculativeTokens is the drafts per decoding request a step (k).
	NumSpeculativeTokens int `toml:"num_speculative_tokens" json:"num_speculative_tokens"`
	// Model is the draft: for draft_model a catalog model (or its
	// HuggingFace name) priced on its own kernel times; for eagle / eagle3
	// the head's repository, recorded (the head's shape follows the target).
	Model string `toml:"model,omitempty" json:"model,omitempty"`
	// AcceptanceRates are vLLM's per-position acceptance rates (the share of
	// drafts whose i-th token is accepted; non-increasing), one a position.
	AcceptanceRates []float64 `toml:"acceptance_rates,omitempty" json:"acceptance_rates,omitempty"`
	// ClassAcceptanceRates are per-position rates by workload class (a
	// class not listed takes AcceptanceRates or the method's default).
	ClassAcceptanceRates map[string][]float64 `toml:"class_acceptance_rates,omitempty" json:"class_acceptance_rates,omitempty"`
	// AcceptanceTrace is a file of accepted-draft counts, a line a request
	// (serve.ReadAcceptTrace), instead of rates.
	AcceptanceTrace string `toml:"acceptance_trace,omitempty" json:"acceptance_trace,omitempty"`
	// DraftVocab is EAGLE-3's draft vocabulary (0: 32,000).
	DraftVocab int `toml:"draft_vocab,omitempty" json:"draft_vocab,omitempty"`
	// ProposerCPUUs is the n-gram proposer's CPU µs a decoding request a
	// step, in series with the step (0: not priced; no measurement is
	// built in).
	ProposerCPUUs float64 `toml:"proposer_cpu_us,omitempty" json:"proposer_cpu_us,omitempty"`
	// Verify is how the target verifies: "decode" (default; V1: one
	// decode of 1 + k query tokens) or "batch-expansion" (V0's
	// BatchExpansionTop1Scorer: 1 + k single-token rows a request;
	// serve.SpecStep.Expand).
	Verify string `toml:"verify,omitempty" json:"verify,omitempty"`
}

// SpecMethods lists the methods, as vLLM spells them.
const SpecMethods = "ngram, eagle, eagle3, mtp, draft_model"

// specDefault is a method's sourced per-position acceptance (vLLM's
// per-position rates) and where it comes from.
type specDefault struct {
	rates  []float64
	source string
}

// specDefaults are the built-in acceptance rates. Where a source gives only
// a mean acceptance length, the rates are the geometric ones with that
// mean over its k (rate_i = p^i, Σ_{i≤k} p^i = mean − 1): an assumed shape,
// said so in the run header.
var specDefaults = map[string]specDefault{
	// SpecDecode-Bench (arXiv 2601.11580), MTP acceptance by draft position
	// 0.92 → 0.68 → 0.38, as issue 24 quotes it.
	models.DraftMTP: {[]float64{0.92, 0.68, 0.38}, "SpecDecode-Bench (arXiv 2601.11580) MTP per-position acceptance 0.92, 0.68, 0.38"},
	// vLLM issue 26191: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B on MT-Bench, k =
	// 7, temperature 0: 4,816 drafts, 12,208 accepted, mean acceptance
	// length 3.53; geometric p = 0.7400 (Σ_{i≤7} p^i = 2.535).
	models.DraftEagle3: {geometric(0.7400, 7), "vLLM issue 26191 (EAGLE3-LLaMA3.1-Instruct-8B, MT-Bench, k = 7: mean acceptance length 3.53), geometric per-position shape assumed"},
	// vLLM PR 16035: lmsys/sglang-EAGLE-LLaMA3-Instruct-8B on MT-Bench, k = 4,
	// max_num_seqs 1: acceptance length 2.08; geometric p = 0.5423
	// (Σ_{i≤4} p^i = 1.080).
	models.DraftEagle: {geometric(0.5423, 4), "vLLM PR 16035 (EAGLE-LLaMA3-Instruct-8B, MT-Bench, k = 4: acceptance length 2.08), geometric per-position shape assumed"},
}

// geometric returns p, p², …, p^k.
func geometric(p float64, k int) []float64 {
	r := make([]float64, k)
	x := 1.0
	for i := range r {
		x *= p
		r[i] = math.Round(x*1e4) / 1e4
	}
	return r
}

// resolveSpeculative turns the [speculative] table into the instance's
// speculation: the acceptance model, the drafter priced on the pool's
// kernel model, the draft's weights and KV in the memory plan, vLLM's
// capture sizes for 1 + k query tokens, and the token budget per decode.
// It runs after the engine is resolved; absent or k = 0 it does nothing.
func (s *Scenario) resolveSpeculative(p *Plan) error {
	sc := s.Speculative
	if sc == nil || (sc.NumSpeculativeTokens == 0 && sc.Method == "") {
		return nil
	}
	k := sc.NumSpeculativeTokens
	switch {
	case k < 0 || k > 64:
		return s.fieldError("speculative.num_speculative_tokens", "speculative-config", "%d must be in [0, 64] (0: off)", k)
	case !strings.Contains(", "+SpecMethods+",", ", "+sc.Method+","):
		return s.fieldError("speculative.method", "speculative-config", "unknown method %q (known: %s)", sc.Method, SpecMethods)
	case k == 0:
		return nil
	case s.isTRTLLM() || s.engineName() == serve.SGLangVersion:
		// Their own speculative paths (SGLang's EAGLE tree drafting with
		// --speculative-eagle-topk, TensorRT-LLM's speculative_config) are
		// not vLLM's proposer and rejection sampler.
		return s.fieldError("speculative.method", "speculative-config", "speculative decoding is modelled as vLLM runs it (engine vllm-v1, or ideal): the %s engine's own speculative decoding is not modelled", s.engineName())
	case s.Disagg.DecodeReplicas > 0 || s.PP > 1 || s.Ranks() > 1 || p.Parallel.EP.On():
		return s.fieldError("speculative.method", "speculative-config", "speculative decoding is modelled on colocated instances without pipeline, data or expert parallelism")
	case sc.ProposerCPUUs < 0 || sc.ProposerCPUUs > 1e6 || math.IsNaN(sc.ProposerCPUUs):
		return s.fieldError("speculative.proposer_cpu_us", "speculative-config", "%g must be in [0, 1e6] µs", sc.ProposerCPUUs)
	case sc.ProposerCPUUs > 0 && sc.Method != "ngram":
		return s.fieldError("speculative.proposer_cpu_us", "speculative-config", "is the n-gram proposer's CPU time; method %q drafts on the GPU", sc.Method)
	case sc.Verify != "" && sc.Verify != "decode" && sc.Verify != "batch-expansion":
		return s.fieldError("speculative.verify", "speculative-config", "%q: want decode (vLLM V1) or batch-expansion (vLLM V0's BatchExpansionTop1Scorer)", sc.Verify)
	}
	spec := &serve.Speculation{K: k}
	if sc.Method != "ngram" {
		spec.Lookahead = k // the drafter caches KV (scheduler.py: use_eagle() or uses_draft_model())
	}
	var err error
	if spec.Accept, p.SpecAccept, err = s.specAcceptance(sc); err != nil {
		return err
	}
	if len(sc.ClassAcceptanceRates) > 0 {
		def, ok := spec.Accept.(serve.PositionRates)
		if !ok {
			return s.fieldError("speculative.class_acceptance_rates", "speculative-config", "replaces rates by class: give it with acceptance_rates or a method default, not an acceptance_trace")
		}
		cr := serve.ClassRates{Default: def, ByClass: map[string]serve.PositionRates{}}
		for _, c := range slices.Sorted(maps.Keys(sc.ClassAcceptanceRates)) {
			if len(s.Workload.Classes) > 0 && !slices.ContainsFunc(s.Workload.Classes, func(w Class) bool { return w.Name == c }) {
				return s.fieldError("speculative.class_acceptance_rates", "speculative-config", "class %q is not one of the workload's classes", c)
			}
			cr.ByClass[c] = serve.PositionRates(sc.ClassAcceptanceRates[c])
			p.SpecAccept += fmt.Sprintf("; class %s %v", c, sc.ClassAcceptanceRates[c])
		}
		spec.Accept = cr
	}
	if err := spec.Validate(); err != nil {
		return s.fieldError("speculative.acceptance_rates", "speculative-config", "%v", err)
	}
	timer := &serve.SpecStep{Target: p.Serve.Instance.Step, K: k, ProposerCPU: sc.ProposerCPUUs / 1e6, Expand: sc.Verify == "batch-expansion"}
	if sc.Method != "ngram" {
		d, err := s.specDraft(sc, p.Model)
		if err != nil {
			return err
		}
		par := models.Parallel{TP: p.Parallel.TP, Weights: p.Parallel.Weights, KV: p.Parallel.KV}
		ds, err := hardware.NewStepModel(d.Model, p.GPU, par, p.Step.Kernel(), 0)
		if err != nil {
			return s.fieldError("speculative.model", "speculative-config", "the draft: %v", err)
		}
		sharePrices(ds, d.Model, p.GPU, par, p.Step.Kernel(), p.kernelID)
		timer.Draft = ds
		if err := s.specMemory(p, k, d.WeightBytesPerGPU(par), d.Model.KVBytesPerTokenPerGPU(par)); err != nil {
			return err
		}
	} else if err := s.specMemory(p, k, 0, 0); err != nil {
		return err
	}
	if v, ok := p.Serve.Engine.(serve.VLLMV1); ok && v.Graphs != nil && !v.Graphs.Eager {
		v.Graphs.Sizes = serve.CaptureSizesSpec(p.Limits.MaxNumSeqs, p.Limits.MaxNumBatchedTokens, k)
	}
	p.Serve.Instance.Step = timer
	p.Serve.Instance.Spec = spec
	p.Serve.Instance.Limits.SpecTokens = k
	return nil
}

// specAcceptance returns the acceptance model and its description.
func (s *Scenario) specAcceptance(sc *Speculative) (serve.Acceptance, string, error) {
	k := sc.NumSpeculativeTokens
	switch {
	case sc.AcceptanceTrace != "" && len(sc.AcceptanceRates) > 0:
		return nil, "", s.fieldError("speculative.acceptance_trace", "speculative-config", "give acceptance_rates or acceptance_trace, not both")
	case sc.AcceptanceTrace != "":
		f, err := os.Open(s.Path(sc.AcceptanceTrace))
		if err != nil {
			return nil, "", s.fieldError("speculative.acceptance_trace", "speculative-config", "%v", err)
		}
		defer f.Close()
		t, err := serve.ReadAcceptTrace(f, sc.AcceptanceTrace, k)
		if err != nil {
			return nil, "", fmt.Errorf("%w (field \"speculative.acceptance_trace\")", err)
		}
		return t, fmt.Sprintf("replayed from %s (%d requests)", sc.AcceptanceTrace, len(t)), nil
	case len(sc.AcceptanceRates) > 0:
		r := serve.PositionRates(sc.AcceptanceRates)
		return r, fmt.Sprintf("per-position rates %v given (%.3g tokens a step expected)", sc.AcceptanceRates, r.ExpectedTokens(k)), nil
	}
	d, ok := specDefaults[sc.Method]
	if !ok {
		return nil, "", s.fieldError("speculative.acceptance_rates", "speculative-config", "method %q has no published default acceptance built in: give acceptance_rates (vLLM's per-position rates) or acceptance_trace", sc.Method)
	}
	if len(d.rates) < k {
		return nil, "", s.fieldError("speculative.acceptance_rates", "speculative-config", "the built-in %s acceptance covers %d positions (%s), fewer than num_speculative_tokens %d: give acceptance_rates", sc.Method, len(d.rates), d.source, k)
	}
	r := serve.PositionRates(d.rates[:k])
	return r, fmt.Sprintf("per-position rates %v, %s (%.3g tokens a step expected)", d.rates[:k], d.source, r.ExpectedTokens(k)), nil
}

// specDraft returns the drafter's shape.
func (s *Scenario) specDraft(sc *Speculative, target *models.Model) (models.Draft, error) {
	if sc.Method != "draft_model" {
		if sc.DraftVocab != 0 && sc.Method != models.DraftEagle3 {
			return models.Draft{}, s.fieldError("speculative.draft_vocab", "speculative-config", "is EAGLE-3's draft vocabulary; method %q scores the target's", sc.Method)
		}
		d, err := target.DraftHead(sc.Method, sc.DraftVocab)
		if err != nil {
			return models.Draft{}, s.fieldError("speculative.method", "speculative-config", "%v", err)
		}
		return d, nil
	}
	if sc.Model == "" {
		return models.Draft{}, s.fieldError("speculative.model", "speculative-config", "method draft_model needs the draft model (a catalog name, see `servesim models`)")
	}
	mc, err := s.ModelCatalog()
	if err != nil {
		return models.Draft{}, err
	}
	m, err := mc.Lookup(sc.Model)
	if err != nil {
		return models.Draft{}, s.fieldError("speculative.model", "speculative-config", "%v", err)
	}
	if m.Vocab != target.Vocab {
		return models.Draft{}, s.fieldError("speculative.model", "speculative-config", "draft %q has vocabulary %d, the target %q %d: vLLM needs one tokenizer", m.Name, m.Vocab, target.Name, target.Vocab)
	}
	return models.Draft{Model: m}, nil
}

// specMemory adds the draft's weights and KV to the pool's memory plan: the
// weights come out of the KV budget, and every block holds the draft's
// layers' KV beside the target's (vLLM allocates the draft's attention
// layers in the same KV cache groups, one block table). A budget set by
// kv_cache_memory_bytes stays as given; a block count override stays.
//
// Under vllm-v1's memory plan the CUDA graphs are captured up to
// min(max_num_seqs·(1+k)·2, 512) tokens (VllmConfig._set_cudagraph_sizes
// with decode_query_len = 1 + k), so their memory is the forward
// activation at that size.
func (s *Scenario) specMemory(p *Plan, k int, weights, kvPerToken float64) error {
	m := &p.Memory
	m.WeightBytesPerGPU += weights
	fixed := s.Explicit("batch.kv_cache_memory_bytes") || s.Batch.KVCacheMemoryBytes != 0
	if !fixed {
		m.KVBytesPerGPU -= weights
	}
	if v := p.VLLMMemory; v != nil && v.CUDAGraph > 0 {
		cg := hardware.ForwardActivation(p.Model, p.Parallel.TP, hardware.MaxCUDAGraphSize(p.Limits.MaxNumSeqs*(1+k)))
		if !fixed {
			m.KVBytesPerGPU -= cg - v.CUDAGraph
		}
		m.ActivationReserve += cg - v.CUDAGraph
		v.CUDAGraph = cg
	}
	m.KVBytesPerTokenPerGPU += kvPerToken
	if s.Batch.NumGPUBlocksOverride == 0 {
		blocks := math.Floor(m.KVBytesPerGPU / (float64(m.BlockSize) * m.KVBytesPerTokenPerGPU))
		if blocks < 1 {
			return s.fieldError("speculative.method", "speculative-config", "the draft's %.2f GiB of weights leave no KV block on the %s", weights/(1<<30), p.GPU.Name)
		}
		m.Blocks = int(min(blocks, math.MaxInt32))
	}
	if p.VLLMMemory != nil {
		p.VLLMMemory.MemoryPlan = *m
	}
	p.Serve.Instance.Blocks = m.Blocks
	p.Serve.Instance.KVBytesPerToken = m.KVBytesPerTokenPerGPU
	return nil
}

// describeSpeculative writes the run header's speculative-decoding line.
func (p *Plan) describeSpeculative(w io.Writer) error {
	sp := p.Serve.Instance.Spec
	if sp == nil {
		return nil
	}
	sc := p.Scenario.Speculative
	drafter := "n-gram proposer on the CPU"
	if t, ok := p.Serve.Instance.Step.(*serve.SpecStep); ok && t.Draft != nil {
		drafter = fmt.Sprintf("%s drafter priced as %s", sc.Method, t.Draft.(*hardware.StepModel).Model().Name)
	} else if sc.ProposerCPUUs > 0 {
		drafter += fmt.Sprintf(" (%.3g µs a request)", sc.ProposerCPUUs)
	} else {
		drafter += " (its CPU time not priced: set speculative.proposer_cpu_us)"
	}
	_, err := fmt.Fprintf(w, "Speculative decoding: %s, %d tokens; %s; acceptance %s.\n", sc.Method, sp.K, drafter, p.SpecAccept)
	return err
}
