package experiments

import (
	"strings"
	"testing"
)

// TestExpertSearchRefused: place and plan propose the DP degrees and
// expert parallelism themselves (--dps, --ep) and refuse a base scenario
// that sets either.
func TestExpertSearchRefused(t *testing.T) {
	for _, head := range []string{"dp = 2\n", "dp = 2\nexpert_parallel = true\n"} {
		s := epScenario(t, "qwen3-30b-a3b", head, "")
		s.SLO.TTFTms = 500
		if _, err := Place(s, PlaceOptions{GPUs: 8}); err == nil || !strings.Contains(err.Error(), "place: the scenario sets dp = 2") {
			t.Errorf("%q place: %v", head, err)
		}
		if _, err := PlanCapacity(s, PlanOptions{Rate: 1}); err == nil || !strings.Contains(err.Error(), "plan: the scenario sets dp = 2") {
			t.Errorf("%q plan: %v", head, err)
		}
	}
	// The decode pool's own layout is refused alike.
	s := epScenario(t, "qwen3-30b-a3b", "", "[disagg]\ndecode_replicas = 1\ndecode_dp = 2\n")
	s.SLO.TTFTms = 500
	if _, err := PlanCapacity(s, PlanOptions{Rate: 1}); err == nil || !strings.Contains(err.Error(), "plan: the scenario sets disagg.decode_dp = 2") {
		t.Errorf("decode_dp 2 plan: %v", err)
	}
}

// TestPipelineSearchRefused: place and plan do not search pipeline layouts
// and refuse a base scenario that sets one (they would count replicas × TP GPUs).
func TestPipelineSearchRefused(t *testing.T) {
	s := ppScenario(t, "pp = 2\n")
	s.SLO.TTFTms = 500
	if _, err := Place(s, PlaceOptions{GPUs: 8}); err == nil || !strings.Contains(err.Error(), "place: the scenario sets pp = 2") {
		t.Errorf("place: %v", err)
	}
	if _, err := PlanCapacity(s, PlanOptions{Rate: 1}); err == nil || !strings.Contains(err.Error(), "plan: the scenario sets pp = 2") {
		t.Errorf("plan: %v", err)
	}
}
