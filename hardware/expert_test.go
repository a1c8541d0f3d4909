package hardware

import (
	"math"
	"testing"

	"github.com/servesim/servesim/models"
)

func testExpertStep(t *testing.T, gpu string, p models.Parallel, backend string, node int) *ExpertStep {
	t.Helper()
	m := mustModel(t, "deepseek-v3")
	g, err := Builtin().Get(gpu)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newStepModel(m, g, p, Roofline{GPU: g, Eff: DefaultEfficiency(), TP: p.TP}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewExpertStep(s, backend, node)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestAllToAllBytes checks the dispatch and combine bytes per GPU of one
// DeepSeek-V3 MoE layer (hidden 7168, 256 experts, top-8) for a given
// routing, by backend and placement.
func TestAllToAllBytes(t *testing.T) {
	ep := func(size, dp int, skew float64) models.Parallel {
		return models.Parallel{TP: size / dp, Weights: models.BF16, KV: models.BF16, EP: models.ExpertParallel{Size: size, DP: dp, Skew: skew}}
	}
	const h = 7168.0
	hit16 := 1 - math.Pow(15.0/16, 8) // a given one of 16 GPUs holds one of a token's 8 experts
	hit8 := 1 - math.Pow(7.0/8, 8)
	fp8 := 1 + 4.0/128 // FP8 element and its block scale
	cases := []struct {
		name             string
		p                models.Parallel
		backend          string
		tokens           int
		dispatch, combin float64
	}{
		// All-gather over DP 4: every GPU receives the other 3 ranks' 100
		// tokens' hidden states and 256 router logits, BF16; the combine
		// reduce-scatters the 3 × 100 hidden states back.
		{"agrs dp4", ep(4, 4, 1), AllGatherReduceScatter, 100, 3 * 100 * (h + 256) * 2, 3 * 100 * h * 2},
		// DP 1 (EP = TP 2): the TP all-reduce sums the experts; nothing moves.
		{"agrs dp1", ep(2, 1, 1), AllGatherReduceScatter, 100, 0, 0},
		// DeepEP normal, EP 16 over 2 nodes of 8: 7 × hit16 GPUs in the node,
		// the other node once (1 − (1/2)^8 = 255/256); BF16 both ways.
		{"ht ep16", ep(16, 16, 1), DeepEPHighThroughput, 128, 128 * (7*hit16 + 255.0/256) * h * 2, 128 * (7*hit16 + 255.0/256) * h * 2},
		// DeepEP low-latency, same: the 8 GPUs of the other node each, FP8 dispatch.
		{"ll ep16", ep(16, 16, 1), DeepEPLowLatency, 128, 128 * (7*hit16 + 8*hit16) * h * fp8, 128 * (7*hit16 + 8*hit16) * h * 2},
		// DeepEP normal inside one node, EP 8 = DP 4 × TP 2, skew 1.1: each
		// GPU sends half its rank's 100 tokens, the busiest receiver 1.1 × the mean.
		{"ht ep8 tp2 skew", ep(8, 4, 1.1), DeepEPHighThroughput, 100, 100 * 1.1 / 2 * 7 * hit8 * h * 2, 100 * 1.1 / 2 * 7 * hit8 * h * 2},
	}
	for _, c := range cases {
		e := testExpertStep(t, "h100", c.p, c.backend, 8)
		d, cb := e.Bytes(c.tokens)
		if math.Abs(d-c.dispatch) > 1e-9*math.Max(1, c.dispatch) || math.Abs(cb-c.combin) > 1e-9*math.Max(1, c.combin) {
			t.Errorf("%s: dispatch %.0f B, combine %.0f B; want %.0f, %.0f", c.name, d, cb, c.dispatch, c.combin)
		}
	}
}

// TestAllToAllTime checks a direction's time for DeepEP's normal kernels,
// latency + max(NVLink bytes / (0.765 link_bw), NIC bytes / measured RDMA
// bandwidth), with DeepEP's logical bytes (deepep.go), and that a step adds
// 58 MoE layers' dispatch and combine to the operators' time.
func TestAllToAllTime(t *testing.T) {
	p := models.Parallel{TP: 1, Weights: models.FP8, KV: models.FP8, EP: models.ExpertParallel{Size: 16, DP: 16}}
	e := testExpertStep(t, "h100", p, DeepEPHighThroughput, 8)
	g := e.s.g
	const h, tok = 7168.0, 64
	hit := 1 - math.Pow(15.0/16, 8)
	fp8 := 1 + 4.0/128
	// NVLink: all 16 GPUs' copies (forwarded inside the node) at 153/200
	// of 450 GB/s = 344 GB/s: ≈ 5.3 µs; RDMA: both nodes (2 × (1 − 2⁻⁸))
	// at EP 16's measured 43 GB/s: ≈ 22 µs.
	intra := tok * 16 * hit * h * fp8 / (153.0 / 200 * g.LinkBW)
	inter := tok * 2 * 255.0 / 256 * h * fp8 / 43e9
	want := g.LinkLatency + math.Max(intra, inter)
	d, c := e.AllToAll(tok)
	if math.Abs(d-want) > 1e-15 {
		t.Errorf("dispatch %.3g s, want %.3g", d, want)
	}
	if wantC := g.LinkLatency + tok*2*255.0/256*h*2/43e9; math.Abs(c-wantC) > 1e-15 {
		t.Errorf("combine %.3g s, want %.3g", c, wantC)
	}
	b := models.Batch{Decodes: tok, DecodeCtx: tok * 1000}
	inner, _, _ := e.s.Step(b)
	got, _, _ := e.Step(b)
	if wantStep := inner + 58*(d+c); math.Abs(got-wantStep) > 1e-12 {
		t.Errorf("step %.6g s, want operators %.6g + 58 × (%.3g + %.3g)", got, inner, d, c)
	}
	if st := e.Stats(); st.Steps != 1 || st.Tokens != tok || math.Abs(st.AllToAllSecond-58*(d+c)) > 1e-12 {
		t.Errorf("stats %+v", st)
	}
	if d, c := e.AllToAll(0); d != 0 || c != 0 {
		t.Errorf("no tokens: %v, %v", d, c)
	}
}

// TestDeepEPMeasured: DeepEP's low-latency kernels across domains
// reproduce the latencies its README publishes at its benchmark point (128
// tokens a rank, DeepSeek-V3's hidden 7168 and top-8, FP8 dispatch, BF16
// combine; every EP rank on its own RDMA NIC, gpusPerNode 1), and an EP
// size between two measured ones takes the interpolated bandwidth.
func TestDeepEPMeasured(t *testing.T) {
	for _, c := range []struct {
		ep                int
		dispatch, combine float64 // µs, docs/legacy.md
	}{
		{8, 77, 114}, {16, 118, 195}, {32, 155, 273}, {64, 173, 314}, {128, 192, 369}, {256, 194, 360},
	} {
		p := models.Parallel{TP: 1, Weights: models.FP8, KV: models.FP8, EP: models.ExpertParallel{Size: c.ep, DP: c.ep, Skew: 1}}
		e := testExpertStep(t, "h100", p, DeepEPLowLatency, 1)
		d, cb := e.AllToAll(128)
		// DeepEP rounds its bandwidths to whole GB/s: within 3 %.
		if math.Abs(1e6*d/c.dispatch-1) > 0.03 || math.Abs(1e6*cb/c.combine-1) > 0.03 {
			t.Errorf("EP %d: dispatch %.1f µs, combine %.1f µs; DeepEP measured %.0f, %.0f", c.ep, 1e6*d, 1e6*cb, c.dispatch, c.combine)
		}
	}
	// EP 72 on 8-GPU nodes: 64 + 8, an eighth of the way from EP 64's 43
	// and 46 GB/s to EP 128's 39 and 39: 42.5 and 45.125 GB/s; 100
	// tokens × 8 selections × 7408 B and × 14336 B.
	p := models.Parallel{TP: 1, Weights: models.FP8, KV: models.FP8, EP: models.ExpertParallel{Size: 72, DP: 72, Skew: 1}}
	e := testExpertStep(t, "h100", p, DeepEPLowLatency, 8)
	d, cb := e.AllToAll(100)
	if wd, wc := 100*8*7408/42.5e9, 100*8*14336/45.125e9; math.Abs(d-wd) > 1e-12 || math.Abs(cb-wc) > 1e-12 {
		t.Errorf("EP 72: %v, %v; want %v, %v", d, cb, wd, wc)
	}
	// One token: the link latency is the floor (35.5 µs on H100).
	if d, _ := e.AllToAll(1); d != e.s.g.LinkLatency {
		t.Errorf("one token: dispatch %v, want the floor %v", d, e.s.g.LinkLatency)
	}
	// Inside one NVLink domain (GB200 NVL72, EP 48): the selections over
	// 0.765 and 0.79 of 900 GB/s, plus the link latency.
	p.EP = models.ExpertParallel{Size: 48, DP: 48, Skew: 1}
	e = testExpertStep(t, "gb200", p, DeepEPLowLatency, 72)
	d, cb = e.AllToAll(128)
	if wd, wc := e.lat+128*8*7408/(0.765*900e9), e.lat+128*8*14336/(0.79*900e9); math.Abs(d-wd) > 1e-12 || math.Abs(cb-wc) > 1e-12 {
		t.Errorf("GB200 EP 48: %v, %v; want %v, %v", d, cb, wd, wc)
	}
}

// TestExpertStepErrors: no EP layout or an unknown backend is an error.
func TestExpertStepErrors(t *testing.T) {
	m := mustModel(t, "deepseek-v3")
	g, _ := Builtin().Get("h100")
	s, err := newStepModel(m, g, models.Parallel{TP: 8, Weights: models.FP8, KV: models.FP8}, Roofline{GPU: g, Eff: DefaultEfficiency(), TP: 8}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewExpertStep(s, "", 8); err == nil {
		t.Error("no EP layout: no error")
	}
	p := models.Parallel{TP: 1, Weights: models.FP8, KV: models.FP8, EP: models.ExpertParallel{Size: 8, DP: 8}}
	if s, err = newStepModel(m, g, p, Roofline{GPU: g, Eff: DefaultEfficiency(), TP: 1}, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := NewExpertStep(s, "nccl", 8); err == nil {
		t.Error("unknown backend: no error")
	}
}

// TestExpertGroupLoad: under DP lock-step a rank's step prices its MoE
// operators and all-to-all at the group's mean tokens per rank: the step
// moves by the MoE operators' difference and the all-to-all at the group's
// tokens; a load equal to the rank's own tokens changes nothing, and 0
// restores the rank's own pricing.
func TestExpertGroupLoad(t *testing.T) {
	p := models.Parallel{TP: 1, Weights: models.FP8, KV: models.FP8, EP: models.ExpertParallel{Size: 16, DP: 16}}
	e := testExpertStep(t, "h100", p, DeepEPLowLatency, 8)
	b := models.Batch{Decodes: 10, DecodeCtx: 10 * 500}
	own, _, _ := e.Step(b)
	e.SetGroupLoad(10)
	same, _, _ := e.Step(b)
	e.SetGroupLoad(30)
	grp, _, _ := e.Step(b)
	e.SetGroupLoad(0)
	back, _, _ := e.Step(b)
	if same != own || back != own {
		t.Errorf("load = own tokens: %v, load 0: %v; want %v", same, back, own)
	}
	inner, _, _ := e.s.Step(b)
	d, c := e.AllToAll(30)
	want := inner - e.moeSec(10) + e.moeSec(30) + 58*(d+c)
	if math.Abs(grp-want) > 1e-12 || !(grp > own) {
		t.Errorf("group load 30: %.6g s, want %.6g (own %.6g)", grp, want, own)
	}
}
