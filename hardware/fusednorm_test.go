package hardware

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

func TestFusedAddNormKernel(t *testing.T) {
	h100 := mustGPU(t, "h100")
	rf := Roofline{GPU: h100, Eff: DefaultEfficiency(), TP: 1}
	k := FusedAddNormKernel{K: rf, GPU: h100}
	// Llama-2-7B (hidden 4,096), bf16: a residual add over t tokens does
	// t × 4,096 FLOPs and moves 3 × t × 4,096 × 2 B.
	add := func(tokens int) models.Op {
		n := float64(tokens) * 4096
		return models.Op{Kind: models.OpAdd, Count: 64, Tokens: tokens, FLOPs: n, Bytes: 3 * n * 2, Compute: models.BF16}
	}
	for _, c := range []struct {
		name string
		op   models.Op
		want float64
	}{
		// 16 tokens: 393,216 B / 3.35e12 B/s = 0.1174 µs (the FLOPs,
		// 65,536 / 989e12, take 0.07 ns); the roofline's own price is
		// 4 µs + 393,216 / (3.35e12 × 0.8) = 4.147 µs.
		{"add 16 tokens", add(16), 393216 / 3.35e12},
		// 4,096 tokens: 100,663,296 B / 3.35e12 = 30.05 µs.
		{"add 4096 tokens", add(4096), 100663296 / 3.35e12},
		// An empty add launches nothing.
		{"empty add", models.Op{Kind: models.OpAdd}, 0},
		// Any other operator is the wrapped model's: 4 µs + 1e9 / (3.35e12 × 0.8).
		{"mlp up", models.Op{Kind: models.OpMLPUp, Tokens: 1, FLOPs: 1e6, Bytes: 1e9}, 4e-6 + 1e9/(3.35e12*0.8)},
		// A norm stays its own kernel (it is the fused kernel): 4 µs + 393,216 / (3.35e12 × 0.8).
		{"norm", models.Op{Kind: models.OpNorm, Tokens: 16, FLOPs: 1e5, Bytes: 393216}, 4e-6 + 393216/(3.35e12*0.8)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := k.OpTime(&c.op); math.Abs(got-c.want) > 1e-15 {
				t.Errorf("OpTime = %.6g s, want %.6g s", got, c.want)
			}
		})
	}
	// A wrapped roofline is checked as the roofline it wraps, through
	// either wrapper in either order.
	m := mustModel(t, "llama-2-7b")
	p := models.Parallel{TP: 1}
	other := Roofline{GPU: mustGPU(t, "a100"), Eff: DefaultEfficiency(), TP: 1}
	for _, w := range []KernelModel{
		FusedAddNormKernel{K: other, GPU: h100},
		CustomARKernel{K: FusedAddNormKernel{K: other, GPU: h100}, GPU: h100, TP: 1},
		FusedAddNormKernel{K: CustomARKernel{K: other, GPU: h100, TP: 1}, GPU: h100},
	} {
		if _, err := NewStepModel(m, h100, p, w, 0); err == nil || !strings.Contains(err.Error(), `roofline is for gpu "a100"`) {
			t.Errorf("%T: error %v, want the wrapped roofline's GPU mismatch", w, err)
		}
	}
	if _, err := NewStepModel(m, h100, p, k, 0); err != nil {
		t.Errorf("a wrapped roofline of the right GPU: %v", err)
	}
}
