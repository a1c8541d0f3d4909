package hardware

import (
	"math"
	"testing"
)

// TestStagedStep checks SGLang's stage schedule by hand on one MoE layer
// of two equal micro-batches (layers = moe = 1, no contention): the
// all-to-all hides only behind the compute its stage pairing names.
func TestStagedStep(t *testing.T) {
	two := func(v float64) [2]float64 { return [2]float64{v, v} }
	for _, c := range []struct {
		name    string
		p, c, x float64 // attention prepare, core, MoE operators a micro-batch
		d, k    float64 // dispatch, combine a micro-batch
		prefill bool
		want    float64
	}{
		// Decode: the experts hide nothing: per layer 2x + 2·max(p, d) +
		// 2·max(c, k) with p = c = 0.1, x = 1, d = k = 0.5: 2 + 1 + 1 = 4,
		// edges p − max(p, d) + c − max(c, k) + d + k = 0.1 − 0.5 + 0.1 −
		// 0.5 + 1 = 0.2: 4.2 (main's overlap hid the all-to-all behind all
		// 1.2 of a micro-batch's compute: 2·1.2 + min(1.2, 1) = 3.4).
		{"decode, experts hide nothing", 0.1, 0.1, 1, 0.5, 0.5, false, 4.2},
		// Decode, all-to-all shorter than the attention it pairs with:
		// 2·(0.1 + 0.5 + 0.5) = 2.2, edges 0.5 − 0.5 + 0.5 − 0.5 + 0.2 +
		// 0.2 = 0.4: 2.6.
		{"decode, hidden", 0.5, 0.5, 0.1, 0.2, 0.2, false, 2.6},
		// Prefill: max(X, d) + max(x, d) + max(x, k) + max(X, k) with X =
		// p + c = 1, x = 1, d = k = 0.5: 4; edges X − max(X, k) + k = 0.5:
		// 4.5.
		{"prefill, hidden", 0.5, 0.5, 1, 0.5, 0.5, true, 4.5},
		// Prefill, the all-to-all longer than every block: 4 × 2 = 8 plus
		// edges 1 − 2 + 2 = 1: 9, under the serial 2·2 + 2·4 = 12.
		{"prefill, exposed", 0.5, 0.5, 1, 2, 2, true, 9},
	} {
		got := stagedStep(1, 1, two(c.p), two(c.c), two(c.x), two(c.d), two(c.k), 1, c.prefill)
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: stagedStep = %v, want %v", c.name, got, c.want)
		}
		// Never shorter than the compute alone, never longer than serial.
		comp := 2 * (c.p + c.c + c.x)
		if serial := comp + 2*(c.d+c.k); got < comp-1e-12 || got > serial+1e-12 {
			t.Errorf("%s: staged %v outside [%v, %v]", c.name, got, comp, serial)
		}
	}
}
