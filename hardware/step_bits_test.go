package hardware_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/hardware/calibrate"
	"github.com/servesim/servesim/models"
)

// stepByOps prices b as StepModel.Step did before it cached anything
// beyond the token-only operators: those of Ops(Batch{Decodes: n}) summed
// in Ops' order, then every operator of BatchOps(b) in its order.
func stepByOps(m *models.Model, p models.Parallel, k hardware.KernelModel, iter float64, b models.Batch) (sec, flops, bytes float64) {
	n := b.Tokens()
	if n <= 0 {
		return 0, 0, 0
	}
	add := func(ops []models.Op, keep func(models.OpKind) bool) {
		for i := range ops {
			op := &ops[i]
			if !keep(op.Kind) {
				continue
			}
			c := float64(op.Count)
			if op.Count != 0 {
				sec += c * k.OpTime(op)
			}
			flops += c * op.FLOPs
			bytes += c * op.Bytes
		}
	}
	add(m.Ops(models.Batch{Decodes: n}, p, nil), models.TokenOnly)
	add(m.BatchOps(b, p, nil), func(models.OpKind) bool { return true })
	return iter + sec, flops, bytes
}

// TestStepSameBits prices random batches (decode-only, with prefill
// chunks, speculative, token counts seen before and not) with a step
// model and as stepByOps does, and wants the same bits: dense, MoE with
// expert parallelism and MLA at FP8, under the roofline and the
// calibrated kernels.
func TestStepSameBits(t *testing.T) {
	cat := hardware.Builtin()
	cases := []struct {
		model, gpu string
		p          models.Parallel
	}{
		{"llama-3.1-8b", "h100", models.Parallel{TP: 1}},
		{"llama-3.1-8b", "h200", models.Parallel{TP: 2, Weights: models.FP8, KV: models.FP8}},
		{"qwen3-30b-a3b", "h100", models.Parallel{TP: 2, EP: models.ExpertParallel{Size: 2, DP: 1}}},
		{"deepseek-v3", "h200", models.Parallel{TP: 8, Weights: models.FP8, KV: models.FP8}},
		{"mixtral-8x7b", "h100", models.Parallel{TP: 4, KV: models.FP8}},
		{"qwen3-32b", "h200", models.Parallel{TP: 4, Weights: models.FP8}},
		{"llama-3.1-70b", "h100", models.Parallel{TP: 4}},
	}
	for _, c := range cases {
		m, err := models.Builtin().Get(c.model)
		if err != nil {
			t.Fatal(err)
		}
		g, err := cat.Get(c.gpu)
		if err != nil {
			t.Fatal(err)
		}
		prof, ok := calibrate.Builtin(c.gpu)
		if !ok {
			t.Fatalf("no built-in profile for %s", c.gpu)
		}
		cal, err := prof.Kernel(g, c.p.TP)
		if err != nil {
			t.Fatal(err)
		}
		kernels := map[string]hardware.KernelModel{
			"roofline":   hardware.Roofline{GPU: g, Eff: hardware.DefaultEfficiency(), TP: c.p.TP},
			"calibrated": cal,
			// vllm-v1's wrappers, which the step model looks through for
			// attention and the LM head.
			"calibrated+fused+custom-ar": hardware.CustomARKernel{K: hardware.FusedAddNormKernel{K: cal, GPU: g}, GPU: g, TP: c.p.TP, AR: hardware.DefaultCustomAllReduce()},
		}
		for name, k := range kernels {
			s, err := hardware.NewStepModel(m, g, c.p, k, 1e-3)
			if err != nil {
				t.Fatalf("%s %s: %v", c.model, name, err)
			}
			r := rand.New(rand.NewPCG(7, uint64(c.p.TP)))
			var b models.Batch
			for i := range 3000 {
				if i > 0 && r.IntN(3) == 0 {
					// The last batch a step later: its token count and
					// sampled rows again (the cached parts again), each
					// context one token longer.
					b.DecodeCtx += int64(b.Decodes)
					b.PrefillCtx += int64(b.PrefillTokens)
				} else {
					b = randomBatch(r)
				}
				gs, gf, gb := s.Step(b)
				ws, wf, wb := stepByOps(m, c.p, k, 1e-3, b)
				if math.Float64bits(gs) != math.Float64bits(ws) || math.Float64bits(gf) != math.Float64bits(wf) || math.Float64bits(gb) != math.Float64bits(wb) {
					t.Fatalf("%s %s tp %d, batch %d %+v: Step (%v, %v, %v), by operators (%v, %v, %v)",
						c.model, name, c.p.TP, i, b, gs, gf, gb, ws, wf, wb)
				}
			}
		}
	}
}

// randomBatch returns a decode-only batch, a mixed one or a prefill-only
// one, a quarter of those with decodes speculative.
func randomBatch(r *rand.Rand) models.Batch {
	var b models.Batch
	if r.IntN(3) > 0 {
		b.Decodes = 1 + r.IntN(256)
		b.DecodeCtx = int64(b.Decodes) * int64(1+r.IntN(8000))
		if r.IntN(4) == 0 {
			b.DecodeQuery = 1 + r.IntN(5) // speculative: 1 + k query tokens
		}
	}
	if b.Decodes == 0 || r.IntN(2) == 0 {
		b.Prefills = 1 + r.IntN(3)
		b.PrefillTokens = b.Prefills + r.IntN(4096)
		b.PrefillCtx = int64(r.IntN(20000))
		pt := float64(b.PrefillTokens)
		b.PrefillPairs = pt * (float64(b.PrefillCtx)/float64(b.Prefills) + (pt+1)/2)
	}
	return b
}

// BenchmarkStepDecode prices decode-only steps of the default scenario's
// instance (Llama-3.1-8B, BF16, H100, TP 1, the calibrated kernel under
// vllm-v1's fused-norm wrapper) as the engine does most steps: a cycle of
// 256 random batches of 1 to 256 decodes at contexts up to 8,000, their
// token counts' cached parts warm, so each call prices the decode
// attention (DecodeInto, DecodeTime and its residual table) afresh.
// independent prices one batch after another, whose prices the CPU may
// overlap; chained makes each batch's index depend on the last price (it
// adds the price's sign bit, 0), as the engine's next step waits on this
// one's time: there a step's latency counts, not its throughput.
func BenchmarkStepDecode(b *testing.B) {
	m, err := models.Builtin().Get("llama-3.1-8b")
	if err != nil {
		b.Fatal(err)
	}
	g, err := hardware.Builtin().Get("h100")
	if err != nil {
		b.Fatal(err)
	}
	prof, ok := calibrate.Builtin("h100")
	if !ok {
		b.Fatal("no built-in h100 profile")
	}
	cal, err := prof.Kernel(g, 1)
	if err != nil {
		b.Fatal(err)
	}
	s, err := hardware.NewStepModel(m, g, models.Parallel{TP: 1}, hardware.FusedAddNormKernel{K: cal, GPU: g}, 1e-3)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	batches := make([]models.Batch, 256)
	for i := range batches {
		d := 1 + r.IntN(256)
		batches[i] = models.Batch{Decodes: d, DecodeCtx: int64(d) * int64(1+r.IntN(8000))}
		s.Step(batches[i]) // the token count's cached part, before the clock
	}
	for _, chained := range []bool{false, true} {
		name := "independent"
		if chained {
			name = "chained"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var sink float64
			i := 0
			for b.Loop() {
				sec, _, _ := s.Step(batches[i&255])
				sink += sec
				i++
				if chained {
					i += int(math.Float64bits(sec) >> 63)
				}
			}
			if math.IsNaN(sink) {
				b.Fatal("NaN")
			}
		})
	}
}
