package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/experiments/plan"
	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/experiments/sweep"
	"github.com/servesim/servesim/plots"
)

const examplesUsage = `Usage: servesim examples [-o DIR] [-q]

Runs the example experiments of experiments/examples (embedded in the
binary) and draws their plots into DIR (default examples-out):
  - batch-latency: Llama-3.1-8B on H100, H200 and B200 as max_num_seqs grows
    at one offered load (batch-latency, perception and provider-fit plots);
  - gpu-capacity: the same GPUs over the request rate, compared at the load
    each sustains within the SLOs (goodput, perception, provider-fit);
  - goodput-rate: goodput against rate, colocated vs disaggregated on 4 H100s;
  - plan: the cheapest H100/H200/B200 deployment of Llama-3.1-70B (FP8) for
    20 req/s within TTFT 1 s and TPOT 50 ms;
  - one run of the default scenario: its goodput dashboard and TTFT/TPOT CDFs
    against the same load with prefill-first batching.
Takes under 10 s on two cores (a progress bar with an ETA over the five
steps on a terminal). Prints the files it wrote; -q prints nothing but
errors.
`

func examplesCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("examples", examplesUsage, stderr)
	out := fs.StringP("out", "o", "examples-out", "output directory")
	quiet := fs.BoolP("quiet", "q", false, "print nothing but errors: no progress bar, no list of files")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := scenario.MkdirAll(*out); err != nil {
		return err
	}
	// A signal stops the step in flight: its sweep points and runs leave no
	// temporaries (RunSweepDir, RunContext), and nothing later is written.
	ctx, stop := interruptible()
	defer stop()
	bar := newProgress(stderr, *quiet, 5, "examples")
	defer bar.Done()
	stage := func(i int, what string) {
		if i > 1 {
			bar.Add()
		}
		bar.Describe("examples: " + what)
	}
	var files []string
	for i, name := range []string{"batch-latency", "gpu-capacity", "goodput-rate"} {
		stage(i+1, name)
		sw, err := sweep.ExampleSweep(name)
		if err != nil {
			return err
		}
		pts, err := sw.Points()
		if err != nil {
			return err
		}
		dir := filepath.Join(*out, name)
		pfs, _, _, err := sweep.RunSweepDirResults(pts, dir, sweep.DirOptions{Context: ctx})
		if err != nil {
			return err
		}
		if err := sweep.WriteResults(dir, sw.Axes, pfs); err != nil {
			return err
		}
		slo := sw.Base.SLO
		fs, err := plots.DrawSweep(dir, filepath.Join(dir, "results.csv"), plots.SweepOptions{SLO: plots.SLO{TTFTms: slo.TTFTms, TPOTms: slo.TPOTms}})
		if err != nil {
			return err
		}
		files = append(files, fs...)
	}

	stage(4, "plan")
	base, err := scenario.ExampleScenario("plan")
	if err != nil {
		return err
	}
	opts, err := plan.PlanCapacity(base, plan.PlanOptions{Rate: 20, GPUs: []string{"h100", "h200", "b200"}, TPs: []int{2, 4, 8}, PPs: []int{1}, Context: ctx})
	if err != nil {
		return err
	}
	var planMD bytes.Buffer
	if err := plan.WritePlan(&planMD, opts, 20, 0.9); err != nil {
		return err
	}
	if err := scenario.WriteFileAtomic(filepath.Join(*out, "plan.md"), planMD.Bytes()); err != nil {
		return err
	}
	chart := filepath.Join(*out, "plan.png")
	if err := planChart(opts, 20, chart); err != nil {
		return err
	}
	files = append(files, filepath.Join(*out, "plan.md"), chart)

	stage(5, "dashboard and CDFs")
	var runs []*plots.Run
	for _, policy := range []string{"chunked", "prefill-first"} {
		s := scenario.Default()
		s.Workload.Rate = 14
		s.Batch.Policy = policy
		if policy == "prefill-first" {
			s.Batch.MaxNumBatchedTokens = 0 // its default: max(max_model_len, 2048), as vLLM
		}
		p, err := s.Resolve()
		if err != nil {
			return err
		}
		dir := filepath.Join(*out, "run-"+policy)
		if _, err := scenario.RunContext(ctx, p, dir); err != nil {
			return err
		}
		run, err := plots.LoadRun(dir)
		if err != nil {
			return err
		}
		runs = append(runs, run)
	}
	dash, _, err := plots.Dashboard(runs[0], plots.DashboardOptions{})
	if err != nil {
		return err
	}
	if err := plots.Save(dash, filepath.Join(*out, "dashboard.png"), 1600, 1000); err != nil {
		return err
	}
	cdf, _, err := plots.CDF(runs, plots.CDFOptions{})
	if err != nil {
		return err
	}
	if err := plots.Save(cdf, filepath.Join(*out, "cdf.png"), 1600, 1000); err != nil {
		return err
	}
	files = append(files, filepath.Join(*out, "dashboard.png"), filepath.Join(*out, "cdf.png"))
	bar.Add()
	fmt.Fprintf(unlessQuiet(stdout, *quiet), "Wrote:\n  %s\n", strings.Join(files, "\n  "))
	return nil
}
