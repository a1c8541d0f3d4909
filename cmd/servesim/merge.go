package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/servesim/servesim/experiments"
)

const mergeUsage = `Usage: servesim merge FILE DIR... [-o OUT] [-q]

Joins the shards of a sweep (each run with 'servesim sweep FILE --shard i/n
-o DIR') into one results.csv and results.json in OUT (default: the first
DIR). It fails, naming the missing points, unless every point of FILE has a
result in some DIR. Prints the sweep's table and the files written; -q
prints the table only.

Example:
  servesim merge experiments/batching.toml shard0 shard1 shard2 -o merged
`

func mergeCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("merge", mergeUsage, stderr)
	out := fs.StringP("out", "o", "", "output directory (default: the first DIR)")
	table := fs.String("table", defaultTable, "columns of the printed table")
	quiet := fs.BoolP("quiet", "q", false, "print the table only: no \"Wrote\" and \"Plots\" lines")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, stopSignals := interruptible() // SIGINT/SIGTERM: exit 130 within a second, no temporary left
	defer stopSignals()
	if fs.NArg() < 2 {
		fs.Usage()
		return fmt.Errorf("merge: want an experiment file and at least one directory")
	}
	if err := experiments.CheckColumns(strings.Split(*table, ",")); err != nil {
		return fmt.Errorf("%s: --table: %w", fs.Name(), err)
	}
	sw, err := experiments.LoadSweep(fs.Arg(0))
	if err != nil {
		return err
	}
	pts, err := sw.Points()
	if err != nil {
		return err
	}
	dirs := fs.Args()[1:]
	dst := *out
	if dst == "" {
		dst = dirs[0]
	}
	return finishSweep(sw, pts, dst, dirs, *table, 0, stdout, *quiet)
}
