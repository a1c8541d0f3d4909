package calibrate

import (
	"math"
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// The derived built-in profiles (builtin_derived.go) next to the profile
// each is derived from: one Llama-3.1-8B BF16 TP 1 step, a decode at batch
// 1 and 64 (1,024 tokens of context each) and a 2,048-token prefill, with
// the relations the specs force (`go test -run TestDerivedSanity -v`
// prints the table). Each derived GPU differs from its source in peaks
// only, so a step can only move the way the peaks do:
//   - h100-pcie: every peak below h100's (BF16 0.76×, HBM 0.60×): slower in all three;
//   - a100-pcie: the same BF16 peak, HBM 0.95×: decodes (bandwidth-bound) slower,
//     no step faster;
//   - gb200: BF16 1.11× b200's, the same HBM: no step slower, the prefill
//     (compute-bound) faster;
//   - l40s: BF16 2.19× rtx-4090's, HBM 0.86×: decodes slower, the prefill faster.
func TestDerivedSanity(t *testing.T) {
	m, err := models.Builtin().Get("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	par := models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}
	batches := []models.Batch{
		{Decodes: 1, DecodeCtx: 1024},
		{Decodes: 64, DecodeCtx: 64 * 1024},
		// causal pairs of one 2,048-token chunk: 2048 · 2049 / 2
		{Prefills: 1, PrefillTokens: 2048, PrefillPairs: 2048 * 2049 / 2},
	}
	step := func(gpu string) [3]float64 {
		p, ok := Builtin(gpu)
		if !ok {
			t.Fatalf("no built-in profile for %s", gpu)
		}
		g, err := hardware.Builtin().Get(gpu)
		if err != nil {
			t.Fatal(err)
		}
		k, err := p.Kernel(g, 1)
		if err != nil {
			t.Fatal(err)
		}
		s, err := hardware.NewStepModel(m, g, par, k, p.IterOverhead())
		if err != nil {
			t.Fatal(err)
		}
		var out [3]float64
		for i, b := range batches {
			out[i] = s.StepTime(b) * 1e3
		}
		return out
	}
	const (
		slower = 1 // derived > source
		faster = -1
		noLess = 2 // derived >= source
		noMore = -2
	)
	cases := []struct {
		gpu, from string
		want      [3]int // decode 1, decode 64, prefill 2k
	}{
		{"h100-pcie", "h100", [3]int{slower, slower, slower}},
		{"a100-pcie", "a100", [3]int{slower, slower, noLess}},
		{"gb200", "b200", [3]int{noMore, noMore, faster}},
		// B300: the B200's BF16 peak, bandwidth and kernels, so a BF16 step
		// is no slower (FP4 alone is raised); GB300: the B300 at 1.11× BF16.
		{"b300", "b200", [3]int{noMore, noMore, noMore}},
		{"gb300", "b300", [3]int{noMore, noMore, faster}},
		{"l40s", "rtx-4090", [3]int{slower, slower, faster}},
	}
	t.Logf("Llama-3.1-8B BF16 TP 1 step, ms (decode: 1,024 tokens of context each)")
	t.Logf("%-10s %-9s %9s %9s %11s", "gpu", "from", "decode 1", "decode 64", "prefill 2k")
	for _, c := range cases {
		d, s := step(c.gpu), step(c.from)
		t.Logf("%-10s %-9s %9.3f %9.3f %11.3f", c.gpu, "", d[0], d[1], d[2])
		t.Logf("%-10s %-9s %9.3f %9.3f %11.3f", c.from, "(source)", s[0], s[1], s[2])
		for i, w := range c.want {
			ok := map[int]bool{slower: d[i] > s[i], faster: d[i] < s[i], noLess: d[i] >= s[i], noMore: d[i] <= s[i]}[w]
			if !ok {
				t.Errorf("%s vs %s, batch %d: %.4f ms vs %.4f ms, want relation %d", c.gpu, c.from, i, d[i], s[i], w)
			}
		}
	}
}

// The matmul benchmarks' peaks are the catalog's (gpus.toml), and the
// scales are the arithmetic of their doc: L40S (269.15/362.05) /
// (168.38/165.2) = 0.7294; H100 PCIe (495.93/756) / (797.51/989.4) = 0.8138.
func TestMatmulBenchScales(t *testing.T) {
	cat := hardware.Builtin()
	want := map[string]float64{"l40s": 0.7294, "h100-pcie": 0.8138}
	for _, b := range matmulBenches {
		for _, c := range []struct {
			gpu  string
			peak float64
		}{{b.gpu, b.peak}, {b.source, b.sourcePeak}} {
			g, err := cat.Get(c.gpu)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(g.BF16FLOPS/1e12-c.peak) > 1e-9 {
				t.Errorf("%s: catalog BF16 peak %g TFLOP/s, the benchmark uses %g", c.gpu, g.BF16FLOPS/1e12, c.peak)
			}
		}
		if got := b.scale(); math.Abs(got-want[b.gpu]) > 1e-4 {
			t.Errorf("%s compute scale %.5f, want %.4f", b.gpu, got, want[b.gpu])
		}
	}
	// The carried FP8 entry of h100-pcie is scaled with it.
	p, ok := Builtin("h100-pcie")
	if !ok {
		t.Fatal("no h100-pcie profile")
	}
	h, _ := Builtin("h100")
	f8, _ := h.precision(models.FP8)
	p8, _ := p.precision(models.FP8)
	pb, _ := p.precision(models.BF16)
	if math.Abs(p8.ComputeScale-f8.ComputeScale*pb.ComputeScale) > 1e-5 {
		t.Errorf("h100-pcie fp8 scale %.5f, want the H100's %.5f × %.5f", p8.ComputeScale, f8.ComputeScale, pb.ComputeScale)
	}
}
