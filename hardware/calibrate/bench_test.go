package calibrate

import (
	"math"
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// kernels returns the roofline and the built-in calibrated kernel of a GPU.
func kernels(b *testing.B, gpu string, tp int) map[string]hardware.KernelModel {
	g := mustGPU(b, gpu)
	p, ok := Builtin(gpu)
	if !ok {
		b.Fatal("no built-in profile")
	}
	cal, err := p.Kernel(g, tp)
	if err != nil {
		b.Fatal(err)
	}
	return map[string]hardware.KernelModel{
		"roofline":   hardware.Roofline{GPU: g, Eff: hardware.DefaultEfficiency(), TP: tp},
		"calibrated": cal,
	}
}

// mixedBatch is the batch of hardware's BenchmarkStepTime: one 512-token
// chunk on 1,024 cached tokens and 64 decodes at 2,000 tokens of context.
var mixedBatch = models.Batch{Prefills: 1, PrefillTokens: 512, PrefillCtx: 1024, PrefillPairs: 512 * (1024 + 513.0/2), Decodes: 64, DecodeCtx: 64 * 2000}

// BenchmarkOpTime prices every operator of one forward pass per iteration
// (13 classes: Llama-3.1-8B at TP 2 has no MoE router).
func BenchmarkOpTime(b *testing.B) {
	m := mustModel(b, "llama-3.1-8b")
	ops := m.Ops(mixedBatch, models.Parallel{TP: 2, Weights: models.BF16, KV: models.BF16}, nil)
	for _, name := range []string{"roofline", "calibrated"} {
		k := kernels(b, "h100", 2)[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var sink float64
			for b.Loop() {
				for i := range ops {
					sink += k.OpTime(&ops[i])
				}
			}
			if math.IsNaN(sink) {
				b.Fatal("NaN")
			}
		})
	}
}

// BenchmarkStepTime is StepModel.StepTime on the same batch every time: the
// token-only operators come from the step model's cache, attention and the
// LM head are priced afresh (what the engine pays per iteration once a
// token count has been seen).
func BenchmarkStepTime(b *testing.B) {
	m := mustModel(b, "llama-3.1-8b")
	par := models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}
	for _, name := range []string{"roofline", "calibrated"} {
		k := kernels(b, "h100", 1)[name]
		b.Run(name, func(b *testing.B) {
			s, err := hardware.NewStepModel(m, mustGPU(b, "h100"), par, k, 1e-3)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var sink float64
			for b.Loop() {
				sink += s.StepTime(mixedBatch)
			}
			if math.IsNaN(sink) {
				b.Fatal("NaN")
			}
		})
	}
}

// BenchmarkStepUncached prices a whole step from scratch, as StepModel does
// for a token count it has not seen: build the operator list (models.Ops)
// and sum Count × OpTime over it, with a different token count each time.
func BenchmarkStepUncached(b *testing.B) {
	m := mustModel(b, "llama-3.1-8b")
	par := models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}
	for _, name := range []string{"roofline", "calibrated"} {
		k := kernels(b, "h100", 1)[name]
		b.Run(name, func(b *testing.B) {
			ops := make([]models.Op, 0, models.NumOpKinds)
			b.ReportAllocs()
			var sink float64
			n := 0
			for b.Loop() {
				n = n%8191 + 1
				batch := models.Batch{Decodes: n, DecodeCtx: int64(n) * 1000}
				ops = m.Ops(batch, par, ops[:0])
				for i := range ops {
					sink += float64(ops[i].Count) * k.OpTime(&ops[i])
				}
			}
			if math.IsNaN(sink) {
				b.Fatal("NaN")
			}
		})
	}
}

// BenchmarkParseBuiltin reads the built-in H100 profile from its TOML (the
// residual trees are most of it): what Builtin pays once per process.
func BenchmarkParseBuiltin(b *testing.B) {
	data, err := builtinFS.ReadFile("profiles/h100.toml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseProfile(data, "h100.toml"); err != nil {
			b.Fatal(err)
		}
	}
}
