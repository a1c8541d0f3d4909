package calibrate

import (
	"bytes"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// tailOf is the synthetic kernel-choice effect of the tree tests: a GEMM
// whose last wave of 128×128 tiles on sms SMs is at most a quarter full
// runs 30 % slower (a step in M that moves with N, which no smooth model
// of one class follows).
func tailOf(M, N, sms int) float64 {
	tiles := ((M + 127) / 128) * ((N + 127) / 128)
	if r := tiles % sms; r > 0 && r <= sms/4 {
		return 1.3
	}
	return 1
}

// stepTrace is a GEMM trace of handProfile on h100 with tailOf applied:
// four models, TP 1 and 2, 1–4096 tokens in steps of 64 plus powers of two
// (3,600 GEMM timings), and whether each sample is a GEMM.
func stepTrace(t *testing.T) []Sample {
	t.Helper()
	g := mustGPU(t, "h100")
	k, _ := handProfile(g).Calibrated(g, 1)
	var tokens []int
	for n := 1; n < 64; n *= 2 {
		tokens = append(tokens, n)
	}
	for n := 64; n <= 4096; n += 64 {
		tokens = append(tokens, n)
	}
	ss := synthetic(t, k, "h100", []string{"llama-2-7b", "llama-2-70b", "qwen-72b", "internlm-20b"}, []int{1, 2}, tokens)
	for i := range ss {
		if ss[i].Op.N > 0 {
			ss[i].Seconds *= tailOf(ss[i].Op.Tokens, ss[i].Op.N, g.SMs)
		}
	}
	return ss
}

// gemmErrors returns the median and p90 absolute percentage error of p on
// the dense GEMMs of ss.
func gemmErrors(t *testing.T, p *Profile, ss []Sample) (float64, float64) {
	t.Helper()
	k, err := p.Calibrated(mustGPU(t, p.GPU), 1)
	if err != nil {
		t.Fatal(err)
	}
	var ape []float64
	for i := range ss {
		if isGEMM(ss[i].Op.Kind) && ss[i].Op.Kind != models.OpLMHead {
			ape = append(ape, 100*math.Abs(k.OpTime(&ss[i].Op)/ss[i].Seconds-1))
		}
	}
	st := statsOf(ape)
	return st.MedianAPE, st.P90APE
}

// The trees learn what the parametric model cannot: on the step trace
// the model alone is off by up to the 30 % step, with the trees the p90
// error falls below 3 %; the profile says so in gemm_trees.fit; and a fit
// with NoTrees has none.
func TestTreesLearnKernelSteps(t *testing.T) {
	ss := stepTrace(t)
	g := mustGPU(t, "h100")
	bare, err := FitProfile(&Trace{Samples: ss}, g, FitOptions{NoTrees: true})
	if err != nil {
		t.Fatal(err)
	}
	if bare.GEMMTrees != nil {
		t.Fatal("NoTrees fit has trees")
	}
	p, err := FitProfile(&Trace{Samples: ss}, g, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.GEMMTrees == nil {
		t.Fatal("no trees on 3,600 GEMM timings")
	}
	bm, b90 := gemmErrors(t, bare, ss)
	tm, t90 := gemmErrors(t, p, ss)
	t.Logf("GEMM median / p90 error: parametric %.2f / %.2f %%, with trees %.2f / %.2f %%", bm, b90, tm, t90)
	if b90 < 10 {
		t.Errorf("the parametric model alone follows the steps (p90 %.2f %%): the test does not test the trees", b90)
	}
	if t90 > 3 || tm > 1 {
		t.Errorf("with trees: median %.2f %%, p90 %.2f %%; want ≤ 1 and ≤ 3", tm, t90)
	}
	if f := p.GEMMTrees.Fit; f.Samples == 0 || math.Abs(f.MedianAPE-tm) > 1e-9 {
		t.Errorf("gemm_trees.fit %+v, want median %g", f, tm)
	}
	if !strings.Contains(p.Describe(), "GEMM residual trees (150)") {
		t.Errorf("describe: %s", p.Describe())
	}
	// Too few GEMM timings: no trees.
	few := ss[:len(ss)/4]
	if q, err := FitProfile(&Trace{Samples: few}, g, FitOptions{}); err != nil || q.GEMMTrees != nil {
		t.Errorf("%d samples: err %v, trees %v", len(few), err, q != nil && q.GEMMTrees != nil)
	}
}

// Trees are deterministic (two fits write the same bytes) and survive
// TOML: the profile read back predicts every operator bit for bit.
func TestTreesRoundTrip(t *testing.T) {
	ss := stepTrace(t)
	g := mustGPU(t, "h100")
	p, err := FitProfile(&Trace{Samples: ss}, g, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := FitProfile(&Trace{Samples: ss}, g, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text := p.WriteTOML()
	if !bytes.Equal(text, q.WriteTOML()) {
		t.Fatal("two fits of the same trace differ")
	}
	// One worker or four: the same trees.
	prev := runtime.GOMAXPROCS(1)
	one, err := FitProfile(&Trace{Samples: ss}, g, FitOptions{})
	runtime.GOMAXPROCS(4)
	four, err4 := FitProfile(&Trace{Samples: ss}, g, FitOptions{})
	runtime.GOMAXPROCS(prev)
	if err != nil || err4 != nil {
		t.Fatal(err, err4)
	}
	if !bytes.Equal(one.WriteTOML(), text) || !bytes.Equal(four.WriteTOML(), text) {
		t.Fatal("the fit depends on GOMAXPROCS")
	}
	back, err := ParseProfile(text, "p.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.WriteTOML(), text) {
		t.Fatal("write → parse → write differs")
	}
	k1, _ := p.Calibrated(g, 1)
	k2, _ := back.Calibrated(g, 1)
	for i := range ss {
		if a, b := k1.OpTime(&ss[i].Op), k2.OpTime(&ss[i].Op); a != b {
			t.Fatalf("%s at %d tokens: %g in memory, %g read back", ss[i].Op.Kind, ss[i].Op.Tokens, a, b)
		}
	}
}

// The trees apply to dense BF16 GEMMs of the corrected classes only.
func TestTreeDomain(t *testing.T) {
	var kinds [models.NumOpKinds]bool
	for _, k := range treeKinds {
		kinds[k] = true
	}
	par := models.Parallel{TP: 2, Weights: models.BF16, KV: models.BF16}
	fp8 := models.Parallel{TP: 2, Weights: models.FP8, KV: models.BF16}
	b := models.Batch{Decodes: 300}
	in := func(m string, p models.Parallel) map[models.OpKind]bool {
		out := map[models.OpKind]bool{}
		for _, op := range mustModel(t, m).Ops(b, p, nil) {
			out[op.Kind] = treeDomain(&op, &kinds, models.BF16)
		}
		return out
	}
	dense := in("llama-2-70b", par)
	for _, k := range treeKinds {
		if !dense[k] {
			t.Errorf("dense BF16 %s: not in the domain", k)
		}
	}
	for _, k := range []models.OpKind{models.OpLMHead, models.OpNorm, models.OpAllReduce} {
		if dense[k] {
			t.Errorf("%s: in the domain", k)
		}
	}
	for k, ok := range in("llama-2-70b", fp8) {
		if ok {
			t.Errorf("FP8 %s: in the domain", k)
		}
	}
	moe := in("mixtral-8x7b", par)
	if moe[models.OpMLPUp] || moe[models.OpMLPDown] || !moe[models.OpQKV] {
		t.Errorf("MoE: %v (expert GEMMs must be out, attention GEMMs in)", moe)
	}
}

// Transfer keeps the trees on a GPU with the same SMs and drops them
// otherwise, saying which.
func TestTransferTrees(t *testing.T) {
	g := mustGPU(t, "h100")
	p, err := FitProfile(&Trace{Samples: stepTrace(t)}, g, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		gpu  string
		keep bool
	}{{"h200", true}, {"b200", false}, {"a100", false}} {
		tp, err := Transfer(p, mustGPU(t, c.gpu))
		if err != nil {
			t.Fatal(err)
		}
		if (tp.GEMMTrees != nil) != c.keep {
			t.Errorf("%s: trees kept %v, want %v", c.gpu, tp.GEMMTrees != nil, c.keep)
		}
		word := map[bool]string{true: "trees are kept", false: "trees are left out"}[c.keep]
		if !strings.Contains(tp.Notes[0], word) {
			t.Errorf("%s: note %q does not say %q", c.gpu, tp.Notes[0], word)
		}
		if tp.GEMMTrees != nil && tp.GEMMTrees.Fit != (FitStats{}) {
			t.Errorf("%s: fit statistics kept", c.gpu)
		}
		if _, err := tp.Calibrated(mustGPU(t, c.gpu), 1); err != nil {
			t.Errorf("%s: %v", c.gpu, err)
		}
	}
	if p.GEMMTrees.Fit == (FitStats{}) {
		t.Error("Transfer cleared the source profile's tree statistics")
	}
}

// tinyTrees is a valid one-tree, three-node GEMMTrees: feature 0 (log2 M)
// ≤ 8 → +0.1, else −0.1.
func tinyTrees() *GEMMTrees {
	return &GEMMTrees{Features: GEMMFeatures, Kinds: []string{"qkv", "mlp_up"}, Dtype: "bf16", Base: 0.01,
		Trees: 1, Depth: 1, MinLeaf: 1, LearningRate: 1, Bins: 2,
		Tree: []Tree{{Feature: []int{0, -1, -1}, Value: []float64{8, 0.1, -0.1}, Right: []int{2, 0, 0}}}}
}

// A tiny hand-made forest prices a GEMM as the parametric time × exp of
// its leaf, and leaves other classes alone.
func TestTreesOpTime(t *testing.T) {
	g := mustGPU(t, "h100")
	bare := waveProfile(g)
	with := waveProfile(g)
	with.GEMMTrees = tinyTrees()
	kb, err := bare.Calibrated(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	kw, err := with.Calibrated(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := mustModel(t, "llama-2-7b")
	par := models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}
	for _, n := range []int{1, 256, 257, 4096} {
		want := map[bool]float64{true: math.Exp(0.01 + 0.1), false: math.Exp(0.01 - 0.1)}[n <= 256] // log2 n ≤ 8
		for _, op := range m.Ops(models.Batch{Decodes: n}, par, nil) {
			r := kw.OpTime(&op) / kb.OpTime(&op)
			if op.Kind == models.OpQKV || op.Kind == models.OpMLPUp {
				if math.Abs(r-want) > 1e-12 {
					t.Errorf("%s at %d tokens: ratio %g, want %g", op.Kind, n, r, want)
				}
			} else if r != 1 && !math.IsNaN(r) {
				t.Errorf("%s at %d tokens: ratio %g, want 1 (not corrected)", op.Kind, n, r)
			}
		}
	}
}

// Malformed trees are errors that name the field and its line.
func TestTreesValidate(t *testing.T) {
	g := mustGPU(t, "h100")
	cases := []struct {
		name  string
		edit  func(p *Profile)
		field string
	}{
		{"features", func(p *Profile) { p.GEMMTrees.Features = "gemm-v0" }, "gemm_trees.features"},
		{"kind", func(p *Profile) { p.GEMMTrees.Kinds = []string{"norm"} }, "gemm_trees.kinds[0]"},
		{"no kinds", func(p *Profile) { p.GEMMTrees.Kinds = nil }, "gemm_trees.kinds"},
		{"dtype", func(p *Profile) { p.GEMMTrees.Dtype = "int3" }, "gemm_trees.dtype"},
		{"no trees", func(p *Profile) { p.GEMMTrees.Tree = nil }, "gemm_trees.tree"},
		{"tree count", func(p *Profile) { p.GEMMTrees.Trees = 2 }, "gemm_trees.trees"},
		{"depth", func(p *Profile) { p.GEMMTrees.Depth = -1 }, "gemm_trees.depth"},
		{"learning rate", func(p *Profile) { p.GEMMTrees.LearningRate = -0.1 }, "gemm_trees.learning_rate"},
		{"lengths", func(p *Profile) { p.GEMMTrees.Tree[0].Right = []int{2, 0} }, "gemm_trees.tree[0].feature"},
		{"feature range", func(p *Profile) { p.GEMMTrees.Tree[0].Feature[0] = numFeatures }, "gemm_trees.tree[0].feature"},
		{"leaf right", func(p *Profile) { p.GEMMTrees.Tree[0].Right[1] = 1 }, "gemm_trees.tree[0].feature"},
		{"right child", func(p *Profile) { p.GEMMTrees.Tree[0].Right[0] = 1 }, "gemm_trees.tree[0].feature"},
		{"dangling", func(p *Profile) {
			tr := &p.GEMMTrees.Tree[0]
			tr.Feature, tr.Value, tr.Right = append(tr.Feature, -1), append(tr.Value, 0), append(tr.Right, 0)
		}, "gemm_trees.tree[0].feature"},
		{"no SMs", func(p *Profile) { p.Peaks.SMs = 0; p.Ops = handProfile(g).Ops }, "gemm_trees"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := waveProfile(g)
			p.GEMMTrees = tinyTrees()
			c.edit(p)
			_, err := ParseProfile(p.WriteTOML(), "bad.toml")
			if err == nil || !strings.Contains(err.Error(), `field "`+c.field+`"`) || !strings.Contains(err.Error(), "bad.toml line ") {
				t.Errorf("error %v, want one naming field %q and its line", err, c.field)
			}
		})
	}
	// A value that is not finite (TOML nan) is an error too.
	p := waveProfile(g)
	p.GEMMTrees = tinyTrees()
	text := strings.Replace(string(p.WriteTOML()), "value = [8.0, 0.1, -0.1]", "value = [8.0, nan, -0.1]", 1)
	if _, err := ParseProfile([]byte(text), "nan.toml"); err == nil || !strings.Contains(err.Error(), "value[1]") {
		t.Errorf("nan value: %v", err)
	}
	// A tree deeper than maxTreeDepth.
	p = waveProfile(g)
	p.GEMMTrees = tinyTrees()
	var deep Tree
	for range maxTreeDepth + 2 {
		deep.Feature = append(deep.Feature, 0)
		deep.Value = append(deep.Value, 1)
		deep.Right = append(deep.Right, 0)
	}
	deep.Feature = append(deep.Feature, -1)
	deep.Value = append(deep.Value, 0)
	deep.Right = append(deep.Right, 0)
	p.GEMMTrees.Tree = []Tree{deep}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("deep tree: %v", err)
	}
}

// shortestIn rounds the midpoint of [lo, hi) to the fewest digits that
// keep it inside.
func TestShortestIn(t *testing.T) {
	for _, c := range []struct{ lo, hi, want float64 }{
		{1, 2, 1.5}, {1.2345, 1.3, 1.27}, {0.5, 0.50001, 0.5}, {7.3, 7.31, 7.3}, {-1.5, -1.2, -1.4}, {3, 3.0000000000000004, 3},
	} {
		if got := shortestIn(c.lo, c.hi); got != c.want {
			t.Errorf("shortestIn(%g, %g) = %g, want %g", c.lo, c.hi, got, c.want)
		}
	}
	// Always inside, over a spread of magnitudes and gaps.
	for i := 1; i < 2000; i++ {
		lo := math.Ldexp(float64(i)*0.7310585786, i%40-20)
		hi := math.Nextafter(lo, math.Inf(1))
		if i%3 != 0 {
			hi = lo * (1 + 1/float64(i))
		}
		if got := shortestIn(lo, hi); !(got >= lo && got < hi) {
			t.Fatalf("shortestIn(%g, %g) = %g: outside", lo, hi, got)
		}
	}
}
