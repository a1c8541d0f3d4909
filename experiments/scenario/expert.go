package scenario

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// Data parallelism and expert parallelism in a plan: the DP ranks, the EP
// layout of the MoE layers (models.ExpertParallel), the step pricing with
// the all-to-all (hardware.ExpertStep) and what the header and summary.json
// say of them. With dp = 1 and expert_parallel off nothing here runs.
//
// Each DP rank is an instance of its own (its scheduler, waiting queue and
// KV cache, as vLLM's DP engine cores), behind vLLM's DP load balancer
// (router "dp-coordinator", the default when dp > 1). With expert
// parallelism the ranks step in lock-step (serve.DPLockstep): a step
// starts on every rank at once and ends with the slowest rank's, idle
// ranks run a dummy batch, and each rank's MoE layers and all-to-all are
// priced at the group's mean tokens per rank (hardware.ExpertStep
// SetGroupLoad). Without expert parallelism the ranks are independent.

// Expert load skew defaults (max/mean routed rows per EP rank), from vLLM PR
// 50647 (Kimi K3 EPLB, 16 EP ranks, GSM8K, 97 rank-load samples): median
// max/mean rank load 1.069 observing only, 1.008 with EPLB rearranging.
// One model at one EP size: wider groups and other data sets skew more
// (assumption, stated in the header); give expert_skew to change it.
const (
	DefaultExpertSkew     = 1.069
	DefaultExpertSkewEPLB = 1.008
)

// ExpertSummary is summary.json's "expert_parallel".
type ExpertSummary struct {
	DP           int     `json:"dp"`
	EP           int     `json:"ep"`
	GPUsPerRank  int     `json:"gpus_per_dp_rank"`
	GPUs         int     `json:"gpus"`
	Backend      string  `json:"all2all_backend,omitempty"`
	LocalExperts int     `json:"experts_per_gpu"`
	Redundant    int     `json:"redundant_experts"`
	Skew         float64 `json:"expert_skew"`
	// SkewLayers and SkewMax: per-layer skews were given (Skew is then
	// their mean): how many MoE layers, and the largest.
	SkewLayers     int     `json:"expert_skew_layers,omitempty"`
	SkewMax        float64 `json:"expert_skew_max,omitempty"`
	WeightGB       float64 `json:"weight_gb_per_gpu"`
	KVBlocks       int     `json:"kv_blocks_per_rank"`
	TokensPerRank  float64 `json:"tokens_per_rank_step"`
	AllToAllShare  float64 `json:"all2all_share"`
	AllToAllMsStep float64 `json:"all2all_ms_per_step"`
	Waves          int64   `json:"lockstep_waves"`  // steps every rank took together
	DummySteps     int64   `json:"dummy_steps"`     // idle ranks' dummy batches
	RankSpread     float64 `json:"busy_rank_share"` // the ranks' real steps over ranks × waves
	// TwoBatchOverlap: the steps were priced with two-batch overlap, and
	// OverlapSteps of them were split (AllToAll* then count the exposed part).
	TwoBatchOverlap bool  `json:"two_batch_overlap,omitempty"`
	OverlapSteps    int64 `json:"tbo_steps,omitempty"`
	// CommSMs: the SMs the all-to-all holds beside the other micro-batch's
	// compute under two-batch overlap, and the compute's slow-down there.
	CommSMs      int     `json:"tbo_comm_sms,omitempty"`
	CommSlowdown float64 `json:"tbo_compute_slowdown,omitempty"`
}

// Ranks returns the scenario's data-parallel ranks, 1 when omitted.
func (s *Scenario) Ranks() int { return max(1, s.DP) }

// ep reports whether the scenario shards the experts.
func (s *Scenario) ep() bool { return s.ExpertParallel }

// poolEP is one pool's data- and expert-parallel fields: the colocated (or
// prefill) pool's top-level dp, expert_parallel and all2all_backend, or the
// decode pool's disagg.decode_* ones.
type poolEP struct {
	prefix   string // "" or "disagg.decode_": names the fields in errors
	Ranks    int
	ep       bool
	all2all  string
	tbo      bool
	explicit bool // dp given explicitly
}

// prefillEP is the colocated or prefill pool's fields.
func (s *Scenario) prefillEP() poolEP {
	return poolEP{Ranks: s.DP, ep: s.ExpertParallel, all2all: s.All2All, tbo: s.TwoBatchOverlap, explicit: s.Explicit("dp")}
}

// decodeEP is the decode pool's fields with the prefill pool's defaults.
func (s *Scenario) decodeEP() poolEP {
	d := s.Disagg
	e := poolEP{prefix: "disagg.decode_", Ranks: d.DecodeDP, ep: d.DecodeExpertParallel, all2all: d.DecodeAll2All, tbo: d.DecodeTwoBatchOverlap, explicit: s.Explicit("disagg.decode_dp")}
	if !s.Explicit("disagg.decode_expert_parallel") {
		e.ep = s.ExpertParallel
	}
	if e.all2all == "" {
		e.all2all = s.All2All
	}
	if !s.Explicit("disagg.decode_two_batch_overlap") {
		e.tbo = s.TwoBatchOverlap
	}
	return e
}

// decodeDP returns the decode pool's DP ranks a replica, 1 when omitted.
func (s *Scenario) decodeDP() int { return max(1, s.Disagg.DecodeDP) }

// checkDecodeLayout sets p.DecodeInstances (decode replicas × decode_dp
// ranks, each an instance) and refuses the decode pool's layout fields
// without a decode pool.
func (s *Scenario) checkDecodeLayout(p *Plan) error {
	d := s.Disagg
	if d.DecodeReplicas > 0 {
		if d.DecodeReplicas*s.decodeDP() > MaxReplicas {
			return s.fieldError("disagg.decode_dp", "decode-dp", "%d ranks × %d decode replicas is out of range (at most %d instances)", s.decodeDP(), d.DecodeReplicas, MaxReplicas)
		}
		p.DecodeInstances = d.DecodeReplicas * s.decodeDP()
		return nil
	}
	for _, f := range []struct {
		set  bool
		name string
	}{{d.DecodeDP != 0, "decode_dp"}, {s.Explicit("disagg.decode_expert_parallel"), "decode_expert_parallel"}, {d.DecodeAll2All != "", "decode_all2all_backend"}, {s.Explicit("disagg.decode_two_batch_overlap"), "decode_two_batch_overlap"}, {s.Explicit("disagg.decode_pp"), "decode_pp"}} {
		if f.set {
			return s.fieldError("disagg."+f.name, "", "describes the decode pool: it needs disagg.decode_replicas ≥ 1")
		}
	}
	return nil
}

// checkEP validates the DP and EP fields of a pool and returns its EP
// layout at TP tp (the zero layout without expert parallelism).
func (s *Scenario) checkEP(m *models.Model, tp int, pe poolEP) (models.ExpertParallel, []float64, error) {
	e, err := s.checkEPLayout(m, tp, pe)
	if err != nil || !e.On() {
		return e, nil, err
	}
	skews, err := s.layerSkews(m, e.Size)
	if err != nil || skews == nil {
		return e, nil, err
	}
	// The one skew the step model and reports carry: the layers' mean.
	sum := 0.0
	for _, v := range skews {
		sum += v
	}
	e.Skew = sum / float64(len(skews))
	return e, skews, nil
}

func (s *Scenario) checkEPLayout(m *models.Model, tp int, pe poolEP) (models.ExpertParallel, error) {
	var e models.ExpertParallel
	f := func(name string) string { return pe.prefix + name }
	fl := func(name string) string {
		if pe.prefix != "" {
			return "decode-" + name
		}
		return name
	}
	if pe.Ranks < 0 || pe.Ranks > models.MaxEP || (pe.Ranks == 0 && pe.explicit) {
		return e, s.fieldError(f("dp"), fl("dp"), "%d must be in [1, %d]; omit it for the default (1)", pe.Ranks, models.MaxEP)
	}
	Ranks := max(1, pe.Ranks)
	if pe.prefix == "" && !s.ep() && !(s.Disagg.DecodeReplicas > 0 && s.decodeEP().ep) {
		// The shared expert fields need expert parallelism in some pool.
		for _, f := range []struct {
			set  bool
			name string
		}{{s.EPLB, "eplb"}, {s.RedundantExperts != 0, "eplb_redundant_experts"}, {s.ExpertSkew != 0, "expert_skew"}, {s.All2All != "", "all2all_backend"}, {s.TwoBatchOverlap, "two_batch_overlap"}, {s.TBOCommSMs != nil, "tbo_comm_sms"}, {s.ExpertSkewLayers != nil, "expert_skew_layers"}, {s.ExpertSkewFile != "", "expert_skew_file"}} {
			if f.set {
				return e, s.fieldError(f.name, strings.ReplaceAll(f.name, "_", "-"), "needs expert_parallel (flag --enable-expert-parallel)")
			}
		}
	}
	if !pe.ep {
		if pe.prefix != "" && s.Disagg.DecodeTwoBatchOverlap {
			return e, s.fieldError(f("two_batch_overlap"), "", "needs the decode pool's expert parallelism (disagg.decode_expert_parallel)")
		}
		return e, nil
	}
	if !m.IsMoE() {
		return e, s.fieldError(f("expert_parallel"), fl("enable-expert-parallel"), "model %s is dense: expert parallelism needs an MoE model", m.Name)
	}
	if pp := s.poolPPOf(pe); pp > 1 && pe.tbo {
		name, flag := "two_batch_overlap", "two-batch-overlap" // the decode pool inherits it unless given its own
		if pe.prefix != "" && s.Explicit("disagg.decode_two_batch_overlap") {
			name, flag = f("two_batch_overlap"), ""
		}
		return e, s.fieldError(name, flag, "with %d pipeline stages: two-batch overlap inside pipeline stages is not modelled (servesim prices it on whole steps only); turn one off", pp)
	}
	if s.RedundantExperts < 0 || (s.RedundantExperts > 0 && !s.EPLB) {
		return e, s.fieldError("eplb_redundant_experts", "eplb-redundant-experts", "%d: must be ≥ 0, and needs eplb (flag --enable-eplb)", s.RedundantExperts)
	}
	skew := s.ExpertSkew
	if skew == 0 && !s.Explicit("expert_skew") {
		skew = DefaultExpertSkew
		if s.EPLB {
			skew = DefaultExpertSkewEPLB
		}
	}
	if !(skew >= 1) || math.IsInf(skew, 0) {
		return e, s.fieldError("expert_skew", "expert-skew", "%v must be ≥ 1 (the busiest EP rank's routed tokens over the mean; 1 is perfect balance)", skew)
	}
	switch pe.all2all {
	case "", hardware.AllGatherReduceScatter, hardware.DeepEPHighThroughput, hardware.DeepEPLowLatency:
	default:
		name := "all2all_backend"
		if pe.prefix != "" && s.Disagg.DecodeAll2All != "" {
			name = f("all2all_backend")
		}
		return e, s.fieldError(name, strings.ReplaceAll(name, "_", "-"), "unknown backend %q (known: %s)", pe.all2all, strings.Join(hardware.All2AllBackends, ", "))
	}
	for _, th := range []struct {
		v    int
		name string
	}{{s.TBODecodeThreshold, "tbo_decode_token_threshold"}, {s.TBOPrefillThreshold, "tbo_prefill_token_threshold"}} {
		if th.v < 0 || (th.v == 0 && s.Explicit(th.name)) {
			return e, s.fieldError(th.name, strings.ReplaceAll(th.name, "_", "-"), "%d must be ≥ 1 (a batch of more tokens is split); omit it for vLLM's default", th.v)
		}
	}
	switch s.TBOSchedule {
	case "", hardware.TBOScheduleVLLM, hardware.TBOScheduleSGLang:
	default:
		return e, s.fieldError("tbo_schedule", "", "unknown schedule %q (known: %s, %s)", s.TBOSchedule, hardware.TBOScheduleVLLM, hardware.TBOScheduleSGLang)
	}
	e = models.ExpertParallel{Size: Ranks * tp, DP: Ranks, Redundant: s.RedundantExperts, Skew: skew}
	if !e.On() {
		return e, s.fieldError(f("expert_parallel"), fl("enable-expert-parallel"), "the EP group is dp × tp = 1 GPU: expert parallelism needs at least 2 (raise dp or tp)")
	}
	if err := m.CheckParallel(models.Parallel{TP: tp, Weights: models.BF16, KV: models.BF16, EP: e}); err != nil {
		return e, s.fieldError(f("expert_parallel"), fl("enable-expert-parallel"), "%v", err)
	}
	return e, nil
}

// tbo returns the two-batch overlap rule of a pool, nil when off.
func (s *Scenario) tbo(pe poolEP) *hardware.TBO {
	if !pe.tbo {
		return nil
	}
	t := hardware.VLLMDBO
	if s.TBODecodeThreshold > 0 {
		t.DecodeThreshold = s.TBODecodeThreshold
	}
	if s.TBOPrefillThreshold > 0 {
		t.PrefillThreshold = s.TBOPrefillThreshold
	}
	t.Schedule = s.TBOSchedule
	return &t
}

// newExpertStep wraps the pool's step model with the all-to-all pricing
// and its two-batch overlap.
func (s *Scenario) newExpertStep(p *PoolPlan, pe poolEP) error {
	node, err := s.NodeGPUs(p.GPU)
	if err != nil {
		return err
	}
	p.Expert, err = hardware.NewExpertStep(p.Step, pe.all2all, node)
	if err != nil {
		return fmt.Errorf("%w (field \"all2all_backend\")", err)
	}
	p.Expert.SetTBO(s.tbo(pe))
	if err := p.Expert.SetLayerSkews(p.layerSkews); err != nil {
		return fmt.Errorf("scenario: %w", err)
	}
	if n := s.TBOCommSMs; n != nil {
		if !s.TwoBatchOverlap && !s.Disagg.DecodeTwoBatchOverlap {
			return s.fieldError("tbo_comm_sms", "", "needs two_batch_overlap (the SMs the all-to-all holds beside the other micro-batch's compute)")
		}
		if *n < 0 {
			return s.fieldError("tbo_comm_sms", "", "%d must be ≥ 0; omit it for the backend's default (%d for %s)", *n, hardware.DefaultCommSMs(p.Expert.Backend()), p.Expert.Backend())
		}
		if err := p.Expert.SetCommSMs(*n); err != nil {
			return s.fieldError("tbo_comm_sms", "", "%v", err)
		}
	}
	return nil
}

// poolLayout is what the header and summary.json say of one pool's data-
// and expert-parallel layout: the colocated (or prefill) pool, or the
// decode pool when disaggregated.
type poolLayout struct {
	label     string // "" or "Decode pool: "
	pool      *PoolPlan
	Ranks     int
	instances int
	tbo       bool
	stats     hardware.ExpertStats
	waves     int64
	dummies   int64
	rankSteps int64
}

// layouts returns the pools' layouts: the first pool's, and the decode
// pool's when disaggregated.
func (r *Report) poolLayouts() []poolLayout {
	p := r.Plan
	s := p.Scenario
	res := r.Result
	out := []poolLayout{{pool: &p.PoolPlan, Ranks: s.Ranks(), instances: p.Replicas, tbo: s.TwoBatchOverlap, stats: poolStats(&p.PoolPlan, r.ExpertStats, r.PipelineStats),
		waves: res.DPWaves, dummies: res.DPDummySteps, rankSteps: res.DPRankSteps}}
	if p.Decode != nil {
		out = append(out, poolLayout{label: "Decode pool: ", pool: p.Decode, Ranks: s.decodeDP(), instances: p.DecodeInstances, tbo: s.decodeEP().tbo,
			stats: poolStats(p.Decode, r.DecodeExpertStats, r.DecodePipelineStats), waves: res.DecodeDPWaves, dummies: res.DecodeDPDummySteps, rankSteps: res.DecodeDPRankSteps})
	}
	return out
}

// describeExperts writes the header's data- and expert-parallel lines, a
// pair a pool.
func (p *Plan) describeExperts(w io.Writer) error {
	for _, l := range (&Report{Plan: p}).poolLayouts() {
		if err := p.describePoolExperts(w, l); err != nil {
			return err
		}
	}
	return nil
}

func (p *Plan) describePoolExperts(w io.Writer, l poolLayout) error {
	s := p.Scenario
	pool := l.pool
	if l.Ranks == 1 && pool.a2a() == nil {
		return nil
	}
	tp := pool.Parallel.TP
	var b strings.Builder
	rank := fmt.Sprintf("tp %d", tp)
	if pool.pp() > 1 {
		rank = fmt.Sprintf("pp %d × tp %d", pool.pp(), tp)
	}
	fmt.Fprintf(&b, "%sData parallel: dp %d ranks × %s = %d GPUs per replica; each rank its own scheduler, queue and %d KV blocks per GPU (%d tokens), %.2f GB weights/GPU; routed by %s.\n",
		l.label, l.Ranks, rank, l.Ranks*tp*pool.pp(), pool.Memory.Blocks, pool.Memory.Blocks*pool.Memory.BlockSize, pool.Memory.WeightBytesPerGPU/1e9, s.Router.Policy)
	if e := pool.a2a(); e != nil {
		ep := pool.Parallel.EP
		m := p.Model
		fmt.Fprintf(&b, "%sExpert parallel: ep %d GPUs hold %d routed experts", l.label, ep.Size, m.Experts)
		if pool.Pipeline != nil {
			b.WriteString(" of each MoE layer, one EP group per pipeline stage (the stage's dp × tp GPUs)")
		}
		if ep.Redundant > 0 {
			fmt.Fprintf(&b, " + %d redundant (EPLB)", ep.Redundant)
		}
		fmt.Fprintf(&b, ", %d per GPU whole; all-to-all %s over %s; expert load skew %.3f (busiest rank's rows / mean", m.LocalExperts(pool.Parallel), e.Backend(), s.linkName(pool, e), ep.Skew)
		switch {
		case pool.layerSkews != nil:
			src := "expert_skew_layers"
			if s.ExpertSkewFile != "" {
				src = s.ExpertSkewFile
			}
			lo, hi := pool.layerSkews[0], pool.layerSkews[0]
			for _, v := range pool.layerSkews {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
			fmt.Fprintf(&b, ", the mean of %d MoE layers' own from %s, %.3f to %.3f, each layer priced at its own", len(pool.layerSkews), src, lo, hi)
		case s.Explicit("expert_skew"):
			b.WriteString(", given")
		case s.EPLB:
			b.WriteString(", vLLM PR 50647's median with EPLB")
		default:
			b.WriteString(", vLLM PR 50647's median without EPLB")
		}
		b.WriteString(")")
		switch {
		case l.Ranks > 1 && pool.Pipeline != nil:
			b.WriteString("; the DP ranks run each micro-batch's stages in lock-step (a stage lasts the slowest rank's, a rank short of micro-batches runs dummies; MoE layers and all-to-all at the group's mean tokens per rank of the micro-batch)")
		case l.Ranks > 1:
			b.WriteString("; the DP ranks step in lock-step (a step ends with the slowest rank's, idle ranks run a dummy batch; MoE layers and all-to-all at the group's mean tokens per rank)")
		}
		if t := e.TBO(); t != nil {
			fmt.Fprintf(&b, "; two-batch overlap above %d decode / %d prefill tokens (each MoE layer max(compute, all-to-all) a micro-batch plus the edges", t.DecodeThreshold, t.PrefillThreshold)
			switch n, f := e.CommSMs(); {
			case n > 0:
				fmt.Fprintf(&b, "; the all-to-all holds %d of the GPU's %d SMs, so the compute beside it runs %.3f× slower", n, pool.GPU.SMs, f)
			case hardware.DefaultCommSMs(e.Backend()) > 0 && pool.GPU.SMs == 0 && s.TBOCommSMs == nil:
				b.WriteString("; no SM count for this GPU, so no SM contention priced")
			default:
				b.WriteString("; the all-to-all holds no SMs")
			}
			b.WriteString(")")
		}
		b.WriteString(".\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// linkName says which links a pool's EP group's all-to-all crosses (a
// pipeline stage's group: stage 0's).
func (s *Scenario) linkName(pool *PoolPlan, e *hardware.ExpertStep) string {
	node, _ := s.NodeGPUs(pool.GPU)
	if _, dom := e.Placement(); dom > 1 {
		if d, c, ok := e.ScaleOutBWs(); ok {
			return fmt.Sprintf("NVLink and the scale-out NIC (%d domains of %d GPUs; DeepEP's measured %.1f / %.1f GB/s dispatch / combine per GPU at EP %d, H800 with a 400 Gb/s NIC)", dom, node, d/1e9, c/1e9, pool.Parallel.EP.Size)
		}
		return fmt.Sprintf("NVLink and the scale-out NIC (%d domains of %d GPUs, %.0f GB/s per GPU)", dom, node, hardware.ScaleOutBW/1e9)
	}
	return fmt.Sprintf("NVLink (one %d-GPU domain)", node)
}

// a2a returns the pool's all-to-all pricing: its expert step's, or its
// pipeline's first stage's; nil without expert parallelism.
func (p *PoolPlan) a2a() *hardware.ExpertStep {
	switch {
	case p.Expert != nil:
		return p.Expert
	case p.Pipeline != nil:
		return p.Pipeline.Expert(0)
	}
	return nil
}

// poolStats is a pool's expert-parallel sums: its expert step's, or, for a
// pipeline with expert parallelism, its rounds' (a step is a round; the
// seconds are the stages' busy time, the all-to-all theirs).
func poolStats(p *PoolPlan, es hardware.ExpertStats, ps hardware.PipelineStats) hardware.ExpertStats {
	if p.Pipeline == nil || ps.AllToAllSeconds == nil {
		return es
	}
	st := hardware.ExpertStats{Steps: ps.Rounds, Tokens: ps.Tokens}
	for i, v := range ps.StageBusy {
		st.Seconds += v
		st.AllToAllSecond += ps.AllToAllSeconds[i]
	}
	return st
}

// poolPPOf returns the pipeline stages of the pool pe describes.
func (s *Scenario) poolPPOf(pe poolEP) int {
	if pe.prefix != "" {
		return max(1, s.Disagg.DecodePP)
	}
	return s.pp()
}

// expertSummary is summary.json's "expert_parallel" (the colocated or
// prefill pool's); nil at dp = 1 without EP.
func (r *Report) expertSummary() *ExpertSummary { return r.poolExpertSummary(r.poolLayouts()[0]) }

// decodeExpertSummary is summary.json's "decode_expert_parallel"; nil
// when not disaggregated or the decode pool has dp = 1 without EP.
func (r *Report) decodeExpertSummary() *ExpertSummary {
	if l := r.poolLayouts(); len(l) > 1 {
		return r.poolExpertSummary(l[1])
	}
	return nil
}

func (r *Report) poolExpertSummary(l poolLayout) *ExpertSummary {
	p := r.Plan
	pool := l.pool
	if l.Ranks == 1 && pool.a2a() == nil {
		return nil
	}
	tp := pool.Parallel.TP * pool.pp()
	es := &ExpertSummary{DP: l.Ranks, GPUsPerRank: tp, GPUs: l.instances * tp, WeightGB: pool.Memory.WeightBytesPerGPU / 1e9, KVBlocks: pool.Memory.Blocks,
		LocalExperts: p.Model.LocalExperts(pool.Parallel)}
	if e := pool.a2a(); e != nil {
		es.EP, es.Backend, es.Redundant, es.Skew = pool.Parallel.EP.Size, e.Backend(), pool.Parallel.EP.Redundant, pool.Parallel.EP.Skew
		es.Waves, es.DummySteps = l.waves, l.dummies
		if ls := pool.layerSkews; ls != nil {
			es.SkewLayers = len(ls)
			for _, v := range ls {
				es.SkewMax = math.Max(es.SkewMax, v)
			}
		}
		if es.Waves > 0 {
			es.RankSpread = float64(l.rankSteps) / float64(es.Waves*int64(l.Ranks))
		}
		st := l.stats
		if st.Steps > 0 {
			es.TokensPerRank = float64(st.Tokens) / float64(st.Steps)
			es.AllToAllShare = st.Share()
			es.AllToAllMsStep = 1e3 * st.AllToAllSecond / float64(st.Steps)
		}
		if e.TBO() != nil {
			es.TwoBatchOverlap, es.OverlapSteps = true, st.OverlapSteps
			if n, f := e.CommSMs(); n > 0 {
				es.CommSMs, es.CommSlowdown = n, f
			}
		}
	}
	return es
}

// writeExpertResults writes each pool's all-to-all share and tokens per rank.
func (r *Report) writeExpertResults(w io.Writer) error {
	for _, l := range r.poolLayouts() {
		es := r.poolExpertSummary(l)
		if es == nil || es.EP == 0 || l.stats.Steps == 0 {
			continue
		}
		tbo := ""
		if es.TwoBatchOverlap {
			tbo = fmt.Sprintf(" (exposed: two-batch overlap split %d of %d steps)", es.OverlapSteps, l.stats.Steps)
			if es.CommSMs > 0 {
				tbo = fmt.Sprintf(" (exposed, the compute beside it slowed %.3f× by the %d SMs it holds: two-batch overlap split %d of %d steps)", es.CommSlowdown, es.CommSMs, es.OverlapSteps, l.stats.Steps)
			}
		}
		step, time := "step", "step time"
		if l.pool.Pipeline != nil {
			step, time = "round (all stages and micro-batches)", "stage time"
		}
		if _, err := fmt.Fprintf(w, "%sExpert parallel: %.1f tokens per rank %s; all-to-all %.3f ms a %s, %.1f %% of %s%s; busiest rank at %.3f × the mean routed rows.\n",
			l.label, es.TokensPerRank, strings.Fields(step)[0], es.AllToAllMsStep, step, 100*es.AllToAllShare, time, tbo, es.Skew); err != nil {
			return err
		}
		if es.Waves == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "%sDP lock-step: %d waves of %d ranks; %.1f %% of rank steps had work, %d dummy batches.\n",
			l.label, es.Waves, es.DP, 100*es.RankSpread, es.DummySteps); err != nil {
			return err
		}
	}
	return nil
}
