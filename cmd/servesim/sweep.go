package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/experiments"
)

const sweepUsage = `Usage: servesim sweep FILE [-j N] [-o DIR] [--table COLS]

Runs an experiment file: a [base] scenario and [[axis]] tables, each a
scenario field (its TOML path, e.g. "workload.rate" or "batch.policy") and
values; every combination is a point, run once per seed in "seeds". Every
point is resolved first, so a bad value stops the sweep before anything runs.
Points run in parallel; results do not depend on the number of workers.
Writes DIR/results.csv (one row per point) and prints a Markdown table.

Examples:
  servesim sweep experiments/batching.toml
  servesim sweep experiments/batching.toml -j 1 --table request_throughput,ttft_p99_ms,itl_p99_ms
`

func sweepCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep", sweepUsage, stderr)
	workers := fs.IntP("workers", "j", 0, "parallel workers (default: all cores)")
	out := fs.StringP("out", "o", "", "output directory (default sweeps/NAME; \"-\" writes no files)")
	table := fs.String("table", "request_throughput,ttft_p50_ms,ttft_p99_ms,tpot_p50_ms,itl_p99_ms,e2e_p50_ms", "columns of the printed table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("sweep: want one experiment file, got %d arguments", fs.NArg())
	}
	sw, err := experiments.LoadSweep(fs.Arg(0))
	if err != nil {
		return err
	}
	pts, err := sw.Points()
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "servesim: sweep %s: %d points\n", sw.Name, len(pts))
	res, err := experiments.RunSweep(pts, *workers)
	if err != nil {
		return err
	}
	if err := experiments.WriteTable(stdout, sw.Axes, res, strings.Split(*table, ",")); err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("sweeps", sw.Name)
	}
	if dir != "-" {
		var buf bytes.Buffer
		if err := experiments.WriteCSV(&buf, sw.Axes, res); err != nil {
			return err
		}
		if err := experiments.MkdirAll(dir); err != nil {
			return err
		}
		if err := experiments.WriteFileAtomic(filepath.Join(dir, "results.csv"), buf.Bytes()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nWrote %s.\n", filepath.Join(dir, "results.csv"))
	}
	return nil
}
