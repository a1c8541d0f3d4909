package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/experiments/sweep"
)

const mergeUsage = `Usage: servesim merge FILE PATH... [-o OUT] [-q]

Joins the shards of a sweep (each run with 'servesim sweep FILE --shard i/n
-o DIR') into one results.csv and results.json in OUT (default: the first
PATH when it is a directory, else its directory): the bytes an unsharded
run writes. A PATH is a shard's results file (results.shard-i-of-n.json) or
a directory searched recursively for them, so the shards' outputs can be
gathered from anywhere (copied off each node, in any layout). The files
must be shards of FILE's grid (the same digest of its axes and point keys),
each shard once: a file of another sweep, a shard given twice and a
missing shard are errors naming the files. Directories holding no shard
file are read as sweep output directories (DIR/points), which must hold
every point of FILE between them. Prints the sweep's table and the files
written; -q prints the table only.

Examples:
  servesim merge experiments/batching.toml shard0 shard1 shard2 -o merged
  servesim merge experiments/batching.toml gathered/ -o merged
`

func mergeCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("merge", mergeUsage, stderr)
	out := fs.StringP("out", "o", "", "output directory (default: the first PATH, or its directory)")
	table := fs.String("table", defaultTable, "columns of the printed table")
	quiet := fs.BoolP("quiet", "q", false, "print the table only: no \"Wrote\" and \"Plots\" lines")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, stopSignals := interruptible() // SIGINT/SIGTERM: exit 130 within a second, no temporary left
	defer stopSignals()
	if fs.NArg() < 2 {
		fs.Usage()
		return fmt.Errorf("merge: want an experiment file and at least one shard file or directory")
	}
	if err := sweep.CheckColumns(strings.Split(*table, ",")); err != nil {
		return fmt.Errorf("%s: --table: %w", fs.Name(), err)
	}
	sw, err := sweep.LoadSweep(fs.Arg(0))
	if err != nil {
		return err
	}
	pts, err := sw.Points()
	if err != nil {
		return err
	}
	paths := fs.Args()[1:]
	dst := *out
	if dst == "" {
		dst = paths[0]
		if st, err := os.Stat(dst); err == nil && !st.IsDir() {
			dst = filepath.Dir(dst)
		}
	}
	files, err := sweep.FindShardFiles(paths)
	if err != nil {
		return err
	}
	var pfs []sweep.PointFile
	if len(files) > 0 {
		var axes []sweep.Axis
		if axes, pfs, err = sweep.MergeShards(files, sweep.Digest(sw.Axes, pts)); err != nil {
			return err
		}
		if len(axes) != len(sw.Axes) {
			return fmt.Errorf("merge: the shards have %d axes, %s has %d", len(axes), fs.Arg(0), len(sw.Axes))
		}
	} else if pfs, err = sweep.Collect(pts, paths...); err != nil {
		return err
	}
	return finishSweep(sw, pfs, dst, *table, 0, stdout, *quiet)
}
