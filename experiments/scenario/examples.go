package scenario

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"github.com/servesim/servesim/experiments"
)

// ExampleScenario returns an embedded example scenario ("plan").
func ExampleScenario(name string) (Scenario, error) {
	data, err := experiments.Examples.ReadFile(path.Join("examples", name+".toml"))
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario: no example %q", name)
	}
	return Parse(bytes.NewReader(data), "experiments/examples/"+name+".toml")
}

// ExampleNames lists the embedded examples.
func ExampleNames() []string {
	ents, _ := experiments.Examples.ReadDir("examples")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".toml"))
	}
	return names
}
