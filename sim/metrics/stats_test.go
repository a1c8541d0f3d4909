package metrics

import (
	"math"
	"slices"
	"testing"
)

// TestPercentileNumpy checks order statistics against numpy 1.24
// (np.median, np.percentile(x, p), default method "linear"), bit for bit.
// By hand, for [1,2,3,4]: p90 → h = 0.9·3 = 2.7, x[2] + 0.7·(x[3]−x[2]) = 3.7;
// p95 → h = 2.85, 3.85 (3.8499999999999996 in float64); p99 → h = 2.97, 3.97.
func TestPercentileNumpy(t *testing.T) {
	tests := []struct {
		x                         []float64
		mean, std, median         float64
		p90, p95, p99, min, maxim float64
	}{
		{[]float64{1, 2, 3, 4}, 2.5, 1.118033988749895, 2.5, 3.7, 3.8499999999999996, 3.9699999999999998, 1, 4},
		// h = 0.9·4 = 3.6: 40 + 0.6·10 = 46; h = 3.8: 48; h = 3.96: 49.6.
		{[]float64{15, 20, 35, 40, 50}, 32, 12.884098726725126, 35, 46, 48, 49.6, 15, 50},
		{[]float64{7}, 7, 0, 7, 7, 7, 7, 7, 7},
		{[]float64{0.1, 0.2, 0.3}, 0.20000000000000004, 0.0816496580927726, 0.2, 0.28, 0.29, 0.298, 0.1, 0.3},
		// Unsorted input with a large value: sorted [-2, 1.5, 2.25, 3.75, 1e9].
		{[]float64{1.5, 2.25, 1e9, 3.75, -2}, 200000001.1, 399999999.45, 2.25, 600000001.5, 800000000.7499998, 960000000.15, -2, 1e9},
		// Even n: median is the mean of the middle two, (100+100)/2 = 100.
		{[]float64{100, 100, 100, 100, 250, 350}, 166.66666666666666, 98.60132971832694, 100, 300, 325, 345, 100, 350},
	}
	for _, tt := range tests {
		x := slices.Clone(tt.x)
		slices.Sort(x)
		s := sampleStats(x)
		want := Stats{N: int64(len(x)), Mean: tt.mean, Std: tt.std, Min: tt.min, Median: tt.median, P90: tt.p90, P95: tt.p95, P99: tt.p99, Max: tt.maxim}
		if !near(s.Mean, want.Mean, 1e-15) || !near(s.Std, want.Std, 1e-15) {
			t.Errorf("%v: mean %v std %v, want %v %v", tt.x, s.Mean, s.Std, want.Mean, want.Std)
		}
		s.Mean, s.Std = want.Mean, want.Std
		if s != want {
			t.Errorf("%v:\n got %+v\nwant %+v", tt.x, s, want)
		}
	}
	if s := sampleStats(nil); s != (Stats{}) {
		t.Errorf("empty sample: %+v", s)
	}
	// np.percentile([1,2,3,4], 50) = 2.5 and np.percentile([15,20,35,40,50], 40) = 29
	// (h = 0.4·4 = 1.6: 20 + 0.6·15 = 29).
	at := func(x []float64) func(int64) float64 { return func(k int64) float64 { return x[k] } }
	if p := percentile(4, at([]float64{1, 2, 3, 4}), 50); p != 2.5 {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(5, at([]float64{15, 20, 35, 40, 50}), 40); p != 29 {
		t.Errorf("p40 = %v", p)
	}
	if p := percentile(5, at([]float64{15, 20, 35, 40, 50}), 100); p != 50 {
		t.Errorf("p100 = %v", p)
	}
}

func near(a, b, rel float64) bool {
	return a == b || math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}
