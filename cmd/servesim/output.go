package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/experiments/sweep"
)

// positiveInts parses a comma-separated list of positive integers (a flag).
func positiveInts(cmd, flag, list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%s: --%s: %q is not a positive integer", cmd, flag, f)
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("%s: --%s: %d is given twice", cmd, flag, v)
		}
		out = append(out, v)
	}
	return out, nil
}

// resultPath is a command's CSV path: path, or dir/NAME.csv with NAME from
// the scenario or its file, which must be one safe file name (a name such as
// "../../x" would write outside dir), and not the scenario file itself.
// Commands call it before their search, so that a bad name fails at once.
func resultPath(path, dir string, base scenario.Scenario, config string) (string, error) {
	if path != "" {
		if err := scenario.CheckOutputs([]string{path}, []string{config}); err != nil { // plan -o s.toml --config s.toml
			return "", err
		}
		return path, nil
	}
	name := base.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(config), filepath.Ext(config))
	}
	if err := sweep.CheckName(name); err != nil {
		return "", fmt.Errorf("%s: %s: the scenario's name %v; set a plain name or give -o FILE", dir, config, err)
	}
	return filepath.Join(dir, name+".csv"), nil
}

// writeResultCSV writes a command's CSV to path (default dir/NAME.csv, NAME
// from the scenario or its file; "-" writes nothing), atomically.
func writeResultCSV(path, dir string, base scenario.Scenario, config string, write func(io.Writer) error, stdout io.Writer) error {
	path, err := resultPath(path, dir, base, config)
	if err != nil {
		return err
	}
	if path == "-" {
		return nil
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	if err := scenario.MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	if err := scenario.WriteFileAtomic(path, buf.Bytes()); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "Wrote %s.\n", path)
	return err
}
