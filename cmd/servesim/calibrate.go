package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/hardware/calibrate"
	"github.com/servesim/servesim/models"
)

const calibrateUsage = `Usage: servesim calibrate --trace PATH --gpu GPU [-o FILE] [flags]
       servesim calibrate --report --trace DIR [--measured FILE]...
       servesim calibrate --transfer FILE --gpu GPU [-o FILE]
       servesim calibrate --builtin GPU

Fits servesim's kernel-time model to measured kernel timings and writes a
calibrated profile (TOML) for ` + "`servesim run --profile FILE`" + `: per operator
class a fixed overhead, a compute efficiency that saturates in the token
count (for GEMMs, or the time of whole waves of output tiles on the GPU's
SMs, whichever is faster) and a memory efficiency; per TP degree the all-reduce latency and link
efficiency; the per-iteration CPU overhead; the fit errors; and where it all
came from. Given 2,000 or more dense BF16 GEMM timings with known shapes, the
fit also grows residual trees (gradient-boosted regression trees over shape
and wave features) that correct the GEMM times for the kernel cuBLAS picks
per shape; --no-trees leaves them out. Attention kernels, absent from
Vidur's traces, are fitted to LLMServingSim's profile bundles (vLLM
FlashAttention calls: prefill, decode-only and mixed batches); a GPU
without attention timings takes another GPU's fit, and the profile says
which.

Traces (--format, guessed from --trace when not given):
  vidur   a copy of Vidur's data/profiling: compute/<gpu>/<org>/<model>/mlp.csv,
          network/<gpu>_dgx/all_reduce.csv, historical/<gpu>/cpu_overheads.csv
  native  servesim's CSV, one kernel timing per row:
          gpu,op,model,tp,tokens,precision,flops,bytes,comm_bytes,time_us
          (op: embed, norm, qkv, rope, attn_prefill, attn_decode, out_proj,
          all_reduce, moe_router, mlp_up, act, mlp_down, add, lm_head; a row
          names a catalog model with tokens and tp, or gives flops and bytes;
          '#' starts a comment; see hardware/calibrate/native.go)
  bundle  LLMServingSim profile bundles: a directory with meta.yaml and
          tp<N>/attention.csv (or a folder of such, e.g.
          ../shared/data/llmservingsim/profiles); fits attention only and
          keeps the rest of --base (default: the GPU's built-in profile)

--report prints the accuracy report on a Vidur trace directory: in-sample,
held out by model, held out by GPU (A100 <-> H100 through the specs), what
the model reaches fitted to each GEMM shape alone (with and without waves),
per-layer step times, and GEMM efficiency per precision (BF16, FP8) on XLA's
measured matmul table held out by shape (--xla FILE; default: xla-matmul/
matmul.csv beside the trace directory, skipped if absent). --transfer moves a fitted
profile to another GPU through its specs (same efficiencies, the new peaks).
The built-in profiles (a100, h100 fitted; h200, b200 transferred from h100)
are regenerated with ` + "`go generate ./hardware/calibrate`" + `.

On a terminal a fit draws a progress bar with an ETA over its stages (the
operator classes, attention, the all-reduce, the residual trees). -q prints
only the result: the profile or report on stdout, or with -o nothing at all
(no "Wrote" line, no summary, no fit warnings; they stay in the profile's
notes).

Examples:
  servesim calibrate --trace ../shared/data/vidur-profiling --gpu h100 -o h100.toml
  servesim calibrate --trace my-h200-kernels.csv --gpu h200 -o h200.toml
  servesim calibrate --report --trace ../shared/data/vidur-profiling --measured hardware/calibrate/testdata/h200_randn.csv
  servesim calibrate --trace ../shared/data/llmservingsim/profiles/H100 --gpu h100 -o h100.toml
  servesim calibrate --report --trace ../shared/data/llmservingsim/profiles
  servesim calibrate --transfer h100.toml --gpu b200 -o b200.toml
  servesim calibrate --builtin h200
`

func calibrateCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("calibrate", calibrateUsage, stderr)
	trace := fs.String("trace", "", "trace: a Vidur data/profiling directory, an LLMServingSim profile bundle directory, or a native CSV file")
	format := fs.String("format", "", "trace format: vidur, native or bundle (default: bundle for a directory with meta.yaml bundles, vidur for another directory, native for a file)")
	base := fs.String("base", "", "with a bundle trace: the profile whose other classes the fitted attention joins (default: the GPU's built-in profile)")
	gpu := fs.String("gpu", "", "GPU to fit (or transfer to), a catalog name (see `servesim gpus`)")
	out := fs.StringP("output", "o", "", "write the profile (or report) here instead of to stdout")
	node := fs.String("node", "", "Vidur network/<node> directory of the all-reduce profile (default <gpu>_dgx)")
	cpu := fs.String("cpu-overheads", "", "Vidur cpu_overheads.csv, relative to --trace (default historical/<gpu>/, else the only historical/*/ one)")
	report := fs.Bool("report", false, "print the accuracy report of a Vidur trace directory (Markdown)")
	xla := fs.String("xla", "", "with --report: XLA's matmul table (matmul.csv) for the GEMM-precision section (default: ../xla-matmul/matmul.csv beside --trace)")
	measured := fs.StringArray("measured", nil, "with --report: native CSV of a GPU without a trace, predicted by the transferred H100 fit (repeatable)")
	transfer := fs.String("transfer", "", "transfer this fitted profile to --gpu through the specs")
	builtin := fs.String("builtin", "", "print the built-in profile of a GPU (a100, h100, h200, b200, rtx-pro-6000, rtx-4090)")
	noTrees := fs.Bool("no-trees", false, "fit the parametric GEMM model alone, without the residual trees")
	modelsFile := fs.String("models-file", "", "TOML file of extra models (for traces of models outside the catalog)")
	gpusFile := fs.String("gpus-file", "", "TOML file of extra GPUs")
	quiet := fs.BoolP("quiet", "q", false, "print only the result (with -o: nothing): no progress bar, no \"Wrote\" line or summary")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, stopSignals := interruptible() // SIGINT/SIGTERM: exit 130 within a second, no temporary left
	defer stopSignals()
	if fs.NArg() > 0 {
		return fmt.Errorf("calibrate: unexpected arguments %q", fs.Args())
	}
	modes := 0
	for _, on := range []bool{*report, *transfer != "", *builtin != ""} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		return fmt.Errorf("calibrate: --report, --transfer and --builtin are exclusive")
	}
	gpus := hardware.Builtin()
	if *gpusFile != "" {
		if err := gpus.LoadFile(*gpusFile); err != nil {
			return err
		}
	}
	cat := models.Builtin()
	if *modelsFile != "" {
		if err := cat.LoadFile(*modelsFile); err != nil {
			return err
		}
	}
	emit := func(data []byte, what string) error {
		if *out == "" {
			_, err := stdout.Write(data)
			return err
		}
		if err := writeFileAtomic(*out, data); err != nil {
			return err
		}
		fmt.Fprintf(unlessQuiet(stdout, *quiet), "Wrote %s to %s.\n", what, *out)
		return nil
	}
	describe := *out != "" && !*quiet // a summary beside a written profile
	// emitProfile writes p, g's profile, as the command's output (emit)
	// and, beside a written profile, prints its summary.
	emitProfile := func(p *calibrate.Profile, g *hardware.GPU) error {
		if err := emit(p.WriteTOML(), "the "+g.Name+" profile"); err != nil {
			return err
		}
		if describe {
			fmt.Fprintln(stdout, p.Describe())
		}
		return nil
	}
	if err := checkCalibrateOutput(*out, *trace, append([]string{*base, *transfer, *xla, *modelsFile, *gpusFile}, *measured...)); err != nil {
		return err
	}

	if err := resolveData(trace); err != nil {
		return err
	}
	switch {
	case *builtin != "":
		p, ok := calibrate.Builtin(*builtin)
		if !ok {
			return fmt.Errorf("calibrate: no built-in profile for %q (built in: %s)", *builtin, strings.Join(calibrate.BuiltinGPUs, ", "))
		}
		return emit(p.WriteTOML(), "the built-in "+p.GPU+" profile")

	case *report:
		if *trace == "" {
			return fmt.Errorf("calibrate: --report needs --trace DIR (a copy of Vidur's data/profiling)")
		}
		if st, err := os.Stat(*trace); err != nil {
			return fmt.Errorf("calibrate: --report --trace %s: %w", *trace, errors.Unwrap(err))
		} else if !st.IsDir() {
			return fmt.Errorf("calibrate: --report --trace %s: not a directory (want a copy of Vidur's data/profiling, or LLMServingSim profile bundles)", *trace)
		}
		var acc *calibrate.Accuracy
		if *format == "bundle" || *format == "" && calibrate.IsBundleDir(*trace) {
			t, _, err := calibrate.EvaluateAttention(*trace)
			if err != nil {
				return err
			}
			acc = &calibrate.Accuracy{Attention: t}
		} else {
			var err error
			acc, err = calibrate.Evaluate(*trace, calibrate.ReportOptions{Measured: *measured, XLA: *xla})
			if err != nil {
				return err
			}
		}
		var b strings.Builder
		if err := acc.Markdown(&b); err != nil {
			return err
		}
		return emit([]byte(b.String()), "the accuracy report")

	case *transfer != "":
		if *gpu == "" {
			return fmt.Errorf("calibrate: --transfer needs --gpu, the GPU to transfer to")
		}
		g, err := gpus.Get(*gpu)
		if err != nil {
			return err
		}
		p, err := calibrate.LoadProfile(*transfer)
		if err != nil {
			return err
		}
		t, err := calibrate.Transfer(p, g)
		if err != nil {
			return err
		}
		return emitProfile(t, g)
	}

	if *trace == "" || *gpu == "" {
		fs.Usage()
		return fmt.Errorf("calibrate: --trace and --gpu are required")
	}
	g, err := gpus.Get(*gpu)
	if err != nil {
		return err
	}
	info, err := os.Stat(*trace)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	f := *format
	if f == "" {
		f = "native"
		if info.IsDir() {
			f = "vidur"
			if calibrate.IsBundleDir(*trace) {
				f = "bundle"
			}
		}
	}
	if f == "bundle" {
		return calibrateBundle(*trace, info.IsDir(), g, gpus, *base, emitProfile)
	}
	var tr *calibrate.Trace
	withAttention := false
	opt := calibrate.FitOptions{Trace: filepath.Base(filepath.Clean(*trace)), Format: f, NoTrees: *noTrees}
	switch f {
	case "vidur":
		if !info.IsDir() {
			return fmt.Errorf("calibrate: --format vidur needs a directory (a copy of Vidur's data/profiling), not %s", *trace)
		}
		tr, err = calibrate.LoadVidur(*trace, g.Name, calibrate.VidurOptions{Node: *node, Catalog: cat, CPUOverheads: *cpu})
		if err != nil {
			return err
		}
		opt.Notes = calibrate.VidurNotes(g.Name)
		withAttention = true
	case "native":
		if info.IsDir() {
			return fmt.Errorf("calibrate: --format native needs a CSV file, not the directory %s", *trace)
		}
		file, err := os.Open(*trace)
		if err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
		ss, err := calibrate.ReadNative(file, filepath.Base(*trace), cat)
		file.Close()
		if err != nil {
			return err
		}
		tr = &calibrate.Trace{Samples: ss, Sources: []string{filepath.Base(*trace)}}
	default:
		return fmt.Errorf("calibrate: --format %q: want vidur, native or bundle", f)
	}
	var bar func()
	opt.OnProgress, bar = progressFunc(stderr, *quiet, "calibrate "+g.Name+": fit stages")
	p, err := calibrate.FitProfile(tr, g, opt)
	bar()
	if err != nil {
		return err
	}
	// As the built-in profiles: attention (and MoE) from LLMServingSim's bundles
	// when they sit beside Vidur's data (../shared/data/llmservingsim).
	if bd := calibrate.BundlesDir(*trace); withAttention && calibrate.IsBundleDir(bd) {
		if _, err := calibrate.AttachAttention(p, bd); err != nil {
			return err
		}
		// And [moe] from the bundles' moe.csv of this GPU, if any.
		if _, err := calibrate.AttachMoE(p, bd); err != nil {
			return err
		}
	}
	if err := emitProfile(p, g); err != nil {
		return err
	}
	if describe {
		for _, w := range p.FitWarnings() {
			fmt.Fprintln(stdout, "  "+w)
		}
	}
	return nil
}

// checkCalibrateOutput refuses an -o that would overwrite an input: the
// trace (a file, or any file inside a trace directory, such as a bundle's
// meta.yaml) or another input file. trace may be a data set name
// (resolveData), resolved here too.
func checkCalibrateOutput(out, trace string, inputs []string) error {
	if out == "" {
		return nil
	}
	if trace != "" {
		if err := resolveData(&trace); err != nil {
			return err
		}
		if st, err := os.Stat(trace); err == nil && st.IsDir() {
			if scenario.Inside(out, trace) {
				return fmt.Errorf("calibrate: -o %s is inside the trace directory %s, an input: write the profile elsewhere", out, trace)
			}
		} else {
			inputs = append(inputs, trace)
		}
	}
	if err := scenario.CheckOutputs([]string{out}, inputs); err != nil {
		return fmt.Errorf("calibrate: -o: %w", err)
	}
	return nil
}

// writeFileAtomic writes a profile to path whole or not at all, mode 0644
// (scenario.WriteFileAtomic), after removing the temporaries an earlier
// interrupted servesim left beside it.
func writeFileAtomic(path string, data []byte) error {
	if _, err := scenario.SweepStale(filepath.Dir(path), time.Now()); err != nil {
		return err
	}
	return scenario.WriteFileAtomic(path, data)
}

// calibrateBundle fits attention to the bundles under dir for GPU g and
// writes base (or g's built-in profile) with it (emitProfile).
func calibrateBundle(dir string, isDir bool, g *hardware.GPU, gpus *hardware.Catalog, base string, emitProfile func(*calibrate.Profile, *hardware.GPU) error) error {
	if !isDir {
		return fmt.Errorf("calibrate: --format bundle needs a directory (an LLMServingSim profile bundle, with meta.yaml), not %s", dir)
	}
	var p *calibrate.Profile
	if base != "" {
		var err error
		if p, err = calibrate.LoadProfile(base); err != nil {
			return err
		}
		if p.GPU != g.Name {
			return fmt.Errorf("calibrate: --base %s is the %s profile, not %s's", base, p.GPU, g.Name)
		}
	} else {
		var ok bool
		if p, ok = calibrate.Builtin(g.Name); !ok {
			return fmt.Errorf("calibrate: a bundle trace fits attention only, and gpu %q has no built-in profile for the other operators: give one with --base FILE (built in: %s)", g.Name, strings.Join(calibrate.BuiltinGPUs, ", "))
		}
	}
	q, err := calibrate.WithBundleAttention(p, dir, gpus)
	if err != nil {
		return err
	}
	return emitProfile(q, g)
}
