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
// in-sample on every GPU and precision, sm_90 FP8 read as a transpose plus
// the GEMM (xla_transpose.go).
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
		if f.HeldOut.Median > 10 || f.HeldOut.P90 > 25 || !(f.ComputeEff < 0.95) || f.Transposed != (key == "h100/fp8") {
			t.Errorf("%s: held-out median %.1f %%, p90 %.1f %%, η %.3f, transposed %v", key, f.HeldOut.Median, f.HeldOut.P90, f.ComputeEff, f.Transposed)
		}
		if want := map[bool]int{true: 87}[key == "h100/fp8"]; f.AbovePeak != want { // SOURCE.md: 87 of 1,125 sm_90 FP8 rows above 1,979 TFLOP/s
			t.Errorf("%s: %d rows above the peak, want %d", key, f.AbovePeak, want)
		}
	}
	ps := xt.Precisions("b200")
	if len(ps) != 3 || ps[2].DType != "fp4" || ps[2].Basis != BasisMeasured || !strings.Contains(ps[2].Source, "measured (vLLM PR #20646, #22523, B200)") {
		t.Fatalf("b200 precisions %+v", ps)
	}
	// Without vLLM's table FP4 falls back to the labelled estimate.
	noVLLM := *xt
	noVLLM.vllm = nil
	if e := noVLLM.Precisions("b200"); e[2].Basis != BasisEstimate || !strings.Contains(e[2].Source, "ESTIMATE") {
		t.Errorf("b200 fp4 without vLLM's table: %+v", e[2])
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
	plain, scaled, kp, ks := precisionKernels(t, GEMMPrecision{DType: "fp8", ComputeScale: 0.5, Basis: BasisEstimate, Source: "test"}, nil)
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
	checkPrecisionRoundTrip(t, scaled)
}

// memory_scale divides a memory-bound GEMM's time in its precision by the
// scale (μ·scale capped at 1) and leaves compute-bound GEMMs and other
// precisions alone; it round-trips through TOML.
func TestGEMMPrecisionMemoryScale(t *testing.T) {
	plain, scaled, kp, ks := precisionKernels(t, GEMMPrecision{DType: "fp8", ComputeScale: 1, MemoryScale: 0.5, Basis: BasisEstimate, Source: "test"},
		func(p *Profile) { p.GEMMTrees = nil })
	o, _ := plain.Op(models.OpMLPUp)
	if o.MemoryEff*0.5 >= 1 {
		t.Fatalf("mlp_up μ %g: the cap would hide the scale", o.MemoryEff)
	}
	// A decode-like FP8 GEMM of 16 tokens × 8192 × 8192: 2·16·8192² = 2.1e9
	// FLOPs (0.5 µs at 4.5 PFLOP/s), 8192²·1 + 16·8192·(1 + 2) = 67.5 MB of
	// bytes (8.4 µs at 8 TB/s): memory-bound.
	dec := models.Op{Kind: models.OpMLPUp, Count: 1, Tokens: 16, FLOPs: 2 * 16 * 8192 * 8192, Bytes: 8192*8192 + 16*8192*3, N: 8192, K: 8192, Compute: models.FP8}
	tp, ts := kp.OpTime(&dec)-o.OverheadS, ks.OpTime(&dec)-o.OverheadS
	if math.Abs(ts/tp-2) > 1e-9 {
		t.Errorf("memory-bound fp8 GEMM at memory scale 0.5: %g s, want 2 × %g s", ts, tp)
	}
	bf := dec
	bf.Compute = models.BF16
	if kp.OpTime(&bf) != ks.OpTime(&bf) {
		t.Errorf("bf16 GEMM changed by an fp8 entry")
	}
	checkPrecisionRoundTrip(t, scaled)
}

// A row timed as a transpose plus the GEMM records (T + G)/2, and the fit
// recovers the GEMM's parameters from such rows; the transpose is only
// inferred for FP8 before Blackwell.
func TestXLATransposed(t *testing.T) {
	for _, c := range []struct {
		arch, dtype string
		want        bool
	}{
		{"sm_90", "f8e4m3fnxf8e4m3fn->bf16", true},
		{"sm_90", "bf16xbf16->bf16", false},
		{"sm_100_B200", "f8e4m3fnxf8e5m2->bf16", false},
		{"sm_100", "f8e5m2xf8e4m3fn->bf16", false},
	} {
		if got := xlaTransposed(c.arch, c.dtype); got != c.want {
			t.Errorf("xlaTransposed(%s, %s) = %v", c.arch, c.dtype, got)
		}
	}
	g, err := hardware.Builtin().Get("h100")
	if err != nil {
		t.Fatal(err)
	}
	// Synthetic sm_90 FP8 rows from known parameters: G with o 5 µs,
	// η 0.7, h 32, μ 0.85; T with o_T 3 µs, μ_T 0.8; recorded (T + G)/2.
	want := xlaModel{gemm: params{o: 5e-6, ec: 0.7, h: 32, em: 0.85}, transposed: true, oT: 3e-6, muT: 0.8}
	var rows []XLARow
	for _, b := range []int{1, 2, 4} {
		for _, m := range []int{256, 1024, 4096} {
			for _, n := range []int{256, 1024, 4096} {
				for _, k := range []int{256, 1024, 4096} {
					r := XLARow{Arch: "sm_90", B: b, M: m, N: n, K: k, DType: "f8e4m3fnxf8e4m3fn->bf16", FLOPS: 1}
					s, _ := r.sample("h100", models.FP8)
					p := xlaPoints([]Sample{s}, []*XLARow{&r}, g)[0]
					r.FLOPS = s.Op.FLOPs / want.at(&p)
					rows = append(rows, r)
				}
			}
		}
	}
	f, ok := FitXLA(rows, g, models.FP8)
	if !ok || !f.Transposed {
		t.Fatalf("fit %+v", f)
	}
	if math.Abs(f.ComputeEff-0.7) > 0.01 || math.Abs(f.HalfTokens-32) > 2 || f.InSample.P90 > 1 {
		t.Errorf("η %.3f (want 0.7), h %.1f (want 32), in-sample %+v", f.ComputeEff, f.HalfTokens, f.InSample)
	}
	// Only o + o_T is identified (both add to every row): 8 µs.
	if s := f.OverheadS + f.TransposeOverheadS; math.Abs(s-8e-6) > 0.3e-6 {
		t.Errorf("o + o_T = %g s, want 8e-6", s)
	}
}

// precisionKernels returns b200's built-in profile without its
// [[gemm_precision]] entries (plain, edit changing it further when not
// nil), plain with gp as its one entry (scaled), and their kernels at
// TP 1.
func precisionKernels(t *testing.T, gp GEMMPrecision, edit func(*Profile)) (plain, scaled *Profile, kp, ks *Calibrated) {
	t.Helper()
	g, err := hardware.Builtin().Get("b200")
	if err != nil {
		t.Fatal(err)
	}
	base, ok := Builtin("b200")
	if !ok {
		t.Fatal("no b200 profile")
	}
	plain = base.Clone()
	plain.GEMMPrecisions = nil
	if edit != nil {
		edit(plain)
	}
	scaled = plain.Clone()
	scaled.GEMMPrecisions = []GEMMPrecision{gp}
	if kp, err = plain.Calibrated(g, 1); err != nil {
		t.Fatal(err)
	}
	if ks, err = scaled.Calibrated(g, 1); err != nil {
		t.Fatal(err)
	}
	return plain, scaled, kp, ks
}

// checkPrecisionRoundTrip wants p's one [[gemm_precision]] entry back
// unchanged from p's TOML.
func checkPrecisionRoundTrip(t *testing.T, p *Profile) {
	t.Helper()
	back, err := ParseProfile(p.WriteTOML(), "p.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(back.GEMMPrecisions) != 1 || back.GEMMPrecisions[0] != p.GEMMPrecisions[0] {
		t.Errorf("round trip: %+v", back.GEMMPrecisions)
	}
}
