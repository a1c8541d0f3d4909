package hardware

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// TestTBOSplits checks the thresholds below which a batch runs whole.
func TestTBOSplits(t *testing.T) {
	cases := []struct {
		name string
		t    TBO
		b    models.Batch
		want bool
	}{
		// vLLM: decodes only, split when tokens > dbo_decode_token_threshold 32.
		{"vllm 32 decodes", VLLMDBO, models.Batch{Decodes: 32}, false},
		{"vllm 33 decodes", VLLMDBO, models.Batch{Decodes: 33}, true},
		// With a prefill chunk: tokens > dbo_prefill_token_threshold 512
		// (500 prompt tokens + 12 decodes = 512: whole; 513: split).
		{"vllm 512 mixed", VLLMDBO, models.Batch{Prefills: 1, PrefillTokens: 500, Decodes: 12}, false},
		{"vllm 513 mixed", VLLMDBO, models.Batch{Prefills: 1, PrefillTokens: 501, Decodes: 12}, true},
		// 100 decodes and a 20-token chunk: the prefill threshold applies.
		{"vllm 120 mixed", VLLMDBO, models.Batch{Prefills: 1, PrefillTokens: 20, Decodes: 100}, false},
		// SGLang: one sequence cannot be split in two decodes; two can; a
		// 2-token prompt is cut in two chunks.
		{"sglang 1 decode", SGLangTBO, models.Batch{Decodes: 1}, false},
		{"sglang 2 decodes", SGLangTBO, models.Batch{Decodes: 2}, true},
		{"sglang 2-token prompt", SGLangTBO, models.Batch{Prefills: 1, PrefillTokens: 2}, true},
	}
	for _, c := range cases {
		if got := c.t.Splits(c.b); got != c.want {
			t.Errorf("%s: Splits = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestTBOHalves checks the split of a batch in two micro-batches.
func TestTBOHalves(t *testing.T) {
	b := models.Batch{Prefills: 3, PrefillTokens: 1001, PrefillCtx: 2002, PrefillPairs: 4004, Decodes: 5, DecodeCtx: 5000}
	a, c := halves(b)
	// A: 501 of 1001 prompt tokens (f = 501/1001), round(3f) = 2 chunks,
	// round(2002 f) = 1002 context, 4004 f = 2004 pairs; 3 of 5 decodes,
	// 3000 of 5000 context. B the rest.
	wantA := models.Batch{Prefills: 2, PrefillTokens: 501, PrefillCtx: 1002, PrefillPairs: 4004 * 501.0 / 1001, Decodes: 3, DecodeCtx: 3000}
	wantC := models.Batch{Prefills: 1, PrefillTokens: 500, PrefillCtx: 1000, PrefillPairs: 4004 - 4004*501.0/1001, Decodes: 2, DecodeCtx: 2000}
	if math.Abs(a.PrefillPairs-wantA.PrefillPairs) > 1e-9 || math.Abs(c.PrefillPairs-wantC.PrefillPairs) > 1e-9 {
		t.Errorf("halves' pairs %v, %v; want %v, %v", a.PrefillPairs, c.PrefillPairs, wantA.PrefillPairs, wantC.PrefillPairs)
	}
	a.PrefillPairs, c.PrefillPairs, wantA.PrefillPairs, wantC.PrefillPairs = 0, 0, 0, 0
	if a != wantA || c != wantC {
		t.Errorf("halves = %+v, %+v; want %+v, %+v", a, c, wantA, wantC)
	}
	// One prompt of 10 tokens is cut in two chunks, one in each half.
	a, c = halves(models.Batch{Prefills: 1, PrefillTokens: 10, PrefillPairs: 55})
	if a.Prefills != 1 || c.Prefills != 1 || a.PrefillTokens != 5 || c.PrefillTokens != 5 {
		t.Errorf("one prompt: halves = %+v, %+v; want 5 tokens and one chunk each", a, c)
	}
}

// TestOverlapStep checks the overlapped length for known compute and
// communication times.
func TestOverlapStep(t *testing.T) {
	cases := []struct {
		name        string
		layers, moe float64
		c, a        [2]float64
		want        float64
	}{
		// Comm-bound, 2 MoE layers, c = 1, a = 3 a half: A's first compute
		// (1), then the link busy 4 × 3 = 12 without a gap: 13 = 2·2·3 + 1.
		{"comm bound", 2, 2, [2]float64{1, 1}, [2]float64{3, 3}, 13},
		// Compute-bound, c = 3, a = 1: compute busy 4 × 3 = 12, then B's
		// last all-to-all (1): 13.
		{"compute bound", 2, 2, [2]float64{3, 3}, [2]float64{1, 1}, 13},
		// A leading dense layer adds both halves' compute, 2: 15.
		{"dense layer", 3, 2, [2]float64{1, 1}, [2]float64{3, 3}, 15},
		// No communication: the two halves' compute, 2 layers × 2 × 1 = 4.
		{"no comm", 2, 2, [2]float64{1, 1}, [2]float64{0, 0}, 4},
		// Unequal halves, 1 MoE layer: max(2, 1) + max(1, 4) + min(2, 4) = 8.
		{"unequal", 1, 1, [2]float64{2, 1}, [2]float64{1, 4}, 8},
	}
	for _, c := range cases {
		if got := overlapStep(c.layers, c.moe, c.c, c.a, 1); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: overlapStep = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestTBOStep checks the expert step with two-batch overlap against the
// step without it: below the threshold the same; above it the halves'
// compute with the all-to-all hidden up to the edges, and never longer
// than both run back to back.
func TestTBOStep(t *testing.T) {
	p := models.Parallel{TP: 1, Weights: models.FP8, KV: models.BF16, EP: models.ExpertParallel{Size: 16, DP: 16, Skew: 1}}
	plain := testExpertStep(t, "h100", p, DeepEPLowLatency, 8)
	tbo := testExpertStep(t, "h100", p, DeepEPLowLatency, 8)
	rule := VLLMDBO // vLLM's thresholds on SGLang's decode schedule
	rule.Schedule = TBOScheduleSGLang
	tbo.SetTBO(&rule)
	small := models.Batch{Decodes: 32, DecodeCtx: 32 * 2000}
	s1, _, _ := plain.Step(small)
	s2, _, _ := tbo.Step(small)
	if s1 != s2 {
		t.Errorf("32 decodes (at the threshold): TBO step %v != plain %v", s2, s1)
	}
	big := models.Batch{Decodes: 256, DecodeCtx: 256 * 2000}
	whole, _, _ := plain.Step(big)
	got, _, _ := tbo.Step(big)
	// By hand, SGLang's decode schedule (tbo_stages.go): each half of 128
	// decodes priced alone, its compute over 61 layers split in attention
	// prepare pr, core co and MoE operators x; per MoE layer (58) both
	// halves' experts plus each dispatch d beside the other's prepare and
	// each combine cb beside the other's core; the edges: A's first
	// prepare and core alone, B's last dispatch and combine exposed.
	half := models.Batch{Decodes: 128, DecodeCtx: 128 * 2000}
	sh, _, _ := tbo.s.Step(half)
	o := tbo.s.IterOverhead()
	c := (sh - o) / 61
	pr, co, x := tbo.stageParts(half, sh-o, tbo.moeSec(128), 61)
	d, cb := tbo.AllToAll(128)
	a := d + cb
	// The 3 dense layers run whole on SGLang's schedule: cw a layer.
	sw, _, _ := tbo.s.Step(big)
	cw := (sw - o) / 61
	want := o + 3*cw + 58*(2*x+2*math.Max(pr, d)+2*math.Max(co, cb)) + pr - math.Max(pr, d) + co - math.Max(co, cb) + d + cb
	if math.Abs(pr+co+x-c) > 1e-12*c {
		t.Errorf("stage parts %v + %v + %v != a layer's compute %v", pr, co, x, c)
	}
	if math.Abs(got-want) > 1e-12*want {
		t.Errorf("256 decodes: TBO step %v, want %v", got, want)
	}
	if !(got < whole) {
		t.Errorf("256 decodes: TBO step %v not below the plain step %v (all-to-all %v a layer-half, compute %v)", got, whole, a, c)
	}
	st := tbo.Stats()
	if st.OverlapSteps != 1 || st.Steps != 2 {
		t.Errorf("stats %+v: want 2 steps, 1 overlapped", st)
	}
	// exposed: the step less the compute (the halves' in the MoE layers,
	// the whole batch's in the dense ones)
	if exp := want - o - (2*(sh-o) + 3*(cw-2*c)); math.Abs(st.AllToAllSecond-(exp+plainA2A(plain, 32))) > 1e-9 {
		t.Errorf("exposed all-to-all %v, want %v", st.AllToAllSecond, exp+plainA2A(plain, 32))
	}
}

// TestContended checks a compute stage beside an all-to-all whose kernels
// slow it by f while they run, and its bounds max(c, a) ≤ stage ≤ c + a.
func TestContended(t *testing.T) {
	cases := []struct {
		name    string
		c, a, f float64
		want    float64
	}{
		// f = 1: no contention, max(c, a).
		{"no contention", 3, 1, 1, 3},
		{"no contention comm bound", 1, 3, 1, 3},
		// H100, DeepEP normal: f = 132 / (132 − 20) = 33/28. c = 1, a = 3:
		// c·f = 1.18 ≤ 3, the compute ends inside the all-to-all: 3.
		{"comm bound", 1, 3, 132.0 / 112, 3},
		// c = 3, a = 1: 1/f = 28/33 of the work in the span, then
		// 3 − 28/33 at full speed: 3 + 1 × (1 − 28/33) = 3 + 5/33.
		{"compute bound", 3, 1, 132.0 / 112, 3 + 5.0/33},
		// Equal c = a = 2: c·f > a, 2 + 2 × 5/33.
		{"equal", 2, 2, 132.0 / 112, 2 + 10.0/33},
		// No all-to-all: c.
		{"no comm", 2, 0, 132.0 / 112, 2},
		// Half the SMs (f = 2), c = 2, a = 2: c·f = 4 > 2: 2 + 2 × 1/2 = 3.
		{"half the SMs", 2, 2, 2, 3},
	}
	for _, c := range cases {
		got := contended(c.c, c.a, c.f)
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: contended(%v, %v, %v) = %v, want %v", c.name, c.c, c.a, c.f, got, c.want)
		}
		if got < math.Max(c.c, c.a)-1e-12 || got > c.c+c.a+1e-12 {
			t.Errorf("%s: %v outside [max(c, a), c + a] = [%v, %v]", c.name, got, math.Max(c.c, c.a), c.c+c.a)
		}
	}
}

// TestOverlapStepBounds: on seeded random layers, compute, all-to-all and
// slow-downs, an overlapped step is never shorter than either resource's
// total (all compute, all all-to-all) nor longer than both back to back.
// Replay a failure with its seed in the message.
func TestOverlapStepBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 1))
	for i := 0; i < 10000; i++ {
		moe := float64(1 + r.IntN(60))
		layers := moe + float64(r.IntN(4))
		c := [2]float64{r.Float64(), r.Float64()}
		a := [2]float64{3 * r.Float64(), 3 * r.Float64()}
		f := 1 + 3*r.Float64()
		got := overlapStep(layers, moe, c, a, f)
		lo := math.Max(layers*(c[0]+c[1]), moe*(a[0]+a[1]))
		hi := layers*(c[0]+c[1]) + moe*(a[0]+a[1])
		if got < lo*(1-1e-12) || got > hi*(1+1e-12) {
			t.Fatalf("seed 22 draw %d: overlapStep(%v, %v, %v, %v, %v) = %v outside [%v, %v]", i, layers, moe, c, a, f, got, lo, hi)
		}
	}
}

// TestTBOStepContention: with DeepEP's normal kernels holding 20 of the
// H100's 132 SMs, each MoE layer's stage is contended(c, a, 132/112), the
// step is longer than the uncontended overlap and never longer than the
// split halves run back to back; low-latency kernels hold none.
func TestTBOStepContention(t *testing.T) {
	// EP 8 inside one node: the NVLink all-to-all is shorter than the
	// compute, so the contention shows.
	p := models.Parallel{TP: 1, Weights: models.FP8, KV: models.BF16, EP: models.ExpertParallel{Size: 8, DP: 8, Skew: 1}}
	e := testExpertStep(t, "h100", p, DeepEPHighThroughput, 8)
	if n, f := e.CommSMs(); n != 20 || math.Abs(f-132.0/112) > 1e-15 {
		t.Fatalf("DeepEP normal on H100: CommSMs = %d, %v; want 20, 132/112", n, f)
	}
	e.SetTBO(&SGLangTBO)
	b := models.Batch{Prefills: 8, PrefillTokens: 16000, PrefillPairs: 8 * 2000 * 2001 / 2}
	got, _, _ := e.Step(b)
	mA, mB := halves(b)
	o := e.s.IterOverhead()
	var c, a, x, xa, d, k [2]float64
	for i, h := range [2]models.Batch{mA, mB} {
		sh, _, _ := e.s.Step(h)
		d[i], k[i] = e.AllToAll(h.Tokens())
		c[i], a[i] = (sh-o)/61, d[i]+k[i]
		pr, co, ex := e.stageParts(h, sh-o, e.moeSec(h.Tokens()), 61)
		xa[i], x[i] = pr+co, ex
	}
	// DeepSeek-V3: 61 layers, 3 dense, 58 MoE; SGLang's prefill schedule
	// (tbo_stages.go): A's dispatch beside B's attention, B's beside A's
	// experts, A's combine beside B's experts, B's beside A's next
	// attention; A's first attention alone, B's last combine exposed.
	f := 132.0 / 112
	s := func(c, a float64) float64 { return contended(c, a, f) }
	// The 3 dense layers run whole: cw a layer.
	sw, _, _ := e.s.Step(b)
	cw := (sw - o) / 61
	want := o + 3*cw + 58*(s(xa[1], d[0])+s(x[0], d[1])+s(x[1], k[0])+s(xa[0], k[1])) + xa[0] - s(xa[0], k[1]) + k[1]
	if math.Abs(got-want) > 1e-12*want {
		t.Errorf("16,000-token prefill: step %v, want %v", got, want)
	}
	var pz [2]float64
	free := o + 3*cw + stagedStep(58, 58, pz, xa, x, d, k, 1, true)
	serial := o + 61*(c[0]+c[1]) + 58*(a[0]+a[1])
	if !(got > free && got <= serial) {
		t.Errorf("contended step %v not in (%v uncontended, %v serial]", got, free, serial)
	}
	if err := e.SetCommSMs(0); err != nil {
		t.Fatal(err)
	}
	if g0, _, _ := e.Step(b); math.Abs(g0-free) > 1e-12*free {
		t.Errorf("0 communication SMs: step %v, want the uncontended %v", g0, free)
	}
	for _, n := range []int{132, 500} {
		if err := e.SetCommSMs(n); err == nil {
			t.Errorf("SetCommSMs(%d) on a 132-SM GPU: no error", n)
		}
	}
	ll := testExpertStep(t, "h100", p, DeepEPLowLatency, 8)
	if n, f := ll.CommSMs(); n != 0 || f != 1 {
		t.Errorf("DeepEP low-latency: CommSMs = %d, %v; want 0, 1", n, f)
	}
}

// TestCommSMsUnknownGPU: a GPU without an SM count prices the overlap
// without contention by default and refuses an explicit count.
func TestCommSMsUnknownGPU(t *testing.T) {
	m := mustModel(t, "deepseek-v3")
	g, err := Builtin().Get("h100")
	if err != nil {
		t.Fatal(err)
	}
	g0 := *g
	g0.SMs = 0
	p := models.Parallel{TP: 1, Weights: models.FP8, KV: models.BF16, EP: models.ExpertParallel{Size: 8, DP: 8, Skew: 1}}
	s, err := newStepModel(m, &g0, p, Roofline{GPU: &g0, Eff: DefaultEfficiency(), TP: 1}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewExpertStep(s, DeepEPHighThroughput, 8)
	if err != nil {
		t.Fatal(err)
	}
	if n, f := e.CommSMs(); n != 0 || f != 1 {
		t.Errorf("no SM count: CommSMs = %d, %v; want 0, 1", n, f)
	}
	if err := e.SetCommSMs(20); err == nil || !strings.Contains(err.Error(), "has no SM count") {
		t.Errorf("SetCommSMs(20) without an SM count: %v", err)
	}
}

func plainA2A(e *ExpertStep, tokens int) float64 {
	d, c := e.AllToAll(tokens)
	return e.layers * (d + c)
}

// TestTBOGroupAgrees: under DP lock-step a step splits only if every rank's
// batch would (vLLM's dp_utils: all ranks microbatch or none), an idle
// rank's one-token dummy batch included.
func TestTBOGroupAgrees(t *testing.T) {
	p := models.Parallel{TP: 1, Weights: models.FP8, KV: models.BF16, EP: models.ExpertParallel{Size: 16, DP: 16, Skew: 1}}
	e := testExpertStep(t, "h100", p, DeepEPLowLatency, 8)
	e.SetTBO(&VLLMDBO)
	b40 := models.Batch{Decodes: 40, DecodeCtx: 40 * 1000}
	cases := []struct {
		name    string
		batches []models.Batch
		idle    int
		want    bool
	}{
		{"all above 32", []models.Batch{b40, {Decodes: 33, DecodeCtx: 33000}}, 0, true},
		{"one at 20", []models.Batch{b40, {Decodes: 20, DecodeCtx: 20000}}, 0, false},
		{"one idle rank", []models.Batch{b40}, 1, false},
		{"no group", nil, 0, true}, // the rank's own 40 decodes
	}
	for _, c := range cases {
		e.SetGroupBatches(c.batches, c.idle)
		before := e.Stats().OverlapSteps
		e.Step(b40)
		if got := e.Stats().OverlapSteps > before; got != c.want {
			t.Errorf("%s: split %v, want %v", c.name, got, c.want)
		}
		e.SetGroupBatches(nil, 0)
	}
}
