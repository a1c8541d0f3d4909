package hardware

import (
	"math"
	"testing"

	"github.com/servesim/servesim/models"
)

// TestStagePlacement checks where a stage's EP group sits in vLLM's rank
// order (GPU (d·pp + s)·tp + t, nodes of 8 unless said).
func TestStagePlacement(t *testing.T) {
	cases := []struct {
		dp, pp, tp, s, node int
		span, domains       int
	}{
		{2, 1, 4, 0, 8, 8, 1},    // GPUs 0–7: packed, as at pp 1
		{2, 2, 4, 0, 8, 4, 2},    // 0–3 and 8–11: two nodes
		{2, 2, 4, 1, 8, 4, 2},    // 4–7 and 12–15
		{4, 2, 1, 1, 8, 4, 1},    // 1, 3, 5, 7
		{72, 1, 1, 0, 72, 72, 1}, // an NVL72 rack
		{8, 2, 8, 0, 8, 8, 8},    // each rank's stage 0 is a node of its own: 0–7, 16–23, …
		{2, 4, 2, 3, 8, 2, 2},    // 6, 7 and 14, 15
	}
	for _, c := range cases {
		span, dom := StagePlacement(c.dp, c.pp, c.tp, c.s, c.node)
		if span != c.span || dom != c.domains {
			t.Errorf("dp %d pp %d tp %d stage %d node %d: span %d, %d domains; want %d, %d", c.dp, c.pp, c.tp, c.s, c.node, span, dom, c.span, c.domains)
		}
	}
}

// epPipeline is Qwen3-30B-A3B (48 MoE layers, 24 a stage) on H100s at
// tp over 2 stages with experts over dp × tp, DeepEP low-latency, skew 1.
func epPipeline(t *testing.T, dp, tp int, k KernelModel) (*PipelineStep, *GPU) {
	t.Helper()
	m := mustModel(t, "qwen3-30b-a3b")
	g, err := Builtin().Get("h100")
	if err != nil {
		t.Fatal(err)
	}
	p := bf16(tp)
	p.EP = models.ExpertParallel{Size: dp * tp, DP: dp, Skew: 1}
	ps, err := NewPipelineStep(m, g, p, k, 1e-3, Pipeline{Layers: []int{24, 24}, MicroTokens: 8192, All2All: DeepEPLowLatency})
	if err != nil {
		t.Fatal(err)
	}
	return ps, g
}

// TestPipelineExpertAllToAll checks a stage's all-to-all for a given
// routing, by hand. With a kernel that costs nothing, a stage's time is its
// 24 MoE layers × (dispatch + combine), at DeepEP's measured low-latency
// costs (deepep.go): one copy a (token, expert) selection, FP8 dispatch of
// hidden + hidden/128 × 4 + 16 = 2048 + 64 + 16 = 2,128 B and BF16 combine
// of 2048 × 2 = 4,096 B, × top-8, for the GPU's share of the rank's tokens.
//
// DP 2 × TP 1: a stage's group is GPUs 0 and 2 (one node): 8 × 2,128 =
// 17,024 B dispatch and 8 × 4,096 = 32,768 B combine a token over NVLink
// at DeepEP's measured fractions of link_bw (0.765, 0.79), plus the link
// latency.
//
// DP 2 × TP 4: stage 0's group is GPUs 0–3 and 8–11, four in each of two
// nodes (at pp 1 the 8 GPUs would share one), so the kernels cross the
// NIC: a GPU's 1/4 of the rank's tokens, 4,256 B and 8,192 B a token, at
// the measured EP 8 rates (98 and 127 GB/s), the link latency a floor.
//
// The byte counts (Bytes, for reports) stay the per-link copies: DP 2 × TP
// 1 255/256 × 2048 × (1 + 4/128) = 2,103.75 B dispatch, 255/256 × 2048 × 2
// = 4,080 B combine; DP 2 × TP 4 3 × h NVLink peers and 4 × h over the NIC
// for 1/4 of the tokens, h = 1 − (7/8)^8.
func TestPipelineExpertAllToAll(t *testing.T) {
	zero := KernelFunc(func(*models.Op) float64 { return 0 })
	const T = 10
	h := 1 - math.Pow(7.0/8, 8)
	for _, c := range []struct {
		name                   string
		dp, tp                 int
		layer                  func(g *GPU) float64 // one layer's dispatch + combine seconds for T tokens
		dIntra, dInter, cIntra float64              // bytes per token per layer
		cInter                 float64
	}{
		{"dp2 tp1", 2, 1, func(g *GPU) float64 {
			return g.LinkLatency + T*17024/(0.765*g.LinkBW) + g.LinkLatency + T*32768/(0.79*g.LinkBW)
		}, 2103.75, 0, 4080, 0},
		{"dp2 tp4", 2, 4, func(g *GPU) float64 {
			return math.Max(g.LinkLatency, T*4256/98e9) + math.Max(g.LinkLatency, T*8192/127e9)
		}, 0.25 * 3 * h * 2048 * 1.03125, 0.25 * 4 * h * 2048 * 1.03125, 0.25 * 3 * h * 2048 * 2, 0.25 * 4 * h * 2048 * 2},
	} {
		ps, g := epPipeline(t, c.dp, c.tp, zero)
		want := 24 * c.layer(g)
		tt, send, a2a := make([]float64, 2), make([]float64, 2), make([]float64, 2)
		ps.stageTimes(models.Batch{Decodes: T, DecodeCtx: T * 100}, 0, tt, send, a2a)
		for s := range 2 {
			if math.Abs(a2a[s]-want) > 1e-12 || math.Abs(tt[s]-want) > 1e-12 {
				t.Errorf("%s stage %d: all-to-all %.6g s, stage %.6g s; want %.6g s", c.name, s, a2a[s], tt[s], want)
			}
		}
		d, cb := ps.Expert(0).Bytes(T)
		if wd, wc := T*(c.dIntra+c.dInter), T*(c.cIntra+c.cInter); math.Abs(d-wd) > 1e-6 || math.Abs(cb-wc) > 1e-6 {
			t.Errorf("%s: dispatch %g B, combine %g B a layer; want %g, %g", c.name, d, cb, wd, wc)
		}
	}
}

// TestPipelineExpertStagesSumToStep: a micro-batch's stage times with
// expert parallelism sum to the whole model's expert-parallel step
// (ExpertStep: operators plus every MoE layer's all-to-all) less the
// iteration overhead, on its own load and at a DP group's. DP 2 × TP 2:
// each stage's group (GPUs 0, 1, 4, 5 and 2, 3, 6, 7) is one node's, as
// the whole model's group at pp 1, so the all-to-all prices agree.
func TestPipelineExpertStagesSumToStep(t *testing.T) {
	g, _ := Builtin().Get("h100")
	ps, _ := epPipeline(t, 2, 2, Roofline{GPU: g, Eff: DefaultEfficiency(), TP: 2})
	e, err := NewExpertStep(ps.StepModel(), DeepEPLowLatency, 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b    models.Batch
		load float64
	}{
		{models.Batch{Decodes: 1, DecodeCtx: 500}, 0},
		{models.Batch{Prefills: 1, PrefillTokens: 3000, PrefillPairs: 3000 * 3001 / 2}, 0},
		{models.Batch{Decodes: 1, DecodeCtx: 500}, 37}, // the group's mean: 37 tokens a rank
	} {
		e.SetGroupLoad(c.load)
		whole, _, _ := e.Step(c.b)
		tt, send, a2a := make([]float64, 2), make([]float64, 2), make([]float64, 2)
		ps.stageTimes(c.b, c.load, tt, send, a2a)
		if sum := tt[0] + tt[1]; math.Abs(sum-(whole-1e-3)) > 1e-9*whole {
			t.Errorf("%+v at load %g: stages sum to %.9g s, the EP step is %.9g s + 1 ms", c.b, c.load, sum, whole-1e-3)
		}
	}
}

// TestPipelineExpertLockstep checks a DP wave's rounds: every (micro-batch,
// stage) lasts the slowest rank's, the all-to-all at the group's mean
// tokens of the micro-batch. A kernel of only QKV at 10 µs/token/layer: a
// stage of 24 layers costs 240 µs a token; sends 5 µs.
//
// Rank A: 4 decodes in 2 micro-batches of 2; rank B: 1 decode in 1. The
// wave has 2 micro-batches; the group's mean tokens are (2 + 1)/2 = 1.5 →
// 2 and (2 + 0)/2 = 1 (B runs a one-token dummy in the second). Stage
// times: (0, s) = max(480, 240) + a2 and (1, s) = max(480, 240) + a1, with
// aN = 24 layers × the all-to-all of N tokens. From an idle pipeline the
// makespan is C(1, 1) = max(C(0, 1), C(1, 0) + 5) + t(1, 1), C(0, 1) = 480
// + a2 + 5 + 480 + a2 ≥ C(1, 0) + 5 = 960 + a2 + a1 + 5: 1445 µs + 2 a2 +
// a1, on both ranks. Alone, B's round is 240 + a1 + 5 + 240 + a1.
func TestPipelineExpertLockstep(t *testing.T) {
	qkv := KernelFunc(func(op *models.Op) float64 {
		if op.Kind == models.OpQKV {
			return 10e-6 * float64(op.Tokens)
		}
		return 0
	})
	ps, _ := epPipeline(t, 2, 1, qkv)
	ps.send[0] = &SendRecv{Name: "5 µs", Size: []float64{1}, Sec: []float64{5e-6}}
	a := models.Batch{Decodes: 4, DecodeCtx: 400}
	b := models.Batch{Decodes: 1, DecodeCtx: 100}
	aN := func(n int) float64 {
		d, c := ps.Expert(0).AllToAll(n)
		return 24 * (d + c)
	}
	a1, a2 := aN(1), aN(2)
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-12 }

	ps.SetGroupBatches([]models.Batch{a, b}, 0)
	want := 1445e-6 + 2*a2 + a1
	for _, x := range []models.Batch{a, b} {
		if got, _ := ps.Round(x, false); !near(got, want) {
			t.Errorf("wave round of %+v: %.9g s, want %.9g s", x, got, want)
		}
	}
	ps.SetGroupBatches(nil, 0)
	if got, _ := ps.Round(b, false); !near(got, 485e-6+2*a1) {
		t.Errorf("B alone: %.9g s, want %.9g s", got, 485e-6+2*a1)
	}

	// Ranks with the same batch lock-step at no cost: the wave's round is
	// each rank's own (the group's mean is each one's tokens).
	solo, _ := ps.Round(a, true)
	ps.SetGroupBatches([]models.Batch{a, a}, 0)
	if got, _ := ps.Round(a, true); got != solo {
		t.Errorf("two equal ranks: %.12g s, alone %.12g s", got, solo)
	}
	// An idle rank's dummies lower the group's mean (all-to-all of 1 token
	// where A alone moves 2) and never set a stage (240 µs < 480).
	ps.SetGroupBatches([]models.Batch{a}, 1)
	if got, _ := ps.Round(a, false); !near(got, 1445e-6+3*a1) {
		t.Errorf("A with an idle rank: %.9g s, want %.9g s", got, 1445e-6+3*a1)
	}
	ps.SetGroupBatches(nil, 0)
}
