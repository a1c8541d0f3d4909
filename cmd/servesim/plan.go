package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/servesim/servesim/experiments/plan"
	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/plots"
)

const planUsage = `Usage: servesim plan --config FILE --rate R [--gpus h100,h200=3.5,b200] [flags]

The capacity planner: for the scenario's model, workload and SLOs, finds for
each candidate GPU type, layout (DP × TP × PP, EP on or off) and batch
limit the fewest instances — colocated, and with --disagg also
prefill/decode-disaggregated (at PP 1, DP 1 without EP only: pipelines,
DP ranks and EP are searched for colocated instances; servesim run runs
them in either pool) — that serve
R requests/s with the attainment target, and ranks them by cost per hour
(prices per GPU-hour from the catalog, or given as NAME=PRICE). A deployment
counts replicas × DP × TP × PP GPUs; a layout whose weights do not fit is a
row saying why. The default --pps 1,2 also tries two pipeline stages (PP 2 ×
TP 8 is two 8-GPU nodes, what a model too large for one node needs); each
degree adds one search per TP. For an MoE model the default --ep auto tries
each layout with and without expert parallelism (the routed experts sharded
over the DP × TP GPUs, vLLM's --enable-expert-parallel: "DP4×TP2 EP8"; with
pipeline stages, over each stage's DP × TP GPUs), and the default DP
degrees are 1, 2, 4, 8 with DP × TP × PP within one NVLink domain (vLLM's
single-node DP launch; 8 GPUs on HGX, 72 on GB200): --dps gives others,
across nodes too. A dense model gets DP 1 and no EP unless --dps says so;
--ep on for a dense model is an error. Prints a ranked table and writes CSV.
On a terminal a progress bar with an ETA counts the shapes planned; -q
prints the table only (no bar, no "Wrote" lines).

Examples:
  servesim plan --config experiments/examples/plan.toml --rate 20 --gpus h100,h200,b200
  servesim plan --config scenario.toml --rate 50 --gpus h100=2.49,h200=3.59 --tps 1,2 --disagg
  servesim plan --config experiments/examples/plan-405b.toml --rate 2 --gpus h100,h200,b200 --tps 8 --duration 120
  servesim plan --config experiments/examples/plan-moe.toml --rate 64 --gpus h100,h200,b200 --max-gpus 128 --duration 20
`

func planCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plan", planUsage, stderr)
	config := fs.String("config", "", "scenario TOML file (model, workload, SLOs)")
	rate := fs.Float64("rate", 0, "target request rate (req/s)")
	gpus := fs.String("gpus", "", "candidate GPUs, NAME or NAME=$/hour, comma-separated (default: the scenario's)")
	tps := fs.String("tps", "1,2,4,8", "tensor-parallel degrees to try")
	pps := fs.String("pps", "1,2", "pipeline-parallel degrees to try with each TP (colocated only)")
	dps := fs.String("dps", "", "data-parallel degrees to try (colocated only; default: 1, and for an MoE model with EP 1,2,4,8 within one NVLink domain)")
	ep := fs.String("ep", "auto", "expert parallelism: auto (an MoE model's layouts with and without), on or off")
	seqs := fs.String("max-num-seqs", "", "batch limits to try, comma-separated (default: the scenario's)")
	target := fs.Float64("target", 0.9, "SLO attainment target")
	disagg := fs.Bool("disagg", false, "also plan disaggregated deployments")
	maxGPUs := fs.Int("max-gpus", 64, "largest deployment considered")
	duration := fs.Float64("duration", 60, "seconds of arrivals per simulation (shorter is faster and noisier)")
	workers := fs.IntP("workers", "j", 0, "parallel searches (default: all cores)")
	out := fs.StringP("out", "o", "", "CSV file (default plans/NAME.csv; \"-\" writes none)")
	chart := fs.String("plot", "", "also draw the ranking as a PNG chart to this file")
	quiet := fs.BoolP("quiet", "q", false, "print the table only: no progress bar, no \"Wrote\" lines")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *config == "" || !fs.Changed("rate") { // missing: a usage error (exit 2); --rate 0 is bad input, below
		fs.Usage()
		return usageError{fmt.Errorf("plan: --config and --rate R > 0 are required")}
	}
	if err := checkPositive("plan", "rate", *rate); err != nil {
		return err
	}
	if 1 / *rate > scenario.MaxDurationS {
		return fmt.Errorf("plan: --rate %g: below %g req/s (one gap, 1/rate, is past the longest run, %g s)", *rate, 1/scenario.MaxDurationS, scenario.MaxDurationS)
	}
	if err := checkTarget("plan", *target); err != nil {
		return err
	}
	if err := checkPositive("plan", "duration", *duration); err != nil {
		return err
	}
	if *duration > scenario.MaxDurationS {
		return fmt.Errorf("plan: --duration %g: at most %g s", *duration, scenario.MaxDurationS)
	}
	if *maxGPUs < 1 {
		return fmt.Errorf("plan: --max-gpus %d: want at least 1 GPU", *maxGPUs)
	}
	base, err := scenario.LoadScenario(*config)
	if err != nil {
		return err
	}
	if _, err := resultPath(*out, "plans", base, *config); err != nil {
		return err
	}
	o := plan.PlanOptions{Rate: *rate, Target: *target, Disagg: *disagg, MaxGPUs: *maxGPUs, Duration: *duration, Workers: *workers, Prices: map[string]float64{}, EP: *ep}
	for _, f := range strings.Split(*gpus, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		name, price, hasPrice := strings.Cut(f, "=")
		if hasPrice {
			p, err := strconv.ParseFloat(price, 64)
			if err != nil || !(p >= 0) || math.IsInf(p, 0) {
				return fmt.Errorf("plan: --gpus: price %q of %s is not a number ≥ 0", price, name)
			}
			o.Prices[name] = p
		}
		o.GPUs = append(o.GPUs, name)
	}
	if o.TPs, err = positiveInts("plan", "tps", *tps); err != nil {
		return err
	}
	if o.PPs, err = positiveInts("plan", "pps", *pps); err != nil {
		return err
	}
	if *dps != "" {
		if o.DPs, err = positiveInts("plan", "dps", *dps); err != nil {
			return err
		}
	}
	if err := checkEPFlag("plan", *ep); err != nil {
		return err
	}
	if *seqs != "" {
		if o.MaxNumSeqs, err = positiveInts("plan", "max-num-seqs", *seqs); err != nil {
			return err
		}
	}
	var opts []plan.Option
	stop, err := searchInterruptibly(stderr, *quiet, "plan: shapes", func(ctx context.Context, progress func(done, total int)) (err error) {
		o.Context, o.OnProgress = ctx, progress
		opts, err = plan.PlanCapacity(base, o)
		return err
	})
	defer stop()
	if err != nil {
		return err
	}
	if err := plan.WritePlan(stdout, opts, *rate, *target); err != nil {
		return err
	}
	if *chart != "" {
		if err := planChart(opts, *rate, *chart); err != nil {
			return err
		}
		if !*quiet {
			fmt.Fprintf(stdout, "Wrote %s.\n", *chart)
		}
	}
	return writeResultCSV(*out, "plans", base, *config, func(w io.Writer) error { return plan.WritePlanCSV(w, opts) }, unlessQuiet(stdout, *quiet))
}

// planChart draws the deployments that meet the target, cheapest first.
func planChart(opts []plan.Option, rate float64, file string) error {
	var bars []plots.PlanOption
	for _, o := range opts {
		if o.Err == "" {
			bars = append(bars, plots.PlanOption{Label: o.GPU + " " + o.Name, CostPerHour: o.CostPerHour, GPUs: o.GPUs, GPU: o.GPU, Rate: rate, CostPerMTok: o.CostPerMOutTok})
		}
	}
	p, err := plots.PlanChart(bars, fmt.Sprintf("Deployments serving %g req/s within the SLOs, by cost", rate))
	if err != nil {
		return err
	}
	return plots.Save(p, file, 1600, 1000)
}
