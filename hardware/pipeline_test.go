package hardware

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// qkvOnly is a kernel model that charges 10 µs per token per layer to the
// QKV projection, 50 µs to the embedding and 100 µs to the LM head, and
// nothing to any other operator: stage times then follow by hand.
var qkvOnly = KernelFunc(func(op *models.Op) float64 {
	switch op.Kind {
	case models.OpQKV:
		return 10e-6 * float64(op.Tokens)
	case models.OpEmbed:
		return 50e-6
	case models.OpLMHead:
		return 100e-6
	}
	return 0
})

// testPipeline is Llama-3.1-8B (32 layers) on H100s at TP 1 over pp
// stages, with every boundary's send set to 5 µs.
func testPipeline(t *testing.T, pp int, k KernelModel, chunked bool) *PipelineStep {
	t.Helper()
	m := mustModel(t, "llama-3.1-8b")
	g, err := Builtin().Get("h100")
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := models.StageLayers(m.Layers, pp)
	ps, err := NewPipelineStep(m, g, bf16(1), k, 0, Pipeline{Layers: layers, Chunked: chunked, MicroTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ps.send {
		ps.send[i] = &SendRecv{Name: "5 µs", Size: []float64{1}, Sec: []float64{5e-6}}
	}
	return ps
}

// TestPipelineBubble checks a round's duration and bubble share for a
// given number of micro-batches in flight. Four stages of 8 layers and a
// kernel of only QKV at 10 µs/token/layer (embedding and LM head at 0 µs
// here: see the kernel below): a stage costs 80 µs per token of its
// micro-batch, a boundary 5 µs.
//
// Back to back, a round lasts max(stage load, one trip): D decodes in
// m = min(4, D) micro-batches of D/m tokens: load m · 80·D/m = 80·D µs, trip
// 4 · 80·D/m + 3 · 5 µs. The bubble is 1 − Σ busy / (4 · round), Σ busy =
// 4 stages · 80·D µs.
func TestPipelineBubble(t *testing.T) {
	noEnds := KernelFunc(func(op *models.Op) float64 {
		if op.Kind == models.OpQKV {
			return 10e-6 * float64(op.Tokens)
		}
		return 0
	})
	for _, c := range []struct {
		decodes, micro int
		back           bool
		sec, bubble    float64
	}{
		{4, 4, true, 335e-6, 1 - 1280.0/1340},  // load 320, trip 4·80 + 15 = 335
		{2, 2, true, 335e-6, 1 - 640.0/1340},   // load 160, trip 335: half the stages idle
		{1, 1, true, 335e-6, 1 - 320.0/1340},   // one micro-batch: 3 of 4 stages idle (76 %)
		{8, 4, true, 655e-6, 1 - 2560.0/2620},  // 2 tokens each: load 640, trip 640 + 15
		{12, 4, true, 975e-6, 1 - 3840.0/3900}, // 3 each: load 960, trip 975
		// From an idle pipeline: the makespan of 4 equal micro-batches,
		// (m + pp − 1) · 80 + 3 · 5 = 7 · 80 + 15 = 575 µs.
		{4, 4, false, 575e-6, 1 - 1280.0/2300},
		{1, 1, false, 335e-6, 1 - 320.0/1340}, // one micro-batch: its trip
	} {
		ps := testPipeline(t, 4, noEnds, false)
		b := models.Batch{Decodes: c.decodes, DecodeCtx: int64(100 * c.decodes)}
		sec, m := ps.Round(b, c.back)
		if m != c.micro || math.Abs(sec-c.sec) > 1e-12 {
			t.Errorf("%d decodes, back %v: %d micro-batches, %.6g s; want %d, %.6g s", c.decodes, c.back, m, sec, c.micro, c.sec)
		}
		if c.back {
			ps.StepPipelined(b)
		} else {
			ps.Step(b)
		}
		st := ps.Stats()
		if st.Rounds != 1 || st.MicroBatches != int64(c.micro) || math.Abs(st.Bubble()-c.bubble) > 1e-9 {
			t.Errorf("%d decodes, back %v: stats %+v bubble %.6g, want 1 round, %d micro-batches, bubble %.6g", c.decodes, c.back, st, st.Bubble(), c.micro, c.bubble)
		}
	}
}

// TestPipelineStageTimes checks the embedding on the first stage and the
// LM head on the last: two stages of 16 layers, one decode: stage 0 =
// 16 · 10 µs + 50 µs = 210 µs, stage 1 = 160 + 100 = 260 µs, trip 210 + 5 +
// 260 = 475 µs; with two decodes (two micro-batches of one token) the
// round is max(load 2 · 260, trip 475) = 520 µs.
func TestPipelineStageTimes(t *testing.T) {
	ps := testPipeline(t, 2, qkvOnly, false)
	if sec, _ := ps.Round(models.Batch{Decodes: 1, DecodeCtx: 10}, true); math.Abs(sec-475e-6) > 1e-12 {
		t.Errorf("one decode: %.6g s, want 475 µs", sec)
	}
	if sec, _ := ps.Round(models.Batch{Decodes: 2, DecodeCtx: 20}, true); math.Abs(sec-520e-6) > 1e-12 {
		t.Errorf("two decodes: %.6g s, want 520 µs", sec)
	}
	ps.StepPipelined(models.Batch{Decodes: 2, DecodeCtx: 20})
	st := ps.Stats()
	if math.Abs(st.StageBusy[0]-420e-6) > 1e-12 || math.Abs(st.StageBusy[1]-520e-6) > 1e-12 || math.Abs(st.SendSeconds[0]-10e-6) > 1e-12 {
		t.Errorf("stage busy %v, sends %v; want [420 µs 520 µs], [10 µs]", st.StageBusy, st.SendSeconds)
	}
}

// TestPipelineChunkedPrefill checks SGLang's chunked pipelining against
// vLLM's whole prefills: one 32-token prompt, micro-batch budget 8 tokens,
// 4 stages (stage 0: 8 layers · 10 µs · n + 50 µs; stage 3 the same + 100 µs
// minus 50; the middle ones 80 µs · n). vLLM runs it as one micro-batch
// of 32 tokens: 4 · 2560 + 50 + 100 + 3 · 5 = 10,405 µs. Chunked: 4
// micro-batches of 8 tokens (640 µs a stage, 690 on the first, 740 on
// the last); from idle, micro-batch 0 leaves stage 3 at 690 + 5 + 640 + 5 +
// 640 + 5 + 740 = 2725 µs and each later one 740 µs after (the last
// stage is the slowest): 2725 + 3 · 740 = 4945 µs, 2.10× faster.
func TestPipelineChunkedPrefill(t *testing.T) {
	b := models.Batch{Prefills: 1, PrefillTokens: 32, PrefillPairs: 32 * 33 / 2}
	whole, m1 := testPipeline(t, 4, qkvOnly, false).Round(b, false)
	chunked, m4 := testPipeline(t, 4, qkvOnly, true).Round(b, false)
	if m1 != 1 || math.Abs(whole-10405e-6) > 1e-12 {
		t.Errorf("vLLM: %d micro-batches, %.6g s; want 1, 10405 µs", m1, whole)
	}
	if m4 != 4 || math.Abs(chunked-4945e-6) > 1e-12 {
		t.Errorf("chunked: %d micro-batches, %.6g s; want 4, 4945 µs", m4, chunked)
	}
	// Back to back (the prompt's next 32 tokens): vLLM waits for the whole
	// trip again, 10,405 µs; chunked only for the slowest stage's load,
	// 4 · 740 = 2960 µs (the chunks enter while the previous round drains).
	if back, _ := testPipeline(t, 4, qkvOnly, false).Round(b, true); math.Abs(back-10405e-6) > 1e-12 {
		t.Errorf("vLLM back to back: %.6g s, want 10405 µs", back)
	}
	if back, _ := testPipeline(t, 4, qkvOnly, true).Round(b, true); math.Abs(back-2960e-6) > 1e-12 {
		t.Errorf("chunked back to back: %.6g s, want 2960 µs", back)
	}
	// With decodes in the round the trip bounds it again: 28 prompt tokens
	// and 4 decodes, 8 tokens a micro-batch (one decode each): trip 690 + 640
	// + 640 + 740 + 15 = 2725 µs < load 2960 µs, so still 2960 µs; one decode
	// alone (m = 1, 1 token): trip 130 + 80 + 80 + 180 + 15 = 485 µs.
	mixed := models.Batch{Prefills: 1, PrefillTokens: 28, PrefillPairs: 28 * 29 / 2, Decodes: 4, DecodeCtx: 400}
	if back, _ := testPipeline(t, 4, qkvOnly, true).Round(mixed, true); math.Abs(back-2960e-6) > 1e-12 {
		t.Errorf("chunked with decodes: %.6g s, want 2960 µs", back)
	}
	if back, _ := testPipeline(t, 4, qkvOnly, true).Round(models.Batch{Decodes: 1, DecodeCtx: 9}, true); math.Abs(back-485e-6) > 1e-12 {
		t.Errorf("chunked, one decode: %.6g s, want 485 µs", back)
	}
}

// TestPipelineSplitConserves checks that the micro-batches of a round sum to
// its batch: requests, tokens and contexts.
func TestPipelineSplitConserves(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		ps := testPipeline(t, 4, qkvOnly, chunked)
		for _, b := range []models.Batch{
			{Decodes: 7, DecodeCtx: 7001},
			{Prefills: 3, PrefillTokens: 1001, PrefillCtx: 333, PrefillPairs: 5e5, Decodes: 10, DecodeCtx: 12345},
			{Prefills: 1, PrefillTokens: 50, PrefillPairs: 1275},
		} {
			m := ps.split(b)
			var sum models.Batch
			for _, mb := range ps.micro[:m] {
				sum.Decodes += mb.Decodes
				sum.DecodeCtx += mb.DecodeCtx
				sum.PrefillTokens += mb.PrefillTokens
				sum.PrefillPairs += mb.PrefillPairs
				if mb.Tokens() == 0 {
					t.Errorf("chunked %v, %+v: an empty micro-batch", chunked, b)
				}
			}
			if sum.Decodes != b.Decodes || sum.DecodeCtx != b.DecodeCtx || sum.PrefillTokens != b.PrefillTokens || math.Abs(sum.PrefillPairs-b.PrefillPairs) > 1e-6 {
				t.Errorf("chunked %v: micro-batches of %+v sum to %+v", chunked, b, sum)
			}
		}
	}
}

// TestPipelineErrors checks a stage whose weights do not fit, and a bad layout.
func TestPipelineErrors(t *testing.T) {
	g, _ := Builtin().Get("h100")
	big := mustModel(t, "llama-3.1-405b") // 810 GB of BF16 weights: ~405 GB a stage at PP 2, TP 1
	layers, _ := models.StageLayers(big.Layers, 2)
	if _, err := NewPipelineStep(big, g, bf16(1), qkvOnly, 0, Pipeline{Layers: layers, MicroTokens: 8}); err == nil || !strings.Contains(err.Error(), "pipeline stage 0") {
		t.Errorf("405B at PP 2 TP 1 on H100: %v, want a stage-0 fit error", err)
	}
	m := mustModel(t, "llama-3.1-8b")
	if _, err := NewPipelineStep(m, g, bf16(1), qkvOnly, 0, Pipeline{Layers: []int{16, 15}, MicroTokens: 8}); err == nil || !strings.Contains(err.Error(), "sums to 31") {
		t.Errorf("bad partition: %v", err)
	}
}

// TestPipelineSends checks where the stage boundaries send: at TP 4 over 4
// stages on 8-GPU nodes, stages 0–1 share node 0 and 2–3 node 1, so only
// the middle boundary crosses nodes; each GPU sends tokens · 4096 · 2 · 2 B
// / 4.
func TestPipelineSends(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b")
	g, _ := Builtin().Get("h100")
	ps, err := NewPipelineStep(m, g, bf16(4), qkvOnly, 0, Pipeline{Layers: []int{8, 8, 8, 8}, MicroTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	want := []*SendRecv{&sendRecvH100Intra, &sendRecvH100Inter, &sendRecvH100Intra}
	for i, s := range ps.Sends() {
		if s != want[i] {
			t.Errorf("boundary %d: %s, want %s", i, s.Name, want[i].Name)
		}
	}
	if ps.msg != 4096 {
		t.Errorf("message %g B/token per GPU, want 4096", ps.msg)
	}
}

// TestPipelineStagesSumToStep: a micro-batch's stage times sum to the
// whole model's step time less the iteration overhead (the same
// operators, split by stage), on the roofline kernel model.
func TestPipelineStagesSumToStep(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b")
	g, _ := Builtin().Get("h100")
	k := Roofline{GPU: g, Eff: DefaultEfficiency(), TP: 1}
	ps, err := NewPipelineStep(m, g, bf16(1), k, 1e-3, Pipeline{Layers: []int{10, 11, 11}, MicroTokens: 8192})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []models.Batch{
		{Decodes: 1, DecodeCtx: 500},
		{Prefills: 1, PrefillTokens: 3000, PrefillPairs: 3000 * 3001 / 2},
	} {
		whole, _, _ := ps.StepModel().Step(b)
		tt, send := make([]float64, 3), make([]float64, 3)
		ps.stageTimes(b, 0, tt, send, nil)
		if sum := tt[0] + tt[1] + tt[2]; math.Abs(sum-(whole-1e-3)) > 1e-9*whole {
			t.Errorf("%+v: stages sum to %.9g s, the step is %.9g s + 1 ms", b, sum, whole-1e-3)
		}
	}
}
