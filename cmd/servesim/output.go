package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/servesim/servesim/experiments"
)

// positiveInts parses a comma-separated list of positive integers (a flag).
func positiveInts(cmd, flag, list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%s: --%s: %q is not a positive integer", cmd, flag, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// writeResultCSV writes a command's CSV to path (default dir/NAME.csv, NAME
// from the scenario or its file; "-" writes nothing), atomically.
func writeResultCSV(path, dir string, base experiments.Scenario, config string, write func(io.Writer) error, stdout io.Writer) error {
	if path == "" {
		name := base.Name
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(config), filepath.Ext(config))
		}
		path = filepath.Join(dir, name+".csv")
	}
	if path == "-" {
		return nil
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	if err := experiments.MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	if err := experiments.WriteFileAtomic(path, buf.Bytes()); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stdout, "Wrote %s.\n", path)
	return err
}
