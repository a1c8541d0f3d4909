package experiments

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
	DP             int     `json:"dp"`
	EP             int     `json:"ep"`
	GPUsPerRank    int     `json:"gpus_per_dp_rank"`
	GPUs           int     `json:"gpus"`
	Backend        string  `json:"all2all_backend,omitempty"`
	LocalExperts   int     `json:"experts_per_gpu"`
	Redundant      int     `json:"redundant_experts"`
	Skew           float64 `json:"expert_skew"`
	WeightGB       float64 `json:"weight_gb_per_gpu"`
	KVBlocks       int     `json:"kv_blocks_per_rank"`
	TokensPerRank  float64 `json:"tokens_per_rank_step"`
	AllToAllShare  float64 `json:"all2all_share"`
	AllToAllMsStep float64 `json:"all2all_ms_per_step"`
	Waves          int64   `json:"lockstep_waves"`  // steps every rank took together
	DummySteps     int64   `json:"dummy_steps"`     // idle ranks' dummy batches
	RankSpread     float64 `json:"busy_rank_share"` // the ranks' real steps over ranks × waves
}

// dp returns the scenario's data-parallel ranks, 1 when omitted.
func (s *Scenario) dp() int { return max(1, s.DP) }

// ep reports whether the scenario shards the experts.
func (s *Scenario) ep() bool { return s.ExpertParallel }

// checkEP validates the DP and EP fields and returns the EP layout of a
// pool of TP tp (the zero layout without expert parallelism).
func (s *Scenario) checkEP(m *models.Model, tp int) (models.ExpertParallel, error) {
	var e models.ExpertParallel
	if s.DP < 0 || s.DP > models.MaxEP || (s.DP == 0 && s.Explicit("dp")) {
		return e, s.fieldError("dp", "dp", "%d must be in [1, %d]; omit it for the default (1)", s.DP, models.MaxEP)
	}
	if !s.ep() {
		for _, f := range []struct {
			set  bool
			name string
		}{{s.EPLB, "eplb"}, {s.RedundantExperts != 0, "eplb_redundant_experts"}, {s.ExpertSkew != 0, "expert_skew"}, {s.All2All != "", "all2all_backend"}} {
			if f.set {
				return e, s.fieldError(f.name, strings.ReplaceAll(f.name, "_", "-"), "needs expert_parallel (flag --enable-expert-parallel)")
			}
		}
		return e, nil
	}
	if !m.IsMoE() {
		return e, s.fieldError("expert_parallel", "enable-expert-parallel", "model %s is dense: expert parallelism needs an MoE model", m.Name)
	}
	if s.pp() > 1 {
		return e, s.fieldError("expert_parallel", "enable-expert-parallel", "with pp %d: expert parallelism is modelled without pipeline stages", s.PP)
	}
	if s.Disagg.DecodeReplicas > 0 {
		return e, s.fieldError("expert_parallel", "enable-expert-parallel", "with a disaggregated decode pool: expert parallelism is modelled for colocated instances only")
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
	switch s.All2All {
	case "", hardware.AllGatherReduceScatter, hardware.DeepEPHighThroughput, hardware.DeepEPLowLatency:
	default:
		return e, s.fieldError("all2all_backend", "all2all-backend", "unknown backend %q (known: %s)", s.All2All, strings.Join(hardware.All2AllBackends, ", "))
	}
	e = models.ExpertParallel{Size: s.dp() * tp, DP: s.dp(), Redundant: s.RedundantExperts, Skew: skew}
	if !e.On() {
		return e, s.fieldError("expert_parallel", "enable-expert-parallel", "the EP group is dp × tp = 1 GPU: expert parallelism needs at least 2 (raise dp or tp)")
	}
	if err := m.CheckParallel(models.Parallel{TP: tp, Weights: models.BF16, KV: models.BF16, EP: e}); err != nil {
		return e, s.fieldError("expert_parallel", "enable-expert-parallel", "%v", err)
	}
	return e, nil
}

// newExpertStep wraps the pool's step model with the all-to-all pricing.
func (s *Scenario) newExpertStep(p *PoolPlan) error {
	node, err := s.gpusPerNode(p.GPU)
	if err != nil {
		return err
	}
	p.Expert, err = hardware.NewExpertStep(p.Step, s.All2All, node)
	if err != nil {
		return fmt.Errorf("%w (field \"all2all_backend\")", err)
	}
	return nil
}

// describeExperts writes the header's data- and expert-parallel lines.
func (p *Plan) describeExperts(w io.Writer) error {
	s := p.Scenario
	if s.dp() == 1 && p.Expert == nil {
		return nil
	}
	tp := p.Parallel.TP
	var b strings.Builder
	rank := fmt.Sprintf("tp %d", tp)
	if s.pp() > 1 {
		rank = fmt.Sprintf("pp %d × tp %d", s.pp(), tp)
	}
	fmt.Fprintf(&b, "Data parallel: dp %d ranks × %s = %d GPUs per replica; each rank its own scheduler, queue and %d KV blocks per GPU (%d tokens), %.2f GB weights/GPU; routed by %s.\n",
		s.dp(), rank, s.dp()*tp*s.pp(), p.Memory.Blocks, p.Memory.Blocks*p.Memory.BlockSize, p.Memory.WeightBytesPerGPU/1e9, s.Router.Policy)
	if e := p.Expert; e != nil {
		ep := p.Parallel.EP
		m := p.Model
		fmt.Fprintf(&b, "Expert parallel: ep %d GPUs hold %d routed experts", ep.Size, m.Experts)
		if ep.Redundant > 0 {
			fmt.Fprintf(&b, " + %d redundant (EPLB)", ep.Redundant)
		}
		fmt.Fprintf(&b, ", %d per GPU whole; all-to-all %s over %s; expert load skew %.3f (busiest rank's rows / mean", m.LocalExperts(p.Parallel), e.Backend(), p.linkName(), ep.Skew)
		switch {
		case s.Explicit("expert_skew"):
			b.WriteString(", given")
		case s.EPLB:
			b.WriteString(", vLLM PR 50647's median with EPLB")
		default:
			b.WriteString(", vLLM PR 50647's median without EPLB")
		}
		b.WriteString(")")
		if s.dp() > 1 {
			b.WriteString("; the DP ranks step in lock-step (a step ends with the slowest rank's, idle ranks run a dummy batch; MoE layers and all-to-all at the group's mean tokens per rank)")
		}
		b.WriteString(".\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// linkName says which links the EP group's all-to-all crosses.
func (p *Plan) linkName() string {
	node, _ := p.Scenario.gpusPerNode(p.GPU)
	if p.Parallel.EP.Size <= node {
		return fmt.Sprintf("NVLink (one %d-GPU domain)", node)
	}
	return fmt.Sprintf("NVLink and the scale-out NIC (%d domains of %d GPUs, %.0f GB/s per GPU)", (p.Parallel.EP.Size+node-1)/node, node, hardware.ScaleOutBW/1e9)
}

// expertSummary is summary.json's "expert_parallel"; nil at dp = 1 without EP.
func (r *Report) expertSummary() *ExpertSummary {
	p := r.Plan
	s := p.Scenario
	if s.dp() == 1 && p.Expert == nil {
		return nil
	}
	tp := p.Parallel.TP * s.pp()
	es := &ExpertSummary{DP: s.dp(), GPUsPerRank: tp, GPUs: p.Replicas * tp, WeightGB: p.Memory.WeightBytesPerGPU / 1e9, KVBlocks: p.Memory.Blocks,
		LocalExperts: p.Model.LocalExperts(p.Parallel)}
	if e := p.Expert; e != nil {
		es.EP, es.Backend, es.Redundant, es.Skew = p.Parallel.EP.Size, e.Backend(), p.Parallel.EP.Redundant, p.Parallel.EP.Skew
		es.Waves, es.DummySteps = r.Result.DPWaves, r.Result.DPDummySteps
		if es.Waves > 0 {
			es.RankSpread = float64(r.Result.Steps) / float64(es.Waves*int64(s.dp()))
		}
		st := r.ExpertStats
		if st.Steps > 0 {
			es.TokensPerRank = float64(st.Tokens) / float64(st.Steps)
			es.AllToAllShare = st.Share()
			es.AllToAllMsStep = 1e3 * st.AllToAllSecond / float64(st.Steps)
		}
	}
	return es
}

// writeExpertResults writes the run's all-to-all share and tokens per rank.
func (r *Report) writeExpertResults(w io.Writer) error {
	es := r.expertSummary()
	if es == nil || es.EP == 0 || r.ExpertStats.Steps == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "Expert parallel: %.1f tokens per rank step; all-to-all %.3f ms a step, %.1f %% of step time; busiest rank at %.3f × the mean routed rows.\n",
		es.TokensPerRank, es.AllToAllMsStep, 100*es.AllToAllShare, es.Skew); err != nil {
		return err
	}
	if es.Waves == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "DP lock-step: %d waves of %d ranks; %.1f %% of rank steps had work, %d dummy batches.\n",
		es.Waves, es.DP, 100*es.RankSpread, es.DummySteps)
	return err
}
