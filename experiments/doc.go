// Package experiments holds servesim's bundled scenario and experiment
// files (default.toml, batching.toml, examples/, validation/) and embeds
// those the binary needs; the code is in its sub-packages, one concern each:
//
//   - scenario: scenario files, fields and bounds, resolution into a Plan
//     (engines vllm-v1, sglang, trtllm; layouts, pipeline, expert
//     parallelism, offload, speculative decoding, the kernel model), running
//     one Plan and writing its result files;
//   - sweep: experiment files (axes, seeds), their points, sweep
//     directories with resume and lock, shards and merge;
//   - plan: the capacity planner and the placement search;
//   - validate: the validation suite against real runs (realrun): groups,
//     stages, bounds, ablation and reports;
//   - realrun: reading real runs' result files.
//
// Imports flow one way: scenario imports only this package (for the
// embedded files) and the simulator below it; sweep, plan and validate
// import scenario and never one another; this package imports nothing.
// The files stay here so that the paths the README and docs/ commands name
// (experiments/batching.toml, experiments/examples/...) do not move.
package experiments
