package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/servesim/servesim/experiments/scenario"
)

// saveResultFlags are `vllm bench serve`'s result-file flags.
type saveResultFlags struct {
	save                  bool
	filename, dir, label  string
	percentiles, pmetrics string
}

func addSaveResultFlags(fs *pflag.FlagSet, f *saveResultFlags) {
	fs.BoolVar(&f.save, "save-result", false, "also write the results as vllm bench serve --save-result does (its JSON keys)")
	fs.StringVar(&f.filename, "result-filename", "", "--save-result's file (default: vLLM's {backend}-{rate}qps-{model}-{date}.json)")
	fs.StringVar(&f.dir, "result-dir", "", "--save-result's directory (default: the current one)")
	fs.StringVar(&f.label, "label", "", "--save-result's label (default: the backend, servesim)")
	fs.StringVar(&f.percentiles, "metric-percentiles", "99", "--save-result's percentiles, comma-separated: of 0, 50, 90, 95, 99, 100")
	fs.StringVar(&f.pmetrics, "percentile-metrics", "ttft,tpot,itl", "--save-result's metrics with percentiles: of ttft, tpot, itl, e2el")
}

// options checks the flags before the run, so that a typo fails at once.
func (f *saveResultFlags) options(fs *pflag.FlagSet) (scenario.VLLMResultOptions, error) {
	o := scenario.VLLMResultOptions{Label: f.label}
	if !f.save {
		for _, n := range []string{"result-filename", "result-dir", "label", "metric-percentiles", "percentile-metrics"} {
			if fs.Changed(n) {
				return o, fmt.Errorf("run: --%s applies to --save-result (add it)", n)
			}
		}
		return o, nil
	}
	var err error
	if o.Percentiles, err = scenario.ParseVLLMPercentiles(f.percentiles); err != nil {
		return o, err
	}
	o.Metrics, err = scenario.ParseVLLMMetrics(f.pmetrics)
	return o, err
}

// path is the vLLM result file's path: --result-filename (default vLLM's
// name for this run) in --result-dir.
func (f *saveResultFlags) path(rep *scenario.Report, o scenario.VLLMResultOptions) string {
	name := f.filename
	if name == "" {
		name = rep.VLLMResultFileName(o)
	}
	if f.dir != "" {
		name = filepath.Join(f.dir, name)
	}
	return name
}

// check refuses, before the run, a --result-filename that is one of the
// run's own files in out (requests.csv, steps.csv, summary.json) or one of
// its inputs (--result-filename trace.csv beside --trace trace.csv). A
// default name holds the date and cannot collide.
func (f *saveResultFlags) check(out string, plan *scenario.Plan) error {
	if !f.save || f.filename == "" {
		return nil
	}
	p := f.filename
	if f.dir != "" {
		p = filepath.Join(f.dir, p)
	}
	outs := []string{p}
	if out != "" {
		for _, n := range scenario.RunFiles() {
			outs = append(outs, filepath.Join(out, n))
		}
	}
	if err := scenario.CheckOutputs(outs, plan.InputFiles()); err != nil {
		return fmt.Errorf("run: --result-filename: %w", err)
	}
	return nil
}

// write writes the vLLM result file and returns its path ("" when
// --save-result is off).
func (f *saveResultFlags) write(rep *scenario.Report, o scenario.VLLMResultOptions) (string, error) {
	if !f.save {
		return "", nil
	}
	o.Date = resultDate().Format("20060102-150405")
	data, err := rep.VLLMResult(o)
	if err != nil {
		return "", err
	}
	if f.dir != "" {
		if err := scenario.MkdirAll(f.dir); err != nil {
			return "", err
		}
	}
	name := f.path(rep, o)
	if err := scenario.WriteFileAtomic(name, data); err != nil {
		return "", err
	}
	return name, nil
}

// resultDate is the date vLLM's result file records: the wall clock, or
// SOURCE_DATE_EPOCH (seconds since 1970, the reproducible-builds
// convention) when set, so that a rerun can give a byte-identical file.
func resultDate() time.Time {
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Now()
}
