package plan

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// TestDisaggregationRegimes checks the two published regimes on the same
// GPU budget (DistServe, OSDI'24; Splitwise, ISCA'24) with the experiment
// files' workloads, on two H100s (colocated 1× or 2× TP1, or one prefill and
// one decode instance), shortened to keep the test fast:
//   - long prompts with a tight TPOT SLO (disagg-long.toml): disaggregation
//     gives more goodput per GPU: prefills no longer interrupt decodes;
//   - short prompts with loose SLOs (disagg-short.toml): colocation gives
//     more: a dedicated prefill instance idles on short prompts.
func TestDisaggregationRegimes(t *testing.T) {
	for _, c := range []struct {
		file       string
		disaggWins bool
	}{{"disagg-long.toml", true}, {"disagg-short.toml", false}} {
		base, err := scenario.LoadScenario(filepath.Join("..", c.file))
		if err != nil {
			t.Fatal(err)
		}
		ps, err := Place(base, PlaceOptions{GPUs: 2, TPs: []int{1}, MinDuration: 20, Precision: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		var co, dis float64
		for _, p := range ps {
			if p.Err != "" {
				t.Fatalf("%s: %s: %s", c.file, p.Name, p.Err)
			}
			if p.Disagg {
				dis = max(dis, p.PerGPU)
			} else {
				co = max(co, p.PerGPU)
			}
		}
		t.Logf("%s: best goodput per GPU: colocated %.2f, disaggregated %.2f req/s", c.file, co, dis)
		if (dis > co) != c.disaggWins {
			t.Errorf("%s: colocated %.2f vs disaggregated %.2f req/s per GPU: want disaggregation to win = %v", c.file, co, dis, c.disaggWins)
		}
	}
}

func TestPlaceErrors(t *testing.T) {
	base, err := scenario.LoadScenario(filepath.Join("..", "disagg-long.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Place(base, PlaceOptions{GPUs: 0}); err == nil {
		t.Error("no error for a zero GPU budget")
	}
	base.SLO = scenario.SLO{}
	if _, err := Place(base, PlaceOptions{GPUs: 2}); err == nil {
		t.Error("no error without an SLO")
	}
}

// TestPlaceProgress: OnProgress counts every candidate once, in order, and
// the ranking is the same with it as without.
func TestPlaceProgress(t *testing.T) {
	base := scenario.Default()
	base.Workload.Requests = 50
	// 2 GPUs at TP 1: colocated 1×TP1 and 2×TP1, disagg 1×TP1 + 1×TP1 = 3 candidates
	o := PlaceOptions{GPUs: 2, TPs: []int{1}, MinDuration: 5, Precision: 0.1, Workers: 2}
	plain, err := Place(base, o)
	if err != nil {
		t.Fatal(err)
	}
	var seen []int
	o.OnProgress = func(done, total int) {
		if total != 3 {
			t.Errorf("total %d, want 3", total)
		}
		seen = append(seen, done)
	}
	ps, err := Place(base, o)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[1 2 3]" {
		t.Errorf("progress %v, want [1 2 3]", seen)
	}
	if fmt.Sprint(ps) != fmt.Sprint(plain) {
		t.Errorf("with OnProgress:\n%v\nwithout:\n%v", ps, plain)
	}
}
