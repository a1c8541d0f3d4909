package hardware

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// TestLayerSkews: per-layer skews price each MoE layer at its own. One
// value in every layer is the one-skew step; half the layers at a and half
// at b is the mean of the steps at a and at b (the MoE operators and the
// all-to-all are each layer's share, the rest is the same), with and
// without two-batch overlap's split spreading them evenly; wrong counts and
// values are errors.
func TestLayerSkews(t *testing.T) {
	ep := func(skew float64) models.Parallel {
		return models.Parallel{TP: 1, Weights: models.FP8, KV: models.BF16, EP: models.ExpertParallel{Size: 32, DP: 32, Skew: skew}}
	}
	const a, b = 1.0, 1.5 // DeepSeek-V3: 58 MoE layers, 29 at each
	mixed := make([]float64, 58)
	same := make([]float64, 58)
	for i := range mixed {
		mixed[i], same[i] = a, 1.2
		if i%2 == 1 {
			mixed[i] = b
		}
	}
	for _, backend := range []string{DeepEPHighThroughput, DeepEPLowLatency} {
		batch := models.Batch{Decodes: 128, DecodeCtx: 128 * 2000}
		one := testExpertStep(t, "h100", ep(1.2), backend, 8)
		layered := testExpertStep(t, "h100", ep(1.2), backend, 8)
		if err := layered.SetLayerSkews(same); err != nil {
			t.Fatal(err)
		}
		s1, _, _ := one.Step(batch)
		s2, _, _ := layered.Step(batch)
		if math.Abs(s2-s1) > 1e-12*s1 {
			t.Errorf("%s: 58 layers at 1.2: step %v, one skew 1.2: %v", backend, s2, s1)
		}
		atA, _, _ := testExpertStep(t, "h100", ep(a), backend, 8).Step(batch)
		atB, _, _ := testExpertStep(t, "h100", ep(b), backend, 8).Step(batch)
		mix := testExpertStep(t, "h100", ep((a+b)/2), backend, 8)
		if err := mix.SetLayerSkews(mixed); err != nil {
			t.Fatal(err)
		}
		got, _, _ := mix.Step(batch)
		if want := (atA + atB) / 2; math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s: half the layers at %v, half at %v: step %v, want the steps' mean %v (%v, %v)", backend, a, b, got, want, atA, atB)
		}
		if !(got > atA && got < atB) {
			t.Errorf("%s: mixed step %v not between %v and %v", backend, got, atA, atB)
		}
		// Under two-batch overlap the halves' compute and all-to-all sum
		// the layers' own as well: equal skews give the one-skew step.
		one.SetTBO(&SGLangTBO)
		layered.SetTBO(&SGLangTBO)
		t1, _, _ := one.Step(batch)
		t2, _, _ := layered.Step(batch)
		if math.Abs(t2-t1) > 1e-12*t1 {
			t.Errorf("%s with TBO: 58 layers at 1.2: step %v, one skew: %v", backend, t2, t1)
		}
	}
	e := testExpertStep(t, "h100", ep(1.1), DeepEPLowLatency, 8)
	for _, c := range []struct {
		skews []float64
		want  string
	}{
		{make([]float64, 57), "57 layer skews for model \"deepseek-v3\"'s 58 MoE layers"},
		{append([]float64{0.9}, same[1:]...), "layer skew 0 is 0.9"},
		{append([]float64{33}, same[1:]...), "want [1, ep 32]"},
		{append([]float64{math.NaN()}, same[1:]...), "layer skew 0 is NaN"},
	} {
		if err := e.SetLayerSkews(c.skews); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SetLayerSkews: %v, want %q", err, c.want)
		}
	}
}
