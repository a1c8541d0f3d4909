package calibrate

import (
	"fmt"
	"sort"
)

// IterOverheadFit is the per-iteration CPU overhead fitted to a
// cpu_overheads.csv: Total() ≈ Fixed + PerRequest · batch, by least squares
// over the rows at TP 1 (the rows at TP > 1 add sarathi-serve's multi-worker
// costs).
type IterOverheadFit struct {
	Fixed      float64 // seconds per iteration at batch 0
	PerRequest float64 // seconds per request in the batch
	Rows       int     // rows fitted
	MinBatch   int
	MaxBatch   int
	Source     string // file
}

// FitIterOverhead fits Fixed + PerRequest·batch to the TP-1 rows.
func FitIterOverhead(rows []CPUOverheadRow, file string) (*IterOverheadFit, error) {
	var xs, ys []float64
	f := &IterOverheadFit{Source: file}
	for _, r := range rows {
		if r.TP != 1 {
			continue
		}
		xs = append(xs, float64(r.Batch))
		ys = append(ys, r.Total())
		if f.Rows == 0 || r.Batch < f.MinBatch {
			f.MinBatch = r.Batch
		}
		if r.Batch > f.MaxBatch {
			f.MaxBatch = r.Batch
		}
		f.Rows++
	}
	if f.Rows < 2 {
		return nil, fmt.Errorf("calibrate: %s: %d rows at tensor_parallel_degree 1, need 2 to fit an iteration overhead", file, f.Rows)
	}
	sorted := append([]float64(nil), xs...)
	sort.Float64s(sorted)
	if sorted[0] == sorted[len(sorted)-1] {
		return nil, fmt.Errorf("calibrate: %s: every TP-1 row has batch_size %v: cannot fit a slope", file, sorted[0])
	}
	f.Fixed, f.PerRequest = lineFit(xs, ys)
	return f, nil
}

// lineFit returns a, b minimising Σ (a + b·x − y)².
func lineFit(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	b = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	a = (sy - b*sx) / n
	return a, b
}
