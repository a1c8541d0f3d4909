package calibrate

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

func moeProfile(t testing.TB) *Profile {
	t.Helper()
	p := handProfile(mustGPU(t, "h100"))
	p.MoE = MoEParams{OverheadS: 10e-6, ComputeEff: 0.25, HalfRows: 1000, MemoryEff: 0.875, From: "fit", Source: "hand"}
	return p
}

// An expert operator (Op.Experts > 0) takes [moe]; a dense one of the same
// class, and every expert operator of a profile without [moe], its [[op]].
func TestMoEOpTime(t *testing.T) {
	g := mustGPU(t, "h100") // bf16 989.4e12 FLOP/s, HBM 3.35e12 B/s (gpus.toml)
	with, err := moeProfile(t).Calibrated(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	without, err := handProfile(g).Calibrated(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Qwen3-30B-A3B's up-projection for 16 tokens over 64 touched experts:
	// rows 16·8 = 128, N = 2·768 = 1536, K = 2048; FLOPs 2·128·2048·1536 =
	// 805306368; bytes 64·2048·1536·2 + 128·(2048+1536)·2 = 403570688.
	// [moe]: compute 805306368/(989.4e12·0.25)·(1 + 1000/128) = 2.8684e-5 s,
	// memory 403570688/(3.35e12·0.875) = 1.37680e-4 s (memory-bound).
	expert := models.Op{Kind: models.OpMLPUp, Count: 1, Tokens: 128, N: 1536, K: 2048, FLOPs: 805306368, Bytes: 403570688, Experts: 64}
	if got, want := with.OpTime(&expert), 10e-6+403570688/(3.35e12*0.875); math.Abs(got-want) > 1e-12*want {
		t.Errorf("expert op with [moe]: %.9g s, want %.9g", got, want)
	}
	// 4096 rows over 8 experts: FLOPs 2·4096·2048·1536 = 2.5769803776e10,
	// compute 2.5769803776e10/(989.4e12·0.25)·(1 + 1000/4096) = 1.29639e-4 s;
	// bytes 8·2048·1536·2 + 4096·3584·2 = 79691776 → 2.7186e-5 s (compute-bound).
	big := models.Op{Kind: models.OpMLPUp, Count: 1, Tokens: 4096, N: 1536, K: 2048, FLOPs: 2.5769803776e10, Bytes: 79691776, Experts: 8}
	if got, want := with.OpTime(&big), 10e-6+2.5769803776e10/(989.4e12*0.25)*(1+1000.0/4096); math.Abs(got-want) > 1e-12*want {
		t.Errorf("compute-bound expert op: %.9g s, want %.9g", got, want)
	}
	dense := expert
	dense.Experts = 0
	if a, b := with.OpTime(&dense), without.OpTime(&dense); a != b {
		t.Errorf("a dense op takes %g s with [moe], %g s without: [moe] must not touch it", a, b)
	}
	if a, b := without.OpTime(&expert), without.OpTime(&dense); a != b {
		t.Errorf("without [moe] an expert op takes %g s, its dense twin %g s: want the dense parameters", a, b)
	}
}

func TestMoERoundTripAndTransfer(t *testing.T) {
	p := moeProfile(t)
	q, err := ParseProfile(p.WriteTOML(), "p.toml")
	if err != nil {
		t.Fatal(err)
	}
	if q.MoE.MemoryEff != 0.875 || q.MoE.HalfRows != 1000 || q.MoE.From != "fit" {
		t.Errorf("read back [moe] %+v", q.MoE)
	}
	// A profile without [moe] writes none (the zero value: as before).
	if strings.Contains(string(handProfile(mustGPU(t, "h100")).WriteTOML()), "[moe]") {
		t.Error("a profile without [moe] writes a [moe] table")
	}
	tr, err := Transfer(p, mustGPU(t, "h200"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.MoE.From != "transferred from h100" || tr.MoE.MemoryEff != 0.875 {
		t.Errorf("transferred [moe] %+v", tr.MoE)
	}
}

func TestMoEValidate(t *testing.T) {
	good := string(moeProfile(t).WriteTOML())
	cases := []struct{ name, old, new, want string }{
		{"memory efficiency above 1", "[moe]\noverhead_s = 1e-05\ncompute_eff = 0.25\nhalf_rows = 1000.0\nmemory_eff = 0.875\n",
			"[moe]\noverhead_s = 1e-05\ncompute_eff = 0.25\nhalf_rows = 1000.0\nmemory_eff = 8.75\n", `field "moe.memory_eff": must be in [0.0001, 1], got 8.75`},
		{"compute efficiency 0", "compute_eff = 0.25\nhalf_rows", "compute_eff = 0.0\nhalf_rows", `field "moe.compute_eff"`},
		{"negative half rows", "half_rows = 1000.0", "half_rows = -3.0", `field "moe.half_rows": must be in [0, 4194304] rows, got -3`},
		{"overhead an hour", "[moe]\noverhead_s = 1e-05", "[moe]\noverhead_s = 3600.0", `field "moe.overhead_s": must be in [0, 1] s`},
		{"no memory efficiency", "half_rows = 1000.0\nmemory_eff = 0.875", "half_rows = 1000.0\nmemory_eff = 0.0", `field "moe.memory_eff": must be > 0 when [moe] sets anything`},
		{"no from", "memory_eff = 0.875\nfrom = \"fit\"", "memory_eff = 0.875\nfrom = \"\"", `field "moe.from"`},
		{"unknown key", "[moe]\n", "[moe]\nspeed = 2.0\n", `unknown field "moe.speed"`},
	}
	for _, c := range cases {
		if !strings.Contains(good, c.old) {
			t.Fatalf("%s: %q not in the profile", c.name, c.old)
		}
		_, err := ParseProfile([]byte(strings.Replace(good, c.old, c.new, 1)), "p.toml")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "calibrate: p.toml line ") {
			t.Errorf("%s: error %v, want one naming p.toml, its line and %q", c.name, err, c.want)
		}
	}
}

// The bundles' moe.csv rows, fitted: the fit must beat the dense
// parameters on H100, whose expert kernels run far from them (the
// built-in profiles' report numbers are in testdata/report.md).
func TestMoEFitOnBundles(t *testing.T) {
	dir := BundlesDir(vidurDir(t))
	tab, fits, err := EvaluateMoE(dir)
	if err != nil {
		t.Fatal(err)
	}
	col := "h100 (Qwen/Qwen3.6-35B-A3B)"
	dense, ok1 := tab.Cell(RowMoEDense, col)
	fit, ok2 := tab.Cell(RowMoEFit, col)
	if !ok1 || !ok2 || fit.Median >= dense.Median/2 || math.Abs(fit.Bias) > 5 {
		t.Errorf("h100 MoE blocks: dense %+v, fitted %+v: want the fit's median error under half the dense one and |bias| ≤ 5 %%", dense, fit)
	}
	for _, n := range []string{"h100", "rtx-pro-6000"} {
		p, _ := Builtin(n)
		if p.MoE.From != "fit" || math.Abs(p.MoE.MemoryEff-fits[n].MemoryEff) > 1e-5 {
			t.Errorf("built-in %s [moe] %+v, fitted %+v: run go generate ./hardware/calibrate", n, p.MoE, fits[n])
		}
	}
	for _, n := range []string{"a100", "rtx-4090"} {
		if p, _ := Builtin(n); p.MoE != (MoEParams{}) {
			t.Errorf("built-in %s has [moe] %+v, but no moe.csv of that GPU exists", n, p.MoE)
		}
	}
}

// A moe.csv row with more activated experts than tokens × top-k can touch
// is an error naming the file and line.
func TestMoESamplesImpossibleRow(t *testing.T) {
	b := &Bundle{Dir: filepath.Join("x", "bf16"), Meta: BundleMeta{Model: "Qwen/Qwen3-30B-A3B-Instruct-2507"},
		TP: []BundleTP{{TP: 1, MoE: []MoERow{{Tokens: 1, Experts: 8, Seconds: 5e-5, Line: 2}, {Tokens: 2, Experts: 32, Seconds: 1e-4, Line: 3}}}}}
	_, err := b.MoESamples()
	if err == nil || !strings.Contains(err.Error(), filepath.Join("x", "bf16", "tp1", "moe.csv")+" line 3") || !strings.Contains(err.Error(), "activated_experts") {
		t.Errorf("error %v, want one naming moe.csv line 3 and activated_experts", err)
	}
	b.Meta.Model = "org/unknown"
	if _, err := b.MoESamples(); err == nil || !strings.Contains(err.Error(), "MoE shapes") {
		t.Errorf("unknown model: error %v", err)
	}
}

// [moe] holds only near the experts it was fitted on: an expert operator
// whose N·K is above max_expert_nk takes its dense class. With the bound at
// 2·(2·768·2048) = 6291456 elements (twice Qwen3-30B-A3B's up-projection),
// Qwen3-30B-A3B's up (1536 × 2048 = 3145728) takes [moe] and Mixtral-8x7B's
// (2·14336 × 4096 = 117440512) the dense mlp_up parameters; so does its
// activation (N, K = 14336 × 4096 = 58720256). Mixtral's MoE layer is then
// priced as without [moe].
func TestMoEBoundedToFittedExperts(t *testing.T) {
	g := mustGPU(t, "h100")
	bounded := moeProfile(t)
	bounded.MoE.MaxExpertNK = 6291456
	with, err := bounded.Calibrated(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	without, err := handProfile(g).Calibrated(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	cat := models.Builtin()
	p := models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}
	for _, c := range []struct {
		model   string
		useMoE  bool
		touched float64
	}{{"qwen3-30b-a3b", true, 64}, {"mixtral-8x7b", false, 8}} {
		m, err := cat.Get(c.model)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range m.MoEOps(16, c.touched, p, nil) {
			if op.Experts == 0 {
				continue
			}
			a, b := with.OpTime(&op), without.OpTime(&op)
			if (a != b) != c.useMoE {
				t.Errorf("%s %v (N·K %d): %g s with the bounded [moe], %g s with the dense classes; want [moe] used: %v",
					c.model, op.Kind, op.N*op.K, a, b, c.useMoE)
			}
		}
	}
}

// A bundle of a model whose attention or MoE shapes servesim does not know
// is an error naming meta.yaml, the model and the shapes, listing the
// models it knows in order.
func TestBundleUnknownModelShapes(t *testing.T) {
	b := &Bundle{Dir: "bundle", Meta: BundleMeta{Model: "acme/Unknown-1B"}}
	for _, c := range []struct {
		name string
		f    func() (*models.Model, error)
		what string
	}{
		{"attention", b.AttnModel, "its attention shapes (heads, KV heads, head_dim) are not known to servesim (known: "},
		{"moe", b.MoEModel, "its MoE shapes (hidden, experts, top-k, expert width) are not known to servesim (known: "},
	} {
		_, err := c.f()
		if err == nil || !strings.HasPrefix(err.Error(), `calibrate: bundle/meta.yaml line 0: model "acme/Unknown-1B": `+c.what) {
			t.Fatalf("%s: error %v", c.name, err)
		}
		known := strings.Split(strings.TrimSuffix(err.Error()[strings.Index(err.Error(), "(known: ")+len("(known: "):], ")"), ", ")
		if len(known) == 0 || !slices.IsSorted(known) {
			t.Errorf("%s: known models %q, want them sorted", c.name, known)
		}
	}
}
