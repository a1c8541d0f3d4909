package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/experiments/sweep"
	"github.com/servesim/servesim/plots"
)

const sweepUsage = `Usage: servesim sweep FILE [-j N] [-o DIR] [--shard i/n] [--table COLS]

Runs an experiment file: a [base] scenario and [[axis]] tables, each a
scenario field (its TOML path, e.g. "workload.rate" or "batch.policy") and
values (a table value sets several fields of that table at once); every
combination is a point, run once per seed in "seeds". Every point is resolved
first, so a bad value stops the sweep before anything runs. Points run in
parallel; results do not depend on the number of workers.

Each finished point is written to DIR/points/KEY.json at once, so a sweep
stopped midway and run again computes only the missing points. KEY hashes
the resolved scenario and what it read (model and GPU definitions, the
kernel-time profile, a trace's bytes): after any of them changes, a rerun
computes every point again. When all
points are present, DIR/results.csv (one row per point, every metric) and
DIR/results.json are written and a Markdown table is printed.

--shard i/n runs every n-th point starting at i, for array jobs on a batch
system, and writes DIR/results.shard-i-of-n.json. --shard auto reads i and
n from a Slurm array job (SLURM_ARRAY_TASK_ID, _MIN, _STEP, _COUNT or _MAX);
--shard auto/N reads i from a Kubernetes Indexed Job (JOB_COMPLETION_INDEX;
N = the Job's completions). 'servesim merge FILE DIR...' then joins the
shards' outputs, gathered anywhere (docs/sweeps-cluster.md).

On a terminal a progress bar with an ETA counts the points; -q prints the
table only (no bar, no count of points run, no "Wrote" and "Plots" lines).

Examples:
  servesim sweep experiments/batching.toml
  servesim sweep experiments/batching.toml -j 1 --table request_throughput,ttft_p99_ms,itl_p99_ms
  servesim sweep experiments/batching.toml -o out --shard $SLURM_ARRAY_TASK_ID/8
  servesim sweep experiments/batching.toml -o out/$JOB_COMPLETION_INDEX --shard auto/8
`

const defaultTable = "request_throughput,ttft_p50_ms,ttft_p99_ms,tpot_p50_ms,itl_p99_ms,e2e_p50_ms"

func sweepCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sweep", sweepUsage, stderr)
	workers := fs.IntP("workers", "j", 0, "parallel workers (default: all cores)")
	out := fs.StringP("out", "o", "", "output directory (default sweeps/NAME)")
	shard := fs.String("shard", "", "run only shard i of n (i/n)")
	keep := fs.Bool("keep-records", false, "also keep each point's requests.csv and steps.csv")
	quiet := fs.BoolP("quiet", "q", false, "print the table only: no progress bar, no count of points, no \"Wrote\" lines")
	table := fs.String("table", defaultTable, "columns of the printed table")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("sweep: want one experiment file, got %d arguments", fs.NArg())
	}
	if err := sweep.CheckColumns(strings.Split(*table, ",")); err != nil {
		return fmt.Errorf("%s: --table: %w", fs.Name(), err)
	}
	sw, err := sweep.LoadSweep(fs.Arg(0))
	if err != nil {
		return err
	}
	pts, err := sw.PointsJ(*workers)
	if err != nil {
		return err
	}
	o := sweep.DirOptions{Workers: *workers, KeepRecords: *keep}
	if *shard != "" {
		if o.Shard, o.Of, err = parseShard(*shard, stderr, *quiet); err != nil {
			return err
		}
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("sweeps", sw.Name)
	}
	var (
		ran, found int
		pfs        []sweep.PointFile
	)
	stop, err := searchInterruptibly(stderr, *quiet, "sweep "+sw.Name, func(ctx context.Context, progress func(done, total int)) (err error) {
		o.Context, o.Progress = ctx, progress
		pfs, ran, found, err = sweep.RunSweepDirResults(pts, dir, o)
		return err
	})
	defer stop()
	if err != nil {
		return err
	}
	fmt.Fprintf(unlessQuiet(stderr, *quiet), "servesim: sweep %s: %d points ran, %d already done, in %s\n", sw.Name, ran, found, dir)
	if o.Of > 1 {
		if err := sweep.WriteShardResults(dir, sw.Name, sw.Axes, pts, o.Shard, o.Of); err != nil {
			return err
		}
		fmt.Fprintf(unlessQuiet(stdout, *quiet), "Shard %d/%d done (%s); gather the shards' outputs anywhere and join them with: servesim merge %s DIR...\n",
			o.Shard, o.Of, filepath.Join(dir, sweep.ShardFileName(o.Shard, o.Of)), fs.Arg(0))
		return nil
	}
	return finishSweep(sw, pfs, dir, *table, *workers, stdout, *quiet)
}

// parseShard reads --shard: "i/n", or "auto" and "auto/N" from a Slurm
// array job's or a Kubernetes Indexed Job's environment (said on stderr).
func parseShard(s string, stderr io.Writer, quiet bool) (i, n int, err error) {
	if !strings.HasPrefix(s, "auto") {
		return sweep.ParseShard(s)
	}
	i, n, from, err := sweep.ShardFromEnv(s, os.Getenv)
	if err == nil {
		fmt.Fprintf(unlessQuiet(stderr, quiet), "servesim: shard %d/%d (from %s)\n", i, n, from)
	}
	return i, n, err
}

// finishSweep writes the result files from the points' files (pfs, in point
// order), prints the table (and, unless quiet, the files written) and draws
// the plots. The plots are drawn from the CSV as written, parsed in memory;
// on more than one worker results.csv and results.json are written while
// the plots are drawn (the plots do not read them).
func finishSweep(sw *sweep.Sweep, pfs []sweep.PointFile, out string, table string, workers int, stdout io.Writer, quiet bool) error {
	if err := scenario.MkdirAll(out); err != nil {
		return err
	}
	csv, err := sweep.ResultsCSV(sw.Axes, pfs)
	if err != nil {
		return err
	}
	// A CSV the plots cannot read (a column named twice, say) is a plot
	// failure: the results are written all the same.
	res, perr := plots.ReadResults(bytes.NewReader(csv), "results.csv")
	writeResults := func() error { return sweep.WriteResultsFiles(out, sw.Axes, pfs, csv) }
	var written chan error
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers > 1 {
		written = make(chan error, 1)
		go func() { written <- writeResults() }()
	} else if err := writeResults(); err != nil {
		return err
	}
	if err := sweep.WriteTable(stdout, sw.Axes, pfs, strings.Split(table, ",")); err != nil {
		return errors.Join(err, wait(written))
	}
	var files []string
	if perr == nil {
		slo := sw.Base.SLO
		files, perr = plots.DrawSweepResults(out, res, plots.SweepOptions{SLO: plots.SLO{TTFTms: slo.TTFTms, TPOTms: slo.TPOTms, E2Ems: slo.E2Ems}, Workers: workers})
	}
	if err := wait(written); err != nil {
		return err
	}
	fmt.Fprintf(unlessQuiet(stdout, quiet), "\nWrote %s and %s.\n", filepath.Join(out, "results.csv"), filepath.Join(out, "results.json"))
	if len(files) > 0 {
		fmt.Fprintf(unlessQuiet(stdout, quiet), "Plots: %s\n", strings.Join(files, ", "))
	}
	if perr != nil {
		return fmt.Errorf("sweep: some plots failed (the results are written): %w", perr)
	}
	return nil
}

// wait returns what c delivers, or nil for a nil c.
func wait(c chan error) error {
	if c == nil {
		return nil
	}
	return <-c
}
