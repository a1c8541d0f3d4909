package calibrate

import (
	"math"
	"math/rand/v2"
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
	builtin, _ := Builtin("h100")
	m := mustModel(t, "llama-3.1-70b")
	ops := m.Ops(models.Batch{Prefills: 1, PrefillTokens: 512, PrefillPairs: 512 * 513 / 2, Decodes: 8, DecodeCtx: 8000},
		models.Parallel{TP: 4, Weights: models.BF16, KV: models.BF16}, nil)
	for _, p := range []*Profile{handProfile(g), waveProfile(g), builtin} {
		k, err := p.Kernel(g, 4)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		if a := testing.AllocsPerRun(100, func() {
			for i := range ops {
				sum += k.OpTime(&ops[i])
			}
		}); a != 0 {
			t.Errorf("%s: %v allocations per call", p.Source.Trace, a)
		}
		if !(sum > 0) {
			t.Error("no time")
		}
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

// The wave term: Llama-2-70B's up-projection at TP 4 (N = 2·28672/4 =
// 14336, K = 8192) on H100 (989.4e12 FLOP/s, 3.35e12 B/s, 132 SMs) with
// waveProfile's mlp_up: o = 2 µs, η = 0.8, h = 200, μ = 0.9, η_w = 0.75,
// 128 × 256 tiles. One wave is 2·8192·128·256·132 = 70,866,960,384 FLOPs.
func TestOpTimeWaves(t *testing.T) {
	g := mustGPU(t, "h100")
	k, err := waveProfile(g).Calibrated(g, 4)
	if err != nil {
		t.Fatal(err)
	}
	m := mustModel(t, "llama-2-70b")
	up := func(tokens int) models.Op {
		op, _ := opOf(m.Ops(models.Batch{Decodes: tokens}, models.Parallel{TP: 4, Weights: models.BF16, KV: models.BF16}, nil), models.OpMLPUp)
		op.Count = 1
		return op
	}
	const wave = 2.0 * 8192 * 128 * 256 * 132
	smooth := func(n float64) float64 { return 2 * n * 14336 * 8192 / (989.4e12 * 0.8) * (1 + 200/n) }
	mem := func(n float64) float64 { return (8192*14336*2 + n*(8192+14336)*2) / (3.35e12 * 0.9) }
	cases := []struct {
		name   string
		tokens int
		want   float64
	}{
		// 256 tokens: ⌈256/128⌉·⌈14336/256⌉ = 2·56 = 112 tiles ≤ 132: one wave,
		// 70.87e9 / (989.4e12·0.75) = 95.50 µs, under the saturated smooth term
		// 2·256·14336·8192/(989.4e12·0.8)·(1 + 200/256) = 135.3 µs; memory 81.0 µs.
		{"one wave", 256, 2e-6 + wave/(989.4e12*0.75)},
		// 264 tokens: 3·56 = 168 tiles: two waves, 191.0 µs; the smooth term,
		// 137.7 µs, is faster and applies.
		{"two waves", 264, 2e-6 + smooth(264)},
		// 1 token: the smooth term, 2·14336·8192/(989.4e12·0.8)·201 = 59.6 µs, is faster
		// than one wave (95.5 µs); memory, (234,881,024 + 22,528·2)/(3.35e12·0.9) = 77.9 µs, binds.
		{"memory-bound", 1, 2e-6 + mem(1)},
		// 2048 tokens: 16·56 = 896 tiles, ⌈896/132⌉ = 7 waves, 668.5 µs; smooth
		// 2·2048·14336·8192/(989.4e12·0.8)·(1 + 200/2048) = 667.3 µs applies.
		{"seven waves", 2048, 2e-6 + math.Min(smooth(2048), 7*wave/(989.4e12*0.75))},
	}
	for _, c := range cases {
		op := up(c.tokens)
		if got := k.OpTime(&op); math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("%s: OpTime = %.9g, want %.9g", c.name, got, c.want)
		}
	}
	if got, want := 7*wave/(989.4e12*0.75), smooth(2048); !(want < got) {
		t.Errorf("seven waves %.4g s should lose to the smooth term %.4g s", got, want)
	}
	// Without N and K (a trace row of bare FLOPs and bytes) there is no wave term.
	op := up(256)
	op.N, op.K = 0, 0
	if got, want := k.OpTime(&op), 2e-6+smooth(256); math.Abs(got-want) > 1e-12*want {
		t.Errorf("no dimensions: OpTime = %.9g, want %.9g", got, want)
	}
}

// Metamorphic: the wave term only ever picks a faster kernel, and never
// one faster than the operator's FLOPs at the wave efficiency.
func TestWaveTermBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	for _, gpu := range []string{"a100", "h100", "b200"} {
		g := mustGPU(t, gpu)
		wp := waveProfile(g)
		kw, err := wp.Calibrated(g, 1)
		if err != nil {
			t.Fatal(err)
		}
		kp, _ := handProfile(g).Calibrated(g, 1)
		plain, _ := handProfile(g).Op(models.OpMLPUp)
		for range 2000 {
			M, N, K := 1+r.IntN(8192), 64*(1+r.IntN(512)), 64*(1+r.IntN(256))
			op := models.Op{Kind: models.OpMLPUp, Count: 1, Tokens: M, N: N, K: K,
				FLOPs: 2 * float64(M) * float64(N) * float64(K), Bytes: 2 * float64(N*K+M*(N+K))}
			tw, tp := kw.OpTime(&op), kp.OpTime(&op)
			// The smooth term of waveProfile has h = 200 where handProfile's has 0.
			smooth := op.FLOPs / (g.BF16FLOPS * plain.ComputeEff) * (1 + 200/float64(M))
			floor := 2e-6 + math.Max(math.Min(smooth, op.FLOPs/(g.BF16FLOPS*0.75)), op.Bytes/(g.MemBW*0.9))
			ceil := 2e-6 + math.Max(smooth, op.Bytes/(g.MemBW*0.9))
			if tw < floor*(1-1e-12) || tw > ceil*(1+1e-12) {
				t.Fatalf("%s M %d N %d K %d: %.6g s outside [%.6g, %.6g]", gpu, M, N, K, tw, floor, ceil)
			}
			if tp > ceil*(1+1e-12) {
				t.Fatalf("%s: the profile without waves at %.6g s, above its smooth bound %.6g", gpu, tp, ceil)
			}
		}
	}
}

// The wave term counts waves on the GPU's SMs: a profile refuses a GPU
// whose SM count differs from the one it was fitted or transferred to.
func TestKernelSMs(t *testing.T) {
	h100 := mustGPU(t, "h100")
	p := waveProfile(h100)
	other := *h100
	other.SMs = 0
	if _, err := p.Kernel(&other, 1); err == nil || !strings.Contains(err.Error(), "peaks.sms = 132") {
		t.Errorf("gpu without SMs: %v", err)
	}
	other.SMs = 114
	if _, err := p.Kernel(&other, 1); err == nil || !strings.Contains(err.Error(), "sms = 114") {
		t.Errorf("gpu with other SMs: %v", err)
	}
	// A profile without a wave term does not care.
	if _, err := handProfile(h100).Kernel(&other, 1); err != nil {
		t.Errorf("profile without waves: %v", err)
	}
}
