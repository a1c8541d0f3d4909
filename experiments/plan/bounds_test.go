package plan

import (
	"fmt"
	"math"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// optionRow is what a ranking shows of an option: shape, size, cost and the
// measured numbers (compared exactly: pruning may skip simulations, never
// change one).
func optionRow(o Option) string {
	return fmt.Sprintf("%s %s disagg=%v %d×DP%d×TP%d×PP%d ep=%v +%d×TP%d gpus=%d $%.4f att=%.6f ttft=%.6f tpot=%.6f $/M=%.6f err=%q",
		o.GPU, o.Name, o.Disagg, o.Replicas, o.DP, o.TP, o.PP, o.EP, o.DecodeRep, o.DecodeTP, o.GPUs, o.CostPerHour, o.Attainment, o.TTFTp90, o.TPOTp90, o.CostPerMOutTok, o.Err)
}

// TestPlanPruningKeepsRanking plans a small problem twice, with the
// analytic bound and the memo and without (NoPrune), and requires the same
// ranking of the options that serve: the pruning drops no candidate the
// full search keeps, and changes none it keeps. Shapes the full search
// finds unable to serve may carry another reason (the bound's) when pruned.
func TestPlanPruningKeepsRanking(t *testing.T) {
	base := scenario.Default()
	base.Workload.Requests = 200
	o := PlanOptions{Rate: 16, GPUs: []string{"a100", "h100"}, TPs: []int{1, 2}, Duration: 15, MaxGPUs: 8, Disagg: true}
	pruned, err := PlanCapacity(base, o)
	if err != nil {
		t.Fatal(err)
	}
	o.NoPrune = true
	full, err := PlanCapacity(base, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(pruned) != len(full) {
		t.Fatalf("%d options pruned, %d full", len(pruned), len(full))
	}
	served := 0
	for i := range full {
		if full[i].Err != "" {
			if pruned[i].Err == "" {
				t.Errorf("option %d: the full search finds none (%s), the pruned one %s", i, full[i].Err, optionRow(pruned[i]))
			}
			continue
		}
		served++
		if a, b := optionRow(pruned[i]), optionRow(full[i]); a != b {
			t.Errorf("option %d:\n pruned %s\n full   %s", i, a, b)
		}
	}
	if served < 2 {
		t.Fatalf("only %d options serve: the test compares too little", served)
	}
}

// TestPlacePruningKeepsRanking does the same for place.
func TestPlacePruningKeepsRanking(t *testing.T) {
	base := scenario.Default()
	base.Workload.Requests = 200
	o := PlaceOptions{GPUs: 3, TPs: []int{1}, MinDuration: 10, Precision: 0.05}
	pruned, err := Place(base, o)
	if err != nil {
		t.Fatal(err)
	}
	o.NoPrune = true
	full, err := Place(base, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(pruned) != len(full) {
		t.Fatalf("%d pruned, %d full", len(pruned), len(full))
	}
	for i := range full {
		a, b := pruned[i], full[i]
		if a.Name != b.Name || a.Rate != b.Rate || a.Attainment != b.Attainment || (b.Err == "") != (a.Err == "") {
			t.Errorf("rank %d: pruned %+v, full %+v", i+1, a, b)
		}
	}
}

// TestCapacityBound checks the bound against a simulation: the default
// scenario (Llama-3.1-8B on one H100) completes no more than its bound, and
// a lone request's TTFT and TPOT are at least the bound's.
func TestCapacityBound(t *testing.T) {
	s := scenario.Default()
	s.Workload.Rate = 200 // far above capacity: the run shows what it completes
	s.Workload.Requests = 2000
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	b := boundOf(p)
	rep, err := scenario.Run(p, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Summary.RequestThroughput; !(got <= b.Rate) {
		t.Errorf("completed %.3f req/s, above the bound %.3f", got, b.Rate)
	}
	if !(b.Rate > 0) || math.IsInf(b.Rate, 0) {
		t.Errorf("bound %v req/s: want a finite positive rate for a synthetic workload", b.Rate)
	}
	if rep.Summary.TTFT.Min < b.TTFT*1e3 || rep.Summary.TPOT.Min < b.TPOT*1e3 {
		t.Errorf("min TTFT %.4f ms, TPOT %.4f ms below the bound's %.4f, %.4f ms", rep.Summary.TTFT.Min, rep.Summary.TPOT.Min, b.TTFT*1e3, b.TPOT*1e3)
	}
	t.Logf("bound %.2f req/s (completed %.2f); lone TTFT ≥ %.3f ms, TPOT ≥ %.3f ms", b.Rate, rep.Summary.RequestThroughput, b.TTFT*1e3, b.TPOT*1e3)
	// A TPOT SLO below a lone decode step cannot be met at any rate.
	if why := b.missesUnloaded(scenario.SLO{TPOTms: b.TPOT * 1e3 / 2}); why == "" {
		t.Error("a TPOT SLO of half a lone decode step passes")
	}
	if why := b.missesUnloaded(scenario.SLO{TPOTms: b.TPOT * 1e3 * 2, TTFTms: b.TTFT * 1e3 * 2}); why != "" {
		t.Errorf("twice the lone times: %s", why)
	}
}
