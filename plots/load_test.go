package plots

import (
	"strings"
	"testing"
)

// loadCSV is a two-GPU batch-limit sweep offered one load: h100 saturated
// at max_num_seqs 1, both keeping up at 64. Its steady (arrival-window)
// throughput differs from the drain-diluted output_tok_per_s, so the plots'
// choice of column shows.
const loadCSV = `gpu,batch.max_num_seqs,seed,output_tok_per_s,steady_output_tok_per_s,ttft_p95_ms,tpot_p95_ms,cost_per_m_output_tokens,offered_req_per_s,offered_output_tok_per_s,saturated
h100,1,1,150,160,900000,7,5.2,12.0,3300,1
h100,64,1,3200,3300,130,14,0.25,12.1,3310,0
b200,1,1,230,240,600000,4,6.9,11.9,3290,1
b200,64,1,3250,3300,60,6,0.50,12.0,3300,0
`

func TestBatchLatencyFixedLoad(t *testing.T) {
	res, err := ReadResults(strings.NewReader(loadCSV), "load.csv")
	if err != nil {
		t.Fatal(err)
	}
	fig, nums, err := BatchLatency(res, BatchLatencyOptions{SLO: SLO{TTFTms: 1000, TPOTms: 30}})
	if err != nil {
		t.Fatal(err)
	}
	// Offered 11.9–12.1 req/s: a spread of 12.1/11.9 − 1 = 1.7 % < 5 %,
	// one load; mean offered output (3300 + 3310 + 3290 + 3300)/4 = 3300.
	if o := nums.Offered; !o.Known || !o.Fixed || o.MinRate != 11.9 || o.MaxRate != 12.1 || o.Output != 3300 {
		t.Errorf("offered load %+v", o)
	}
	for _, c := range nums.Curves {
		if len(c.Saturated) != 2 || !c.Saturated[0] || c.Saturated[1] {
			t.Errorf("%s: saturated %v, want [true false]", c.Label, c.Saturated)
		}
		if c.Throughput[1] != 3300 {
			t.Errorf("%s: throughput %v at 64, want the steady 3300 tok/s", c.Label, c.Throughput[1])
		}
	}
	if !strings.Contains(fig.Title, "every point offered 12 req/s ≈ 3300 output tok/s") || !strings.Contains(fig.Caption, "Held fixed: the offered load") {
		t.Errorf("the figure does not say what was held fixed:\n%s\n%s", fig.Title, fig.Caption)
	}
	if !strings.Contains(nums.String(), "saturated at x = 1\n") {
		t.Errorf("numbers:\n%s", nums)
	}
	pf, _, err := ProviderFit(res, MatrixOptions{SLO: SLO{TTFTms: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pf.Title.Text, "Held fixed: every point offered 12 req/s") {
		t.Errorf("provider-fit title: %s", pf.Title.Text)
	}

	// Rates 20 % apart are not one load: nothing is said to be fixed.
	varied := strings.Replace(loadCSV, "h100,64,1,3200,3300,130,14,0.25,12.1", "h100,64,1,3200,3300,130,14,0.25,14.4", 1)
	res, err = ReadResults(strings.NewReader(varied), "varied.csv")
	if err != nil {
		t.Fatal(err)
	}
	fig, nums, err = BatchLatency(res, BatchLatencyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nums.Offered.Fixed || strings.Contains(fig.Caption, "Held fixed") {
		t.Errorf("14.4 against 11.9 req/s read as one load: %+v", nums.Offered)
	}
}

// The goodput plot prices each curve at the highest swept rate within the
// target: attainment 1.0, 0.95, 0.5 at 4, 8, 12 req/s with a 0.9 target
// crosses between 8 and 12, so the cost is the one at 8 req/s ($0.20), not
// the cheaper-looking overloaded 12 ($0.18).
func TestGoodputCostAtCapacity(t *testing.T) {
	csv := `workload.rate,seed,goodput_req_per_s,request_throughput,slo_attainment,cost_per_m_output_tokens,saturated
4,1,4,4,1.0,0.40,0
8,1,7.6,8,0.95,0.20,0
12,1,5,10,0.5,0.18,1
`
	res, err := ReadResults(strings.NewReader(csv), "g.csv")
	if err != nil {
		t.Fatal(err)
	}
	_, nums, err := Goodput(res, GoodputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := nums.Curves[0]
	// Max goodput rate 8 + (0.95 − 0.9)/(0.95 − 0.5)·4 = 8.444 req/s.
	if c.Best != 1 || c.Cost[c.Best] != 0.20 || !c.Saturated[2] || c.Saturated[1] {
		t.Errorf("best %d, cost %v, saturated %v", c.Best, c.Cost, c.Saturated)
	}
	if s := nums.String(); !strings.Contains(s, "within the target at 8 req/s: $0.2000 per M output tokens") || !strings.Contains(s, "saturated at rate = 12\n") {
		t.Errorf("numbers:\n%s", s)
	}
}

// A saturated run's dashboard says so in its title and gauge, from
// summary.json's metrics.saturation.
func TestDashboardSaturated(t *testing.T) {
	sum, err := ReadSummary(strings.NewReader(`{"metrics": {"completed": 2, "slo": {"ttft_ms": 500}, "slo_attainment": 0,
		"saturation": {"judged": true, "saturated": true, "offered_req_per_s": 3.4, "capacity_req_per_s": 1.3,
		"outstanding_peak": 7722, "growth_start_s": 0, "growth_end_s": 3537}}}`), "summary.json")
	if err != nil {
		t.Fatal(err)
	}
	if st := sum.Saturation; st == nil || !st.Saturated || st.CapacityRate != 1.3 {
		t.Fatalf("saturation %+v", sum.Saturation)
	}
	run := &Run{Label: "r", Summary: sum, Requests: []Request{
		{ID: 0, Arrival: 0, FirstToken: 2e9, Finish: 3e9, Output: 2},
		{ID: 1, Arrival: 1e9, FirstToken: 4e9, Finish: 5e9, Output: 2},
	}}
	fig, nums, err := Dashboard(run, DashboardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fig.Title, "SATURATED (offered 3.4 req/s, capacity 1.3 req/s)") {
		t.Errorf("title %q", fig.Title)
	}
	if got := saturationLines(nums.Saturation); len(got) != 1 || got[0] != "SATURATED: 3.4 req/s offered, 1.3 served; queue grew 0–3537 s to 7722" {
		t.Errorf("gauge lines %q", got)
	}
}
