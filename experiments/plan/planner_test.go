package plan

import (
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/sim/workload/trace"
)

// The planner's answer is minimal and ranked: each option meets the target
// at the rate, the same shape with one replica fewer does not, and options
// are in increasing cost per hour.
func TestPlanCapacityMinimalAndRanked(t *testing.T) {
	base := scenario.Default()
	base.Workload.Requests = 300
	o := PlanOptions{Rate: 12, GPUs: []string{"a100", "h100"}, TPs: []int{1}, Duration: 20, Prices: map[string]float64{"a100": 1.0}}
	opts, err := PlanCapacity(base, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) != 2 {
		t.Fatalf("%d options, want 2", len(opts))
	}
	for i, op := range opts {
		if op.Err != "" {
			t.Fatalf("%s: %s", op.GPU, op.Err)
		}
		if op.Attainment < 0.9 {
			t.Errorf("%s %s: attainment %.3f < 0.9", op.GPU, op.Name, op.Attainment)
		}
		if i > 0 && opts[i-1].CostPerHour > op.CostPerHour {
			t.Errorf("not ranked by cost: %v then %v", opts[i-1].CostPerHour, op.CostPerHour)
		}
		if op.GPU == "a100" && op.CostPerHour != float64(op.GPUs)*1.0 {
			t.Errorf("a100 price override not applied: $%.2f/h for %d GPUs", op.CostPerHour, op.GPUs)
		}
		if op.Replicas > 1 {
			b := base
			b.GPU = op.GPU
			rep, err := evaluate(b, PlanOptions{Rate: o.Rate, Duration: o.Duration}, &Placement{Replicas: op.Replicas - 1, TP: op.TP, GPUs: (op.Replicas - 1) * op.TP})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Summary.Attainment >= 0.9 {
				t.Errorf("%s: %d replicas also meet the target (%.3f): %s is not minimal", op.GPU, op.Replicas-1, rep.Summary.Attainment, op.Name)
			}
		}
		t.Logf("%s %s: $%.2f/h, attainment %.3f", op.GPU, op.Name, op.CostPerHour, op.Attainment)
	}
}

// A trace workload is replayed at the rate being searched or planned for,
// not at its own rate.
func TestTraceWorkloadFollowsRate(t *testing.T) {
	base := scenario.Default()
	base.Workload.Trace = &trace.Options{File: "x.csv", Scale: 3}
	c := &Placement{Replicas: 1, TP: 1, GPUs: 1}
	for _, rate := range []float64{2, 7.5} {
		s := scenarioFor(base, c, rate, PlaceOptions{MinDuration: 60})
		if s.Workload.Trace.Rate != rate || s.Workload.Trace.Scale != 0 {
			t.Errorf("rate %g: trace options %+v", rate, *s.Workload.Trace)
		}
	}
	if base.Workload.Trace.Scale != 3 || base.Workload.Trace.Rate != 0 {
		t.Error("the base scenario's trace options were modified")
	}
}

// Cost per token comes from the arrival window, not from first arrival to
// last completion: two deployments at one price per hour (4 × TP1 and
// 2 × TP2 H100s, 4 GPUs each) serving the same arrivals at the same rate
// without saturating cost the same per million output tokens, however long
// each one's drain tail after the last arrival. $/M = price/3600 /
// (offered req/s × mean output tokens) × 1e6 for both.
func TestCostPerTokenFromArrivalWindow(t *testing.T) {
	base := scenario.Default()
	base.GPU = "h100"
	o := PlanOptions{Rate: 12, Duration: 20}
	var cost, drained [2]float64
	var steady [2]float64
	for i, c := range []Placement{{Replicas: 4, TP: 1, GPUs: 4}, {Replicas: 2, TP: 2, GPUs: 4}} {
		rep, err := evaluateRun(base, o, &c)
		if err != nil {
			t.Fatal(err)
		}
		st := rep.Summary.Saturation
		if !st.Judged || st.Saturated {
			t.Fatalf("%d×TP%d: saturation %+v, want judged and not saturated", c.Replicas, c.TP, st)
		}
		steady[i] = st.OfferedOutputRate * float64(rep.Summary.Completed) / float64(rep.Summary.Completed+rep.Summary.Rejected)
		cost[i] = scenario.PerMillion(rep.CostPerHour(), rep.SteadyOutputThroughput())
		drained[i] = scenario.PerMillion(rep.CostPerHour(), rep.Summary.OutputThroughput)
		t.Logf("%d×TP%d: $%.2f/h, $%.4f/M (drain included: $%.4f/M, %.2f s)", c.Replicas, c.TP, rep.CostPerHour(), cost[i], drained[i], rep.Summary.Duration)
	}
	if drained[0] == drained[1] {
		t.Fatalf("the two deployments drain alike ($%.4f/M): the case does not tell the two throughputs apart", drained[0])
	}
	if cost[0] != cost[1] || steady[0] != steady[1] {
		t.Errorf("$/M %.6f and %.6f (steady %.3f, %.3f tok/s): want equal for equal price, rate and output", cost[0], cost[1], steady[0], steady[1])
	}
}
