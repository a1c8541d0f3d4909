package experiments

import (
	"testing"

	"github.com/servesim/servesim/sim/workload/trace"
)

// The planner's answer is minimal and ranked: each option meets the target
// at the rate, the same shape with one replica fewer does not, and options
// are in increasing cost per hour.
func TestPlanCapacityMinimalAndRanked(t *testing.T) {
	base := Default()
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
	base := Default()
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
