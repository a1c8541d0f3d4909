package plan

import (
	"slices"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// TestPlanProposesEPPP: with pipeline degrees the planner proposes EP
// layouts of pipeline stages too (it skipped them: EP was modelled without
// stages). Qwen3-30B-A3B on H100 at PP 2, TP 1 and 2, DP within 8 GPUs:
// every DP × TP but TP 1 alone gets an EP twin (its EP group, a stage's dp
// × tp GPUs, would be one GPU). Each option's GPUs are replicas × DP × TP ×
// PP at $3.00 an H100-hour (hardware/gpus.toml), an EP × PP row's $/M is
// that of its own run, and the rows are the same with the memo and bound
// off (NoPrune): an EP × PP layout is not pruned by the capacity bound,
// which does not bound it (unbounded, and pipelined rounds beat a whole
// step's bound).
func TestPlanProposesEPPP(t *testing.T) {
	base := epPlanBase(t)
	o := PlanOptions{Rate: 16, GPUs: []string{"h100"}, TPs: []int{1, 2}, PPs: []int{2}, Duration: 10, MaxGPUs: 16}
	opts, err := PlanCapacity(base, o)
	if err != nil {
		t.Fatal(err)
	}
	var layouts []string
	for _, op := range opts {
		layouts = append(layouts, op.layout().String())
	}
	slices.Sort(layouts)
	want := []string{"DP2×PP2×TP1", "DP2×PP2×TP1 EP2", "DP2×PP2×TP2", "DP2×PP2×TP2 EP4", "DP4×PP2×TP1", "DP4×PP2×TP1 EP4", "PP2×TP1", "PP2×TP2", "PP2×TP2 EP2"}
	if !slices.Equal(layouts, want) {
		t.Fatalf("layouts %q, want %q", layouts, want)
	}
	served := 0
	for _, op := range opts {
		if op.Err != "" {
			continue
		}
		served++
		if op.GPUs != op.Replicas*op.DP*op.TP*op.PP || op.CostPerHour != 3*float64(op.GPUs) {
			t.Errorf("%s: %d GPUs at $%.2f/hour, want %d × %d × %d × %d at $3.00", op.Name, op.GPUs, op.CostPerHour, op.Replicas, op.DP, op.TP, op.PP)
		}
	}
	i := slices.IndexFunc(opts, func(op Option) bool { return op.DP == 2 && op.TP == 1 && op.PP == 2 && op.EP })
	op := opts[i]
	if op.Err != "" {
		t.Fatalf("1×DP2×PP2×TP1 EP2 does not serve 16 req/s: %s", op.Err)
	}
	rep, err := evaluateRun(base, PlanOptions{Rate: o.Rate, Duration: o.Duration}, &Placement{Replicas: op.Replicas, TP: 1, PP: 2, DP: 2, EP: true, GPUs: op.GPUs})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Plan.Pipeline == nil || rep.Plan.Pipeline.Expert(0) == nil || rep.Plan.Parallel.EP.Size != 2 || rep.CostPerHour() != op.CostPerHour {
		t.Errorf("the run of %s: pipeline %v, EP %d, $%.2f/hour", op.Name, rep.Plan.Pipeline != nil, rep.Plan.Parallel.EP.Size, rep.CostPerHour())
	}
	if want := scenario.PerMillion(rep.CostPerHour(), rep.SteadyOutputThroughput()); op.CostPerMOutTok != want || !(want > 0) {
		t.Errorf("%s: $%.4f/M output tokens, its run gives $%.4f/M", op.Name, op.CostPerMOutTok, want)
	}
	if served < 4 {
		t.Fatalf("%d options serve: the checks compare too few", served)
	}
	o.NoPrune = true
	full, err := PlanCapacity(base, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range full {
		if a, b := optionRow(opts[i]), optionRow(full[i]); a != b {
			t.Errorf("option %d:\n memo    %s\n no memo %s", i, a, b)
		}
	}
	for _, op := range opts {
		t.Log(optionRow(op))
	}
}
