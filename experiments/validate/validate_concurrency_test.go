package validate

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
)

// TestValidateAppliesBenchMaxConcurrency: a vllm bench serve result with
// max_concurrency and no start_times is replayed through a client of that
// many slots. Four equal requests at request_rate inf with
// max_concurrency 1: request k is sent when request k−1 finishes (one slot,
// freed at its last token, think time 0), so on the simulated clock
// arrival[0] = 0 and arrival[k] = finish[k−1], and no two are ever in
// flight. Each then runs alone on an idle instance, so all four take the
// same time E and the last finishes at 4E.
func TestValidateAppliesBenchMaxConcurrency(t *testing.T) {
	in := `{"model_id": "meta-llama/Llama-3.1-8B", "request_rate": "inf", "max_concurrency": 1, "duration": 1,
 "input_lens": [100, 100, 100, 100], "output_lens": [8, 8, 8, 8],
 "ttfts": [0.02, 0.02, 0.02, 0.02], "latencies": [0.1, 0.1, 0.1, 0.1]}`
	run, _, err := realrun.ReadBench(strings.NewReader(in), "b.json")
	if err != nil {
		t.Fatal(err)
	}
	run.Name, run.Engine.GPU = "b", "h100"
	if run.MaxConcurrency != 1 {
		t.Fatalf("run.MaxConcurrency = %d, want 1", run.MaxConcurrency)
	}
	s, err := RunScenario(run, scenario.Scenario{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := Validate(run, s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(v.Notes, "\n"), "max_concurrency 1 applied") {
		t.Errorf("notes %q do not say max_concurrency was applied", v.Notes)
	}
	recs := v.SimRecs
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	e := recs[0].Finish - recs[0].Arrival
	if recs[0].Arrival != 0 || e <= 0 {
		t.Fatalf("first request: arrival %v, E2E %v; want 0 and > 0", recs[0].Arrival, e)
	}
	for k := 1; k < 4; k++ {
		if recs[k].Arrival != recs[k-1].Finish {
			t.Errorf("request %d sent at %v, want request %d's finish %v", k, recs[k].Arrival, k-1, recs[k-1].Finish)
		}
		if got := recs[k].Finish - recs[k].Arrival; got != e {
			t.Errorf("request %d E2E %v, want %v (alone on an idle instance, as request 0)", k, got, e)
		}
	}
	if got := recs[3].Finish; got != 4*e {
		t.Errorf("last finish %v, want 4 × %v", got, e)
	}
}

// The bench reader's bound on a replay's span is the longest run.
func TestReplaySpanBound(t *testing.T) {
	if realrun.MaxSpanS != scenario.MaxDurationS {
		t.Errorf("realrun.MaxSpanS %g, MaxDurationS %g: want them equal", realrun.MaxSpanS, scenario.MaxDurationS)
	}
}
