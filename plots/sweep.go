package plots

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
)

// SweepOptions configure DrawSweep.
type SweepOptions struct {
	SLO              SLO     // the sweep's objectives (its base scenario's [slo])
	Target           float64 // attainment target of the max-goodput rate (default 0.9)
	TargetThroughput float64 // output tokens/s for the matrices (0: see MatrixOptions)
	Width, Height    int     // pixels (default DefaultWidth × DefaultHeight)
	// Workers is how many plots are drawn at once, and how many goroutines
	// filter a PNG's rows (≤ 0: all cores; 1: one plot after the other, on
	// one goroutine). Each plot is drawn and written on its own canvas,
	// and encodePNG writes the same bytes whatever the count, so the
	// files do not depend on it.
	Workers int
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
	return DrawSweepResults(dir, res, o)
}

// DrawSweepResults is DrawSweep on results already read (ReadResults): what
// the sweep command draws from the CSV it has just written, without reading
// the file back.
func DrawSweepResults(dir string, res *Results, o SweepOptions) ([]string, error) {
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
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// One goroutine a plot, at most workers of them working at once, each
	// drawing, rasterizing and writing its plot in one go: a PNG's rows are
	// filtered on up to workers goroutines while it is deflated
	// (encodePNG), so the last plot's encoding does not leave cores idle,
	// and a plot's image is handed to the next (rgbaPool) rather than
	// every plot touching fresh memory. Each goroutine writes only its own
	// slot; the files and errors are listed in job order.
	paths := make([]string, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			path := filepath.Join(dir, j.name)
			d, err := j.draw()
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", j.name, err)
				return
			}
			canvas, err := renderCanvas(d, path, w, h, workers)
			if err == nil {
				err = writeCanvas(canvas, path)
			}
			if errs[i] = err; err == nil {
				paths[i] = path
			}
		}()
	}
	wg.Wait()
	var files []string
	for _, p := range paths {
		if p != "" {
			files = append(files, p)
		}
	}
	return files, errors.Join(errs...)
}
