package hardware

import (
	"math"
	"testing"

	"github.com/servesim/servesim/models"
)

func TestCustomAllReduce(t *testing.T) {
	h100 := mustGPU(t, "h100")
	rtx := mustGPU(t, "rtx-4090")
	nccl := Roofline{GPU: h100, Eff: DefaultEfficiency()}
	ar := DefaultCustomAllReduce()
	// Llama-2-70B: hidden 8,192, bf16 activations: a decode batch of b
	// tokens all-reduces b × 8,192 × 2 B.
	msg := func(tokens int) float64 { return float64(tokens) * 8192 * 2 }
	bw := 450e9 * 0.7 // H100 link_bw × Link
	for _, c := range []struct {
		name   string
		g      *GPU
		tp     int
		bytes  float64
		custom bool
		want   float64
	}{
		// 16 tokens = 256 KiB at TP 4: one-shot (< 512 KiB): 5 µs + 3 × 262,144 / 315e9.
		{"70B tp4 decode 16", h100, 4, msg(16), true, 5e-6 + 3*262144/bw},
		// 32 tokens = 512 KiB at TP 4: two-shot: 2 × 5 µs + 2 × 3/4 × 524,288 / 315e9.
		{"70B tp4 decode 32", h100, 4, msg(32), true, 10e-6 + 2*0.75*524288/bw},
		// TP 2 is always one-shot: 5 µs + 1 × 1 MiB / 315e9.
		{"tp2 1 MiB", h100, 2, 1 << 20, true, 5e-6 + (1<<20)/bw},
		// 256 KiB at TP 8: not < 256 KiB, two-shot: 10 µs + 2 × 7/8 × 262,144 / 315e9.
		{"tp8 256 KiB", h100, 8, 262144, true, 10e-6 + 2*7.0/8*262144/bw},
		// 8 MiB is not below max_size: NCCL's ring, 2 × 1/2 × 8 MiB / 315e9 + 35.5 µs.
		{"tp2 8 MiB", h100, 2, 8 << 20, false, (8<<20)/bw + 35.5e-6},
		// TP 3 is not a supported world size: NCCL, 2 × 2/3 × 256 KiB / 315e9 + 35.5 µs.
		{"tp3", h100, 3, 262144, false, 2*2.0/3*262144/bw + 35.5e-6},
		// 8 bytes is not a multiple of 16: NCCL.
		{"8 bytes", h100, 2, 8, false, 8/bw + 35.5e-6},
		// RTX 4090: no NVLink (link_bw = host_bw = 32e9): NCCL, 256 KiB / (32e9 × 0.7) + 35.5 µs.
		{"rtx-4090 tp2", rtx, 2, 262144, false, 262144/(32e9*0.7) + 35.5e-6},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := nccl
			base.GPU, base.TP = c.g, c.tp
			k := CustomARKernel{K: base, GPU: c.g, TP: c.tp, AR: ar}
			op := models.Op{Kind: models.OpAllReduce, Count: 1, CommBytes: c.bytes}
			got := k.OpTime(&op)
			if math.Abs(got-c.want) > 1e-12 {
				t.Errorf("OpTime = %.6g s, want %.6g s", got, c.want)
			}
			if took := got != base.OpTime(&op); took != c.custom {
				t.Errorf("custom all-reduce taken = %v, want %v", took, c.custom)
			}
		})
	}
	// Other operators are the wrapped model's.
	k := CustomARKernel{K: nccl, GPU: h100, TP: 4, AR: ar}
	op := models.Op{Kind: models.OpMLPUp, FLOPs: 1e9, Bytes: 1e9}
	if k.OpTime(&op) != nccl.OpTime(&op) {
		t.Error("a GEMM is priced differently under CustomARKernel")
	}
}

// TestCustomAllReduce70BStep: a Llama-2-70B TP 4 decode step of 16 requests
// on H100 pays 2 × 80 = 160 all-reduces of 256 KiB; with the custom
// all-reduce each takes 7.50 µs (1.20 ms a step) instead of NCCL's 36.7 µs
// (5.88 ms), so the step is 160 × (36.748 − 7.497) µs = 4.68 ms shorter.
func TestCustomAllReduce70BStep(t *testing.T) {
	h100 := mustGPU(t, "h100")
	m, err := models.Builtin().Get("llama-2-70b")
	if err != nil {
		t.Fatal(err)
	}
	p := models.Parallel{TP: 4, Weights: models.BF16, KV: models.BF16}
	rf := Roofline{GPU: h100, Eff: DefaultEfficiency(), TP: 4}
	nccl, err := NewStepModel(m, h100, p, rf, 0)
	if err != nil {
		t.Fatal(err)
	}
	custom, err := NewStepModel(m, h100, p, CustomARKernel{K: rf, GPU: h100, TP: 4, AR: DefaultCustomAllReduce()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := models.Batch{Decodes: 16, DecodeCtx: 16 * 1024}
	bw := 450e9 * 0.7
	perNCCL := 2*0.75*262144/bw + 35.5e-6 // 36.748 µs
	perCustom := 5e-6 + 3*262144/bw       // 7.497 µs
	want := 160 * (perNCCL - perCustom)   // 4.680 ms
	if got := nccl.StepTime(b) - custom.StepTime(b); math.Abs(got-want) > 1e-9 {
		t.Errorf("NCCL step − custom step = %.6g s, want %.6g s", got, want)
	}
}

func TestCustomAllReduceValidate(t *testing.T) {
	for _, c := range []CustomAllReduce{
		{Latency: -1, Link: 0.7, MaxBytes: 1},
		{Latency: 1e-6, Link: 0, MaxBytes: 1},
		{Latency: 1e-6, Link: 1.5, MaxBytes: 1},
		{Latency: 1e-6, Link: 0.7, MaxBytes: math.Inf(1)},
	} {
		if c.Validate() == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if err := DefaultCustomAllReduce().Validate(); err != nil {
		t.Error(err)
	}
}
