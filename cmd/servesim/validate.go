package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/experiments/validate"
	"github.com/servesim/servesim/plots"
)

const validateUsage = `Usage: servesim validate [flags] RUN...
       servesim validate --suite [--data DIR] [flags]

Replays real vLLM runs on the simulator and prints measured beside simulated
TTFT, TPOT, ITL and E2E (mean, median, p90, p99) and throughput, with signed
errors (sim − real)/real. Each run's scenario is built from its own engine
arguments and GPU (Hugging Face model ids map to catalog models by hf_name;
the driver's device names to catalog GPUs by alias); flags override them.
Writes validation.csv, validation.json and PNGs of the CDFs (and, where the
run has a time series, running requests and throughput over time) to --out,
all or nothing.

A RUN is a directory with requests.jsonl and meta.json (LLMServingSim's bench
layout, also with them under vllm/), a vllm bench serve --save-result
--save-detailed .json, or an inference-perf results .csv: each experiment is
simulated once from its workload description (constant-rate stages drained
between them, shared_prefix prompts scaled to the measured prompt length) and
compared per row (summary, stage_0, stage_1), the simulated requests counted
in the stage in which they arrived.

A run's engine arguments go through servesim's table
(experiments/realrun/engineargs.go): one that changes the deployment and is
not modelled (context parallelism, KV transfer or offload, ...) is an
error naming it; pipeline_parallel_size, data_parallel_size and
enable_expert_parallel are read, together too (the replay runs the run's
stages, DP ranks and each stage's EP group), and speculative_config (its
method and num_speculative_tokens, acceptance from the method's default). A CPU KV offload tier (the
sim2real tables' cpu_kv_blocks_logged) is replayed as a host KV tier of as
many blocks (vLLM's OffloadingConnector), or GPU-only with
--ignore-kv-offload, a note saying so. A run over 100×
the largest real run in ../shared/data is refused unless --allow-large.

--suite runs experiments/validation/*.toml: every visible run, found under
../shared/data (or --data DIR): a table of means, a table of signed errors per
run and metric, and the median absolute error per metric over all runs, over
the held-out ones (nothing fitted on them), by model left out (no row of a
model on whose runs a parameter was fitted), by GPU, by TP and by workload,
and the real system's repeat-measurement spread as the floor;
validation-suite.png draws simulated against measured.

A directory with experiments.csv and runs_long.csv (the sim2real tables,
../shared/data/vllm-sim2real-runs) is read as inference-perf runs too, with
each experiment's logged GPU KV blocks as the replay's KV cache.

Examples:
  servesim validate ../shared/data/llmservingsim/vllm-runs/RTX4090/Llama-3.1-8B
  servesim validate --profile roofline ../shared/data/llmservingsim/vllm-runs/RTXPRO6000/Llama-3.1-8B
  servesim validate --gpu h100 --tp 1 bench-result.json
  servesim validate ../shared/data/vllm-sim2real-runs   # 12 runs, 9 with a CPU KV tier (replayed with it; --ignore-kv-offload: GPU KV only)
  servesim validate --suite -o validation-out
  servesim validate --suite --engine vllm-v1 --no-custom-all-reduce -o validation-out
  servesim validate --suite --ablation        # each vllm-v1 mechanism off in turn: held-out medians
`

func validateCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate", validateUsage, stderr)
	out := fs.StringP("out", "o", "servesim-validate", "output directory for validation.csv, validation.json and the PNGs (\"\" writes none)")
	suite := fs.Bool("suite", false, "run the validation suite (experiments/validation/*.toml)")
	data := fs.String("data", "", "the suite's data directory (default: ../shared/data from here)")
	ablation := fs.Bool("ablation", false, "with --suite: run the suite with vllm-v1, each engine mechanism off in turn, all off and ideal; print a Markdown table of the held-out medians (writes no files)")
	var s scenario.Scenario
	b := &s.Batch
	fs.StringVar(&s.Model, "model", "", "catalog model, replacing the run's (list them: servesim models)")
	fs.StringVar(&s.GPU, "gpu", "", "catalog GPU, replacing the run's (list them: servesim gpus)")
	fs.IntVar(&s.TP, "tp", 0, "tensor-parallel degree, replacing the run's")
	fs.StringVar(&s.Weights, "weights", "", "weight precision: bf16, fp8, fp4")
	fs.StringVar(&s.KV, "kv", "", "KV-cache precision: bf16, fp8, fp4")
	fs.StringVar(&s.ModelConfig, "model-config", "", "HuggingFace config.json (or its directory) imported as the model, replacing the run's")
	fs.StringVar(&s.ModelsFile, "models-file", "", "TOML file of extra models (add a run's model: a [[model]] with its hf_name)")
	fs.StringVar(&s.GPUsFile, "gpus-file", "", "TOML file of extra GPUs (add a run's GPU: a [[gpu]] with its device name as an alias)")
	fs.StringVar(&s.Hardware.Profile, "profile", "", "kernel-time model: builtin (default), roofline, or a profile file")
	fs.Float64Var(&s.Hardware.IterOverheadMs, "iteration-overhead-ms", 0, "per-iteration CPU overhead in ms (default: the profile's; 0.5 for the roofline)")
	fs.StringVar(&b.Policy, "policy", "", "batching policy (default chunked, vLLM V1's)")
	fs.IntVar(&b.MaxNumSeqs, "max-num-seqs", 0, "running requests at most, replacing the run's")
	fs.IntVar(&b.MaxNumBatchedTokens, "max-num-batched-tokens", 0, "tokens per iteration at most, replacing the run's")
	fs.IntVar(&b.MaxModelLen, "max-model-len", 0, "longest prompt+output, replacing the run's")
	fs.IntVar(&b.BlockSize, "block-size", 0, "KV block size in tokens")
	fs.Float64Var(&b.GPUMemUtil, "gpu-memory-utilization", 0, "fraction of GPU memory for weights, activations and KV")
	fs.BoolVar(&b.PrefixCaching, "prefix-caching", false, "prefix caching (default: the run's, else on)")
	fs.StringVar(&b.Preemption, "preemption", "", "preemption when KV runs out: recompute or swap")
	fs.StringVar(&s.Scheduler.Policy, "scheduler", "", "queue order: fcfs (vLLM's default), sjf, ...")
	engineFlags(fs, &s)
	vllmEngineAliases(fs, &s)
	quiet := fs.BoolP("quiet", "q", false, "print only the tables")
	ignoreOffload := fs.Bool("ignore-kv-offload", false, "replay a run that configured a CPU KV-cache offload tier (the sim2real tables' cpu_kv_blocks_logged) with the GPU's KV cache only; without this flag the tier is replayed as a host tier of the logged blocks")
	allowLarge := fs.Bool("allow-large", false, fmt.Sprintf("replay a run larger than %d× the largest real run in ../shared/data (%d requests or %d tokens)", validate.MaxReplayScale, validate.MaxReplayRequests, validate.MaxReplayTokens))
	if err := parseFlags(fs, vllmArgs(args)); err != nil {
		return err
	}
	// SIGINT/SIGTERM stop validate within a second, in any phase (reading
	// the runs, replaying them, writing the figures), leaving no temporary
	// (interruptible's grace exit; the replays do not poll the signal).
	_, stopSignals := interruptible()
	defer stopSignals()
	base := scenario.Scenario{ModelsFile: s.ModelsFile, GPUsFile: s.GPUsFile, Model: s.Model, GPU: s.GPU, ModelConfig: s.ModelConfig}
	var vs []*validate.Validation
	var floor *validate.RepeatSpread
	if *ablation && fs.Changed("out") {
		return errors.New("validate: --ablation prints a table and writes no files: drop -o/--out")
	}
	switch {
	case *suite:
		if fs.NArg() > 0 {
			return fmt.Errorf("validate: --suite takes no RUN arguments (got %q)", fs.Arg(0))
		}
		if fs.Changed("ignore-kv-offload") {
			return errors.New("validate: --ignore-kv-offload applies to RUN arguments: the suite's files say which runs are replayed GPU-only (ignore_kv_offload)")
		}
		dir, err := scenario.FindDataDir(*data)
		if err != nil {
			return err
		}
		entries, err := validate.Suite()
		if err != nil {
			return err
		}
		if !*quiet {
			fmt.Fprintf(stdout, "Validation suite: %d files, data in %s.\n", len(entries), dir)
		}
		adjust := func(sc *scenario.Scenario) { override(fs, sc, &s) }
		if *ablation {
			bar := newProgress(stderr, *quiet, len(entries)*len(scenario.AblationEngines(nil)), "validate --suite --ablation")
			defer bar.Done()
			rows, err := validate.SuiteAblation(entries, dir, base, adjust, bar.Add)
			if err != nil {
				return err
			}
			bar.Done()
			return validate.WriteSuiteAblation(stdout, rows)
		}
		bar := newProgress(stderr, *quiet, len(entries), "validate --suite")
		defer bar.Done()
		for i := range entries {
			bar.Add()
			e := &entries[i]
			if !*quiet {
				fmt.Fprintf(stdout, "  %s\n", e.Describe())
			}
			got, err := e.Validate(dir, base, adjust)
			if err != nil {
				return err
			}
			vs = append(vs, got...)
		}
		if floor, err = validate.LoadRepeatSpread(filepath.Join(dir, "vllm-sim2real-runs")); err != nil {
			return err
		}
	case *ablation:
		return errors.New("validate: --ablation needs --suite")
	case fs.NArg() == 0:
		fs.Usage()
		return errors.New("validate: give one or more RUN paths, or --suite")
	default:
		if fs.Changed("data") {
			return errors.New("validate: --data applies to --suite only")
		}
		var runs []*realrun.Run
		for _, a := range fs.Args() {
			if err := resolveData(&a); err != nil {
				return err
			}
			got, err := realrun.OpenWith(a, realrun.OpenOptions{IgnoreKVOffload: *ignoreOffload})
			if err != nil {
				return err
			}
			runs = append(runs, got...)
		}
		if !*allowLarge {
			if err := validate.CheckReplaySize(runs); err != nil {
				return err
			}
		}
		var err error
		if vs, err = validate.ValidateRuns(runs, base, func(sc *scenario.Scenario) { override(fs, sc, &s) }); err != nil {
			return err
		}
	}
	files, err := validationFiles(vs)
	if err != nil {
		return err
	}
	if err := validate.WriteSuiteText(stdout, vs, floor); err != nil {
		return err
	}
	if *out == "" {
		return nil
	}
	if err := writeAllOrNothing(*out, files); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, filepath.Join(*out, f.name))
	}
	if !*quiet {
		fmt.Fprintf(stdout, "Wrote %s.\n", strings.Join(names, ", "))
	}
	return nil
}

// outFile is one output, in memory (CSV, JSON) or as a figure to draw.
type outFile struct {
	name string
	data []byte
	fig  *plots.Figure
}

// validationFiles builds every output before anything is written.
func validationFiles(vs []*validate.Validation) ([]outFile, error) {
	js, err := validate.ValidationJSON(vs)
	if err != nil {
		return nil, err
	}
	files := []outFile{{name: "validation.csv", data: validate.ValidationCSV(vs)}, {name: "validation.json", data: js}}
	var sims []*validate.Validation
	for _, v := range vs {
		if v.Plan != nil && len(v.Run.Requests) > 0 { // aggregate-only rows have no measured CDF
			sims = append(sims, v)
		}
	}
	for _, v := range sims {
		fig, err := plots.Validation(validationData(v))
		if err != nil {
			return nil, err
		}
		name := "validation.png"
		if len(sims) > 1 {
			name = "validation-" + slug(v.Run.Name) + ".png"
		}
		files = append(files, outFile{name: name, fig: fig})
	}
	if fig, err := suiteFigure(vs); err != nil {
		return nil, err
	} else if fig != nil {
		files = append(files, outFile{name: "validation-suite.png", fig: fig})
	}
	return files, nil
}

// suiteFigure draws, for more than three simulated runs, simulated against
// measured TTFT, TPOT and E2E means, the figures the suite's medians and
// ablation score: one point per run, or per stage of an inference-perf run
// (summary rows, which repeat the stages' requests, are left out). nil for
// three runs or fewer.
func suiteFigure(vs []*validate.Validation) (*plots.Figure, error) {
	n := 0
	for _, v := range vs {
		if v.Plan != nil {
			n++
		}
	}
	if n <= 3 {
		return nil, nil
	}
	panels, held := suitePanels(vs)
	caption := fmt.Sprintf("One point per run, or per load stage of an inference-perf H100 run (filled circle: stage 0, hollow square: stage 1); summary rows left out. %d of %d points held out (nothing fitted on the run).\n"+
		"Means, as the suite scores them (median |error| of the means over the held-out points). Simulated with engine %s. TPOT = (E2E − TTFT)/(output tokens − 1).", held, len(panels[0].Points), suiteEngine(vs))
	return plots.ValidationSuite("Validation suite: simulated against measured", caption, panels)
}

// suiteMetrics are the suite figure's panels: the means the suite scores.
var suiteMetrics = []struct{ metric, title string }{{"ttft_mean", "TTFT mean"}, {"tpot_mean", "TPOT mean"}, {"e2e_mean", "E2E latency mean"}}

// suitePanels returns the suite figure's points, one per simulated
// validation that is not an overlapping summary row, and how many of
// them are held out.
func suitePanels(vs []*validate.Validation) (panels []plots.SuitePanel, held int) {
	for _, m := range suiteMetrics {
		panels = append(panels, plots.SuitePanel{Title: m.title, Unit: "ms"})
	}
	for _, v := range vs {
		if v.Plan == nil || v.Overlap {
			continue
		}
		if len(v.Fitted) == 0 {
			held++
		}
		group, mark := validate.ShortRunName(v.Run.Name), 0
		if r := v.Run.Stage; r != nil {
			group = validate.ShortRunName(r.Experiment)
			fmt.Sscanf(r.Scope, "stage_%d", &mark)
		}
		for i, sm := range suiteMetrics {
			for _, m := range v.Metrics {
				if m.Metric == sm.metric {
					panels[i].Points = append(panels[i].Points, plots.SuitePoint{Group: group, Mark: mark, Real: m.Real, Sim: m.Sim})
				}
			}
		}
	}
	return panels, held
}

// suiteEngine names the engine the suite's simulations ran (they share
// the command's flags, so the first simulated one speaks for all).
func suiteEngine(vs []*validate.Validation) string {
	for _, v := range vs {
		if v.Plan != nil {
			name, _, _ := strings.Cut(v.Plan.EngineName(), ":") // the model's name, not its parameters
			return name
		}
	}
	return "none"
}

func validationData(v *validate.Validation) plots.ValidationData {
	d := plots.ValidationData{Label: v.Run.Name}
	for i := range v.Run.Requests {
		q := &v.Run.Requests[i]
		d.Real.TTFT = append(d.Real.TTFT, 1e3*q.TTFT())
		d.Real.E2E = append(d.Real.E2E, 1e3*q.E2E())
		if t, ok := q.TPOT(); ok {
			d.Real.TPOT = append(d.Real.TPOT, 1e3*t)
		}
	}
	for i := range v.SimRecs {
		r := &v.SimRecs[i]
		if r.Rejected != "" {
			continue
		}
		d.Sim.TTFT = append(d.Sim.TTFT, r.TTFT().Milliseconds())
		d.Sim.E2E = append(d.Sim.E2E, r.E2E().Milliseconds())
		if ms, ok := r.TPOT(); ok {
			d.Sim.TPOT = append(d.Sim.TPOT, ms)
		}
	}
	conv := func(ts []realrun.Tick) []plots.TickPoint {
		out := make([]plots.TickPoint, len(ts))
		for i, t := range ts {
			out[i] = plots.TickPoint{T: t.T, Running: float64(t.Running), PromptTPS: t.PromptTPS, GenTPS: t.GenTPS}
		}
		return out
	}
	if len(v.Run.Series) > 0 {
		d.RealSeries, d.SimSeries = conv(v.Run.Series), conv(v.SimTicks)
	}
	var errs []string
	for _, m := range v.Metrics {
		if e := m.Err(); !math.IsNaN(e) && strings.HasSuffix(m.Metric, "_mean") {
			errs = append(errs, fmt.Sprintf("%s %+.1f %%", strings.TrimSuffix(m.Metric, "_mean"), 100*e))
		}
	}
	d.Caption = fmt.Sprintf("Measured: vLLM (%s). Simulated: servesim, %s.\nErrors of the means (sim − real)/real, as the suite scores them: %s. Measured time series aligned to the first arrival within its 1 s tick.",
		v.Run.Format, v.Plan.Kernel, strings.Join(errs, ", "))
	return d
}

func slug(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '-'
	}, s)
}

// writeAllOrNothing writes every file into a temporary directory inside
// dir and then renames them into place, so a failure leaves no new file.
func writeAllOrNothing(dir string, files []outFile) error {
	if err := scenario.MkdirAll(dir); err != nil {
		return err
	}
	tmp, err := scenario.TempDir(dir, scenario.TempPrefix+"validate-*")
	if err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	defer scenario.RemoveTempDir(tmp)
	for _, f := range files {
		p := filepath.Join(tmp, f.name)
		if f.fig != nil {
			err = plots.Save(f.fig, p, plots.DefaultWidth, plots.DefaultHeight)
		} else {
			err = os.WriteFile(p, f.data, 0o644)
		}
		if err != nil {
			return fmt.Errorf("validate: writing %s: %w", f.name, err)
		}
	}
	return scenario.CommitTempDir(tmp, func() error {
		for _, f := range files {
			if err := os.Rename(filepath.Join(tmp, f.name), filepath.Join(dir, f.name)); err != nil {
				return fmt.Errorf("validate: %w", err)
			}
		}
		return nil
	})
}
