package models

import (
	"math"
	"strings"
	"testing"
)

func builtinModel(t *testing.T, name string) *Model {
	t.Helper()
	m, err := Builtin().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestExpertWeightsPerGPU checks the memory of an EP rank: attention,
// norms and router on the TP rule, each GPU holding its share of the routed
// experts whole.
func TestExpertWeightsPerGPU(t *testing.T) {
	q := builtinModel(t, "qwen3-30b-a3b")
	ds := builtinModel(t, "deepseek-v3")
	// One Qwen3-30B-A3B expert: 3 matrices × hidden 2048 × expert_ffn 768
	// = 4,718,592 parameters, 9,437,184 B at BF16; 48 MoE layers.
	const qExpert = 3 * 2048 * 768 * 2.0
	// One DeepSeek-V3 expert: 3 × 7168 × 2048 = 44,040,192 parameters, at
	// FP8 44,040,192 B; 58 MoE layers (61 less first_k_dense_replace 3).
	const dsExpert = 3 * 7168 * 2048 * 1.0
	cases := []struct {
		name  string
		m     *Model
		p     Parallel
		local int
		// the saving against the same TP without EP, in bytes
		saving float64
	}{
		// EP 2 = DP 2 × TP 1: 64 of 128 experts per GPU, 64 × 48 experts fewer.
		{"qwen ep2", q, Parallel{TP: 1, Weights: BF16, KV: BF16, EP: ExpertParallel{Size: 2, DP: 2}}, 64, 64 * 48 * qExpert},
		// EP 8 = DP 4 × TP 2: 16 experts whole per GPU against 128 halves: (64 − 16) × 48 experts.
		{"qwen ep8 tp2", q, Parallel{TP: 2, Weights: BF16, KV: BF16, EP: ExpertParallel{Size: 8, DP: 4}}, 16, 48 * 48 * qExpert},
		// EP 72: ⌈256 / 72⌉ = 4 experts per GPU, 252 × 58 fewer.
		{"deepseek ep72", ds, Parallel{TP: 1, Weights: FP8, KV: FP8, EP: ExpertParallel{Size: 72, DP: 72}}, 4, 252 * 58 * dsExpert},
		// EP 64 with 32 redundant: ⌈288 / 64⌉ = 5 per GPU, 251 × 58 fewer.
		{"deepseek ep64 eplb", ds, Parallel{TP: 1, Weights: FP8, KV: FP8, EP: ExpertParallel{Size: 64, DP: 64, Redundant: 32}}, 5, 251 * 58 * dsExpert},
	}
	for _, c := range cases {
		if err := c.m.CheckParallel(c.p); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := c.m.LocalExperts(c.p); got != c.local {
			t.Errorf("%s: %d experts per GPU, want %d", c.name, got, c.local)
		}
		noEP := c.p
		noEP.EP = ExpertParallel{}
		got := c.m.WeightBytesPerGPU(noEP) - c.m.WeightBytesPerGPU(c.p)
		if math.Abs(got-c.saving) > 1e-9*c.saving {
			t.Errorf("%s: EP saves %.0f B per GPU, want %.0f", c.name, got, c.saving)
		}
	}
}

// TestRoutedRows checks the busiest GPU's routed rows: tokens × TopK × DP
// / EP × skew.
func TestRoutedRows(t *testing.T) {
	q := builtinModel(t, "qwen3-30b-a3b") // top-8
	cases := []struct {
		ep   ExpertParallel
		tp   int
		want float64
	}{
		{ExpertParallel{}, 1, 100 * 8},                                        // no EP: every row
		{ExpertParallel{Size: 2, DP: 2}, 1, 100 * 8 * 2 / 2.0},                // 800
		{ExpertParallel{Size: 8, DP: 4, Skew: 1.25}, 2, 100 * 8 * 0.5 * 1.25}, // 500
		{ExpertParallel{Size: 4, DP: 4, Skew: 0.5}, 1, 100 * 8},               // skew below 1 is 1
	}
	for _, c := range cases {
		if got := q.RoutedRows(100, Parallel{TP: c.tp, EP: c.ep}); got != c.want {
			t.Errorf("%+v: %v rows, want %v", c.ep, got, c.want)
		}
	}
}

// TestExpertOps checks the EP operators: the routed experts at their
// whole width on the routed rows, the FLOPs of a dense-free MoE layer
// 2 × rows × hidden × 3 × expert_ffn.
func TestExpertOps(t *testing.T) {
	q := builtinModel(t, "qwen3-30b-a3b")
	p := Parallel{TP: 1, Weights: BF16, KV: BF16, EP: ExpertParallel{Size: 4, DP: 4, Skew: 1.5}}
	b := Batch{Decodes: 64}
	var up, down *Op
	ops := q.Ops(b, p, nil)
	for i := range ops {
		switch ops[i].Kind {
		case OpMLPUp:
			up = &ops[i]
		case OpMLPDown:
			down = &ops[i]
		}
	}
	if up == nil || down == nil {
		t.Fatal("no expert operators")
	}
	// rows = 64 × 8 × 4/4 × 1.5 = 768 (token, expert) rows.
	rows := 768.0
	if up.Tokens != 768 || up.N != 2*768 || up.K != 2048 {
		t.Errorf("up: tokens %d, N %d, K %d; want 768, 1536, 2048", up.Tokens, up.N, up.K)
	}
	if want := 2 * rows * 2048 * 2 * 768; up.FLOPs != want {
		t.Errorf("up FLOPs %v, want %v", up.FLOPs, want)
	}
	if want := 2 * rows * 768 * 2048; down.FLOPs != want {
		t.Errorf("down FLOPs %v, want %v", down.FLOPs, want)
	}
	// 32 local experts, 768 rows: all but 32 × (31/32)^768 ≈ 0 touched.
	if math.Abs(up.Experts-32) > 1e-6 {
		t.Errorf("experts read %v, want 32", up.Experts)
	}
	// The zero layout is today's: Ops equal with EP zero and absent.
	a := q.Ops(b, Parallel{TP: 2, Weights: BF16, KV: BF16}, nil)
	c := q.Ops(b, Parallel{TP: 2, Weights: BF16, KV: BF16, EP: ExpertParallel{Size: 1, DP: 1}}, nil)
	if len(a) != len(c) {
		t.Fatal("EP size 1 changed the operators")
	}
	for i := range a {
		if a[i] != c[i] {
			t.Errorf("EP size 1 changed %v", a[i].Kind)
		}
	}
}

func TestCheckEPErrors(t *testing.T) {
	q := builtinModel(t, "qwen3-30b-a3b")
	dense := builtinModel(t, "llama-3.1-8b")
	cases := []struct {
		m    *Model
		ep   ExpertParallel
		want string
	}{
		{dense, ExpertParallel{Size: 2, DP: 2}, "needs an MoE model"},
		{q, ExpertParallel{Size: 256, DP: 256}, "more GPUs than its 128 experts"},
		{q, ExpertParallel{Size: 4, DP: 0}, "dp must be in [1, ep]"},
		{q, ExpertParallel{Size: 4, DP: 4, Redundant: -1}, "redundant experts"},
		{q, ExpertParallel{Size: 4, DP: 4, Skew: math.NaN()}, "skew"},
		{q, ExpertParallel{Size: 4, DP: 4, Skew: 5}, "at most ep"},
		{q, ExpertParallel{Size: 1000, DP: 1000}, "more than 576"},
	}
	for _, c := range cases {
		err := c.m.CheckParallel(Parallel{TP: 1, Weights: BF16, KV: BF16, EP: c.ep})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "models: ") {
			t.Errorf("%s %+v: %v, want %q", c.m.Name, c.ep, err, c.want)
		}
	}
}
