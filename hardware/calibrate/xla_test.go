package calibrate

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

const xlaHeader = "arch,b,m,n,k,dtype,flops_per_s\n"

func TestReadXLAMatmulErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"", "empty file"},
		{"arch,b,m,n,k,dtype\n", `column "flops_per_s": missing column`},
		{xlaHeader, "no rows"},
		{xlaHeader + "sm_90,1,256,256,256,bf16xbf16->bf16,-1\n", `line 2: column "flops_per_s": must be finite and > 0`},
		{xlaHeader + "sm_90,0,256,256,256,bf16xbf16->bf16,1e12\n", `line 2: column "b": 0 is outside`},
		{xlaHeader + "sm_90,1,x,256,256,bf16xbf16->bf16,1e12\n", `line 2: column "m": not an integer`},
		{xlaHeader + ",1,256,256,256,bf16xbf16->bf16,1e12\n", `line 2: column "arch": empty`},
		{xlaHeader + "sm_90,1,256,256,256,bf16xbf16->bf16,1e19\n", `line 2: column "flops_per_s": 1e+19 FLOP/s is above`},
	} {
		_, err := ReadXLAMatmul(strings.NewReader(c.src), "matmul.csv")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.src, err, c.want)
			continue
		}
		checkReadErr(t, err, "matmul.csv")
	}
}

func FuzzReadXLAMatmul(f *testing.F) {
	f.Add(xlaHeader + "sm_90,1,256,256,256,bf16xbf16->bf16,6765006451612\n")
	f.Add(xlaHeader + "sm_100_B200,4,4096,4096,4096,f8e4m3fnxf8e4m3fn->bf16,3279700000000000\n")
	f.Add(xlaHeader + "sm_90,1,256,256,256,f32xf32->f32,NaN\n")
	f.Add("\"unterminated\n")
	f.Fuzz(func(t *testing.T, src string) {
		rows, err := ReadXLAMatmul(strings.NewReader(src), "matmul.csv")
		if err != nil {
			checkReadErr(t, err, "matmul.csv")
			return
		}
		for _, r := range rows {
			if r.B < 1 || r.M < 1 || r.N < 1 || r.K < 1 || !(r.FLOPS > 0 && r.FLOPS <= maxXLAFLOPS) || r.Line < 2 {
				t.Fatalf("row %+v", r)
			}
		}
		for _, g := range []string{"h100", "b200"} {
			for _, s := range XLASamples(rows, g, models.FP8) {
				if !(s.Seconds > 0) || math.IsInf(s.Seconds, 0) {
					t.Fatalf("sample %+v", s)
				}
			}
		}
	})
}

func TestXLASamples(t *testing.T) {
	rows, err := ReadXLAMatmul(strings.NewReader(xlaHeader+
		"sm_100_B200,2,256,512,1024,f8e4m3fnxf8e5m2->bf16,1e15\n"+
		"sm_100,2,256,512,1024,bf16xbf16->bf16,1e15\n"+
		"sm_90,1,256,256,256,f32xf32->f32,1e13\n"), "matmul.csv")
	if err != nil {
		t.Fatal(err)
	}
	ss := XLASamples(rows, "b200", models.FP8)
	if len(ss) != 1 {
		t.Fatalf("%d FP8 samples, want 1", len(ss))
	}
	s := ss[0]
	// FLOPs = 2·b·m·n·k = 2·2·256·512·1024 = 536,870,912; at 1e15 FLOP/s: 536.87 ns.
	// Bytes = b·(m·k + k·n)·1 + b·m·n·2 = 2·(262,144 + 524,288) + 2·131,072·2 = 2,097,152.
	if s.Op.FLOPs != 536870912 || s.Op.Bytes != 2097152 || s.Op.Tokens != 512 || s.Op.N != 512 || s.Op.K != 1024 ||
		math.Abs(s.Seconds-536.870912e-9) > 1e-15 || s.Op.Compute != models.FP8 {
		t.Errorf("sample %+v", s)
	}
	if n := len(XLASamples(rows, "b200", models.BF16)); n != 1 { // the older key sm_100 is the B200 too
		t.Errorf("%d BF16 samples, want 1", n)
	}
	if n := len(XLASamples(rows, "h100", models.BF16)); n != 0 { // f32 rows are not BF16
		t.Errorf("%d h100 samples, want 0", n)
	}
}

// The fits of the shared table: held out by shape within a few points of
// in-sample on every GPU and precision but sm_90 FP8 (not physical).
func TestFitXLAShared(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "data", "xla-matmul", "matmul.csv")
	xt, err := LoadXLA(path)
	if err != nil {
		t.Skipf("no XLA table (%v)", err)
	}
	for key, f := range xt.Fits {
		if f.HeldOut.N != f.Samples || f.HeldOut.Median < f.InSample.Median-1 {
			t.Errorf("%s: held out %+v, in-sample %+v", key, f.HeldOut, f.InSample)
		}
		if key != "h100/fp8" && (f.HeldOut.Median > 10 || f.HeldOut.P90 > 25 || f.Rejected > 0) {
			t.Errorf("%s: held-out median %.1f %%, p90 %.1f %%, %d rejected", key, f.HeldOut.Median, f.HeldOut.P90, f.Rejected)
		}
	}
	if f := xt.Fits["h100/fp8"]; f.Rejected != 87 { // SOURCE.md: 87 of 1,125 sm_90 FP8 rows above 1,979 TFLOP/s
		t.Errorf("h100 fp8: %d rejected, want 87", f.Rejected)
	}
	ps := xt.Precisions("b200")
	if len(ps) != 3 || ps[2].DType != "fp4" || ps[2].Basis != BasisEstimate || !strings.Contains(ps[2].Source, "ESTIMATE") {
		t.Fatalf("b200 precisions %+v", ps)
	}
	// FP4 never below FP8's absolute throughput: scale ≥ FP8's / 2.
	if ps[2].ComputeScale < ps[1].ComputeScale/2 {
		t.Errorf("fp4 scale %g < fp8's %g / 2", ps[2].ComputeScale, ps[1].ComputeScale)
	}
}

// A [[gemm_precision]] entry scales a compute-bound GEMM's time by
// 1/compute_scale in its precision only, adds its half-tokens, and leaves
// other precisions, non-GEMM classes and memory-bound GEMMs alone.
func TestGEMMPrecisionKernel(t *testing.T) {
	g, err := hardware.Builtin().Get("b200")
	if err != nil {
		t.Fatal(err)
	}
	base, ok := Builtin("b200")
	if !ok {
		t.Fatal("no b200 profile")
	}
	plain := base.Clone()
	plain.GEMMPrecisions = nil
	scaled := plain.Clone()
	scaled.GEMMPrecisions = []GEMMPrecision{{DType: "fp8", ComputeScale: 0.5, Basis: BasisEstimate, Source: "test"}}
	kp, err := plain.Calibrated(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := scaled.Calibrated(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	// A 8192 × 8192 × 8192 FP8 GEMM: 2·8192³ = 1.1e12 FLOPs, compute-bound
	// (bytes 2·8192²·1 + 8192²·2 = 268 MB: 34 µs at 8 TB/s, against 244 µs
	// at 4.5 PFLOP/s).
	op := models.Op{Kind: models.OpMLPUp, Count: 1, Tokens: 8192, FLOPs: 2 * 8192 * 8192 * 8192, Bytes: 8192 * 8192 * 4, N: 8192, K: 8192, Compute: models.FP8}
	o, _ := plain.Op(models.OpMLPUp)
	tp, ts := kp.OpTime(&op)-o.OverheadS, ks.OpTime(&op)-o.OverheadS
	if math.Abs(ts/tp-2) > 1e-9 {
		t.Errorf("fp8 GEMM at scale 0.5: %g s, want 2 × %g s", ts, tp)
	}
	bf := op
	bf.Compute = models.BF16
	if kp.OpTime(&bf) != ks.OpTime(&bf) {
		t.Errorf("bf16 GEMM changed by an fp8 entry")
	}
	norm := models.Op{Kind: models.OpNorm, Count: 1, Tokens: 8192, FLOPs: 4 * 8192 * 8192, Bytes: 8192 * 8192 * 4, Compute: models.FP8}
	if kp.OpTime(&norm) != ks.OpTime(&norm) {
		t.Errorf("norm changed by an fp8 entry")
	}
	// Round trip through TOML.
	back, err := ParseProfile(scaled.WriteTOML(), "p.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(back.GEMMPrecisions) != 1 || back.GEMMPrecisions[0] != scaled.GEMMPrecisions[0] {
		t.Errorf("round trip: %+v", back.GEMMPrecisions)
	}
}
