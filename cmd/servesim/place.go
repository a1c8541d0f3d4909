package main

import (
	"context"
	"fmt"
	"io"

	"github.com/servesim/servesim/experiments/plan"
	"github.com/servesim/servesim/experiments/scenario"
)

const placeUsage = `Usage: servesim place --config FILE --gpus N [flags]

Searches deployments of the scenario's model, workload and SLOs within a
budget of N GPUs of the scenario's GPU type — colocated (replicas × TP) and
prefill/decode-disaggregated (P×TP + D×TP, with the scenario's [disagg] link)
— for the highest goodput per GPU: for each, the highest arrival rate at
which the attainment target holds (DistServe's max goodput rate). With
--pps 1,2 colocated instances are also tried with 2 pipeline stages
(replicas × PP × TP GPUs; disaggregated pools stay at PP 1, the only
one searched there); the default, 1, keeps the search to
TP, as each degree adds a rate search per colocated split. Likewise
--dps and --ep (default 1 and off, for speed: each DP or EP layout adds a
rate search per colocated split) try colocated instances with DP ranks and,
for an MoE model, expert parallelism (--ep on, or auto: with and without;
"DP2×TP2 EP4"; with --pps too, per pipeline stage). Prints a
ranked table and writes it as CSV. On a terminal a progress bar with an ETA
counts the deployments searched; -q prints the table only (no bar, no
"Wrote" line).

Examples:
  servesim place --config experiments/disagg-long.toml --gpus 4
  servesim place --config experiments/disagg-short.toml --gpus 4 --tps 1,2 --target 0.9
  servesim place --config scenario.toml --gpus 32 --tps 8 --pps 1,2 --only colocated
  servesim place --config experiments/examples/plan-moe.toml --gpus 16 --tps 8 --dps 1,2 --ep auto --only colocated
`

func placeCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("place", placeUsage, stderr)
	config := fs.String("config", "", "scenario TOML file (model, workload, SLOs, GPU, [disagg] link)")
	gpus := fs.Int("gpus", 0, "GPU budget")
	tps := fs.String("tps", "1,2,4,8", "tensor-parallel degrees to try")
	pps := fs.String("pps", "1", "pipeline-parallel degrees to try with each TP (colocated candidates)")
	dps := fs.String("dps", "1", "data-parallel degrees to try (colocated candidates)")
	ep := fs.String("ep", "off", "expert parallelism of colocated candidates: off, on or auto (an MoE model's layouts with and without)")
	target := fs.Float64("target", 0.9, "SLO attainment target")
	only := fs.String("only", "", "search only colocated or disagg deployments")
	workers := fs.IntP("workers", "j", 0, "parallel candidates (default: all cores)")
	out := fs.StringP("out", "o", "", "CSV file (default placements/NAME.csv; \"-\" writes none)")
	quiet := fs.BoolP("quiet", "q", false, "print the table only: no progress bar, no \"Wrote\" line")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *config == "" || *gpus <= 0 {
		fs.Usage()
		return fmt.Errorf("place: --config and --gpus N > 0 are required")
	}
	if *gpus > plan.MaxPlaceGPUs {
		return fmt.Errorf("place: --gpus %d: at most %d (the search lists every split of the budget)", *gpus, plan.MaxPlaceGPUs)
	}
	if err := checkTarget("place", *target); err != nil {
		return err
	}
	base, err := scenario.LoadScenario(*config)
	if err != nil {
		return err
	}
	if _, err := resultPath(*out, "placements", base, *config); err != nil {
		return err
	}
	o := plan.PlaceOptions{GPUs: *gpus, Target: *target, Workers: *workers, EP: *ep}
	if o.TPs, err = positiveInts("place", "tps", *tps); err != nil {
		return err
	}
	if o.PPs, err = positiveInts("place", "pps", *pps); err != nil {
		return err
	}
	if o.DPs, err = positiveInts("place", "dps", *dps); err != nil {
		return err
	}
	if err := checkEPFlag("place", *ep); err != nil {
		return err
	}
	switch *only {
	case "":
	case "colocated":
		o.Colocated = true
	case "disagg":
		o.Disagg = true
	default:
		return fmt.Errorf("place: --only %q: want colocated or disagg", *only)
	}
	var ps []plan.Placement
	stop, err := searchInterruptibly(stderr, *quiet, "place: deployments", func(ctx context.Context, progress func(done, total int)) (err error) {
		o.Context, o.OnProgress = ctx, progress
		ps, err = plan.Place(base, o)
		return err
	})
	defer stop()
	if err != nil {
		return err
	}
	if err := plan.WritePlacements(stdout, ps, *target); err != nil {
		return err
	}
	return writeResultCSV(*out, "placements", base, *config, func(w io.Writer) error { return plan.WritePlacementsCSV(w, ps) }, unlessQuiet(stdout, *quiet))
}

// checkEPFlag refuses an --ep other than auto, on or off, naming the flag.
func checkEPFlag(cmd, ep string) error {
	switch ep {
	case plan.EPAuto, plan.EPOn, plan.EPOff:
		return nil
	}
	return fmt.Errorf("%s: --ep %q: want auto, on or off", cmd, ep)
}
