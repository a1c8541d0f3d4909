package plots

import (
	"math"
	"strings"
	"testing"
)

// A dashboard with no SLO to check (no summary.json, none given) says "no
// SLO" in a grey gauge: every request trivially meets no objective, which
// is no reason for green. With an SLO given, the gauge has its colour.
func TestDashboardWithoutSLOIsNoData(t *testing.T) {
	const s = int64(1e9)
	run := &Run{Label: "nosummary", Requests: []Request{
		{Arrival: 0, FirstToken: s / 2, Finish: s, Output: 2, TTFTms: 500, TPOTms: 500},
		{Arrival: s, FirstToken: 2 * s, Finish: 3 * s, Output: 2, TTFTms: 1000, TPOTms: 1000},
	}}
	for _, c := range []struct {
		name  string
		slo   SLO
		gauge string
		att   float64
	}{
		{"no SLO", SLO{}, GaugeNone, math.NaN()},
		{"TTFT 600 ms", SLO{TTFTms: 600}, GaugeRed, 0.5}, // one of two requests has TTFT ≤ 600 ms
		{"TTFT 1 s", SLO{TTFTms: 1000}, GaugeGreen, 1},   // both do
	} {
		t.Run(c.name, func(t *testing.T) {
			fig, n, err := Dashboard(run, DashboardOptions{SLO: c.slo})
			if err != nil {
				t.Fatal(err)
			}
			if n.Gauge != c.gauge || !(n.Attainment == c.att || math.IsNaN(c.att) && math.IsNaN(n.Attainment)) {
				t.Errorf("gauge %s attainment %v, want %s %v", n.Gauge, n.Attainment, c.gauge, c.att)
			}
			save(t, fig, "dash")
		})
	}
}

// The batch–latency plot runs only along a batch limit: its knee and sweet
// spot are a batch size, meaningless along a request rate.
func TestBatchLatencyNeedsABatchLimit(t *testing.T) {
	const cols = ",seed,output_tok_per_s,ttft_p95_ms,tpot_p95_ms,cost_per_m_output_tokens\n"
	rows := "1,1,100,50,10,1\n2,1,180,60,11,0.6\n4,1,200,90,12,0.5\n"
	for _, c := range []struct {
		axis, x, err string
	}{
		{"workload.rate", "", `x axis "workload.rate" is not a batch limit`},
		{"workload.rate", "workload.rate", "plot a rate sweep with 'plot goodput'"},
		{"tp", "tp", `x axis "tp" is not a batch limit`},
		{"batch.max_num_seqs", "", ""},
		{"batch.max_num_batched_tokens", "", ""},
		{"disagg.decode_batch.max_num_seqs", "disagg.decode_batch.max_num_seqs", ""},
	} {
		t.Run(c.axis, func(t *testing.T) {
			res, err := ReadResults(strings.NewReader(c.axis+cols+rows), "r.csv")
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = BatchLatency(res, BatchLatencyOptions{X: c.x})
			if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Errorf("error %v, want %q", err, c.err)
			}
		})
	}
}

// NaN and infinite values are left out and counted (Skipped); a plot with
// nothing left is an error, not an empty image.
func TestNonFinitePointsSkipped(t *testing.T) {
	const bl = "batch.max_num_seqs,seed,output_tok_per_s,ttft_p95_ms,tpot_p95_ms,cost_per_m_output_tokens\n"
	const gp = "workload.rate,seed,goodput_req_per_s,request_throughput,slo_attainment\n"
	cases := []struct {
		name, text string
		plot       func(*Results) (interface{ Skipped() int }, error)
		skipped    int
		err        string
	}{
		{"batch-latency inf", bl + "1,1,100,50,10,1\n2,1,+Inf,60,11,0.6\n4,1,NaN,90,12,0.5\n8,1,300,90,12,0.5\n", batchLatency, 2, ""},
		{"batch-latency none left", bl + "1,1,NaN,50,10,1\n2,1,Inf,60,11,0.6\n", batchLatency, 0, "nothing to draw"},
		{"goodput NaN goodput", gp + "1,1,1,1,1\n2,1,NaN,2,1\n4,1,3,Inf,0.8\n8,1,3,4,0.5\n", goodput, 2, ""},
		{"goodput none left", gp + "1,1,NaN,1,1\n2,1,2,NaN,1\n", goodput, 0, "nothing to draw"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := ReadResults(strings.NewReader(c.text), "r.csv")
			if err != nil {
				t.Fatal(err)
			}
			n, err := c.plot(res)
			if wantError(t, err, "", c.err) {
				return
			}
			if n.Skipped() != c.skipped {
				t.Errorf("skipped %d, want %d", n.Skipped(), c.skipped)
			}
		})
	}
}

func batchLatency(r *Results) (interface{ Skipped() int }, error) {
	_, n, err := BatchLatency(r, BatchLatencyOptions{})
	return n, err
}

func goodput(r *Results) (interface{ Skipped() int }, error) {
	_, n, err := Goodput(r, GoodputOptions{})
	return n, err
}
