package plots

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// SweepOptions configure DrawSweep.
type SweepOptions struct {
	SLO              SLO     // the sweep's objectives (its base scenario's [slo])
	Target           float64 // attainment target of the max-goodput rate (default 0.9)
	TargetThroughput float64 // output tokens/s for the matrices (0: see MatrixOptions)
	Width, Height    int     // pixels (default DefaultWidth × DefaultHeight)
}

// DrawSweep draws the default plots of a sweep's results file into dir
// and returns the files written, in this order:
//
//   - goodput.png when an axis is workload.rate (Goodput);
//   - batch-latency.png when an axis is batch.max_num_seqs (BatchLatency);
//   - perception.png and provider-fit.png always (Perception, ProviderFit).
//
// A plot that cannot be drawn does not stop the others: the error returned
// joins every failure, and the files list holds what was written.
func DrawSweep(dir, resultsFile string, o SweepOptions) ([]string, error) {
	res, err := ReadResultsFile(resultsFile)
	if err != nil {
		return nil, err
	}
	w, h := o.Width, o.Height
	if w == 0 {
		w = DefaultWidth
	}
	if h == 0 {
		h = DefaultHeight
	}
	type job struct {
		name string
		draw func() (Drawer, error)
	}
	var jobs []job
	if slices.Contains(res.Axes, "workload.rate") {
		jobs = append(jobs, job{"goodput.png", func() (Drawer, error) {
			f, _, err := Goodput(res, GoodputOptions{X: "workload.rate", Target: o.Target})
			return f, err
		}})
	}
	if slices.Contains(res.Axes, "batch.max_num_seqs") {
		jobs = append(jobs, job{"batch-latency.png", func() (Drawer, error) {
			f, _, err := BatchLatency(res, BatchLatencyOptions{X: "batch.max_num_seqs", SLO: o.SLO})
			return f, err
		}})
	}
	mo := MatrixOptions{SLO: o.SLO, TargetThroughput: o.TargetThroughput}
	jobs = append(jobs,
		job{"perception.png", func() (Drawer, error) {
			p, _, err := Perception(res, mo)
			return p, err
		}},
		job{"provider-fit.png", func() (Drawer, error) {
			p, _, err := ProviderFit(res, mo)
			return p, err
		}})
	var files []string
	var errs []error
	for _, j := range jobs {
		d, err := j.draw()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", j.name, err))
			continue
		}
		path := filepath.Join(dir, j.name)
		if err := Save(d, path, w, h); err != nil {
			errs = append(errs, err)
			continue
		}
		files = append(files, path)
	}
	return files, errors.Join(errs...)
}
