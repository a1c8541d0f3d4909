package plots

import (
	"math"
	"strings"
	"testing"
)

// TestSpeedup: the speedup is the baseline's metric over the curve's, per
// x, averaged over seeds first: at rate 1 off has TPOT (10 + 12)/2 = 11 ms
// and eagle3 5.5 ms: 2×; at rate 4, 20 / 16 = 1.25×.
func TestSpeedup(t *testing.T) {
	csv := "workload.rate,speculative,seed,tpot_mean_ms\n" +
		"1,off,1,10\n1,off,2,12\n1,eagle3,1,5.5\n4,off,1,20\n4,eagle3,1,16\n"
	res, err := ReadResults(strings.NewReader(csv), "r.csv")
	if err != nil {
		t.Fatal(err)
	}
	p, n, err := Speedup(res, SpeedupOptions{})
	if err != nil || p == nil {
		t.Fatal(err)
	}
	if len(n.Curves) != 1 || n.Curves[0].Label != "eagle3" {
		t.Fatalf("curves %+v", n.Curves)
	}
	c := n.Curves[0]
	if len(c.X) != 2 || math.Abs(c.Speedup[0]-2) > 1e-12 || math.Abs(c.Speedup[1]-1.25) > 1e-12 {
		t.Errorf("speedups %v at %v, want [2 1.25] at [1 4]", c.Speedup, c.X)
	}
	if _, _, err := Speedup(res, SpeedupOptions{Baseline: "none"}); err == nil || !strings.Contains(err.Error(), `"none"`) {
		t.Errorf("missing baseline: %v", err)
	}
}
