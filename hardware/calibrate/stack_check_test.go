package calibrate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/servesim/servesim/models"
)

// The H100 GEMMs are fitted to Vidur's traces (sarathi-serve, 2024). Two
// later stacks timed GEMMs on the H100 too, and the built-in profile is
// checked against both here (issue 13: the validation runs' decode steps
// are 3–10 % slow, 70–87 % of them GEMMs):
//
//   - the H100 bundle (vLLM 0.19, eager, one Qwen3.6-35B-A3B layer): its
//     full-attention layer's qkv_proj and o_proj at decode token counts and
//     its LM head. Shapes from the model's config.json (hidden 2048, 16
//     query heads of 256 with an output gate, 2 KV heads, vocabulary
//     248,320; vLLM's qwen3_next.py QKVParallelLinear with
//     total_num_heads·(1 + attn_output_gate)): qkv N = 16·256·2 + 2·2·256
//     = 9,216, K = 2,048 at TP 1; o_proj N = 2,048, K = 16·256 = 4,096;
//     lm_head N = 248,320, K = 2,048 (31,040 a rank at TP 8);
//   - XLA's 2025 H100 matmul table (m ≥ 256), its memory-bound rows
//     (bytes / HBM above FLOPs / peak).
//
// The profile prices the bundle's 38 MB qkv_proj 22 % slow (signed
// median, M ≤ 64), the TP 8 ranks' 2–6 MB qkv_proj and o_proj 28–31 %
// slow, the 17 MB o_proj 5 % fast and the LM head (127 MB, 1 GB) 2–4 %
// fast, and XLA's memory-bound rows 24 % slow: the newer stacks' small and
// mid-size GEMMs are faster, their largest are not. Neither measures the
// validation runs' GEMM shapes; this project's H200 timings do, on the
// same die (TestH200GEMMsAgainstH100Traces), and give the large ones the
// bandwidth fraction Vidur's traces give them. The profile is not
// rescaled (docs/limits.md).
// bundleGEMM is one GEMM shape of the H100 bundle's layer: N × K weights.
type bundleGEMM struct {
	kind models.OpKind
	n, k int
}

// op is the BF16 GEMM of rows rows over the shape's weights.
func (g bundleGEMM) op(rows int) models.Op {
	m := float64(rows)
	return models.Op{Kind: g.kind, Count: 1, Tokens: rows, N: g.n, K: g.k, Compute: models.BF16,
		FLOPs: 2 * m * float64(g.n) * float64(g.k), Bytes: 2 * (float64(g.n)*float64(g.k) + m*float64(g.k) + m*float64(g.n))}
}

// h100BundleGEMMs are the H100 bundle's GEMMs by TP and layer (see above).
var h100BundleGEMMs = map[int]map[string]bundleGEMM{
	1: {"qkv_proj": {models.OpQKV, 9216, 2048}, "o_proj": {models.OpOutProj, 2048, 4096}, "lm_head": {models.OpLMHead, 248320, 2048}},
	// TP 8: 2 query heads a rank (2·256·2 = 1,024) and the 2 KV heads
	// replicated to 1 (2·256 = 512); o_proj K = 2·256.
	8: {"qkv_proj": {models.OpQKV, 1536, 2048}, "o_proj": {models.OpOutProj, 2048, 512}, "lm_head": {models.OpLMHead, 31040, 2048}},
}

func TestH100GEMMsAgainstLaterStacks(t *testing.T) {
	dir := filepath.Join(bundlesDir(t), "H100", "Qwen", "Qwen3.6-35B-A3B", "bf16")
	b, err := ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := mustGPU(t, "h100")
	p, ok := Builtin("h100")
	if !ok {
		t.Fatal("no built-in h100 profile")
	}
	k, err := p.Calibrated(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	shapes := h100BundleGEMMs
	errs := map[string][]float64{}
	price := func(tp int, layer string, rows int, seconds float64) {
		sh, ok := shapes[tp][layer]
		if !ok || rows > 64 {
			return
		}
		op := sh.op(rows)
		key := layer
		if tp == 8 {
			key += " TP 8"
		}
		errs[key] = append(errs[key], 100*(k.OpTime(&op)/seconds-1))
	}
	for _, tpd := range b.TP {
		for _, r := range tpd.Dense {
			price(tpd.TP, r.Layer, r.Tokens, r.Seconds)
		}
		for _, r := range tpd.PerSeq {
			price(tpd.TP, r.Layer, r.Sequences, r.Seconds)
		}
	}
	for _, c := range []struct {
		key    string
		lo, hi float64 // the signed median's range, in %
	}{
		{"qkv_proj", 10, 35}, {"lm_head", -6, 4}, {"lm_head TP 8", -6, 4}, {"o_proj", -15, 5}, {"qkv_proj TP 8", 15, 40}, {"o_proj TP 8", 15, 45},
	} {
		v := errs[c.key]
		if len(v) < 10 {
			t.Fatalf("%s: %d rows with M ≤ 64", c.key, len(v))
		}
		med := errStats(v).Bias // median of the signed errors
		t.Logf("bundle %-14s M ≤ 64: %2d rows, the profile's signed median error %+.1f %%", c.key, len(v), med)
		if med < c.lo || med > c.hi {
			t.Errorf("%s: signed median %+.1f %%, outside [%g, %g] %%: the comparison docs/limits.md quotes has moved", c.key, med, c.lo, c.hi)
		}
	}

	// XLA's table: the memory-bound rows (b = 1).
	f, err := os.Open(filepath.Join("..", "..", "..", "shared", "data", "xla-matmul", "matmul.csv"))
	if err != nil {
		t.Skipf("xla-matmul not here: %v", err)
	}
	defer f.Close()
	rows, err := ReadXLAMatmul(f, "matmul.csv")
	if err != nil {
		t.Fatal(err)
	}
	var mem []float64
	for _, s := range XLASamples(rows, "h100", models.BF16) {
		if s.Op.Tokens > 4096 || s.Op.Bytes/g.MemBW <= s.Op.FLOPs/g.PeakFLOPS(models.BF16) {
			continue
		}
		mem = append(mem, 100*(k.OpTime(&s.Op)/s.Seconds-1))
	}
	med := errStats(mem).Bias
	t.Logf("XLA sm_90 bf16, memory-bound rows (b = 1): %d rows, the profile's signed median error %+.1f %%", len(mem), med)
	if med < 10 || med > 40 {
		t.Errorf("XLA memory-bound rows: signed median %+.1f %%, outside [10, 40] %%", med)
	}
}

// TestH100GEMMStepAbove128 compares how the H100 GEMMs step past M = 128
// rows. Vidur's 2024 traces, which the profile follows, step there for the
// validation runs' mid-size and large GEMMs (Llama-2-70B at TP 4, 128 → 136
// tokens: attn_post_proj 18 → 27 µs, mlp_up_proj 87 → 105 µs,
// mlp_down_proj 47 → 54 µs; compute/h100/meta-llama/Llama-2-70b-hf/mlp.csv
// medians), and a decode step with a prefill chunk crosses it: in the 70B's
// simulated stage_1 the steps with a chunk (37 % of them, 114 decodes + 19
// tokens on average) cost 13 % more than those without, and of the kernel
// model's 3.8 ms between such a step and the same decodes alone 2.8 ms are
// these GEMMs. The H100 bundle's stack (vLLM 0.19) is checked for the same
// step on its own shapes: the median time over M in (128, 256] against the
// median over [96, 128], for the bundle and for the profile at the same M.
// The bundle's qkv_proj steps 1.06 (TP 1) and 1.04 (TP 8) where the
// profile's steps 1.29 and 1.16; its LM head 1.08 and 1.03 (profile 1.00);
// its 17 MB o_proj 1.23 as the profile's 1.26 (TP 8: 1.11 and 1.05). So
// the newer stack keeps some steps and drops others, and whether the runs'
// larger GEMMs step under their stack is not measured here: the profile
// keeps Vidur's steps (docs/limits.md).
func TestH100GEMMStepAbove128(t *testing.T) {
	b, err := ReadBundle(filepath.Join(bundlesDir(t), "H100", "Qwen", "Qwen3.6-35B-A3B", "bf16"))
	if err != nil {
		t.Fatal(err)
	}
	g := mustGPU(t, "h100")
	p, ok := Builtin("h100")
	if !ok {
		t.Fatal("no built-in h100 profile")
	}
	type times struct{ lo, hi, plo, phi []float64 }
	got := map[string]*times{}
	for _, tpd := range b.TP {
		k, err := p.Calibrated(g, tpd.TP)
		if err != nil {
			t.Fatal(err)
		}
		add := func(layer string, rows int, sec float64) {
			sh, ok := h100BundleGEMMs[tpd.TP][layer]
			if !ok || rows < 96 || rows > 256 {
				return
			}
			key := fmt.Sprintf("TP %d %s", tpd.TP, layer)
			if got[key] == nil {
				got[key] = &times{}
			}
			op := sh.op(rows)
			x := got[key]
			if rows <= 128 {
				x.lo, x.plo = append(x.lo, sec), append(x.plo, k.OpTime(&op))
			} else {
				x.hi, x.phi = append(x.hi, sec), append(x.phi, k.OpTime(&op))
			}
		}
		for _, r := range tpd.Dense {
			add(r.Layer, r.Tokens, r.Seconds)
		}
		for _, r := range tpd.PerSeq {
			add(r.Layer, r.Sequences, r.Seconds)
		}
	}
	for _, c := range []struct {
		key                 string
		bundleHi, profileLo float64 // the bundle's step at most, the profile's at least
	}{
		{"TP 1 qkv_proj", 1.10, 1.15}, {"TP 8 qkv_proj", 1.10, 1.10}, {"TP 1 lm_head", 1.10, 0}, {"TP 8 lm_head", 1.10, 0},
		{"TP 1 o_proj", 1.40, 1.10}, {"TP 8 o_proj", 1.20, 0},
	} {
		x := got[c.key]
		if x == nil || len(x.lo) < 2 || len(x.hi) < 4 {
			t.Fatalf("%s: too few bundle rows with M in [96, 256]", c.key)
		}
		bs, ps := medianOf(x.hi)/medianOf(x.lo), medianOf(x.phi)/medianOf(x.plo)
		t.Logf("%-14s M (128, 256] over [96, 128]: bundle %.2f, profile %.2f", c.key, bs, ps)
		if bs > c.bundleHi || ps < c.profileLo {
			t.Errorf("%s: bundle step %.2f (want ≤ %.2f), profile step %.2f (want ≥ %.2f): the comparison the doc comment quotes has moved", c.key, bs, c.bundleHi, ps, c.profileLo)
		}
	}
}

// TestH200GEMMsAgainstH100Traces sets this project's H200 timings
// (testdata/h200_randn.csv: measure_gemm.py, PyTorch 2.11 / CUDA 13, the
// validation runs' own Llama-2-7B and -70B GEMM shapes) beside Vidur's
// H100 medians (2024) at the same shapes and decode token counts (16 to
// 128), each as the fraction of its GPU's HBM bandwidth the weight read
// reaches (bytes / time / mem_bw: 4.8 and 3.35 TB/s; the same GH100 die).
// For the GEMMs of 90 MB of weights and more the two reach the same
// fraction within a few points (medians over the token counts: 70–83 % on
// the H200 against 69–85 % on the H100, −2 to +5 points a shape), so the
// later stack does not make them faster; the 33–42 MB ones (Llama-2-7B's
// o_proj, the 70B's qkv and o_proj at TP 4) reach more on the H200 (70–91 %
// against 60–63 %), but measure_gemm.py times 20
// back-to-back calls on one weight matrix, which the H200's 60 MB L2 can
// keep, where Vidur's layer sweep reads every operator's weights in turn
// (a model reads each weight once a step): part of that gap is the cache.
func TestH200GEMMsAgainstH100Traces(t *testing.T) {
	tr, err := LoadVidur(vidurDir(t), "h100", VidurOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join("testdata", "h200_randn.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h200, err := ReadNative(f, "h200_randn.csv", models.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		model  string
		tp     int
		kind   models.OpKind
		tokens int
	}
	vidur := map[key]float64{}
	for _, s := range tr.Samples {
		if isGEMM(s.Op.Kind) && s.Op.Tokens >= 16 && s.Op.Tokens <= 128 {
			vidur[key{s.Model, s.TP, s.Op.Kind, s.Op.Tokens}] = s.Seconds
		}
	}
	g100, g200 := mustGPU(t, "h100"), mustGPU(t, "h200")
	type shape struct {
		model string
		tp    int
		kind  models.OpKind
	}
	frac := map[shape][2][]float64{} // [H100 Vidur, H200]
	weights := map[shape]float64{}
	for _, s := range h200 {
		k := key{s.Model, s.TP, s.Op.Kind, s.Op.Tokens}
		v, ok := vidur[k]
		if !ok || !isGEMM(s.Op.Kind) {
			continue
		}
		sh := shape{s.Model, s.TP, s.Op.Kind}
		fr := frac[sh]
		fr[0] = append(fr[0], s.Op.Bytes/v/g100.MemBW)
		fr[1] = append(fr[1], s.Op.Bytes/s.Seconds/g200.MemBW)
		frac[sh] = fr
		m := float64(s.Op.Tokens)
		weights[sh] = s.Op.Bytes - 2*m*float64(s.Op.N+s.Op.K)
	}
	for _, c := range []struct {
		model  string
		tp     int
		kind   models.OpKind
		lo, hi float64 // the H200's median fraction minus the H100's, in points
	}{
		{"llama-2-7b", 1, models.OpQKV, -6, 6}, {"llama-2-7b", 1, models.OpMLPUp, -6, 6}, {"llama-2-7b", 1, models.OpMLPDown, -6, 6},
		{"llama-2-70b", 4, models.OpMLPUp, -6, 6}, {"llama-2-70b", 4, models.OpMLPDown, -6, 8},
		{"llama-2-7b", 1, models.OpOutProj, 5, 40}, {"llama-2-70b", 4, models.OpQKV, 5, 40}, {"llama-2-70b", 4, models.OpOutProj, 5, 45},
	} {
		sh := shape{c.model, c.tp, c.kind}
		fr := frac[sh]
		if len(fr[0]) < 6 {
			t.Fatalf("%v: %d token counts in both tables, want ≥ 6", sh, len(fr[0]))
		}
		a, b := 100*medianOf(fr[0]), 100*medianOf(fr[1])
		t.Logf("%-11s TP %d %-8v %5.1f MB: HBM fraction, M 16–128: H100 (Vidur 2024) %.0f %%, H200 (2026) %.0f %%", c.model, c.tp, c.kind, weights[sh]/1e6, a, b)
		if d := b - a; d < c.lo || d > c.hi {
			t.Errorf("%v: H200 %.0f %% against H100 %.0f %%: %+.0f points, outside [%g, %g]: the comparison the doc comment quotes has moved", sh, b, a, d, c.lo, c.hi)
		}
	}
}

// medianOf is the median of v (v not modified), by quantile.
func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return quantile(s, 0.5)
}
