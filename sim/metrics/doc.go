// Package metrics turns what a simulation did into the numbers serving
// people read, with the definitions and layout of vLLM's `bench serve`.
//
// # Stages
//
// The simulator writes one Record per request when it ends (served or
// rejected) and one Step per model iteration. Each goes two ways: to a
// Collector, which keeps only what the summary needs, and optionally to a
// RecordWriter or StepWriter, which stream CSV rows (records.csv,
// steps.csv) for later analysis. Summary() then computes a Summary, which
// prints as vLLM's result block (WriteText) or encodes as JSON.
//
//	c := metrics.NewCollector(metrics.SLO{TTFT: 200 * sim.Millisecond})
//	c.SetPeak(0, 989e12, 4.8e12) // optional: peaks of instance 0's GPU, for MFU/MBU
//	... c.Add(&rec) per request, c.AddITL(gap, n) per decode step, c.AddStep(&step) ...
//	s := c.Summary()
//	s.WriteText(os.Stdout, "")
//
// # Definitions (vLLM conventions)
//
//   - TTFT = first token − arrival, queueing included.
//   - TPOT = (E2E − TTFT)/(output tokens − 1) per request; requests with one
//     output token have none and are left out.
//   - ITL = every gap between consecutive tokens of a request, pooled over
//     requests. The simulator adds them in bulk: a decode step that gives n
//     requests a token at the same instant adds n gaps at once (AddITL), and
//     the collector stores (gap, count) pairs.
//   - E2E = last token − arrival.
//   - Duration = first arrival to last completion; throughputs are per
//     second of it.
//   - Saturated: over the second half of the arrival window the queue of
//     outstanding requests kept growing, completions falling short of
//     arrivals by more than 5 % (and 2√arrivals); see Saturation.
//   - Percentiles are exact, on sorted samples, by numpy's default linear
//     interpolation; weighted ITL pairs give exactly what expanding them would.
//   - A request meets the SLO when every set objective holds (≤); TPOT is
//     not checked for one-token outputs. Attainment counts rejected requests
//     as not meeting; goodput is meeting requests per second.
//
// # Memory and cost
//
// A Collector keeps three samples per served request (TTFT and E2E as
// integer nanoseconds, TPOT as a float64), its arrival, finish and output
// length (for Saturation, computed once in Summary), and one pair per
// distinct consecutive ITL gap, never a Record, so a long run's memory
// grows by tens of bytes per request. Summary sorts the samples with a radix
// sort over the bits their keys span (the latencies by the top 21 of them,
// then by insertion: radixTop), the ITL runs and Saturation in a goroutine
// beside the rest. The CSV writers copy each row's Record or Step
// into a chunk of 2,048 that a goroutine formats and writes while the next
// fills, so formatting and write(2) overlap the simulation. Add, AddITL,
// AddStep and the CSV writers' Write do not allocate beyond amortized slice
// growth. Inconsistent records or steps (first token before arrival, KV use
// above capacity) are broken simulator contracts and panic.
package metrics
