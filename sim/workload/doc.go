// Package workload produces the requests a simulation serves: a stream of
// (arrival time, prompt tokens, output tokens), one request at a time.
//
// # Sources
//
// A Source is anything with Next(*Request) bool: a synthetic generator here,
// a trace reader elsewhere. Sources stream: they hold O(1) state, never the
// whole workload, so a run of a billion requests needs no more memory than
// one of ten. A Source that can fail part way (a trace with a bad line) is
// also an ErrSource, and SourceErr tells why the stream ended:
//
//	var r workload.Request
//	for src.Next(&r) {
//		... schedule r at r.Arrival ...
//	}
//	if err := workload.SourceErr(src); err != nil { ... }
//
// # Synthetic workloads
//
// Synthetic combines an Arrival process with two length distributions. The
// arrival processes are those of vLLM's `bench serve`: Poisson (exponential
// gaps of mean 1/rate), gamma gaps with shape = burstiness and scale =
// 1/(rate·burstiness) (coefficient of variation 1/√burstiness; vLLM's
// --burstiness), and constant gaps. Request i arrives at the sum of the
// first i+1 gaps, summed in float64 seconds and converted to sim.Time once,
// so rounding never drifts. The stream ends after Count requests or at the
// first arrival at or after Duration.
//
// # Shapes of load generators
//
// Synthetic.Stages is a rate schedule (inference-perf's stages): each stage
// its rate for its duration, optionally Rescale'd so each holds exactly
// int(rate × duration) arrivals, the last at its end (inference-perf's
// constant load type), separated by Gap, and with Drain each waiting until
// every request of the one before has finished. Rate +Inf puts every
// request at time 0 (vLLM bench's default, offline load). Limit wraps any
// Source in a client of n slots (vLLM bench's --max-concurrency): requests
// arrive on schedule, wait for a slot, and reach the server when sent; at
// rate inf that is a closed loop of n users, with optional think time.
// Sources that depend on finishes (Drain, Limit) are Feedback sources: the
// serving world tells them when each request finishes. SharedPrefixData is
// inference-perf's shared_prefix prompts, cycled in a seeded order.
//
// Lengths come from a Dist: constant, uniform, normal or log-normal, each
// written as a short spec that ParseDist reads and String writes back:
//
//	128   constant:128   uniform:64,512   normal:1024,256
//	lognormal:5.5,0.8    (μ, σ of the underlying normal)
//	lognormal-mean:300,1 (mean 300 tokens, coefficient of variation 1)
//
// A sampled length is rounded to the nearest integer and clamped to at
// least 1 token and at most MaxPrompt or MaxOutput. DistValue makes a Dist a
// command-line flag (pflag.Value) or a TOML string (encoding.TextUnmarshaler).
//
// # Randomness
//
// One seed drives a run, but every purpose draws from its own generator,
// rand.New(rand.NewPCG(seed, stream)) with stream StreamArrivals,
// StreamPrompt or StreamOutput. Changing the output-length distribution
// therefore leaves every arrival time and prompt length as it was, which
// makes comparisons between configurations paired, and the tests check it.
package workload
