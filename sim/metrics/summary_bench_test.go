package metrics

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/servesim/servesim/sim"
)

// runLike fills a collector as a 100k-request run at saturation does (the
// default benchmark's shape): Poisson arrivals at 17 req/s, queueing,
// prefill and decode times of a few to hundreds of milliseconds, log-normal
// output lengths, records added as they finish, and 313,000 ITL runs of
// step-like gaps (most of them crowded, as step times are).
func runLike(n, runs int) *Collector {
	recs, itl := runLikeCalls(n, runs)
	return collect(recs, itl)
}

// runLikeCalls returns the records and ITL runs runLike adds, in the order
// it adds them.
func runLikeCalls(n, runs int) ([]Record, []itlRun) {
	r := rand.New(rand.NewPCG(25, 21))
	var t sim.Time
	recs := make([]Record, 0, n)
	for i := range n {
		t += sim.Time(r.ExpFloat64() / 17 * 1e9)
		rec := Record{ID: int64(i), Arrival: t, PromptTokens: 1 + int(math.Exp(6.5+0.8*r.NormFloat64())),
			OutputTokens: 1 + int(math.Exp(5.3+0.8*r.NormFloat64()))}
		rec.Scheduled = t + sim.Time(r.Int64N(50e6))
		rec.FirstToken = rec.Scheduled + sim.Time(2e7+r.Int64N(8e8))
		rec.Finish = rec.FirstToken + sim.Time(rec.OutputTokens-1)*sim.Time(8e6+r.Int64N(6e7))
		recs = append(recs, rec)
	}
	slices.SortStableFunc(recs, func(a, b Record) int { return int(a.Finish - b.Finish) }) // added as they finish
	itl := make([]itlRun, runs)
	for i := range itl { // most gaps a decode step's time, within a millisecond of each other
		gap := sim.Time(6e6 + r.Int64N(1e6))
		if r.IntN(10) < 3 {
			gap = sim.Time(7e6 + r.Int64N(1e8))
		}
		itl[i] = itlRun{gap, int64(1 + r.IntN(150))}
	}
	return recs, itl
}

// collect returns a collector given recs and then the ITL runs itl.
func collect(recs []Record, itl []itlRun) *Collector {
	c := NewCollector(SLO{TTFT: 500 * ms, TPOT: 50 * ms})
	c.SetPeak(0, 989e12, 3.35e12)
	for i := range recs {
		c.Add(&recs[i])
	}
	for _, r := range itl {
		c.AddITL(r.gap, int(r.n))
	}
	return c
}

// BenchmarkSummary100k is Summary of runLike's collector (ITL runs copied
// before each call: Summary merges them in place).
func BenchmarkSummary100k(b *testing.B) {
	c := runLike(100_000, 313_000)
	itl := c.itl.clone()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c.itl = itl.clone()
		b.StartTimer()
		c.Summary()
	}
}

// BenchmarkSummaryAfterRun is Summary at the end of a run: of a collector
// given runLike's calls (720,000 ITL runs, as a 100k-request run at
// 12 req/s adds), once the blocks handed off during the run are sorted
// (a run takes longer than the sorts). It waits for nothing, unlike
// BenchmarkSummary100k, whose collector has been summarized before.
func BenchmarkSummaryAfterRun(b *testing.B) {
	recs, itl := runLikeCalls(100_000, 720_000)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c := collect(recs, itl)
		if c.sort != nil {
			c.sort.own()
		}
		b.StartTimer()
		c.Summary()
	}
}

// BenchmarkCollect100k is a collector given runLike's calls and then
// Summary: the whole cost of collecting, sorts during the run included.
func BenchmarkCollect100k(b *testing.B) {
	recs, itl := runLikeCalls(100_000, 720_000)
	b.ReportAllocs()
	for b.Loop() {
		collect(recs, itl).Summary()
	}
}

// TestSummaryAgain checks that Summary may be called again, and after more
// records and gaps (Summary merges the ITL runs in place): each result is
// that of a fresh collector given the same calls.
func TestSummaryAgain(t *testing.T) {
	js := func(s Summary) string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	more := func(c *Collector) {
		c.Add(&Record{ID: -1, Arrival: 7 * sim.Second, FirstToken: 8 * sim.Second, Finish: 9 * sim.Second, OutputTokens: 3})
		for i := range 2000 {
			c.AddITL(sim.Time(5e6+i*7919%1000), 1+i%7) // equal to earlier gaps, and new ones
		}
	}
	c := runLike(5000, 20_000)
	first := js(c.Summary())
	if again := js(c.Summary()); again != first {
		t.Fatalf("a second Summary differs:\n%s\n%s", first, again)
	}
	more(c)
	fresh := runLike(5000, 20_000)
	more(fresh)
	if got, want := js(c.Summary()), js(fresh.Summary()); got != want {
		t.Fatalf("Summary after more calls differs from a fresh collector's:\n%s\n%s", got, want)
	}
}
