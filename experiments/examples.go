package experiments

import (
	"bytes"
	"embed"
	"fmt"
	"path"
	"strings"
)

//go:embed examples/*.toml
var examplesFS embed.FS

// ExampleSweep returns an embedded example experiment of experiments/examples
// by name ("batch-latency", "goodput-rate").
func ExampleSweep(name string) (*Sweep, error) {
	data, err := examplesFS.ReadFile(path.Join("examples", name+".toml"))
	if err != nil {
		return nil, fmt.Errorf("experiments: no example %q", name)
	}
	return ParseSweep(data, "experiments/examples/"+name+".toml", name, "")
}

// ExampleScenario returns an embedded example scenario ("plan").
func ExampleScenario(name string) (Scenario, error) {
	data, err := examplesFS.ReadFile(path.Join("examples", name+".toml"))
	if err != nil {
		return Scenario{}, fmt.Errorf("experiments: no example %q", name)
	}
	return Parse(bytes.NewReader(data), "experiments/examples/"+name+".toml")
}

// ExampleNames lists the embedded examples.
func ExampleNames() []string {
	ents, _ := examplesFS.ReadDir("examples")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".toml"))
	}
	return names
}
