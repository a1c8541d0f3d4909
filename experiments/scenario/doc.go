// Package scenario turns scenario files into runs and result files.
//
// A Scenario is what a user writes (TOML, or flags through cmd/servesim);
// Resolve validates it once, fills defaults and resolves names into a Plan;
// Run simulates a Plan and writes requests.csv, steps.csv and summary.json,
// each atomically. Default returns the embedded scenario that `servesim`
// runs with no arguments (experiments/default.toml).
//
// It owns the scenario's fields and their bounds, resolution to the
// simulator's config (the engine models vllm-v1, sglang and trtllm,
// parallel layouts, pipeline and expert parallelism, KV offload,
// speculative decoding, the kernel model), one run's result files and
// their lock, and the ablation of one scenario. It may import package
// experiments (the embedded files), datasets, hardware, models, policies
// and sim/...; never its siblings sweep, plan or validate, which build on it.
package scenario
