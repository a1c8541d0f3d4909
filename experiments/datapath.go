package experiments

import "github.com/servesim/servesim/datasets"

// dataPath resolves a data file: a data set reference (datasets.Lookup:
// NAME, NAME:ALIAS or NAME:PATH, found in the cache or in ../shared/data)
// or a path relative to the scenario file.
func (s Scenario) dataPath(p string) (string, error) {
	if r, ok, err := datasets.Lookup(p); ok || err != nil {
		return r, err
	}
	return s.Path(p), nil
}
