package plots

import (
	"image"
	"os"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// render draws d on a small in-memory canvas: drawing must not panic
// whatever the data (gonum's log scale panics on values ≤ 0).
func render(t *testing.T, d Drawer) {
	t.Helper()
	c := vgimg.NewWith(vgimg.UseImage(image.NewRGBA(image.Rect(0, 0, 480, 300))))
	drawMargin(d, draw.New(c), true)
}

func fileHead(t interface{ Fatal(...any) }, path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	return strings.Join(lines[:min(n, len(lines))], "")
}

// FuzzReadResults: ReadResults never panics; what it accepts has one axis
// value and one metric per column in every row, and every plot of it
// either returns an error or draws.
func FuzzReadResults(f *testing.F) {
	f.Add(fileHead(f, "testdata/batch-latency.csv", 12))
	f.Add(fileHead(f, "testdata/goodput.csv", 6))
	f.Add(fileHead(f, "testdata/batching.csv", 5))
	f.Add("seed,output_tok_per_s,ttft_p95_ms,tpot_p95_ms,cost_per_m_output_tokens\n1,5,NaN,-1,0\n")
	f.Add("batch.max_num_seqs,seed,output_tok_per_s,ttft_p95_ms,tpot_p95_ms,cost_per_m_output_tokens,goodput_req_per_s,request_throughput,slo_attainment\n" +
		"1,1,0,0,0,0,0,0,0\n2,1,-5,-1,0,Inf,1,1,2\n4,1,1e308,1e-300,5,5,NaN,1,0.5\n")
	f.Add("a,\"b\nc\",seed\n1,2,3\n")
	f.Fuzz(func(t *testing.T, data string) {
		res, err := ReadResults(strings.NewReader(data), "f.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "plots: f.csv") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		for _, r := range res.Rows {
			if len(r.Axis) != len(res.Axes) || len(r.Metrics) != len(res.Metrics) {
				t.Fatalf("row %+v for axes %v metrics %v", r, res.Axes, res.Metrics)
			}
		}
		slo := SLO{TTFTms: 100, TPOTms: 10}
		if fig, _, err := BatchLatency(res, BatchLatencyOptions{SLO: slo}); err == nil {
			render(t, fig)
		}
		if fig, _, err := Goodput(res, GoodputOptions{}); err == nil {
			render(t, fig)
		}
		if p, _, err := Perception(res, MatrixOptions{}); err == nil {
			render(t, p)
		}
		if p, _, err := ProviderFit(res, MatrixOptions{SLO: slo, TargetThroughput: 1}); err == nil {
			render(t, p)
		}
	})
}

// FuzzReadRequests: ReadRequests never panics; served rows it accepts
// are ordered in time, and the CDF and the dashboard of them draw.
func FuzzReadRequests(f *testing.F) {
	f.Add(fileHead(f, "testdata/run-chunked/requests.csv", 10))
	f.Add(RequestsHeader + "\n1,0,0.5,,,10,1,,,,0,exceeds-kv-capacity\n")
	f.Add(RequestsHeader + "\n1,0,0.0,0.0,0.0,0,1,0.000000,,0.000000,0,\n")
	f.Add(RequestsHeader + "\n1,3,1e3,1e3,2e3,5,5,0,1,1,0,\n2,0,.5,.5,.5,1,1,0,,0,0,\"a,\"\"b\"\n")
	steps, err := ReadSteps(strings.NewReader(fileHead(f, "testdata/run-chunked/steps.csv", 40)), "steps.csv")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data string) {
		qs, err := ReadRequests(strings.NewReader(data), "requests.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "plots: requests.csv") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		for _, q := range qs {
			if q.Served() && (q.FirstToken < q.Arrival || q.Finish < q.FirstToken) {
				t.Fatalf("accepted out-of-order times %+v", q)
			}
		}
		run := &Run{Dir: "f", Label: "f", Requests: qs, Steps: steps}
		if fig, _, err := CDF([]*Run{run}, CDFOptions{SLO: SLO{TTFTms: 50}}); err == nil {
			render(t, fig)
		}
		if fig, _, err := Dashboard(run, DashboardOptions{SLO: SLO{TTFTms: 50}}); err == nil {
			render(t, fig)
		}
	})
}

// FuzzReadSteps: ReadSteps never panics; accepted steps have a
// non-negative duration and KV use within capacity, and the dashboard draws.
func FuzzReadSteps(f *testing.F) {
	f.Add(fileHead(f, "testdata/run-chunked/steps.csv", 10))
	f.Add(StepsHeader + "\n0,0.1,0.0,0,0,0,0,0,0,0,0\n")
	f.Add(StepsHeader + "\n7,1e2,5,1,1,1,5,5,1,1e300,-1\n")
	qs, err := ReadRequests(strings.NewReader(fileHead(f, "testdata/run-chunked/requests.csv", 20)), "requests.csv")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data string) {
		steps, err := ReadSteps(strings.NewReader(data), "steps.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "plots: steps.csv") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		for _, s := range steps {
			if s.Duration < 0 || s.KVUsed > s.KVTotal || s.Instance < 0 {
				t.Fatalf("accepted step %+v", s)
			}
		}
		if fig, _, err := Dashboard(&Run{Label: "f", Requests: qs, Steps: steps}, DashboardOptions{}); err == nil {
			render(t, fig)
		}
	})
}

// FuzzReadSummary: ReadSummary never panics and accepts only valid SLOs
// and attainments.
func FuzzReadSummary(f *testing.F) {
	f.Add(fileHead(f, "testdata/run-chunked/summary.json", 1000))
	f.Add(`{"metrics": {"slo": {"ttft_ms": 1}, "slo_attainment": 1}}`)
	f.Add(`{"metrics": {"slo": {"ttft_ns": 1}, "slo_attainment": 1}}`)
	f.Add(`{"metrics": null}`)
	f.Add("{\n\"metrics\": [1, 2]\n}")
	f.Fuzz(func(t *testing.T, data string) {
		s, err := ReadSummary(strings.NewReader(data), "summary.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "plots: summary.json") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		if s.SLO.validate() != nil || !(s.Attainment >= 0 && s.Attainment <= 1) {
			t.Fatalf("accepted %+v", s)
		}
	})
}
