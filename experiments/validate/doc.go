// Package validate replays real runs in the simulator and compares: one
// run (RunScenario, Validate), the embedded suite (experiments/validation,
// Suite), its grouped medians, inference-perf stages, the replay bounds,
// the suite ablation and the reports.
//
// It may import experiments (the embedded suite), experiments/realrun (the
// real runs' files), scenario and the simulator's packages; never sweep or
// plan.
package validate
