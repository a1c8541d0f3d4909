// Package plots draws servesim's results as plots through gonum/plot. It
// only adapts data: it reads the files the simulator writes, computes the
// numbers a plot shows, and returns a *plot.Plot or a *Figure (several
// aligned panels) together with those numbers as plain values. The caller
// saves: Save(d, "x.png", 1600, 1000) writes an image of exactly that many
// pixels (PNG at 96 dpi; .svg and .pdf by extension), or p.Save(Length(w),
// Length(h), path) through gonum directly.
//
// # Inputs
//
// A sweep's results.csv (experiments.WriteCSV) is read by ReadResults: one
// column per sweep axis (its field path, e.g. "workload.rate"; values kept
// as strings, CSV-quoted when they hold commas), then "seed", then the
// metrics by name. Results.Configs averages the rows of one configuration
// over its replicate seeds (a percentile column becomes the mean of the
// seeds' percentiles). Results.Layout chooses the x axis (named, or a known
// x such as batch.max_num_seqs or workload.rate, or the only numeric axis)
// and the axes that tell curves apart (every other axis that varies, a
// named group first); Results.Curves groups the configurations into curves.
//
// A run's output directory is read by LoadRun: requests.csv (ReadRequests;
// times kept as exact integer nanoseconds), steps.csv (ReadSteps or
// ScanSteps) and summary.json (ReadSummary: the SLO, the attainment and the
// latency statistics). Every reader returns errors that start with
// "plots:" and name the file, the line and the column.
//
// # Plots and their numbers
//
//   - BatchLatency: output throughput against TTFT and TPOT as the max
//     batch size grows, one curve per group; cost per million output tokens
//     against the batch size; the marginal throughput gain per unit of batch
//     size relative to the first step. The knee is the first point whose
//     next step gains less than 10 % of the first step's gain per unit; the
//     sweet spot is the knee if it meets the SLO, else the largest
//     SLO-meeting point below it, else the smallest above it, else none
//     (BatchLatencyCurve.sweetSpot).
//   - Goodput: goodput and raw request throughput against request rate,
//     SLO attainment below, and the max-goodput rate: the rate where the
//     attainment first falls below the target (0.9), interpolated linearly
//     between the two swept rates around the crossing; NaN when the lowest
//     rate already misses, the highest rate (Censored) when none does.
//   - CDF: empirical CDFs of TTFT and TPOT per run, with quantiles computed
//     as sim/metrics does (linear interpolation between closest ranks).
//   - Perception: every configuration in p95 TTFT × output throughput with
//     quadrant lines at the TTFT SLO and a target throughput (the median of
//     the configurations for either when not given) and the quadrants named
//     beside where the lines cross; a configuration missing any other SLO
//     objective (TPOT, E2E, on the same statistic) is crossed out and feels
//     slow.
//   - ProviderFit: TTFT against output throughput with the cost per million
//     output tokens as colour (five bins), the group as glyph shape, and the
//     cheapest configuration meeting every SLO objective and the target
//     ringed.
//   - Dashboard: one run's goodput, throughput and arrivals over time in
//     windows; TTFT and TPOT histograms; prefill and decode utilization
//     (the share of each window an instance spends in iterations with
//     prefill tokens, or decode-only ones, averaged over instances); KV use;
//     and an SLO-compliance gauge, green at ≥ 95 % attainment, yellow at
//     90–95 %, red below, the attainment recomputed from requests.csv
//     exactly as the simulator computes it.
//
// Each numbers type has a String method: a plain-text table that the tests
// keep as golden files (testdata/golden; go test ./plots -update rewrites
// them). The images are tested loosely: they decode, have the requested
// size and are not blank.
//
// Points with NaN values are left out of the panel they cannot be drawn in
// and counted (Dropped), never drawn as garbage; a plot with nothing to draw
// returns an error. Log axes are used when values span more than 100× and
// fall back to linear when no positive value reaches them.
//
// DrawSweep draws a sweep's default plots into a directory: goodput.png
// when an axis is workload.rate, batch-latency.png when an axis is
// batch.max_num_seqs, and always perception.png and provider-fit.png.
// `servesim plot KIND` draws any of them again from result files.
package plots
