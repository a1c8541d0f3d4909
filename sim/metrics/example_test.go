package metrics_test

import (
	"fmt"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
)

// Two requests: one meets the 150 ms TTFT objective, one does not.
func Example() {
	ms := sim.Millisecond
	c := metrics.NewCollector(metrics.SLO{TTFT: 150 * ms})
	c.Add(&metrics.Record{ID: 0, Arrival: 0, FirstToken: 100 * ms, Finish: 500 * ms, PromptTokens: 100, OutputTokens: 9})
	c.Add(&metrics.Record{ID: 1, Arrival: 200 * ms, FirstToken: 400 * ms, Finish: 1000 * ms, PromptTokens: 100, OutputTokens: 7})
	s := c.Summary()
	// TPOT: (500−100)/8 = 50 ms and (1000−400)/6 = 100 ms; duration 0 → 1 s.
	fmt.Printf("TTFT mean %.0f ms, TPOT median %.0f ms, %.1f req/s, attainment %.0f%%\n",
		s.TTFT.Mean, s.TPOT.Median, s.RequestThroughput, 100*s.Attainment)
	// Output:
	// TTFT mean 150 ms, TPOT median 75 ms, 2.0 req/s, attainment 50%
}
