package scenario

import (
	"errors"
	"fmt"
	"os"

	"github.com/servesim/servesim/datasets"
)

// dataPath resolves a data file: a data set reference (datasets.Lookup:
// NAME, NAME:ALIAS or NAME:PATH, found in the cache or in ../shared/data)
// or a path relative to the scenario file.
func (s Scenario) dataPath(p string) (string, error) {
	if r, ok, err := datasets.Lookup(p); ok || err != nil {
		return r, err
	}
	return s.Path(p), nil
}

// FindDataDir returns dir when set, else the first of ../shared/data,
// ../../shared/data and ../../../shared/data (relative to the current
// directory) that exists. The error says how to point at the data.
func FindDataDir(dir string) (string, error) {
	if dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return "", fmt.Errorf("scenario: data directory %s not found (flag --data)", dir)
		}
		return dir, nil
	}
	for _, d := range []string{"../shared/data", "../../shared/data", "../../../shared/data"} {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d, nil
		}
	}
	return "", errors.New("scenario: the suite's runs are under ../shared/data, which is not here (run from the repository root, or give --data DIR)")
}
