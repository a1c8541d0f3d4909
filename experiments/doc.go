// Package experiments turns scenario files into runs and result files.
//
// A Scenario is what a user writes (TOML, or flags through cmd/servesim);
// Resolve validates it once, fills defaults and resolves names into a Plan;
// Run simulates a Plan and writes requests.csv, steps.csv and summary.json,
// each atomically. Default returns the embedded scenario that `servesim`
// runs with no arguments (default.toml in this directory).
package experiments
