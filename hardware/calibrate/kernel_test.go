package calibrate

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

func TestOpTimeArithmetic(t *testing.T) {
	g := mustGPU(t, "h100") // bf16 989.4e12 FLOP/s, HBM 3.35e12 B/s, link 450e9 B/s (gpus.toml)
	k, err := handProfile(g).Calibrated(g, 8)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		op   models.Op
		want float64
	}{
		// qkv of 1000 tokens, K = 4096, N = 12288: FLOPs 2·1000·4096·12288 = 1.00663296e11,
		// compute 1.00663296e11 / (989.4e12 · 0.8) · (1 + 100/1000) = 1.398951e-4 s;
		// bytes 4096·12288·2 + 1000·(4096+12288)·2 = 133431296 → 133431296 / (3.35e12·0.9) = 4.42558e-5 s.
		// t = 5e-6 + 1.398951e-4.
		{"qkv compute-bound", models.Op{Kind: models.OpQKV, Tokens: 1000, FLOPs: 1.00663296e11, Bytes: 133431296},
			5e-6 + 1.00663296e11/(989.4e12*0.8)*(1+100.0/1000)},
		// The same GEMM at 1 token: compute 2·4096·12288 / (989.4e12·0.8) · 101 = 1.2848e-5 s;
		// bytes 4096·12288·2 + (4096+12288)·2 = 100696064 → / (3.35e12·0.9) = 3.33986e-5 s (memory-bound).
		{"qkv memory-bound", models.Op{Kind: models.OpQKV, Tokens: 1, FLOPs: 2 * 4096 * 12288, Bytes: 100696064},
			5e-6 + 100696064/(3.35e12*0.9)},
		// An add of 16 tokens × 4096: bytes 3·16·4096·2 = 393216 → 2e-6 + 393216/(3.35e12·0.9).
		{"add", models.Op{Kind: models.OpAdd, Tokens: 16, FLOPs: 16 * 4096, Bytes: 393216}, 2e-6 + 393216/(3.35e12*0.9)},
		// A norm of one token of hidden 4096: bytes 2·1·4096·2 + 4096·2 (weights) = 24576;
		// memory term 24576/(3.35e12·0.9) = 8.2e-9 s, row term 24576/1/(3.35e12·0.01) = 7.336e-7 s.
		{"norm, one row", models.Op{Kind: models.OpNorm, Tokens: 1, FLOPs: 4 * 4096, Bytes: 24576}, 2e-6 + 24576/(3.35e12*0.01)},
		// The same norm over 4096 tokens: bytes 2·4096·4096·2 + 8192 = 67117056; memory term
		// 67117056/(3.35e12·0.9) = 2.226e-5 s beats the row term 67117056/4096/(3.35e12·0.01) = 4.89e-7 s.
		{"norm, many rows", models.Op{Kind: models.OpNorm, Tokens: 4096, FLOPs: 4 * 4096 * 4096, Bytes: 67117056}, 2e-6 + 67117056/(3.35e12*0.9)},
		// Decode attention reading 1 GB of KV: 4e-6 + 1e9/(3.35e12·0.8).
		{"attention", models.Op{Kind: models.OpAttnDecode, Tokens: 64, FLOPs: 1e9, Bytes: 1e9}, 4e-6 + 1e9/(3.35e12*0.8)},
		// FP8 GEMM: the FP8 peak 1978.9e12 applies: 2e-6 + 1e13/(1978.9e12·0.8) (compute-bound).
		{"fp8 mlp_up", models.Op{Kind: models.OpMLPUp, Tokens: 4096, FLOPs: 1e13, Bytes: 1e8, Compute: models.FP8},
			2e-6 + 1e13/(1978.9e12*0.8)},
		// All-reduce of 1 MiB at TP 8: 30e-6 + 2·7/8 · 1048576 / (450e9·0.9).
		{"all-reduce", models.Op{Kind: models.OpAllReduce, CommBytes: 1 << 20}, 30e-6 + 2*7.0/8*(1<<20)/(450e9*0.9)},
		{"empty all-reduce", models.Op{Kind: models.OpAllReduce}, 0},
		{"no work", models.Op{Kind: models.OpNorm, Tokens: 3}, 0},
	}
	for _, c := range cases {
		op := c.op
		op.Count = 1
		if got := k.OpTime(&op); math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("%s: OpTime = %.9g, want %.9g", c.name, got, c.want)
		}
	}
}

// An all-reduce at a TP without an entry uses the nearest TP's entry (the
// larger on a tie); TP 1 has no all-reduce.
func TestAllReduceNearestTP(t *testing.T) {
	g := mustGPU(t, "h100")
	p := handProfile(g) // entries at TP 2 (10 µs, 0.5) and TP 8 (30 µs, 0.9)
	op := models.Op{Kind: models.OpAllReduce, Count: 1, CommBytes: 1e6}
	for _, c := range []struct {
		tp       int
		lat, eff float64
	}{
		{2, 10e-6, 0.5},
		{3, 10e-6, 0.5}, // |3−2| < |3−8|
		{5, 30e-6, 0.9}, // |5−2| = |5−8|: the larger TP
		{16, 30e-6, 0.9},
	} {
		k, err := p.Calibrated(g, c.tp)
		if err != nil {
			t.Fatal(err)
		}
		n := float64(c.tp)
		want := c.lat + 2*(n-1)/n*1e6/(450e9*c.eff)
		if got := k.OpTime(&op); math.Abs(got-want) > 1e-12*want {
			t.Errorf("tp %d: %.9g, want %.9g", c.tp, got, want)
		}
	}
	k, _ := p.Calibrated(g, 1)
	if got := k.OpTime(&op); got != 0 {
		t.Errorf("tp 1 all-reduce = %g, want 0", got)
	}
	// No entries at all: roofline with the default link efficiency and the GPU's latency.
	p.AllReduce = nil
	k, _ = p.Calibrated(g, 4)
	want := g.LinkLatency + 2*3.0/4*1e6/(g.LinkBW*hardware.DefaultEfficiency().Link)
	if got := k.OpTime(&op); math.Abs(got-want) > 1e-12*want {
		t.Errorf("roofline all-reduce %.9g, want %.9g", got, want)
	}
}

// Metamorphic: a profile with Roofline's efficiencies, no saturation and no
// all-reduce entries prices every operator as hardware.Roofline does.
func TestCalibratedReducesToRoofline(t *testing.T) {
	def := hardware.DefaultEfficiency()
	for _, gpu := range []string{"a100", "h100", "b200"} {
		g := mustGPU(t, gpu)
		p := handProfile(g)
		p.AllReduce = nil
		p.Attention = Attention{ComputeEff: def.AttnCompute, MemoryEff: def.Memory, OverheadS: def.OpOverhead, Source: "roofline"}
		for i := range p.Ops {
			p.Ops[i].OverheadS, p.Ops[i].ComputeEff, p.Ops[i].HalfTokens, p.Ops[i].MemoryEff = def.OpOverhead, def.Compute, 0, def.Memory
			p.Ops[i].RowMemoryEff = 0
		}
		for _, mc := range []struct {
			model string
			par   models.Parallel
		}{
			{"llama-3.1-8b", models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}},
			{"mixtral-8x7b", models.Parallel{TP: 4, Weights: models.FP8, KV: models.FP8}},
			{"gpt-oss-120b", models.Parallel{TP: 2, Weights: models.FP4, KV: models.BF16}},
		} {
			k, err := p.Calibrated(g, mc.par.TP)
			if err != nil {
				t.Fatal(err)
			}
			rf := hardware.Roofline{GPU: g, Eff: def, TP: mc.par.TP}
			m := mustModel(t, mc.model)
			for _, b := range []models.Batch{
				{Decodes: 1, DecodeCtx: 100},
				{Prefills: 2, PrefillTokens: 3000, PrefillCtx: 500, PrefillPairs: 3e6, Decodes: 37, DecodeCtx: 37 * 900},
			} {
				for _, op := range m.Ops(b, mc.par, nil) {
					got, want := k.OpTime(&op), rf.OpTime(&op)
					if math.Abs(got-want) > 1e-12*want {
						t.Errorf("%s %s %s: calibrated %.12g, roofline %.12g", gpu, mc.model, op.Kind, got, want)
					}
				}
			}
		}
	}
}

func TestKernelErrors(t *testing.T) {
	h100, a100 := mustGPU(t, "h100"), mustGPU(t, "a100")
	p := handProfile(h100)
	if _, err := p.Kernel(a100, 1); err == nil || !strings.Contains(err.Error(), `profile is for gpu "h100", not "a100"`) {
		t.Errorf("other GPU: %v", err)
	}
	changed := *h100
	changed.MemBW = 4e12
	if _, err := p.Kernel(&changed, 1); err == nil || !strings.Contains(err.Error(), "mem_bw") {
		t.Errorf("other peaks: %v", err)
	}
	if _, err := p.Kernel(h100, 0); err == nil {
		t.Error("tp 0 accepted")
	}
	if _, err := p.Kernel(nil, 1); err == nil {
		t.Error("nil GPU accepted")
	}
	bad := handProfile(h100)
	bad.Ops[2].ComputeEff = 1.5
	if _, err := bad.Kernel(h100, 1); err == nil || !strings.Contains(err.Error(), "op[2].compute_eff") {
		t.Errorf("invalid profile: %v", err)
	}
}

// The calibrated kernel is on the simulator's hot path: no allocation.
func TestOpTimeDoesNotAllocate(t *testing.T) {
	g := mustGPU(t, "h100")
	k, _ := handProfile(g).Kernel(g, 4)
	m := mustModel(t, "llama-3.1-70b")
	ops := m.Ops(models.Batch{Prefills: 1, PrefillTokens: 512, PrefillPairs: 512 * 513 / 2, Decodes: 8, DecodeCtx: 8000},
		models.Parallel{TP: 4, Weights: models.BF16, KV: models.BF16}, nil)
	sum := 0.0
	if a := testing.AllocsPerRun(100, func() {
		for i := range ops {
			sum += k.OpTime(&ops[i])
		}
	}); a != 0 {
		t.Errorf("%v allocations per call", a)
	}
	if !(sum > 0) {
		t.Error("no time")
	}
}

// A StepModel runs on a calibrated kernel like on a roofline.
func TestStepModelWithCalibrated(t *testing.T) {
	g := mustGPU(t, "h100")
	p, ok := Builtin("h100")
	if !ok {
		t.Fatal("no built-in h100 profile")
	}
	m := mustModel(t, "llama-3.1-8b")
	par := models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}
	k, err := p.Kernel(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := hardware.NewStepModel(m, g, par, k, p.IterOverhead())
	if err != nil {
		t.Fatal(err)
	}
	b := models.Batch{Decodes: 32, DecodeCtx: 32 * 1000}
	sum := p.IterOverhead()
	for _, ot := range s.Breakdown(b) {
		sum += ot.Seconds
	}
	if got := s.StepTime(b); math.Abs(got-sum) > 1e-12*sum {
		t.Errorf("StepTime %.9g, breakdown sum %.9g", got, sum)
	}
}
