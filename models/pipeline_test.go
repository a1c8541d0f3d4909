package models

import (
	"slices"
	"strings"
	"testing"
)

// TestStageLayers checks vLLM's partition rule (get_pp_indices): layers
// // pp each, the remainder from the second-to-last stage backwards.
func TestStageLayers(t *testing.T) {
	for _, c := range []struct {
		layers, pp int
		want       []int
	}{
		{32, 1, []int{32}},
		{32, 4, []int{8, 8, 8, 8}},                      // even
		{61, 4, []int{15, 15, 16, 15}},                  // 61 = 4·15 + 1: partitions[-2] += 1 (vLLM's docs: DeepSeek-V3 at PP 4)
		{61, 2, []int{31, 30}},                          // 61 = 2·30 + 1: the first stage is the second-to-last
		{22, 4, []int{5, 6, 6, 5}},                      // remainder 2: partitions[-2], [-3]
		{5, 3, []int{2, 2, 1}},                          // remainder 2 of 3: [-2], [-3] (the first)
		{80, 3, []int{27, 27, 26}},                      // Llama-3.1-70B at PP 3
		{126, 8, []int{15, 16, 16, 16, 16, 16, 16, 15}}, // Llama-3.1-405B at PP 8: remainder 6
	} {
		got, err := StageLayers(c.layers, c.pp)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("StageLayers(%d, %d) = %v, %v; want %v", c.layers, c.pp, got, err, c.want)
		}
	}
	for _, c := range []struct {
		layers, pp int
		parts      []int
		want       string
	}{
		{32, 0, nil, "must be in [1, 64]"},
		{32, 65, nil, "must be in [1, 64]"},
		{4, 5, nil, "more than the model's 4 layers"},
		{32, 2, []int{16, 15}, "sums to 31"},
		{32, 2, []int{32}, "has 1 stages"},
		{32, 2, []int{32, 0}, "stage 1 has 0 layers"},
	} {
		_, err := StageLayersFrom(c.layers, c.pp, c.parts)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "models: ") {
			t.Errorf("StageLayersFrom(%d, %d, %v) = %v, want an error with %q", c.layers, c.pp, c.parts, err, c.want)
		}
	}
	if got, err := StageLayersFrom(32, 2, []int{20, 12}); err != nil || !slices.Equal(got, []int{20, 12}) {
		t.Errorf("StageLayersFrom(32, 2, [20 12]) = %v, %v", got, err)
	}
}

// TestStageModelMemory checks what each stage of Llama-3.1-8B holds at PP 4,
// TP 1, BF16 (hidden 4096, 32 heads, 8 KV heads of 128, ffn 14336, vocab
// 128256, untied). One layer: Q and O 2·4096² = 33,554,432, K and V
// 2·4096·1024 = 8,388,608, gated MLP 3·4096·14336 = 176,160,768 parameters
// (218,103,808 · 2 B = 436,207,616 B), two norms 2·4096 · 2 B = 16,384 B:
// 436,224,000 B. A stage of 8 layers: 3,489,792,000 B, plus the final
// norm's 8,192 B each stage keeps; the first and the last add one table,
// 128256 · 4096 · 2 B = 1,050,673,152 B. KV per token: 2 · 8 layers · 8 ·
// 128 · 2 B = 32,768 B (the whole model's 131,072 / 4).
func TestStageModelMemory(t *testing.T) {
	c := Builtin()
	m, err := c.Get("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	p := Parallel{TP: 1, Weights: BF16, KV: BF16}
	const (
		middle = 3489792000 + 8192
		table  = 1050673152
	)
	want := []float64{middle + table, middle, middle, middle + table}
	sum := 0.0
	for s := range 4 {
		sm := m.StageModel(8*s, 8, s == 0, s == 3)
		if got := sm.WeightBytesPerGPU(p); got != want[s] {
			t.Errorf("stage %d weights %.0f B, want %.0f", s, got, want[s])
		}
		if got := sm.KVBytesPerTokenPerGPU(p); got != 32768 {
			t.Errorf("stage %d KV %.0f B/token, want 32768", s, got)
		}
		sum += sm.WeightBytesPerGPU(p)
	}
	// The stages hold the whole model plus three extra copies of the final norm.
	if whole := m.WeightBytesPerGPU(p); sum != whole+3*8192 {
		t.Errorf("Σ stages %.0f B, whole model %.0f B + 3 · 8192", sum, whole)
	}
	if one := m.StageModel(0, 32, true, true); one.WeightBytesPerGPU(p) != m.WeightBytesPerGPU(p) {
		t.Error("a single stage holding every layer differs from the model")
	}
	// DeepSeek-V3's three leading dense layers fall on the first stage.
	ds, err := c.Get("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	parts, _ := StageLayers(ds.Layers, 4)
	start := 0
	for s, n := range parts {
		sm := ds.StageModel(start, n, s == 0, s == 3)
		if want := map[bool]int{true: 3, false: 0}[s == 0]; sm.DenseLayers != want {
			t.Errorf("deepseek-v3 stage %d: %d dense layers, want %d", s, sm.DenseLayers, want)
		}
		start += n
	}
}
