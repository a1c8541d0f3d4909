package models

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// builtin returns a built-in model or fails the test.
func builtin(t testing.TB, name string) *Model {
	t.Helper()
	m, err := Builtin().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

func TestKVBytesPerToken(t *testing.T) {
	tests := []struct {
		model string
		kv    DType
		want  float64
	}{
		{"llama-3.1-8b", BF16, 131072},  // 2 × 32 layers × 8 kv heads × 128 head_dim × 2 B
		{"llama-3.1-8b", FP8, 65536},    // 2 × 32 × 8 × 128 × 1 B
		{"llama-3.1-70b", BF16, 327680}, // 2 × 80 × 8 × 128 × 2 B
		{"llama-3.1-70b", FP8, 163840},  // 2 × 80 × 8 × 128 × 1 B: half
		{"llama-3.1-70b", FP4, 81920},   // 2 × 80 × 8 × 128 × 0.5 B
		{"llama-2-7b", BF16, 524288},    // 2 × 32 × 32 × 128 × 2 B (no GQA)
		{"mixtral-8x7b", BF16, 131072},  // 2 × 32 × 8 × 128 × 2 B
		{"gpt-oss-120b", BF16, 73728},   // 2 × 36 × 8 × 64 × 2 B
		{"phi-2", BF16, 327680},         // 2 × 32 × 32 × 80 × 2 B
		{"qwen-72b", BF16, 2621440},     // 2 × 80 × 64 × 128 × 2 B (no GQA)
	}
	for _, tc := range tests {
		if got := builtin(t, tc.model).KVBytesPerToken(tc.kv); got != tc.want {
			t.Errorf("%s KVBytesPerToken(%v) = %v, want %v", tc.model, tc.kv, got, tc.want)
		}
	}
}

func TestKVBytesPerTokenPerGPU(t *testing.T) {
	tests := []struct {
		model string
		p     Parallel
		want  float64
	}{
		{"llama-3.1-8b", Parallel{TP: 1, KV: BF16}, 131072}, // whole model
		{"llama-3.1-8b", Parallel{TP: 2, KV: BF16}, 65536},  // 2 × 32 × (8/2) × 128 × 2
		{"llama-3.1-8b", Parallel{TP: 8, KV: BF16}, 16384},  // 2 × 32 × 1 × 128 × 2
		// TP 16 > 8 KV heads: each GPU caches one replicated head, not half of one.
		{"llama-3.1-8b", Parallel{TP: 16, KV: BF16}, 16384}, // 2 × 32 × 1 × 128 × 2
		{"llama-3.1-70b", Parallel{TP: 4, KV: FP8}, 40960},  // 2 × 80 × 2 × 128 × 1
	}
	for _, tc := range tests {
		m := builtin(t, tc.model)
		if err := m.CheckParallel(tc.p); err != nil {
			t.Fatal(err)
		}
		if got := m.KVBytesPerTokenPerGPU(tc.p); got != tc.want {
			t.Errorf("%s TP %d: KVBytesPerTokenPerGPU = %v, want %v", tc.model, tc.p.TP, got, tc.want)
		}
	}
}

func TestParamsExact(t *testing.T) {
	tests := []struct {
		model string
		want  float64
	}{
		// Per layer: attention 2·4096·4096 + 2·4096·(8·128) = 41,943,040; MLP
		// 3·4096·14336 = 176,160,768; two RMSNorms 8192: 218,112,000.
		// 32 layers = 6,979,584,000; embedding and LM head 2·128256·4096 =
		// 1,050,673,152; final norm 4096. Total 8,030,261,248.
		{"llama-3.1-8b", 8030261248},
		// Per layer: 2·8192·8192 + 2·8192·1024 = 150,994,944; 3·8192·28672 =
		// 704,643,072; norms 16,384: 855,654,400 × 80 = 68,452,352,000;
		// + 2·128256·8192 = 2,101,346,304 + 8192 = 70,553,706,496.
		{"llama-3.1-70b", 70553706496},
		// The checkpoint index of internlm/internlm-20b gives total_size
		// 40,177,428,480 bytes of BF16: 20,088,714,240 parameters.
		{"internlm-20b", 40177428480 / 2},
	}
	for _, tc := range tests {
		if got := builtin(t, tc.model).Params(); got != tc.want {
			t.Errorf("%s Params = %.0f, want %.0f", tc.model, got, tc.want)
		}
	}
}

func TestParamsPublished(t *testing.T) {
	tests := []struct {
		model  string
		total  float64
		active float64 // 0: not checked
		tol    float64
		source string
	}{
		{"llama-3.1-8b", 8.03e9, 0, 0.01, "HF model page: 8.03B params"},
		{"llama-3.1-70b", 70.6e9, 0, 0.01, "HF model page: 70.6B params"},
		{"llama-3.1-405b", 406e9, 0, 0.01, "HF model page: 406B params"},
		{"qwen2.5-72b", 72.7e9, 0, 0.01, "Qwen2.5-72B model card: 72.7B"},
		{"llama-2-7b", 6.74e9, 0, 0.01, "HF model page: 6.74B params"},
		// Mistral: 46.7B total, 12.9B active. Their active count includes the
		// input embedding table (0.13B), which ActiveParams leaves out
		// (12.75B), hence the 2 % tolerance.
		{"mixtral-8x7b", 46.7e9, 12.9e9, 0.02, "Mixtral of Experts, Mistral AI, 2023"},
		// gpt-oss model card (arXiv:2508.10925): 116.8B total, 5.1B active.
		{"gpt-oss-120b", 116.8e9, 5.1e9, 0.01, "gpt-oss-120b model card"},
	}
	for _, tc := range tests {
		m := builtin(t, tc.model)
		if e := relErr(m.Params(), tc.total); e > tc.tol {
			t.Errorf("%s Params = %.4g, published %.4g (%s): off by %.2f%%", tc.model, m.Params(), tc.total, tc.source, 100*e)
		}
		if tc.active == 0 {
			continue
		}
		if e := relErr(m.ActiveParams(), tc.active); e > tc.tol {
			t.Errorf("%s ActiveParams = %.4g, published %.4g (%s): off by %.2f%%", tc.model, m.ActiveParams(), tc.active, tc.source, 100*e)
		}
	}
}

func TestActiveParamsDense(t *testing.T) {
	// A dense untied model multiplies everything but the input embedding:
	// 8,030,261,248 − 128256·4096 (525,336,576) = 7,504,924,672.
	if got := builtin(t, "llama-3.1-8b").ActiveParams(); got != 7504924672 {
		t.Errorf("ActiveParams = %.0f, want 7504924672", got)
	}
	// Tied: the table is the LM head, so every parameter is active.
	m := builtin(t, "llama-3.1-8b")
	m.TiedEmbeddings = true
	if m.ActiveParams() != m.Params() {
		t.Errorf("tied: ActiveParams %.0f != Params %.0f", m.ActiveParams(), m.Params())
	}
}

func TestWeightBytes(t *testing.T) {
	m := builtin(t, "llama-3.1-8b")
	// Norm weights are 65·4096 = 266,240 elements (2 per layer and the
	// final one), the other 8,029,995,008 are matrices and tables.
	tests := []struct {
		w    DType
		want float64
	}{
		{BF16, 16060522496}, // 8,030,261,248 × 2
		{FP8, 8030527488},   // 8,029,995,008 × 1 + 266,240 × 2
		{FP4, 4015529984},   // 8,029,995,008 × 0.5 (4,014,997,504) + 266,240 × 2 (532,480)
	}
	for _, tc := range tests {
		if got := m.WeightBytes(tc.w); got != tc.want {
			t.Errorf("WeightBytes(%v) = %.0f, want %.0f", tc.w, got, tc.want)
		}
	}
}

func TestWeightBytesPerGPU(t *testing.T) {
	// TP 1 holds the whole model, for every built-in model and precision.
	for _, m := range Builtin().All() {
		for _, w := range []DType{BF16, FP8, FP4} {
			got, want := m.WeightBytesPerGPU(Parallel{TP: 1, Weights: w}), m.WeightBytes(w)
			if relErr(got, want) > 1e-12 {
				t.Errorf("%s %v: TP 1 per GPU %.0f != whole %.0f", m.Name, w, got, want)
			}
		}
	}
	m := builtin(t, "llama-3.1-8b")
	// TP 2: matrices and tables halve (8,029,995,008 × 2 B / 2), norms are
	// replicated (266,240 × 2 B): 8,029,995,008 + 532,480.
	if got := m.WeightBytesPerGPU(Parallel{TP: 2, Weights: BF16}); got != 8030527488 {
		t.Errorf("TP 2 per GPU = %.0f, want 8030527488", got)
	}
	// TP 16 > 8 KV heads: K and V are replicated, so the group holds more
	// than one copy of them. Per GPU: K and V 2·4096·128 (one head) per layer
	// instead of 2·4096·1024/16.
	p16 := Parallel{TP: 16, Weights: BF16}
	perGPU := m.WeightBytesPerGPU(p16)
	extra := 32 * 2 * 4096 * (128 - 1024.0/16) * 2 // layers × K,V × hidden × (1 head − 1/16 of 8) × 2 B
	sharded := (8029995008.0/16)*2 + 266240*2
	if relErr(perGPU, sharded+extra) > 1e-12 {
		t.Errorf("TP 16 per GPU = %.0f, want %.0f", perGPU, sharded+extra)
	}
}

func TestValidateDefaults(t *testing.T) {
	m := Model{Name: "tiny", Layers: 2, Hidden: 64, Heads: 4, FFN: 128, Vocab: 100, MaxContext: 256, GatedMLP: true}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.KVHeads != 4 || m.HeadDim != 16 || m.Norm != NormRMS {
		t.Errorf("defaults: kv_heads %d (want 4), head_dim %d (want 64/4 = 16), norm %q", m.KVHeads, m.HeadDim, m.Norm)
	}
}

func TestValidateErrors(t *testing.T) {
	base := func() Model {
		return Model{Name: "x", Layers: 2, Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128,
			Vocab: 100, MaxContext: 256, GatedMLP: true}
	}
	moe := func(m *Model) { m.FFN, m.Experts, m.TopK, m.ExpertFFN = 0, 8, 2, 32 }
	tests := []struct {
		edit  func(*Model)
		field string
		msg   string
	}{
		{func(m *Model) { m.Name = "" }, "name", "must not be empty"},
		{func(m *Model) { m.Name = "Llama" }, "name", "lower-case"},
		{func(m *Model) { m.Name = "a b" }, "name", "lower-case"},
		{func(m *Model) { m.Layers = 0 }, "layers", "must be > 0, not 0"},
		{func(m *Model) { m.Heads = -4 }, "heads", "must be > 0, not -4"},
		{func(m *Model) { m.Vocab = 1 << 30 }, "vocab", "larger than the limit"},
		{func(m *Model) { m.MaxContext = 0 }, "max_context", "must be > 0"},
		{func(m *Model) { m.KVHeads = -1 }, "kv_heads", "must be >= 0, not -1"},
		{func(m *Model) { m.KVHeads = 3 }, "kv_heads", "3 must divide heads 4"},
		{func(m *Model) { m.KVHeads = 8 }, "kv_heads", "8 must divide heads 4"},
		{func(m *Model) { m.HeadDim, m.Hidden = 0, 66 }, "head_dim", "does not divide hidden 66"},
		{func(m *Model) { m.FFN = 0 }, "ffn", "must be > 0 for a dense model"},
		{func(m *Model) { m.TopK = 1 }, "top_k", "must be 0 for a dense model"},
		{func(m *Model) { m.ExpertFFN = 1 }, "expert_ffn", "must be 0 for a dense model"},
		{func(m *Model) { moe(m); m.TopK = 9 }, "top_k", "must be in [1, experts=8]"},
		{func(m *Model) { moe(m); m.TopK = 0 }, "top_k", "must be in [1, experts=8]"},
		{func(m *Model) { moe(m); m.ExpertFFN = 0 }, "expert_ffn", "must be > 0 for an MoE model"},
		{func(m *Model) { moe(m); m.FFN = 128 }, "ffn", "must be 0 for an MoE model"},
		{func(m *Model) { m.Norm = "batchnorm" }, "norm", `"batchnorm": want "rmsnorm" or "layernorm"`},
		{func(m *Model) { m.SlidingLayers = 3 }, "sliding_layers", "3 is more than layers 2"},
		{func(m *Model) { m.SlidingWindow = 128 }, "sliding_window", "must be set together"},
		{func(m *Model) { m.SlidingWindow = -1 }, "sliding_window", "must be >= 0"},
	}
	for _, tc := range tests {
		m := base()
		tc.edit(&m)
		err := m.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("field %s: Validate() = %v, want a *FieldError", tc.field, err)
			continue
		}
		if fe.Field != tc.field || !strings.Contains(fe.Msg, tc.msg) {
			t.Errorf("Validate() = %q (field %q), want field %q and %q", err, fe.Field, tc.field, tc.msg)
		}
		if !strings.HasPrefix(err.Error(), `models: model "`) && m.Name != "" {
			t.Errorf("error %q lacks the package and model prefix", err)
		}
	}
	// The base itself and an MoE variant are valid.
	for _, edit := range []func(*Model){func(*Model) {}, moe} {
		m := base()
		edit(&m)
		if err := m.Validate(); err != nil {
			t.Errorf("valid model rejected: %v", err)
		}
	}
}

func TestCheckParallel(t *testing.T) {
	l8 := builtin(t, "llama-3.1-8b")
	gqa := &Model{Name: "gqa48", Layers: 1, Hidden: 6144, Heads: 48, KVHeads: 8, HeadDim: 128, FFN: 12288, Vocab: 10, MaxContext: 10}
	ffn := &Model{Name: "odd-ffn", Layers: 1, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 11010, Vocab: 10, MaxContext: 10}
	moe := builtin(t, "mixtral-8x7b")
	tests := []struct {
		m    *Model
		p    Parallel
		want string // "" for no error
	}{
		{l8, Parallel{TP: 1}, ""},
		{l8, Parallel{TP: 8, Weights: FP8, KV: FP8}, ""},
		{l8, Parallel{TP: 16}, ""}, // 16 is a multiple of 8 KV heads: replicated
		{l8, Parallel{TP: 3}, `models: model "llama-3.1-8b": tp 3 does not divide heads 32`},
		{l8, Parallel{TP: 0}, "tp 0: must be >= 1"},
		{l8, Parallel{TP: 64}, "tp 64 does not divide heads 32"},
		{l8, Parallel{TP: 1, Weights: DType(4)}, "weight precision DType(4)"},
		{l8, Parallel{TP: 1, KV: DType(4)}, "KV-cache precision DType(4)"},
		{gqa, Parallel{TP: 12}, "tp 12 and kv_heads 8: one must divide the other"}, // 48 % 12 = 0, but 12 vs 8
		{gqa, Parallel{TP: 16}, ""},
		{ffn, Parallel{TP: 4}, "tp 4 does not divide ffn 11010"},
		{moe, Parallel{TP: 8}, ""},
	}
	for _, tc := range tests {
		err := tc.m.CheckParallel(tc.p)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %+v: unexpected error %v", tc.m.Name, tc.p, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %+v: error %v, want it to contain %q", tc.m.Name, tc.p, err, tc.want)
		}
	}
}

func TestPerGPUPanicsOnZeroTP(t *testing.T) {
	m := builtin(t, "llama-3.1-8b")
	for name, f := range map[string]func(){
		"WeightBytesPerGPU":     func() { m.WeightBytesPerGPU(Parallel{}) },
		"KVBytesPerTokenPerGPU": func() { m.KVBytesPerTokenPerGPU(Parallel{}) },
		"Ops":                   func() { m.Ops(Batch{Decodes: 1}, Parallel{}, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with TP 0 did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestFieldErrorFormat(t *testing.T) {
	tests := []struct {
		e    FieldError
		want string
	}{
		{FieldError{File: "m.toml", Line: 7, Model: "x", Field: "heads", Msg: "must be > 0"}, `models: m.toml line 7: model "x": field "heads": must be > 0`},
		{FieldError{File: "m.toml", Msg: "no [[model]] tables"}, `models: m.toml: no [[model]] tables`},
		{FieldError{Model: "x", Field: "ffn", Msg: "bad"}, `models: model "x": field "ffn": bad`},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
