// Package realrun reads measurements of real LLM serving runs, so that
// servesim validate can replay them on the simulator and compare.
//
// One reader per format, each streaming (a line, a row or one JSON value at
// a time) and each returning errors that start with "realrun:" and name the
// file, the line and the field:
//
//   - vLLM per-request logs as LLMServingSim's bench records them
//     (ReadRequests: requests.jsonl; ReadMeta: meta.json with the engine
//     arguments; ReadTimeseries: timeseries.csv, one row per second);
//   - `vllm bench serve --save-result --save-detailed` JSON (ReadBench);
//   - aggregate stage results of an inference-perf run with its workload
//     description (ReadStageRows: runs.csv);
//   - the sim2real long format, the same kind of runs in two tables
//     (ReadSim2Real: experiments.csv with the engine arguments, workload
//     profile and logged KV blocks, runs_long.csv with one measured value
//     per experiment, scope and metric; ReadRepeats: the earlier
//     measurement of the same configurations, repeat_measurements.csv).
//
// Open recognises a run by its path and returns Runs: the engine
// arguments, the requests with their arrival schedule (seconds since the
// first arrival) and measured latencies, and the time series when there is
// one.
//
// Clocks. In requests.jsonl arrival_time is wall-clock epoch seconds while
// queued_ts, scheduled_ts, first_token_ts and last_token_ts are the engine's
// monotonic clock with an arbitrary origin: the two are never subtracted.
// The replay schedule is arrival_time minus the first arrival_time (the
// client's schedule); measured latencies are on the engine clock, TTFT =
// first_token_ts − queued_ts and E2E = last_token_ts − queued_ts (as
// LLMServingSim's bench/core/validate.py computes them). timeseries.csv's t
// counts from the stat logger's creation at engine boot; its ticks are
// aligned so that the first tick with prompt throughput starts at the first
// arrival (to within the tick, 1 s).
package realrun
