package experiments

import (
	"fmt"

	"github.com/servesim/servesim/models"
)

// Layout is the parallel layout of one instance that plan and place
// propose: TP GPUs in each of PP pipeline stages (PP ≤ 1: no pipeline).
// Expert and data parallelism would be further fields and one more loop
// in layouts.
type Layout struct {
	TP, PP int
}

// GPUs is the instance's GPU count, TP × PP.
func (l Layout) GPUs() int { return l.TP * max(1, l.PP) }

// String is "TP8", or "PP2×TP8" with a pipeline: the deployment names of
// a search without PP are those of before pipelines were searched.
func (l Layout) String() string {
	if l.PP > 1 {
		return fmt.Sprintf("PP%d×TP%d", l.PP, l.TP)
	}
	return fmt.Sprintf("TP%d", l.TP)
}

// layouts lists the candidate layouts, PP outer and TP inner: with pps
// {1} exactly the TPs searched before pipelines were.
func layouts(tps, pps []int) []Layout {
	var out []Layout
	for _, pp := range pps {
		for _, tp := range tps {
			out = append(out, Layout{TP: tp, PP: pp})
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
			return nil, fmt.Errorf("experiments: %s: pipeline degree %d: must be in [1, %d]", what, pp, models.MaxPP)
		}
	}
	return pps, nil
}

// layout is c's instance layout (the prefill pool's when disaggregated).
func (c *Placement) layout() Layout { return Layout{TP: c.TP, PP: max(1, c.PP)} }

// ppList is " and PP [2 4]" for an error naming the degrees searched, ""
// when only PP 1 was.
func ppList(pps []int) string {
	if len(pps) == 1 && pps[0] == 1 {
		return ""
	}
	return fmt.Sprintf(" and PP %v", pps)
}
