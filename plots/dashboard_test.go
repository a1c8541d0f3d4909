package plots

import (
	"math"
	"testing"
)

func TestDashboardFixture(t *testing.T) {
	for _, name := range []string{"run-chunked", "run-prefill-first"} {
		t.Run(name, func(t *testing.T) {
			r := loadRun(t, name)
			fig, nums, err := Dashboard(r, DashboardOptions{})
			if err != nil {
				t.Fatal(err)
			}
			save(t, fig, "dashboard-"+name)
			golden(t, "dashboard-"+name, nums.String())
			// The attainment recomputed from requests.csv in integer
			// nanoseconds equals the simulator's (summary.json).
			if nums.Attainment != r.Summary.Attainment {
				t.Errorf("attainment %v, summary.json %v", nums.Attainment, r.Summary.Attainment)
			}
			// 194 served (run-chunked) / 25 = 7 → clamped to 10 windows.
			if len(nums.WindowStart) != 10 {
				t.Errorf("%d windows, want 10", len(nums.WindowStart))
			}
			for k := range nums.Prefill {
				if u := nums.Prefill[k] + nums.Decode[k]; u < 0 || u > 1+1e-9 {
					t.Errorf("window %d utilization %v", k, u)
				}
			}
			// Every completion lands in one window: Σ throughput·length = served.
			sum := 0.0
			for k, v := range nums.Throughput {
				sum += v * math.Min(nums.Window, nums.End-nums.WindowStart[k])
			}
			if math.Abs(sum-float64(nums.Served)) > 1e-6 {
				t.Errorf("completions over windows %v, served %d", sum, nums.Served)
			}
		})
	}
}

// TestDashboardArithmetic checks the windows on a hand-built run.
func TestDashboardArithmetic(t *testing.T) {
	const s = int64(1e9) // one second in ns
	run := &Run{
		Label: "hand",
		Requests: []Request{
			// TTFT 0.5 s, 11 tokens over 1 s after the first: TPOT 100 ms.
			{Arrival: 0, FirstToken: s / 2, Finish: 3 * s / 2, Output: 11, TTFTms: 500, TPOTms: 100},
			// TTFT 2 s: misses a 1 s TTFT objective.
			{Arrival: s, FirstToken: 3 * s, Finish: 7 * s / 2, Output: 2, TTFTms: 2000, TPOTms: 500},
			{Arrival: 2 * s, FirstToken: -1, Finish: -1, Rejected: "queue-full", TTFTms: math.NaN(), TPOTms: math.NaN()},
		},
		Steps: []Step{
			// Instance 0: a prefill step 0.25–0.75 s, a decode step 0.75–1.25 s (crosses into window 1).
			{Instance: 0, Start: s / 4, Duration: s / 2, Prefills: 1, PrefillTokens: 100, KVUsed: 10, KVTotal: 100},
			{Instance: 0, Start: 3 * s / 4, Duration: s / 2, Decodes: 1, KVUsed: 30, KVTotal: 100},
			// Instance 1: a decode step 3–4 s.
			{Instance: 1, Start: 3 * s, Duration: s, Decodes: 1, KVUsed: 50, KVTotal: 100},
		},
	}
	_, n, err := Dashboard(run, DashboardOptions{Window: 1, SLO: SLO{TTFTms: 1000, TPOTms: 100}})
	if err != nil {
		t.Fatal(err)
	}
	// Span 0 → 4 s (the last step's end): four 1 s windows.
	if n.Start != 0 || n.End != 4 || len(n.WindowStart) != 4 {
		t.Fatalf("start %v end %v windows %d", n.Start, n.End, len(n.WindowStart))
	}
	// Request 1 meets (TTFT 500 ≤ 1000 ms, 1 s ≤ 100 ms × 10); request 2
	// misses TTFT; request 3 is rejected: attainment 1/3, red.
	if n.Met != 1 || n.Served != 2 || n.Rejected != 1 || math.Abs(n.Attainment-1.0/3) > 1e-15 || n.Gauge != GaugeRed {
		t.Errorf("met %d served %d rejected %d attainment %v gauge %s", n.Met, n.Served, n.Rejected, n.Attainment, n.Gauge)
	}
	// Duration: first arrival 0 → last completion 3.5 s.
	if n.Duration != 3.5 {
		t.Errorf("duration %v", n.Duration)
	}
	// Arrivals 0 → 2 s: offered 3 / 2 s = 1.5 req/s; goodput Met / 2 s =
	// 0.5 req/s, where Met / Duration = 1 / 3.5 s = 0.286 would count the
	// drain; within the span only request 1 finishes (1.5 s ≤ 2 s; request 2
	// at 3.5 s is the drain): 1 / 2 s = 0.5 req/s completed.
	if n.ArrivalSpan != 2 || n.Offered != 1.5 || n.WindowServed != 1 || n.WindowThroughput != 0.5 || n.WindowGoodput != 0.5 {
		t.Errorf("arrival window %v s: offered %v, served %d, throughput %v goodput %v", n.ArrivalSpan, n.Offered, n.WindowServed, n.WindowThroughput, n.WindowGoodput)
	}
	want := map[string][]float64{
		"arrivals":   {1, 1, 1, 0}, // at 0, 1 and 2 s
		"throughput": {0, 1, 0, 1}, // finishes at 1.5 and 3.5 s
		"goodput":    {0, 1, 0, 0},
		// Two instances. Window 0: prefill 0.5 s, decode 0.25 s → 0.5/2, 0.25/2.
		// Window 1: decode 0.25 s → 0.125. Window 3: decode 1 s on instance 1 → 0.5.
		"prefill": {0.25, 0, 0, 0},
		"decode":  {0.125, 0.125, 0, 0.5},
		// KV use weighted by step time in the window: window 0 (0.5·0.1 +
		// 0.25·0.3)/0.75 = 0.125/0.75 = 1/6; window 1: 0.3; window 2 none; window 3: 0.5.
		"kv": {1.0 / 6, 0.3, math.NaN(), 0.5},
	}
	got := map[string][]float64{"arrivals": n.Arrivals, "throughput": n.Throughput, "goodput": n.Goodput, "prefill": n.Prefill, "decode": n.Decode, "kv": n.KVUse}
	for k, w := range want {
		for i := range w {
			g := got[k][i]
			if !(math.Abs(g-w[i]) < 1e-12 || math.IsNaN(g) && math.IsNaN(w[i])) {
				t.Errorf("%s = %v, want %v", k, got[k], w)
				break
			}
		}
	}
	// TTFT samples 500 and 2000 ms, SLO 1000: p99 = 500 + 0.99·1500 = 1985;
	// range 1.1·1985 = 2183.5 over 40 bins of 54.5875 ms; 500 → bin 9
	// (500/54.5875 = 9.16), 2000 → bin 36 (36.64).
	h := n.TTFT
	if math.Abs(h.Width-54.5875) > 1e-9 || h.Counts[9] != 1 || h.Counts[36] != 1 || h.Above != 0 {
		t.Errorf("ttft histogram %+v", h)
	}
}

func TestGaugeColor(t *testing.T) {
	for _, tc := range []struct {
		a    float64
		want string
	}{{1, GaugeGreen}, {0.95, GaugeGreen}, {0.9499, GaugeYellow}, {0.9, GaugeYellow}, {0.8999, GaugeRed}, {0, GaugeRed}, {math.NaN(), GaugeNone}} {
		if got := GaugeColor(tc.a); got != tc.want {
			t.Errorf("GaugeColor(%v) = %s, want %s", tc.a, got, tc.want)
		}
	}
}

func TestMet(t *testing.T) {
	const ms = int64(1e6)
	q := Request{Arrival: 0, FirstToken: 500 * ms, Finish: 500*ms + 9*50*ms, Output: 10}
	// TTFT exactly 500 ms and TPOT exactly 450/9 = 50 ms meet ≤ objectives.
	if !met(&q, SLO{TTFTms: 500, TPOTms: 50}) {
		t.Error("boundary request does not meet TTFT ≤ 500, TPOT ≤ 50")
	}
	// One nanosecond more of decode: 450 ms + 1 ns > 50 ms × 9.
	q.Finish++
	if met(&q, SLO{TPOTms: 50}) {
		t.Error("TPOT 1 ns over meets the SLO")
	}
	// E2E 950 ms + 1 ns > 950 ms.
	if met(&q, SLO{E2Ems: 950}) || !met(&q, SLO{E2Ems: 951}) {
		t.Error("E2E objective")
	}
	one := Request{Arrival: 0, FirstToken: 10 * ms, Finish: 10 * ms, Output: 1}
	if !met(&one, SLO{TPOTms: 1}) {
		t.Error("a one-token request has no TPOT to miss")
	}
	rej := Request{Rejected: "x", FirstToken: -1, Finish: -1}
	if met(&rej, SLO{}) {
		t.Error("a rejected request meets the SLO")
	}
}
