package plan

import (
	"fmt"

	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/models"
)

// Layout is the parallel layout of one instance that plan and place
// propose: DP data-parallel ranks (≤ 1: none), each of TP GPUs in each of
// PP pipeline stages (PP ≤ 1: no pipeline), and with EP the MoE layers'
// routed experts sharded over the DP × TP GPUs (vLLM
// --enable-expert-parallel: ep = dp × tp).
type Layout struct {
	TP, PP int
	DP     int
	EP     bool
}

// GPUs is the instance's GPU count, DP × TP × PP.
func (l Layout) GPUs() int { return l.TP * max(1, l.PP) * max(1, l.DP) }

// String is "TP8", "PP2×TP8" with a pipeline, "DP4×TP2" with DP ranks and
// "DP4×TP2 EP8" with expert parallelism: the deployment names of a search
// without PP, DP and EP are those of before they were searched.
func (l Layout) String() string {
	s := fmt.Sprintf("TP%d", l.TP)
	if l.PP > 1 {
		s = fmt.Sprintf("PP%d×", l.PP) + s
	}
	if l.DP > 1 {
		s = fmt.Sprintf("DP%d×", l.DP) + s
	}
	if l.EP {
		s += fmt.Sprintf(" EP%d", max(1, l.DP)*l.TP)
	}
	return s
}

// Expert-parallel choices of a search (PlanOptions.EP, PlaceOptions.EP).
const (
	EPAuto = "auto" // MoE models: each layout with and without EP; dense: without
	EPOn   = "on"   // every layout with EP (refused for a dense model)
	EPOff  = "off"  // none
)

// layoutChoice is a candidate layout, or one skipped with the reason.
type layoutChoice struct {
	Layout
	skip string
}

// layoutSpace is what a search varies besides the replicas.
type layoutSpace struct {
	TPs, PPs, DPs []int
	EP            string
	// nodeDP keeps DP > 1 layouts to dp × tp × pp ≤ node GPUs (the
	// default DP degrees: one DP group inside one NVLink domain).
	nodeDP bool
}

// checkLayoutSpace fills the defaults and refuses bad degrees: PP and DP
// in [1, models.MaxPP] and [1, models.MaxEP], EP other than auto, on or
// off ("": def, auto for the plan and off for place), EP on for a dense
// model. With dps unset the DP degrees are 1, 2, 4, 8 within one NVLink
// domain (see nodeDP) for an MoE model searched with EP, else 1.
func checkLayoutSpace(tps, pps, dps []int, ep, def string, m *models.Model, what string) (layoutSpace, error) {
	sp := layoutSpace{TPs: tps}
	var err error
	if sp.PPs, err = checkPPs(pps, what); err != nil {
		return sp, err
	}
	if ep == "" {
		ep = def
	}
	switch ep {
	case EPAuto, EPOff:
	case EPOn:
		if !m.IsMoE() {
			return sp, fmt.Errorf("%s: expert parallelism on: model %s is dense (no routed experts to shard)", what, m.Name)
		}
	default:
		return sp, fmt.Errorf("%s: expert parallelism %q: want auto, on or off", what, ep)
	}
	sp.EP = ep
	for _, dp := range dps {
		if dp < 1 || dp > models.MaxEP {
			return sp, fmt.Errorf("%s: data-parallel degree %d: must be in [1, %d]", what, dp, models.MaxEP)
		}
	}
	switch {
	case len(dps) > 0:
		sp.DPs = dps
	case m.IsMoE() && ep != EPOff:
		// 1 to 8 ranks: vLLM's single-node DP launch (data_parallel_size
		// ranks on one host); within the NVLink domain the EP all-to-all
		// stays off the scale-out NIC. Wider groups are wide EP, searched
		// when given.
		sp.DPs, sp.nodeDP = []int{1, 2, 4, 8}, true
	default:
		sp.DPs = []int{1}
	}
	return sp, nil
}

// layouts lists the candidate layouts of an MoE model (moe) on GPUs of
// node GPUs per NVLink domain, PP outer, then DP, then TP, then EP off
// before on: with DP {1} and EP off exactly the layouts searched before DP
// and EP were. With EP auto a layout whose EP group (a stage's dp × tp
// GPUs) would be one GPU is left out; with EP on it is listed with the
// reason.
func (sp layoutSpace) layouts(moe bool, node int) []layoutChoice {
	eps := []bool{false}
	switch {
	case sp.EP == EPOn:
		eps = []bool{true}
	case sp.EP == EPAuto && moe:
		eps = []bool{false, true}
	}
	var out []layoutChoice
	for _, pp := range sp.PPs {
		for _, dp := range sp.DPs {
			for _, tp := range sp.TPs {
				if sp.nodeDP && dp > 1 && dp*tp*pp > node {
					continue
				}
				for _, ep := range eps {
					l := layoutChoice{Layout: Layout{TP: tp, PP: pp, DP: dp, EP: ep}}
					if ep && dp*tp < 2 {
						// vLLM's EP group is a stage's dp × tp GPUs (pipeline_expert.go).
						l.skip = "the EP group is dp × tp = 1 GPU: expert parallelism needs at least 2"
					}
					if l.skip != "" && sp.EP == EPAuto {
						continue
					}
					out = append(out, l)
				}
			}
		}
	}
	return out
}

// checkPPs fills the default pipeline degrees ({1}: no pipeline, as a
// search did before it proposed pipelines) and refuses a degree outside
// [1, models.MaxPP].
func checkPPs(pps []int, what string) ([]int, error) {
	if len(pps) == 0 {
		return []int{1}, nil
	}
	for _, pp := range pps {
		if pp < 1 || pp > models.MaxPP {
			return nil, fmt.Errorf("%s: pipeline degree %d: must be in [1, %d]", what, pp, models.MaxPP)
		}
	}
	return pps, nil
}

// layout is c's instance layout (the prefill pool's when disaggregated).
func (c *Placement) layout() Layout {
	return Layout{TP: c.TP, PP: max(1, c.PP), DP: max(1, c.DP), EP: c.EP}
}

// layout is o's instance layout (the prefill pool's when disaggregated).
func (o *Option) layout() Layout {
	return Layout{TP: o.TP, PP: max(1, o.PP), DP: max(1, o.DP), EP: o.EP}
}

// ppList is " and PP [2 4]" for an error naming the degrees searched, ""
// when only PP 1 was.
func ppList(pps []int) string {
	if len(pps) == 1 && pps[0] == 1 {
		return ""
	}
	return fmt.Sprintf(" and PP %v", pps)
}

// unbounded reports whether l is searched without the analytic capacity
// bound (capacityBound): with DP ranks or expert parallelism the bound is
// not shown to hold. With EP a step is priced by hardware.ExpertStep (the
// all-to-all on top, and under DP lock-step the MoE layers at the group's
// mean tokens per rank, which a lone request's step model does not
// bound), and DP ranks are left with EP out for simplicity: a DP or EP
// layout is searched by simulation alone.
func unbounded(l Layout) bool { return l.DP > 1 || l.EP }

// epSize is l's expert-parallel group, DP × TP GPUs, and 1 without EP (as
// tp, pp and dp count 1 for none).
func epSize(l Layout) int {
	if !l.EP {
		return 1
	}
	return max(1, l.DP) * l.TP
}

// searchPP refuses pipeline fields in the base scenario of a search
// (place, plan): the search sets each candidate's pp itself (PPs, --pps),
// and a layer partition or chunked pipelining fits one degree only.
func searchPP(base scenario.Scenario, what string) error {
	if base.PP > 1 || len(base.PPLayers) > 0 || base.PPChunked || base.Disagg.DecodePP > 1 {
		return fmt.Errorf("%s: the scenario sets pp = %d (pp_layers %v, pp_chunked %v, disagg.decode_pp %d): the search proposes the pipeline degrees itself; drop the pipeline fields and give the degrees with --pps", what, base.PP, base.PPLayers, base.PPChunked, base.Disagg.DecodePP)
	}
	if base.DP > 1 || base.ExpertParallel {
		return fmt.Errorf("%s: the scenario sets dp = %d, expert_parallel = %v: the search proposes the DP degrees and expert parallelism itself; drop them and give them with --dps and --ep", what, base.DP, base.ExpertParallel)
	}
	if d := base.Disagg; d.DecodeDP > 1 || d.DecodeExpertParallel || d.DecodeTwoBatchOverlap || base.TwoBatchOverlap {
		return fmt.Errorf("%s: the scenario sets disagg.decode_dp = %d, decode_expert_parallel = %v (two-batch overlap %v, %v): the search varies TP and replicas only and does not propose DP or EP layouts; drop them, or run the layout with servesim run", what, d.DecodeDP, d.DecodeExpertParallel, base.TwoBatchOverlap, d.DecodeTwoBatchOverlap)
	}
	return nil
}
