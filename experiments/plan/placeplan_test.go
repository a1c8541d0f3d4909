package plan

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// tinyScenario is Llama-3.1-8B on one H100 with 20 short requests: each
// simulation takes milliseconds.
func tinyScenario(ttftMs float64) scenario.Scenario {
	s := scenario.Default()
	s.Name, s.Model, s.GPU = "tiny", "llama-3.1-8b", "h100"
	s.Workload.Requests, s.Workload.Prompt, s.Workload.Output = 20, "constant:100", "constant:10"
	s.SLO = scenario.SLO{TTFTms: ttftMs, TPOTms: 100}
	return s
}

// A search in which nothing can serve is an error that says why, never an
// empty or all-error ranking.
func TestPlaceNothingServes(t *testing.T) {
	cases := []struct {
		name string
		base scenario.Scenario
		o    PlaceOptions
		want string
	}{
		// 32 heads: TP 3 does not divide them.
		{"tp 3", tinyScenario(2000), PlaceOptions{GPUs: 4, TPs: []int{3}, Colocated: true}, "tp 3 does not divide heads 32"},
		{"tp 8 in 2 GPUs", tinyScenario(2000), PlaceOptions{GPUs: 2, TPs: []int{8}}, "no deployment fits 2 GPUs"},
		// A 1 µs TTFT is below one prefill's time at any rate: the search
		// stops at 1/64 of its first rate (0.25/64 = 0.0039 req/s), it does
		// not bisect towards 0 (which panicked on a duration of 1e10 s).
		{"impossible SLO", tinyScenario(0.001), PlaceOptions{GPUs: 1, TPs: []int{1}, Colocated: true, MinDuration: 10}, "misses the target even at"},
		{"target above 1", tinyScenario(2000), PlaceOptions{GPUs: 1, Target: 1.5}, "attainment target 1.5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Place(c.base, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestPlanCapacityErrors(t *testing.T) {
	cases := []struct {
		name string
		o    PlanOptions
		want string
	}{
		{"unknown GPU", PlanOptions{GPUs: []string{"h100", "bogus"}}, `unknown GPU "bogus" (known: a100, a100-pcie, b200, b300, gb200, gb300, h100, h100-pcie, h200, l40s`},
		{"GPU twice", PlanOptions{GPUs: []string{"h100", "H100"}}, `GPU "h100" is given twice`},
		{"price of no candidate", PlanOptions{GPUs: []string{"h100"}, Prices: map[string]float64{"a100": 1}}, `a price for "a100"`},
		{"negative max GPUs", PlanOptions{MaxGPUs: -1}, "largest deployment -1 GPUs"},
		{"target above 1", PlanOptions{Target: 2}, "attainment target 2"},
		{"tp 3", PlanOptions{TPs: []int{3}, MaxGPUs: 3}, "no deployment of up to 3 GPUs serves 1 req/s"},
		// One TP1 instance serves a few hundred of these requests per
		// second: 1e300 req/s needs ~1e297 instances (it overflowed an int).
		{"huge rate", PlanOptions{Rate: 1e300, TPs: []int{1}, MaxGPUs: 2, Duration: 5}, "more than 2 GPUs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			if o.Rate == 0 {
				o.Rate = 1
			}
			_, err := PlanCapacity(tinyScenario(2000), o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// A price is keyed by the catalog's name whatever the spelling on the
// command line ("H100" prices h100).
func TestPlanPriceByCatalogName(t *testing.T) {
	o := PlanOptions{GPUs: []string{"H100"}, Prices: map[string]float64{"H100": 1.5}}
	if err := o.checkGPUs(tinyScenario(2000)); err != nil {
		t.Fatal(err)
	}
	if o.Prices["h100"] != 1.5 || len(o.Prices) != 1 {
		t.Errorf("prices %v, want h100: 1.5", o.Prices)
	}
}
