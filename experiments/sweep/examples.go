package sweep

import (
	"fmt"
	"path"

	"github.com/servesim/servesim/experiments"
)

// ExampleSweep returns an embedded example experiment of experiments/examples
// by name ("batch-latency", "goodput-rate").
func ExampleSweep(name string) (*Sweep, error) {
	data, err := experiments.Examples.ReadFile(path.Join("examples", name+".toml"))
	if err != nil {
		return nil, fmt.Errorf("sweep: no example %q", name)
	}
	return ParseSweep(data, "experiments/examples/"+name+".toml", name, "")
}
