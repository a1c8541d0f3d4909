package hardware

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

func mustGPU(t testing.TB, name string) *GPU {
	t.Helper()
	g, err := Builtin().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func near(got, want, relTol float64) bool {
	return math.Abs(got-want) <= relTol*math.Abs(want)
}

// TestRooflineOpTime checks the roofline formula on hand-built operators.
func TestRooflineOpTime(t *testing.T) {
	h100 := mustGPU(t, "h100")
	a100 := mustGPU(t, "a100")
	eff := Efficiency{Compute: 0.5, Memory: 0.8, Link: 0.7, AttnCompute: 0.25, OpOverhead: 2e-6}
	cases := []struct {
		name string
		gpu  *GPU
		tp   int
		op   models.Op
		want float64
	}{
		// Memory-bound: 1 GB at 3.35e12 × 0.8 = 2.68e12 B/s → 373.13 µs, + 2 µs overhead;
		// compute 1e9 / (989.4e12 × 0.5) = 2.02 µs is the smaller term.
		{"memory-bound GEMM", h100, 1, models.Op{Kind: models.OpMLPUp, Count: 32, FLOPs: 1e9, Bytes: 1e9},
			2e-6 + 1e9/(3350e9*0.8)},
		// Compute-bound: 1e15 FLOPs / (989.4e12 × 0.5) = 2.0214 s; bytes 1e9 / 2.68e12 = 0.37 ms.
		{"compute-bound GEMM", h100, 1, models.Op{Kind: models.OpQKV, FLOPs: 1e15, Bytes: 1e9},
			2e-6 + 1e15/(989.4e12*0.5)},
		// FP8 math runs at the FP8 peak: 1e15 / (1978.9e12 × 0.5).
		{"FP8 GEMM on H100", h100, 1, models.Op{Kind: models.OpQKV, FLOPs: 1e15, Compute: models.FP8},
			2e-6 + 1e15/(1978.9e12*0.5)},
		// A100 has no FP8: the math runs at BF16, 1e15 / (312e12 × 0.5).
		{"FP8 GEMM on A100", a100, 1, models.Op{Kind: models.OpQKV, FLOPs: 1e15, Compute: models.FP8},
			2e-6 + 1e15/(312e12*0.5)},
		// Attention uses AttnCompute: 1e15 / (989.4e12 × 0.25).
		{"prefill attention", h100, 1, models.Op{Kind: models.OpAttnPrefill, FLOPs: 1e15, Bytes: 1e6},
			2e-6 + 1e15/(989.4e12*0.25)},
		// Decode attention is memory-bound: 2e9 / 2.68e12.
		{"decode attention", h100, 1, models.Op{Kind: models.OpAttnDecode, FLOPs: 1e9, Bytes: 2e9},
			2e-6 + 2e9/(3350e9*0.8)},
		// Embedding gather: bytes only.
		{"embedding", h100, 1, models.Op{Kind: models.OpEmbed, Bytes: 8192}, 2e-6 + 8192/(3350e9*0.8)},
		// Nothing to do: no kernel, no overhead.
		{"empty op", h100, 1, models.Op{Kind: models.OpAttnPrefill}, 0},
		// Ring all-reduce at TP 2: 2·(1/2)·16 MiB / (450e9 × 0.7) + 35.5 µs.
		{"all-reduce tp2", h100, 2, models.Op{Kind: models.OpAllReduce, CommBytes: 16 << 20},
			2*0.5*(16<<20)/(450e9*0.7) + 35.5e-6},
		// TP 8: 2·(7/8)·16 MiB / (450e9 × 0.7) + 35.5 µs.
		{"all-reduce tp8", h100, 8, models.Op{Kind: models.OpAllReduce, CommBytes: 16 << 20},
			2*0.875*(16<<20)/(450e9*0.7) + 35.5e-6},
		// TP 1: no communication at all.
		{"all-reduce tp1", h100, 1, models.Op{Kind: models.OpAllReduce, CommBytes: 16 << 20}, 0},
	}
	for _, tc := range cases {
		r := Roofline{GPU: tc.gpu, Eff: eff, TP: tc.tp}
		if got := r.OpTime(&tc.op); !near(got, tc.want, 1e-12) {
			t.Errorf("%s: OpTime = %.6g, want %.6g", tc.name, got, tc.want)
		}
	}
}

func TestKernelFunc(t *testing.T) {
	var k KernelModel = KernelFunc(func(op *models.Op) float64 { return float64(op.Tokens) * 1e-6 })
	if got := k.OpTime(&models.Op{Tokens: 3}); got != 3e-6 {
		t.Errorf("KernelFunc OpTime = %g, want 3e-6", got)
	}
}

func TestEfficiencyValidate(t *testing.T) {
	if err := DefaultEfficiency().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []Efficiency{
		{Compute: 0, Memory: 1, Link: 1, AttnCompute: 1},
		{Compute: 1, Memory: 1.2, Link: 1, AttnCompute: 1},
		{Compute: 1, Memory: 1, Link: math.NaN(), AttnCompute: 1},
		{Compute: 1, Memory: 1, Link: 1, AttnCompute: -1},
		{Compute: 1, Memory: 1, Link: 1, AttnCompute: 1, OpOverhead: -1e-6},
		{Compute: 1, Memory: 1, Link: 1, AttnCompute: 1, OpOverhead: math.Inf(1)},
	}
	for _, e := range bad {
		if err := e.Validate(); err == nil || !strings.HasPrefix(err.Error(), "hardware: efficiency") {
			t.Errorf("Validate(%+v) = %v, want an error", e, err)
		}
	}
}
