package plan

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// TestExpertSearchRefused: place and plan propose the DP degrees and
// expert parallelism themselves (--dps, --ep) and refuse a base scenario
// that sets either.
func TestExpertSearchRefused(t *testing.T) {
	for _, head := range []string{"dp = 2\n", "dp = 2\nexpert_parallel = true\n"} {
		s := epScenario(t, head, "")
		s.SLO.TTFTms = 500
		if _, err := Place(s, PlaceOptions{GPUs: 8}); err == nil || !strings.Contains(err.Error(), "place: the scenario sets dp = 2") {
			t.Errorf("%q place: %v", head, err)
		}
		if _, err := PlanCapacity(s, PlanOptions{Rate: 1}); err == nil || !strings.Contains(err.Error(), "plan: the scenario sets dp = 2") {
			t.Errorf("%q plan: %v", head, err)
		}
	}
	// The decode pool's own layout is refused alike.
	s := epScenario(t, "", "[disagg]\ndecode_replicas = 1\ndecode_dp = 2\n")
	s.SLO.TTFTms = 500
	if _, err := PlanCapacity(s, PlanOptions{Rate: 1}); err == nil || !strings.Contains(err.Error(), "plan: the scenario sets disagg.decode_dp = 2") {
		t.Errorf("decode_dp 2 plan: %v", err)
	}
}

// TestPipelineSearchRefused: place and plan do not search pipeline layouts
// and refuse a base scenario that sets one (they would count replicas × TP GPUs).
func TestPipelineSearchRefused(t *testing.T) {
	s := parsed(t, "pp = 2\n"+ppBase)
	s.SLO.TTFTms = 500
	if _, err := Place(s, PlaceOptions{GPUs: 8}); err == nil || !strings.Contains(err.Error(), "place: the scenario sets pp = 2") {
		t.Errorf("place: %v", err)
	}
	if _, err := PlanCapacity(s, PlanOptions{Rate: 1}); err == nil || !strings.Contains(err.Error(), "plan: the scenario sets pp = 2") {
		t.Errorf("plan: %v", err)
	}
}

// epBase is the tests' Qwen3-30B-A3B scenario on H100 (a short chat
// workload); ppBase Llama-3.1-70B at TP 2 with a longer one.
const (
	epBase = "model = \"qwen3-30b-a3b\"\ngpu = \"h100\"\nseed = 5\n" +
		"[workload]\nrate = 12\nrequests = 240\nprompt = \"lognormal:6.5,0.8\"\noutput = \"lognormal:4.5,0.8\"\n"
	ppBase = "model = \"llama-3.1-70b\"\ngpu = \"h100\"\ntp = 2\nseed = 3\n" +
		"[workload]\nrate = 6\nrequests = 200\nprompt = \"lognormal:6.5,0.8\"\noutput = \"lognormal:4.5,0.8\"\n"
)

// epScenario is epBase between head and tail (TOML the tests add).
func epScenario(t *testing.T, head, tail string) scenario.Scenario {
	return parsed(t, head+epBase+tail)
}

// parsed is the scenario text parses to.
func parsed(t *testing.T, text string) scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse(strings.NewReader(text), "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
