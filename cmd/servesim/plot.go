package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/plots"
)

const plotUsage = `Usage: servesim plot KIND [flags] INPUT...

Draws a PNG (or .svg/.pdf, by the -o extension) from result files, 1600×1000
pixels unless --width/--height say otherwise. Kinds and their inputs:

  batch-latency RESULTS.csv  throughput against TTFT and TPOT as the max batch
                             size grows, one curve per group (GPU, policy),
                             cost per million output tokens, the gain per step,
                             the sweet spot ringed (x: a batch limit,
                             batch.max_num_seqs or max_num_batched_tokens;
                             a rate sweep is refused: use goodput)
  goodput RESULTS.csv        goodput and raw throughput against request rate,
                             SLO attainment, the max-goodput rate marked
                             (x: workload.rate)
  perception RESULTS.csv     configurations in p95 TTFT × throughput with
                             quadrant lines at the TTFT SLO and a target
                             throughput (each the median when not given)
  provider-fit RESULTS.csv   TTFT against throughput, colour = cost per million
                             output tokens, the cheapest within the SLO ringed
  speedup RESULTS.csv        each group's mean-TPOT speedup over the group
                             "off" against request rate (a speculative-decoding
                             sweep: x workload.rate, group speculative)
  cdf RUNDIR...              TTFT and TPOT CDFs, one curve per run directory
  dashboard RUNDIR           goodput and throughput over time, TTFT and TPOT
                             histograms, SLO-compliance gauge ("no SLO" when
                             neither summary.json nor --slo-* gives one),
                             prefill/decode utilization and KV use over time

RESULTS.csv is a sweep's results.csv (servesim sweep); RUNDIR is a run's
output directory (servesim run -o RUNDIR: requests.csv, steps.csv,
summary.json). A sweep's points are averaged over its replicate seeds. The x
axis and the axis that tells curves apart are detected from the file's
axes; name them with --x and --group. SLOs of runs come from summary.json,
those of a sweep from its results.csv (the slo_*_ms columns); --slo-*
override them, objective by objective. -o defaults to KIND.png beside the first input.
--numbers prints the numbers behind the plot. Points with a NaN or infinite
value are left out and counted on stderr; with none left, plot fails. -q
prints nothing but errors (and --numbers' numbers, when asked for): no
"Wrote" line, no notes on stderr.

Examples:
  servesim sweep experiments/batching.toml -o sweeps/batching
  servesim plot goodput sweeps/batching/results.csv --group batch
  servesim plot perception sweeps/batching/results.csv --slo-ttft 2000 --target-throughput 2500
  servesim plot batch-latency results.csv --x batch.max_num_seqs --group gpu --slo-ttft 2000 --slo-tpot 50
  servesim run -o runs/chunked && servesim run --policy prefill-first -o runs/v0
  servesim plot cdf runs/chunked runs/v0 --label "chunked,prefill-first" -o cdf.png
  servesim plot dashboard runs/chunked --window 10 --numbers
`

var plotKinds = []string{"batch-latency", "goodput", "perception", "provider-fit", "speedup", "cdf", "dashboard"}

func plotCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, plotUsage)
		if len(args) == 0 {
			return fmt.Errorf("plot: name a kind (%s)", strings.Join(plotKinds, ", "))
		}
		return nil
	}
	kind := args[0]
	known := false
	for _, k := range plotKinds {
		known = known || k == kind
	}
	if !known {
		fmt.Fprint(stderr, plotUsage)
		return fmt.Errorf("plot: unknown kind %q (known: %s)", kind, strings.Join(plotKinds, ", "))
	}
	fs := newFlagSet("plot "+kind, plotUsage, stderr)
	out := fs.StringP("out", "o", "", "output image: .png, .svg or .pdf (default KIND.png beside the first input)")
	x := fs.String("x", "", "sweep axis along x (default: detected, e.g. batch.max_num_seqs or workload.rate)")
	group := fs.String("group", "", "sweep axis whose values are separate curves (default: every other axis that varies)")
	sloTTFT := fs.Float64("slo-ttft", 0, "TTFT SLO in ms (0 = the run's or sweep's own, else none)")
	sloTPOT := fs.Float64("slo-tpot", 0, "TPOT SLO in ms (0 = the run's or sweep's own, else none)")
	sloE2E := fs.Float64("slo-e2e", 0, "E2E latency SLO in ms (dashboard; 0 = the run's own)")
	target := fs.Float64("target", 0.9, "goodput: SLO attainment the max-goodput rate must reach")
	targetThr := fs.Float64("target-throughput", 0, "perception, provider-fit: target output throughput in tokens/s (0 = the median, or none)")
	stat := fs.String("stat", "p95", "latency statistic of a sweep: mean, p50, p90, p95, p99")
	labels := fs.String("label", "", "cdf, dashboard: comma-separated labels for the runs (default: directory names)")
	window := fs.Float64("window", 0, "dashboard: time window in seconds (0 = automatic, at most 60 windows)")
	width := fs.Int("width", plots.DefaultWidth, "image width in pixels")
	height := fs.Int("height", plots.DefaultHeight, "image height in pixels")
	numbers := fs.Bool("numbers", false, "print the numbers behind the plot")
	quiet := fs.BoolP("quiet", "q", false, "print nothing but errors (and --numbers): no \"Wrote\" line, no notes")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	_, stopSignals := interruptible() // SIGINT/SIGTERM: exit 130 within a second, no temporary left
	defer stopSignals()
	inputs := fs.Args()
	if len(inputs) == 0 {
		fs.Usage()
		return fmt.Errorf("plot %s: name an input", kind)
	}
	if kind != "cdf" && len(inputs) != 1 {
		fs.Usage()
		return fmt.Errorf("plot %s: want one input, got %d", kind, len(inputs))
	}
	if err := checkTarget("plot "+kind, *target); err != nil {
		return err
	}
	if *width <= 0 || *height <= 0 {
		return fmt.Errorf("plot %s: --width %d --height %d: want positive pixels", kind, *width, *height)
	}
	slo := plots.SLO{TTFTms: *sloTTFT, TPOTms: *sloTPOT, E2Ems: *sloE2E}
	var runLabels []string
	if *labels != "" {
		runLabels = strings.Split(*labels, ",")
		if len(runLabels) != len(inputs) {
			return fmt.Errorf("plot %s: %d labels for %d inputs", kind, len(runLabels), len(inputs))
		}
	}
	path := *out
	if path == "" {
		path = defaultPlotPath(kind, inputs[0])
	}

	var d plots.Drawer
	var nums fmt.Stringer
	switch kind {
	case "batch-latency", "goodput", "perception", "provider-fit", "speedup":
		res, err := plots.ReadResultsFile(inputs[0])
		if err != nil {
			return err
		}
		own, differ, err := res.SLO()
		if err != nil {
			return err
		}
		if len(differ) > 0 {
			fmt.Fprintf(unlessQuiet(stderr, *quiet), "servesim: plot %s: the rows of %s differ in %s: not used (give --slo-*)\n", kind, inputs[0], strings.Join(differ, ", "))
		}
		// A flag given (≠ 0) replaces the sweep's objective, a negative one
		// too, so that the plot reports it as invalid.
		for _, f := range []struct{ flag, own *float64 }{{&slo.TTFTms, &own.TTFTms}, {&slo.TPOTms, &own.TPOTms}, {&slo.E2Ems, &own.E2Ems}} {
			if *f.flag == 0 {
				*f.flag = *f.own
			}
		}
		mo := plots.MatrixOptions{X: *x, Group: *group, SLO: slo, TargetThroughput: *targetThr, Stat: *stat}
		switch kind {
		case "batch-latency":
			d, nums, err = pair(plots.BatchLatency(res, plots.BatchLatencyOptions{X: *x, Group: *group, SLO: slo, Stat: *stat}))
		case "goodput":
			d, nums, err = pair(plots.Goodput(res, plots.GoodputOptions{X: *x, Group: *group, Target: *target}))
		case "perception":
			d, nums, err = pair(plots.Perception(res, mo))
		case "provider-fit":
			d, nums, err = pair(plots.ProviderFit(res, mo))
		case "speedup":
			d, nums, err = pair(plots.Speedup(res, plots.SpeedupOptions{X: *x, Group: *group}))
		}
		if err != nil {
			return err
		}
	case "cdf", "dashboard":
		runs := make([]*plots.Run, len(inputs))
		for i, dir := range inputs {
			r, err := plots.LoadRun(dir)
			if err != nil {
				return err
			}
			if runLabels != nil {
				r.Label = runLabels[i]
			}
			runs[i] = r
		}
		var err error
		notes := unlessQuiet(stderr, *quiet)
		if kind == "cdf" {
			d, nums, err = pair(plots.CDF(runs, plots.CDFOptions{SLO: slo}))
		} else {
			if runs[0].Steps == nil {
				fmt.Fprintf(notes, "servesim: plot dashboard: %s has no steps.csv; the utilization and KV panels stay empty\n", inputs[0])
			}
			if runs[0].Summary == nil && !slo.IsSet() {
				fmt.Fprintf(notes, "servesim: plot dashboard: %s has no summary.json and no --slo-ttft, --slo-tpot or --slo-e2e is given: no SLO to check, the gauge says \"no SLO\"\n", inputs[0])
			}
			d, nums, err = pair(plots.Dashboard(runs[0], plots.DashboardOptions{Window: *window, SLO: slo}))
		}
		if err != nil {
			return err
		}
	}
	// -o into a folder that does not exist yet creates it, as run -o and
	// plan -o do (else the error would name Save's temporary file).
	if err := scenario.MkdirAll(filepath.Dir(path)); err != nil {
		return fmt.Errorf("plot %s: -o %s: %w", kind, path, err)
	}
	if err := plots.Save(d, path, *width, *height); err != nil {
		return err
	}
	if s, ok := nums.(interface{ Skipped() int }); ok && s.Skipped() > 0 && !*quiet {
		fmt.Fprintf(stderr, "servesim: plot %s: left out %d point(s) with a NaN or infinite value (--numbers lists what was drawn)\n", kind, s.Skipped())
	}
	if *numbers {
		fmt.Fprint(stdout, nums.String())
	}
	fmt.Fprintf(unlessQuiet(stdout, *quiet), "Wrote %s.\n", path)
	return nil
}

// pair adapts a plots function's three results to a Drawer and a Stringer.
func pair[D plots.Drawer, N fmt.Stringer](d D, n N, err error) (plots.Drawer, fmt.Stringer, error) {
	if err != nil {
		return nil, nil, err
	}
	return d, n, nil
}

// defaultPlotPath is KIND.png beside the input: in a results file's
// directory, in a run directory itself (dashboard), or beside the first run
// directory (cdf).
func defaultPlotPath(kind, input string) string {
	st, err := os.Stat(input)
	switch {
	case err == nil && st.IsDir() && kind == "dashboard":
		return filepath.Join(input, kind+".png")
	case err == nil && st.IsDir():
		return filepath.Join(filepath.Dir(filepath.Clean(input)), kind+".png")
	case errors.Is(err, os.ErrNotExist):
		return kind + ".png"
	}
	return filepath.Join(filepath.Dir(input), kind+".png")
}
