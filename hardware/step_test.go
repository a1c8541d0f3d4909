package hardware

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

func mustModel(t testing.TB, name string) *models.Model {
	t.Helper()
	m, err := models.Builtin().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func bf16(tp int) models.Parallel {
	return models.Parallel{TP: tp, Weights: models.BF16, KV: models.BF16}
}

// newStep builds a roofline step model or fails the test.
func newStep(t testing.TB, m *models.Model, g *GPU, p models.Parallel, eff Efficiency, iter float64) *StepModel {
	t.Helper()
	s, err := NewStepModel(m, g, p, Roofline{GPU: g, Eff: eff, TP: p.TP}, iter)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func noOverhead() Efficiency {
	e := DefaultEfficiency()
	e.OpOverhead = 0
	return e
}

func decode1(ctx int64) models.Batch { return models.Batch{Decodes: 1, DecodeCtx: ctx} }

// prefill returns one prefill chunk of p new tokens on c cached ones.
func prefill(p int, c int64) models.Batch {
	pf, cf := float64(p), float64(c)
	return models.Batch{Prefills: 1, PrefillTokens: p, PrefillCtx: c, PrefillPairs: pf * (cf + (pf+1)/2)}
}

// Must-show 1: a batch-1 decode step of Llama-3.1-8B on an H100 (BF16, TP 1,
// 128 tokens of context) takes the time of reading the weights at the
// effective bandwidth.
func TestDecodeIsWeightRead(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b")
	g := mustGPU(t, "h100")
	// Weights read by one decode step: the whole model but the embedding
	// table, of which the step gathers one row. Llama-3.1-8B
	// (config.json): vocab 128,256 × hidden 4,096 × 2 bytes = 1.0507 GB of
	// untied embedding; WeightBytes = 8,030,261,248 params × 2 = 16.06 GB, so
	// 15.01 GB are read.
	read := m.WeightBytes(models.BF16) - float64(m.Vocab)*float64(m.Hidden)*2
	// 15.01e9 B / (3.35e12 B/s × 0.80) = 5.60 ms.
	want := read / (g.MemBW * DefaultEfficiency().Memory)

	// Without kernel overheads the step is the weight read plus the KV read
	// (129 tokens × 2 × 32 layers × 8 heads × 128 × 2 B = 16.9 MB, 0.1 %)
	// and activations (< 0.1 %): within 1 %.
	s := newStep(t, m, g, bf16(1), noOverhead(), 0)
	got := s.StepTime(decode1(128))
	if !near(got, want, 0.01) {
		t.Errorf("decode step without overheads = %.4f ms, want weights/(BW·η) = %.4f ms ±1%%", got*1e3, want*1e3)
	}
	if got < want {
		t.Errorf("decode step %.4f ms is below the weight-read bound %.4f ms", got*1e3, want*1e3)
	}

	// With the default 4 µs per kernel: 11 kernels per layer (2 norms, QKV,
	// RoPE, attention, output, up, activation, down, 2 adds) × 32 layers +
	// embedding + LM head = 354 kernels = 1.416 ms more.
	s = newStep(t, m, g, bf16(1), DefaultEfficiency(), 0)
	got = s.StepTime(decode1(128))
	want += (11*32 + 2) * 4e-6
	if !near(got, want, 0.01) {
		t.Errorf("decode step = %.4f ms, want %.4f ms ±1%%", got*1e3, want*1e3)
	}
}

// Must-show 2: memory-bound decode speeds up from H100 to H200 by the HBM
// bandwidth ratio 4.8 / 3.35 = 1.4328 (same compute, same NVLink).
func TestDecodeH100ToH200(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b")
	h100, h200 := mustGPU(t, "h100"), mustGPU(t, "h200")
	const ratio = 4800.0 / 3350.0 // 1.4328
	for _, b := range []models.Batch{decode1(128), {Decodes: 8, DecodeCtx: 8 * 2048}} {
		t100 := newStep(t, m, h100, bf16(1), noOverhead(), 0).StepTime(b)
		t200 := newStep(t, m, h200, bf16(1), noOverhead(), 0).StepTime(b)
		// Every operator is memory-bound at these sizes, so the ratio is
		// exact up to rounding.
		if got := t100 / t200; !near(got, ratio, 0.01) {
			t.Errorf("%+v: H100/H200 step-time ratio = %.4f, want %.4f ±1%%", b, got, ratio)
		}
	}
	// Fixed per-kernel costs do not scale with bandwidth: with them the
	// speed-up is smaller, but still a speed-up.
	b := decode1(128)
	t100 := newStep(t, m, h100, bf16(1), DefaultEfficiency(), 0).StepTime(b)
	t200 := newStep(t, m, h200, bf16(1), DefaultEfficiency(), 0).StepTime(b)
	if r := t100 / t200; !(r > 1.2 && r < ratio) {
		t.Errorf("with overheads the H100/H200 ratio = %.4f, want in (1.2, %.4f)", r, ratio)
	}
}

// Must-show 3: an 8,192-token prefill is compute-bound.
func TestPrefillIsComputeBound(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b")
	g := mustGPU(t, "h100")
	eff := DefaultEfficiency()
	rf := Roofline{GPU: g, Eff: eff, TP: 1}
	b := prefill(8192, 0)
	ops := m.Ops(b, bf16(1), nil)
	gemmTime := 0.0
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case models.OpQKV, models.OpOutProj, models.OpMLPUp, models.OpMLPDown:
			if tc, tm := rf.ComputeTime(op), rf.MemoryTime(op); !(tc > tm) {
				t.Errorf("%v: FLOP time %.3g s not above byte time %.3g s", op.Kind, tc, tm)
			}
			gemmTime += float64(op.Count) * rf.OpTime(op)
		case models.OpAttnPrefill:
			if tc, tm := rf.ComputeTime(op), rf.MemoryTime(op); !(tc > tm) {
				t.Errorf("prefill attention: FLOP time %.3g s not above byte time %.3g s", tc, tm)
			}
		}
	}
	// Independent count, from config.json (hidden 4,096, 32 heads, 8 KV heads
	// × 128, FFN 14,336, 32 layers): GEMM weights per layer
	// 4096·(4096+2·1024) + 4096·4096 + 3·4096·14336 = 218,103,808;
	// FLOPs = 2 × 218,103,808 × 8,192 tokens × 32 layers = 1.1435e14;
	// at 989.4e12 × 0.74 = 732.2 TFLOP/s: 156.2 ms.
	gemmFLOPs := 2.0 * 218103808 * 8192 * 32
	wantGEMM := gemmFLOPs / (g.BF16FLOPS * eff.Compute)
	if !near(gemmTime, wantGEMM, 0.005) {
		t.Errorf("GEMM time = %.2f ms, want FLOPs/(peak·η) = %.2f ms ±0.5%%", gemmTime*1e3, wantGEMM*1e3)
	}
	// Attention: 4 × 32 heads × 128 × (8192·8193/2 pairs) × 32 layers =
	// 1.7594e13 FLOPs at 989.4e12 × 0.50: 35.56 ms.
	attn := 4.0 * 32 * 128 * (8192.0 * 8193 / 2) * 32 / (g.BF16FLOPS * eff.AttnCompute)
	// The rest (norms, RoPE, activation, adds, LM head, kernel overheads) is
	// memory-bound and small: ≈ 49 GB of activation traffic / 2.68e12 B/s
	// ≈ 18 ms + 1.4 ms, so the step is within 15 % of its FLOP time.
	s := newStep(t, m, g, bf16(1), eff, 0)
	step := s.StepTime(b)
	if r := step / (wantGEMM + attn); r < 1 || r > 1.15 {
		t.Errorf("prefill step %.2f ms = %.3f × FLOP time %.2f ms, want in [1, 1.15]", step*1e3, r, (wantGEMM+attn)*1e3)
	}
	// MFU = FLOPs / (step · peak): at most η_c, and near it.
	flops, _ := s.Work(b)
	if mfu := flops / (step * g.BF16FLOPS); mfu > eff.Compute || mfu < 0.55 {
		t.Errorf("prefill MFU = %.3f, want in [0.55, %.2f]", mfu, eff.Compute)
	}
}

// Must-show 4: TP 2 halves the weight bytes per GPU and adds the ring
// all-reduce time.
func TestTensorParallel(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b")
	g := mustGPU(t, "h100")
	w1, w2 := m.WeightBytesPerGPU(bf16(1)), m.WeightBytesPerGPU(bf16(2))
	// Everything but the norm weights ((2·32 + 1) × 4,096 × 2 B = 0.53 MB,
	// replicated) is split in two.
	if !near(w2, w1/2, 1e-4) {
		t.Errorf("TP 2 weights per GPU = %.4g B, want half of %.4g B", w2, w1)
	}
	b := models.Batch{Decodes: 16, DecodeCtx: 16 * 1024}
	s1 := newStep(t, m, g, bf16(1), DefaultEfficiency(), 0)
	s2 := newStep(t, m, g, bf16(2), DefaultEfficiency(), 0)
	_, bytes1 := s1.Work(b)
	_, bytes2 := s2.Work(b)
	if !(bytes2 < 0.55*bytes1 && bytes2 > 0.45*bytes1) {
		t.Errorf("TP 2 bytes per GPU per step %.4g, want about half of %.4g", bytes2, bytes1)
	}
	var ar *OpTime
	bd := s2.Breakdown(b)
	for i := range bd {
		if bd[i].Kind == models.OpAllReduce {
			ar = &bd[i]
		}
	}
	if ar == nil || !(ar.Seconds > 0) {
		t.Fatalf("TP 2 breakdown has no all-reduce time: %+v", ar)
	}
	// 2 all-reduces per layer × 32 layers; each of 16 tokens × 4,096 × 2 B =
	// 131,072 B: 2·(1/2)·131072 / (450e9 × 0.70) + 35.5 µs = 0.416 + 35.5 µs.
	per := 2*0.5*131072/(450e9*0.70) + 35.5e-6
	if ar.Count != 64 || !near(ar.Seconds, 64*per, 1e-12) {
		t.Errorf("all-reduce: count %d, %.6g s; want 64, %.6g s", ar.Count, ar.Seconds, 64*per)
	}
	for _, x := range s1.Breakdown(b) {
		if x.Kind == models.OpAllReduce && x.Seconds != 0 {
			t.Errorf("TP 1 has all-reduce time %g", x.Seconds)
		}
	}
	// The step at TP 2 reads half the bytes but pays 64 all-reduces
	// (2.3 ms): faster than TP 1, not twice as fast.
	t1, t2 := s1.StepTime(b), s2.StepTime(b)
	if !(t2 < t1 && t2 > t1/2) {
		t.Errorf("TP 1 step %.3f ms, TP 2 step %.3f ms: want t1/2 < t2 < t1", t1*1e3, t2*1e3)
	}
}

// StepTime is iterOverhead plus the Breakdown terms, and an empty batch
// costs nothing.
func TestStepTimeBreakdown(t *testing.T) {
	m := mustModel(t, "mixtral-8x7b")
	g := mustGPU(t, "h200")
	s := newStep(t, m, g, bf16(2), DefaultEfficiency(), 1.5e-3)
	b := models.Batch{Prefills: 2, PrefillTokens: 700, PrefillCtx: 300, PrefillPairs: 500*(300+501.0/2) + 200*(201.0/2), Decodes: 30, DecodeCtx: 30 * 900}
	sum := s.IterOverhead()
	for _, x := range s.Breakdown(b) {
		sum += x.Seconds
	}
	if got := s.StepTime(b); !near(got, sum, 1e-12) {
		t.Errorf("StepTime %.9g != overhead + Σ breakdown %.9g", got, sum)
	}
	flops, bytes := s.Work(b)
	var f, by float64
	for _, x := range s.Breakdown(b) {
		f += x.FLOPs
		by += x.Bytes
	}
	if !near(flops, f, 1e-12) || !near(bytes, by, 1e-12) {
		t.Errorf("Work (%g, %g) != Σ breakdown (%g, %g)", flops, bytes, f, by)
	}
	if s.StepTime(models.Batch{}) != 0 || s.Breakdown(models.Batch{}) != nil {
		t.Error("empty batch: want 0 time and no breakdown")
	}
	if f, b := s.Work(models.Batch{}); f != 0 || b != 0 {
		t.Error("empty batch: want no work")
	}
	// With a kernel model that charges 1 s per occurrence, StepTime counts
	// the occurrences: 1 embed + 2·32 norms + 32 × (QKV, RoPE, prefill attn,
	// decode attn, out, router, up, act, down) + 2·32 all-reduces + 2·32 adds
	// + 1 LM head = 2 + 64 + 288 + 64 + 64 = 482, plus the 1.5 ms overhead.
	s1, err := NewStepModel(m, g, bf16(2), KernelFunc(func(*models.Op) float64 { return 1 }), 1.5e-3)
	if err != nil {
		t.Fatal(err)
	}
	if got := s1.StepTime(b); got != 482+1.5e-3 {
		t.Errorf("occurrence count = %v, want 482.0015", got)
	}
}

// Must-show 8 (metamorphic): with no fixed costs, dividing every efficiency
// by k multiplies every step time by k.
func TestScaleEfficiency(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 8))
	for _, name := range []string{"llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b"} {
		m := mustModel(t, name)
		for _, gname := range []string{"a100", "h100", "b200"} {
			g := *mustGPU(t, gname)
			g.LinkLatency = 0 // no fixed cost
			for _, tp := range []int{2, 4, 8} {
				p := bf16(tp)
				if _, err := PlanMemory(m, &g, p, 1, 16, 0); err != nil {
					continue
				}
				base := noOverhead()
				s0 := newStep(t, m, &g, p, base, 0)
				for trial := 0; trial < 5; trial++ {
					k := 1 + 9*r.Float64()
					e := Efficiency{Compute: base.Compute / k, Memory: base.Memory / k, Link: base.Link / k, AttnCompute: base.AttnCompute / k}
					sk := newStep(t, m, &g, p, e, 0)
					pt := r.IntN(4096) + 1
					nd := r.IntN(256)
					b := prefill(pt, int64(r.IntN(4096)))
					b.Decodes, b.DecodeCtx = nd, int64(nd)*int64(r.IntN(8192)+1)
					if got, want := sk.StepTime(b), k*s0.StepTime(b); !near(got, want, 1e-12) {
						t.Fatalf("%s %s tp%d k=%.3f %+v: scaled step %.9g, want k × %.9g = %.9g",
							name, gname, tp, k, b, got, s0.StepTime(b), want)
					}
				}
			}
		}
	}
}

// Adding work never makes a step faster.
func TestStepTimeMonotone(t *testing.T) {
	m := mustModel(t, "llama-3.1-70b")
	g := mustGPU(t, "h100")
	s := newStep(t, m, g, bf16(4), DefaultEfficiency(), 0.5e-3)
	r := rand.New(rand.NewPCG(2, 8))
	for i := 0; i < 200; i++ {
		b := prefill(r.IntN(2048)+1, int64(r.IntN(2048)))
		b.Decodes = r.IntN(128)
		b.DecodeCtx = int64(b.Decodes) * int64(r.IntN(4096)+1)
		t0 := s.StepTime(b)
		more := b
		more.Decodes++
		more.DecodeCtx += int64(r.IntN(4096) + 1)
		if t1 := s.StepTime(more); t1 < t0 {
			t.Fatalf("%+v: adding a decode made the step faster (%.6g → %.6g)", b, t0, t1)
		}
		longer := b
		longer.DecodeCtx += 1000
		if t1 := s.StepTime(longer); t1 < t0 {
			t.Fatalf("%+v: longer contexts made the step faster (%.6g → %.6g)", b, t0, t1)
		}
	}
}

func TestNewStepModelErrors(t *testing.T) {
	m8 := mustModel(t, "llama-3.1-8b")
	m405 := mustModel(t, "llama-3.1-405b")
	h100, h200 := mustGPU(t, "h100"), mustGPU(t, "h200")
	eff := DefaultEfficiency()
	cases := []struct {
		name string
		m    *models.Model
		p    models.Parallel
		k    KernelModel
		iter float64
		want string
	}{
		{"tp 3 does not divide heads", m8, bf16(3), Roofline{GPU: h100, Eff: eff, TP: 3}, 0, "tp 3"},
		{"405B at tp 1", m405, bf16(1), Roofline{GPU: h100, Eff: eff, TP: 1}, 0, "raise tp"},
		{"roofline tp differs", m8, bf16(2), Roofline{GPU: h100, Eff: eff, TP: 1}, 0, "tp 1"},
		{"roofline of another GPU", m8, bf16(1), &Roofline{GPU: h200, Eff: eff, TP: 1}, 0, `"h200"`},
		{"invalid efficiency", m8, bf16(1), Roofline{GPU: h100, TP: 1}, 0, "efficiency"},
		{"negative overhead", m8, bf16(1), Roofline{GPU: h100, Eff: eff, TP: 1}, -1, "overhead"},
		{"nil kernel", m8, bf16(1), nil, 0, "nil"},
	}
	for _, tc := range cases {
		_, err := NewStepModel(tc.m, h100, tc.p, tc.k, tc.iter)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// Must-show 6: StepTime and Work do not allocate.
func TestStepTimeZeroAlloc(t *testing.T) {
	m := mustModel(t, "mixtral-8x7b")
	g := mustGPU(t, "h100")
	s := newStep(t, m, g, bf16(4), DefaultEfficiency(), 1e-3)
	b := models.Batch{Prefills: 1, PrefillTokens: 512, PrefillCtx: 1024, PrefillPairs: 512 * (1024 + 513.0/2), Decodes: 64, DecodeCtx: 64 * 2000}
	var sink float64
	if n := testing.AllocsPerRun(200, func() { sink += s.StepTime(b) }); n != 0 {
		t.Errorf("StepTime allocates %v times per call", n)
	}
	if n := testing.AllocsPerRun(200, func() { f, _ := s.Work(b); sink += f }); n != 0 {
		t.Errorf("Work allocates %v times per call", n)
	}
	_ = sink
}

func BenchmarkStepTime(b *testing.B) {
	for _, c := range []struct {
		name  string
		model string
		tp    int
	}{{"llama-3.1-8b/tp1", "llama-3.1-8b", 1}, {"mixtral-8x7b/tp4", "mixtral-8x7b", 4}} {
		b.Run(c.name, func(b *testing.B) {
			m := mustModel(b, c.model)
			g := mustGPU(b, "h100")
			s := newStep(b, m, g, bf16(c.tp), DefaultEfficiency(), 1e-3)
			batch := models.Batch{Prefills: 1, PrefillTokens: 512, PrefillCtx: 1024, PrefillPairs: 512 * (1024 + 513.0/2), Decodes: 64, DecodeCtx: 64 * 2000}
			b.ReportAllocs()
			var sink float64
			for b.Loop() {
				sink += s.StepTime(batch)
			}
			if math.IsNaN(sink) {
				b.Fatal("NaN")
			}
		})
	}
}
