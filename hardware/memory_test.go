package hardware

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// Must-show 5a: Llama-3.1-405B does not fit on one H100.
func TestPlanMemory405BOnH100(t *testing.T) {
	m := mustModel(t, "llama-3.1-405b")
	g := mustGPU(t, "h100")
	_, err := PlanMemory(m, g, bf16(1), DefaultUtilization, DefaultBlockSize, DefaultActivationReserve)
	if err == nil {
		t.Fatal("405B in BF16 on one H100: no error")
	}
	// 405.85e9 parameters × 2 bytes = 811.7 GB against 80 GB × 0.90 = 72.0 GB usable.
	w := m.WeightBytesPerGPU(bf16(1))
	for _, want := range []string{
		"hardware: llama-3.1-405b needs " + fmt.Sprintf("%.1f GB", w/1e9),
		"bf16 weights per GPU at tp 1", "h100 has 72.0 GB usable (80 GB × 0.90)",
		"3.2 GB is reserved for activations", "raise tp or use a larger GPU",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if w < 800e9 || w > 820e9 {
		t.Errorf("405B BF16 weights = %.1f GB, want ≈ 811 GB", w/1e9)
	}
	// At TP 8 (811 / 8 = 101 GB per GPU) it still does not fit an H100 in
	// BF16, but it does in FP8 (51 GB).
	if _, err := PlanMemory(m, g, bf16(8), DefaultUtilization, DefaultBlockSize, DefaultActivationReserve); err == nil {
		t.Error("405B BF16 at TP 8 on H100: no error")
	}
	fp8 := models.Parallel{TP: 8, Weights: models.FP8, KV: models.FP8}
	if _, err := PlanMemory(m, g, fp8, DefaultUtilization, DefaultBlockSize, DefaultActivationReserve); err != nil {
		t.Errorf("405B FP8 at TP 8 on H100: %v", err)
	}
}

// Must-show 5b: the KV blocks of Llama-3.1-8B on one H100, by hand.
func TestPlanMemoryBlocks(t *testing.T) {
	cases := []struct {
		name                  string
		model, gpu            string
		p                     models.Parallel
		util                  float64
		block                 int
		reserve               float64
		wantWeights, perToken float64
		wantBlocks            int
	}{
		// Llama-3.1-8B (config.json): 8,030,261,248 params × 2 B = 16,060,522,496 B.
		// KV per token: 2 × 32 layers × 8 KV heads × 128 × 2 B = 131,072 B.
		// Budget: 80e9 × 0.9 − 16,060,522,496 − 3 GiB (3,221,225,472)
		//       = 52,718,252,032 B; block = 16 × 131,072 = 2,097,152 B;
		// 52,718,252,032 / 2,097,152 = 25,138.02 → 25,138 blocks.
		{"8b h100", "llama-3.1-8b", "h100", bf16(1), 0.9, 16, 3 << 30, 16060522496, 131072, 25138},
		// Same with an FP8 KV cache: 65,536 B per token, blocks of 1,048,576 B:
		// 52,718,252,032 / 1,048,576 = 50,276.04 → 50,276.
		{"8b h100 fp8 kv", "llama-3.1-8b", "h100", models.Parallel{TP: 1, Weights: models.BF16, KV: models.FP8}, 0.9, 16, 3 << 30, 16060522496, 65536, 50276},
		// TP 2: each GPU holds 4 KV heads (65,536 B per token) and half the
		// weights but the (2·32 + 1) × 4,096 × 2 B = 532,480 B of norms:
		// (16,060,522,496 − 532,480) / 2 + 532,480 = 8,030,527,488 B.
		// Budget 80e9 × 0.95 − 8,030,527,488 − 0 = 67,969,472,512 B;
		// blocks of 32 tokens × 65,536 B = 2,097,152 B: 32,410.37 → 32,410.
		{"8b h100 tp2", "llama-3.1-8b", "h100", bf16(2), 0.95, 32, 0, 8030527488, 65536, 32410},
	}
	for _, tc := range cases {
		m, g := mustModel(t, tc.model), mustGPU(t, tc.gpu)
		plan, err := PlanMemory(m, g, tc.p, tc.util, tc.block, tc.reserve)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if plan.WeightBytesPerGPU != tc.wantWeights || plan.KVBytesPerTokenPerGPU != tc.perToken || plan.Blocks != tc.wantBlocks {
			t.Errorf("%s: weights %.0f, KV/token %.0f, blocks %d; want %.0f, %.0f, %d",
				tc.name, plan.WeightBytesPerGPU, plan.KVBytesPerTokenPerGPU, plan.Blocks, tc.wantWeights, tc.perToken, tc.wantBlocks)
		}
		if want := g.MemBytes*tc.util - tc.wantWeights - tc.reserve; plan.KVBytesPerGPU != want {
			t.Errorf("%s: KV bytes %.0f, want %.0f", tc.name, plan.KVBytesPerGPU, want)
		}
		if plan.TokenCapacity() != plan.Blocks*tc.block || plan.BlockSize != tc.block || plan.ActivationReserve != tc.reserve {
			t.Errorf("%s: plan %+v", tc.name, plan)
		}
	}
}

// Must-show 5c: a plan is never negative. Over random models, GPUs,
// parallelism, utilizations and reserves, PlanMemory either errors or
// returns a plan whose parts are non-negative, add up to the usable memory,
// and whose blocks fit in the KV budget with less than one block left over.
func TestPlanMemoryNeverNegative(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 1))
	ms := models.Builtin().All()
	gs := Builtin().All()
	ok, failed := 0, 0
	for i := 0; i < 3000; i++ {
		m := ms[r.IntN(len(ms))]
		g := gs[r.IntN(len(gs))]
		p := models.Parallel{TP: 1 << r.IntN(4), Weights: models.DType(r.IntN(3)), KV: models.DType(r.IntN(3))}
		util := 0.05 + 0.95*r.Float64()
		block := 1 << r.IntN(8)
		reserve := r.Float64() * 20e9
		plan, err := PlanMemory(m, g, p, util, block, reserve)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "hardware: ") && !strings.HasPrefix(err.Error(), "models: ") {
				t.Fatalf("error without package prefix: %v", err)
			}
			failed++
			continue
		}
		ok++
		usable := g.MemBytes * util
		blockBytes := float64(block) * plan.KVBytesPerTokenPerGPU
		switch {
		case plan.WeightBytesPerGPU <= 0, plan.KVBytesPerGPU < 0, plan.ActivationReserve < 0,
			plan.KVBytesPerTokenPerGPU <= 0, plan.Blocks < 1, plan.BlockSize != block:
			t.Fatalf("%s %s %+v: negative or empty plan %+v", m.Name, g.Name, p, plan)
		case math.Abs(plan.WeightBytesPerGPU+plan.ActivationReserve+plan.KVBytesPerGPU-usable) > 1e-6*usable:
			t.Fatalf("%s %s %+v: parts do not add up to %.0f: %+v", m.Name, g.Name, p, usable, plan)
		case float64(plan.Blocks)*blockBytes > plan.KVBytesPerGPU, float64(plan.Blocks+1)*blockBytes <= plan.KVBytesPerGPU:
			t.Fatalf("%s %s %+v: %d blocks of %.0f B for %.0f B", m.Name, g.Name, p, plan.Blocks, blockBytes, plan.KVBytesPerGPU)
		}
	}
	// Both outcomes must be exercised for the property to mean anything.
	if ok < 300 || failed < 300 {
		t.Errorf("%d plans, %d errors: draw covers too little", ok, failed)
	}
}

func TestPlanMemoryArgs(t *testing.T) {
	m, g := mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100")
	cases := []struct {
		util    float64
		block   int
		reserve float64
		want    string
	}{
		{0, 16, 0, "utilization"},
		{1.01, 16, 0, "utilization"},
		{math.NaN(), 16, 0, "utilization"},
		{0.9, 0, 0, "block size"},
		{0.9, 16, -1, "reserve"},
		{0.9, 16, math.Inf(1), "reserve"},
		// The weights fit but no block does: 80e9 × 0.22 = 17.6e9 usable
		// − 16,060,522,496 weights − 1.539e9 reserve = 477,504 B, less than
		// one block of 16 × 131,072 = 2,097,152 B.
		{0.22, 16, 1.539e9, "less than one 16-token block"},
	}
	for _, tc := range cases {
		_, err := PlanMemory(m, g, bf16(1), tc.util, tc.block, tc.reserve)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PlanMemory(util %v, block %d, reserve %v) error %v, want %q", tc.util, tc.block, tc.reserve, err, tc.want)
		}
	}
	if _, err := PlanMemory(m, g, bf16(3), 0.9, 16, 0); err == nil {
		t.Error("tp 3: no error")
	}
}
