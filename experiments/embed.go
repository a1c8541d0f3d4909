package experiments

import "embed"

// DefaultFile is default.toml: the scenario `servesim` runs with no
// arguments (scenario.Default parses it).
//
//go:embed default.toml
var DefaultFile []byte

// Examples holds examples/*.toml, the example experiments and scenarios
// (scenario.ExampleScenario, sweep.ExampleSweep).
//
//go:embed examples/*.toml
var Examples embed.FS

// ValidationSuite holds validation/*.toml, the validation suite's entries
// (validate.Suite).
//
//go:embed validation/*.toml
var ValidationSuite embed.FS
