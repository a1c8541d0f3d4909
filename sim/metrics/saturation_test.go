package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/sim"
)

// req is a served request as saturation sees it.
type req struct {
	arrival, finish sim.Time
	out             int64
}

// satOf is saturation of the served requests v, in any order, and the
// rejected arrivals rej: the arrivals sorted as Summary sorts them.
func satOf(v []req, rej []sim.Time) Saturation {
	arr := make([]uint64, len(v))
	done := make([]served, len(v))
	for i, r := range v {
		arr[i], done[i] = timeKey(r.arrival), served{r.finish, r.out}
	}
	slices.Sort(arr)
	return saturation(sortedChunks(arr), [][]served{done}, rej, nil)
}

// dd1 is a single server with service time d fed at the arrival times:
// finish_i = max(arrival_i, finish_{i−1}) + d (Lindley's recursion), each
// request with out output tokens.
func dd1(arrivals []sim.Time, d sim.Time, out int64) []req {
	v := make([]req, len(arrivals))
	var prev sim.Time
	for i, a := range arrivals {
		prev = max(a, prev) + d
		v[i] = req{a, prev, out}
	}
	return v
}

// every returns n arrivals gap apart from start.
func every(start, gap sim.Time, n int) []sim.Time {
	a := make([]sim.Time, n)
	for i := range a {
		a[i] = start + sim.Time(i)*gap
	}
	return a
}

func TestSaturation(t *testing.T) {
	ms := sim.Millisecond
	burst := append(every(0, 50*ms, 400), every(20*sim.Second, 200*ms, 400)...)
	for _, tc := range []struct {
		name string
		v    []req
		want Saturation
	}{
		{
			// λ = 1/80 ms = 12.5 req/s, μ = 1/100 ms = 10 req/s (ρ = 1.25).
			// The server is busy from t = 0: finish_k = (k+1)·0.1 s. Window
			// 999·0.08 = 79.92 s, half 39.96 s. Second half: arrivals
			// i = 500…999 (i·0.08 > 39.96), 500; completions k+1 = 400…799
			// ((k+1)·0.1 ∈ (39.96, 79.92]), 400: shortfall 100 > max(5 % of
			// 500 = 25, 2√500 = 44.7). Capacity 400/39.96 = 10.01 req/s,
			// 2,002 tok/s at 200 tokens each. N(mid) = 500 − 399 = 101,
			// N(end) = 1000 − 799 = 201; N after arrival i is
			// i+1 − ⌊0.8·i⌋, first 201 at i = 996 (79.68 s), never back to 0
			// after the first arrival: growth 0–79.68 s.
			"D/D/1 at 125 % of capacity", dd1(every(0, 80*ms, 1000), 100*ms, 200),
			Saturation{Judged: true, Saturated: true, WindowS: 79.92, OfferedRate: 12.5, OfferedOutputRate: 2500,
				CapacityRate: 400 / 39.96, CapacityOutput: 400 * 200 / 39.96, SteadyOutputThroughput: 400 * 200 / 39.96,
				OutstandingMid: 101, OutstandingEnd: 201, OutstandingPeak: 201, GrowthStart: 0, GrowthEnd: 79.68},
		},
		{
			// λ = 10 req/s, service 70 ms (ρ = 0.7): each request is done
			// before the next arrives. Window 99.9 s; offered 999/99.9 = 10
			// req/s, 2,000 tok/s, which the run sustains. Second half: arrivals
			// i = 500…999 (i·0.1 > 49.95), completions i = 499…998
			// (i·0.1 + 0.07 ∈ (49.95, 99.9]): capacity 500/49.95 req/s. At
			// the middle request 499 (49.9 s) is in service: N = 1. N is 1
			// after each arrival, 0 after each completion: peak 1 at the
			// first arrival.
			"D/D/1 at 70 % of capacity", dd1(every(0, 100*ms, 1000), 70*ms, 200),
			Saturation{Judged: true, WindowS: 99.9, OfferedRate: 10, OfferedOutputRate: 2000,
				CapacityRate: 500 / 49.95, CapacityOutput: 500 * 200 / 49.95, SteadyOutputThroughput: 2000,
				OutstandingMid: 1, OutstandingEnd: 1, OutstandingPeak: 1},
		},
		{
			// 400 arrivals at 20 req/s (ρ = 2) for 20 s, then 400 at 5 req/s
			// (ρ = 0.5) to 99.8 s: the backlog of 400 − 200 = 200 at 20 s
			// drains at 10 − 5 = 5 req/s by 60 s. Completions outpace arrivals
			// in the third quarter (49.9–74.85 s): not saturated. Window
			// 99.8 s, offered 799/99.8 req/s. At the middle (49.9 s): 400 +
			// 150 arrived (20 + 0.2·k ≤ 49.9: k ≤ 149), 499 done: N = 51.
			// The peak, 201, is first reached at the 400th arrival, 19.95 s:
			// 400 arrived, 199 done (0.1·k ≤ 19.95); at 20 s the 401st
			// arrival and the 200th completion leave it at 201.
			"a burst drained by the second half", dd1(burst, 100*ms, 100),
			Saturation{Judged: true, WindowS: 99.8, OfferedRate: 799 / 99.8, OfferedOutputRate: 799 / 99.8 * 100,
				CapacityRate: 300 / 49.9, CapacityOutput: 300 * 100 / 49.9, SteadyOutputThroughput: 799 / 99.8 * 100,
				OutstandingMid: 51, OutstandingEnd: 1, OutstandingPeak: 201, GrowthStart: 0, GrowthEnd: 19.95},
		},
		{
			// 100 arrivals at 25 req/s (window 99·0.04 = 3.96 s, 25 in each
			// quarter), served 100 ms apart after a 5 s start: nothing
			// finishes inside the window, so the second-half rate would read
			// 0. Saturated (shortfall 50 > max(2.5, 2√50 = 14.1)), capacity
			// falls back to the middle (1.98 s) to the last completion
			// (5 + 100·0.1 = 15 s): 100/13.02 = 7.68 req/s (the true 10 req/s
			// less the 5 s start's bias). N(mid) = 50 arrived (i·0.04 ≤
			// 1.98), N(end) = peak = 100 at the last arrival, 3.96 s.
			"latency beyond half the window", func() []req {
				v := make([]req, 100)
				for i := range v {
					v[i] = req{sim.Time(i) * 40 * ms, 5*sim.Second + sim.Time(i+1)*100*ms, 10}
				}
				return v
			}(),
			Saturation{Judged: true, Saturated: true, WindowS: 3.96, OfferedRate: 25, OfferedOutputRate: 250,
				CapacityRate: 100 / 13.02, CapacityOutput: 1000 / 13.02, SteadyOutputThroughput: 1000 / 13.02,
				OutstandingMid: 50, OutstandingEnd: 100, OutstandingPeak: 100, GrowthEnd: 3.96},
		},
		{
			// 60 arrivals at 125 % of capacity: 15 in each quarter, under
			// 20, so not judged (and not flagged). Window 59·0.08 = 4.72 s;
			// second half (2.36, 4.72]: arrivals i = 30…59, completions
			// k+1 = 24…47: 24, capacity 24/2.36 req/s. N(mid) = 30 − 23 = 7,
			// N(end) = 60 − 47 = 13; N after arrival i is i+1 − ⌊0.8·i⌋,
			// 13 first at i = 56 (4.48 s).
			"too few arrivals", dd1(every(0, 80*ms, 60), 100*ms, 10),
			Saturation{WindowS: 4.72, OfferedRate: 12.5, OfferedOutputRate: 125, SteadyOutputThroughput: 125,
				CapacityRate: 24 / 2.36, CapacityOutput: 240 / 2.36, OutstandingMid: 7, OutstandingEnd: 13, OutstandingPeak: 13, GrowthEnd: 4.48},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := satOf(tc.v, nil)
			if !satClose(got, tc.want) {
				t.Errorf("saturation:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func satClose(a, b Saturation) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*max(1, math.Abs(y)) }
	return a.Judged == b.Judged && a.Saturated == b.Saturated && near(a.WindowS, b.WindowS) &&
		near(a.OfferedRate, b.OfferedRate) && near(a.OfferedOutputRate, b.OfferedOutputRate) &&
		near(a.CapacityRate, b.CapacityRate) && near(a.CapacityOutput, b.CapacityOutput) &&
		near(a.SteadyOutputThroughput, b.SteadyOutputThroughput) && a.OutstandingMid == b.OutstandingMid &&
		a.OutstandingEnd == b.OutstandingEnd && a.OutstandingPeak == b.OutstandingPeak &&
		near(a.GrowthStart, b.GrowthStart) && near(a.GrowthEnd, b.GrowthEnd)
}

// TestSaturationMD1Seeds: Poisson arrivals into a 100 ms server (μ = 10
// req/s). At ρ = 0.7 (7 req/s) the queue is stable and no seed is flagged,
// whatever the run's length; at ρ = 1.5 (15 req/s) it grows at 5 req/s, a
// third of the arrivals: over 1,000 requests the second half's shortfall is
// about 500/3 ≈ 167 against a floor of 2√500 ≈ 45, and every seed is
// flagged, with the capacity measured near 10 req/s.
func TestSaturationMD1Seeds(t *testing.T) {
	md1 := func(seed uint64, lambda float64, n int) []req {
		rng := rand.New(rand.NewPCG(seed, 1))
		a := make([]sim.Time, n)
		var at sim.Time
		for i := range a {
			at += sim.FromSeconds(rng.ExpFloat64() / lambda)
			a[i] = at
		}
		return dd1(a, 100*sim.Millisecond, 100)
	}
	for seed := uint64(0); seed < 50; seed++ {
		for _, n := range []int{100, 1000, 10000} {
			if s := satOf(md1(seed, 7, n), nil); s.Saturated {
				t.Errorf("seed %d, %d requests at ρ = 0.7: flagged saturated: %+v", seed, n, s)
			}
		}
		s := satOf(md1(seed, 15, 1000), nil)
		if !s.Saturated {
			t.Errorf("seed %d, 1,000 requests at ρ = 1.5: not flagged: %+v", seed, s)
		}
		if math.Abs(s.CapacityRate-10) > 0.5 {
			t.Errorf("seed %d: capacity %.3f req/s, want about 10 (the server's 1/100 ms)", seed, s.CapacityRate)
		}
	}
}

// TestSaturationRejected: rejected requests count in the offered load but
// never queue. 1,000 arrivals every 80 ms (12.5 req/s) of which every
// other one is rejected: 500 admitted at 6.25 req/s into a 100 ms server
// (ρ = 0.625) is stable, and the steady throughput is the served half of
// the offered 12.5 req/s × 100 tokens.
func TestSaturationRejected(t *testing.T) {
	all := every(0, 80*sim.Millisecond, 1000)
	var adm, rej []sim.Time
	for i, a := range all {
		if i%2 == 0 {
			adm = append(adm, a)
		} else {
			rej = append(rej, a)
		}
	}
	s := satOf(dd1(adm, 100*sim.Millisecond, 100), rej)
	if s.Saturated || !s.Judged {
		t.Fatalf("half rejected: %+v, want judged and not saturated", s)
	}
	if want := 12.5 * 100 * 0.5; math.Abs(s.SteadyOutputThroughput-want) > 1e-9 {
		t.Errorf("steady output %v tok/s, want %v", s.SteadyOutputThroughput, want)
	}
}

// TestSummarySaturatedLines: the servesim block says so, with the offered
// load and the capacity.
func TestSummarySaturatedLines(t *testing.T) {
	c := NewCollector(SLO{})
	for i, r := range dd1(every(0, 80*sim.Millisecond, 1000), 100*sim.Millisecond, 200) {
		c.Add(&Record{ID: int64(i), Arrival: r.arrival, FirstToken: r.finish, Finish: r.finish, PromptTokens: 10, OutputTokens: 200})
	}
	s := c.Summary()
	var b strings.Builder
	if err := s.WriteText(&b, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Saturated:                               yes: queue grew 0.00–79.68 s to 201 outstanding\n",
		"Offered load (req/s, output tok/s):      12.50 / 2500.00\n",
		"Service capacity (req/s, output tok/s):  10.01 / 2002.00\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
