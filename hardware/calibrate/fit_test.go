package calibrate

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// synthetic returns samples of the operators of the given models, TPs and
// token counts, timed exactly by kernel k (a perfect trace of k).
func synthetic(t *testing.T, k hardware.KernelModel, gpu string, names []string, tps, tokens []int) []Sample {
	t.Helper()
	var out []Sample
	for _, name := range names {
		m := mustModel(t, name)
		for _, tp := range tps {
			par := models.Parallel{TP: tp, Weights: models.BF16, KV: models.BF16}
			for _, n := range tokens {
				for _, op := range m.Ops(models.Batch{Decodes: n}, par, nil) {
					if !models.TokenOnly(op.Kind) || op.Kind == models.OpAllReduce {
						continue
					}
					op.Count = 1
					out = append(out, Sample{GPU: gpu, Model: name, TP: tp, Op: op, Seconds: k.OpTime(&op)})
				}
			}
		}
	}
	return out
}

// Fitting a perfect trace of a known profile recovers its parameters.
func TestFitRecoversParameters(t *testing.T) {
	g := mustGPU(t, "h100")
	truth := handProfile(g)
	// A GEMM with every term active: o = 6 µs, η = 0.7, h = 120 tokens, μ = 0.85;
	// an activation with o = 3 µs, μ = 0.6 and a row term at ρ = 0.005.
	for i := range truth.Ops {
		if truth.Ops[i].Op == "mlp_up" {
			truth.Ops[i] = OpParams{Op: "mlp_up", OverheadS: 6e-6, ComputeEff: 0.7, HalfTokens: 120, MemoryEff: 0.85, From: "fit"}
		}
		if truth.Ops[i].Op == "act" {
			truth.Ops[i] = OpParams{Op: "act", OverheadS: 3e-6, ComputeEff: 1, MemoryEff: 0.6, RowMemoryEff: 0.005, From: "fit"}
		}
	}
	k, err := truth.Calibrated(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	tokens := []int{1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048, 4096}
	ss := synthetic(t, k, "h100", []string{"llama-2-7b", "llama-2-70b"}, []int{1, 2, 4}, tokens)
	for _, kind := range []models.OpKind{models.OpMLPUp, models.OpAct} {
		want, _ := truth.Op(kind)
		c := struct {
			kind models.OpKind
			want OpParams
		}{kind, want}
		var cls []Sample
		for _, s := range ss {
			if s.Op.Kind == c.kind {
				cls = append(cls, s)
			}
		}
		got, _ := fitClass(c.kind, cls, g)
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"overhead", got.OverheadS, c.want.OverheadS}, {"compute_eff", got.ComputeEff, c.want.ComputeEff},
			{"half_tokens", got.HalfTokens, c.want.HalfTokens}, {"memory_eff", got.MemoryEff, c.want.MemoryEff},
			{"row_memory_eff", got.RowMemoryEff, c.want.RowMemoryEff}} {
			if math.Abs(f.got-f.want) > 1e-4*math.Max(math.Abs(f.want), 1e-9) {
				t.Errorf("%s %s: fitted %.8g, true %.8g", c.kind, f.name, f.got, f.want)
			}
		}
		if got.Fit.P90APE > 1e-3 {
			t.Errorf("%s: in-sample p90 error %.3g %% on a perfect trace", c.kind, got.Fit.P90APE)
		}
		if got.TileM != 0 || got.WaveEff != 0 {
			t.Errorf("%s: a wave term (%d × %d at %g) fitted to a trace without one", c.kind, got.TileM, got.TileN, got.WaveEff)
		}
	}
}

// The all-reduce fit recovers latency and link efficiency from exact
// times t = 20 µs + 2(n−1)/n · bytes / (450e9 · 0.8).
func TestFitAllReduce(t *testing.T) {
	g := mustGPU(t, "h100")
	var ss []Sample
	for _, tp := range []int{2, 8} {
		n := float64(tp)
		for b := 2048.0; b <= 64<<20; b *= 4 {
			ss = append(ss, Sample{GPU: "h100", TP: tp, Op: models.Op{Kind: models.OpAllReduce, CommBytes: b},
				Seconds: 20e-6 + 2*(n-1)/n*b/(450e9*0.8)})
		}
	}
	ar, _, err := fitAllReduce(ss, g)
	if err != nil {
		t.Fatal(err)
	}
	if len(ar) != 2 || ar[0].TP != 2 || ar[1].TP != 8 {
		t.Fatalf("entries %+v", ar)
	}
	for _, a := range ar {
		if math.Abs(a.LatencyS-20e-6) > 1e-12 || math.Abs(a.LinkEff-0.8) > 1e-9 || a.Fit.MaxAPE > 1e-6 {
			t.Errorf("tp %d: latency %g, link_eff %g, max error %g %%", a.TP, a.LatencyS, a.LinkEff, a.Fit.MaxAPE)
		}
	}
}

// Classes without samples borrow or default, and the profile says so.
func TestFitProfileFallbacks(t *testing.T) {
	g := mustGPU(t, "h100")
	k, _ := handProfile(g).Calibrated(g, 1)
	ss := synthetic(t, k, "h100", []string{"llama-2-7b"}, []int{1}, []int{1, 8, 64, 256, 1024, 4096, 16, 32, 128})
	p, err := FitProfile(&Trace{Samples: ss, Sources: []string{"x.csv"}}, g, FitOptions{Trace: "x", Format: "native"})
	if err != nil {
		t.Fatal(err)
	}
	from := map[string]string{}
	for _, o := range p.Ops {
		from[o.Op] = o.From
	}
	// Llama-2-7B is dense: no moe_router samples; lm_head is not token-only.
	if from["qkv"] != "fit" || from["lm_head"] != "as mlp_up" || from["moe_router"] != "as out_proj" {
		t.Errorf("from: %v", from)
	}
	if len(p.AllReduce) != 0 || !strings.Contains(p.Describe(), "all-reduce by roofline") {
		t.Errorf("all-reduce: %+v; %s", p.AllReduce, p.Describe())
	}
	if p.Iteration.OverheadS != DefaultIterOverhead || !strings.Contains(p.Iteration.Source, "assumption") {
		t.Errorf("iteration: %+v", p.Iteration)
	}
	if !strings.Contains(p.Attention.Source, "assumption") {
		t.Errorf("attention: %+v", p.Attention)
	}
	// No samples of the GPU at all.
	if _, err := FitProfile(&Trace{Samples: ss}, mustGPU(t, "a100"), FitOptions{}); err == nil || !strings.Contains(err.Error(), `no timings for gpu "a100"`) {
		t.Errorf("other GPU: %v", err)
	}
}

// A fit needs enough data per class (issue 11): a class below its minimum
// count of timings or of distinct token counts takes the defaults and the
// profile says so; a trace with no fittable class is an error.
func TestFitProfileMinimum(t *testing.T) {
	g := mustGPU(t, "h100")
	k, _ := handProfile(g).Calibrated(g, 1)
	ss := synthetic(t, k, "h100", []string{"llama-2-7b"}, []int{1}, []int{1, 8, 64, 256, 1024, 4096, 16, 32, 128})
	of := func(keep func(s *Sample) bool) []Sample {
		var out []Sample
		for i := range ss {
			if keep(&ss[i]) {
				out = append(out, ss[i])
			}
		}
		return out
	}
	kind := func(ks ...models.OpKind) func(*Sample) bool {
		return func(s *Sample) bool {
			for _, k := range ks {
				if s.Op.Kind == k {
					return true
				}
			}
			return false
		}
	}
	// Two embed timings at two token counts, and qkv at only 2 distinct
	// token counts (1 and 8, each twice: 4 timings < 8, 2 sizes < 4).
	twoSizes := append(of(func(s *Sample) bool { return s.Op.Kind == models.OpQKV && s.Op.Tokens <= 8 }),
		of(func(s *Sample) bool { return s.Op.Kind == models.OpQKV && s.Op.Tokens <= 8 })...)
	cases := []struct {
		name     string
		ss       []Sample
		err      string            // "" = fits
		from     map[string]string // expected From of some classes
		describe string
	}{
		{"two timings", ss[:2], `calibrate: x.csv: only 2 timings for gpu "h100"; a fit needs at least 6 per operator class at 3 distinct token counts`, nil, ""},
		{"qkv at two sizes", twoSizes, `x.csv: only 4 timings for gpu "h100"`, nil, ""},
		// 9 token counts of each class: every class of the dense model fits.
		{"whole trace", ss, "", map[string]string{"qkv": "fit", "embed": "fit"}, ""},
		// The GEMMs alone: the element-wise classes are defaults, and say so.
		{"GEMMs only", of(kind(models.OpQKV, models.OpOutProj, models.OpMLPUp, models.OpMLPDown)), "",
			map[string]string{"qkv": "fit", "embed": "default", "norm": "default"}, "5 of 11 operator classes not fitted, at default efficiencies (embed, norm, rope, act, add)"},
		// qkv below its minimum next to fittable classes: qkv is a default.
		{"qkv too few", append(of(kind(models.OpMLPUp)), twoSizes...), "",
			map[string]string{"qkv": "default", "mlp_up": "fit", "lm_head": "as mlp_up"}, "not fitted, at default efficiencies (embed, norm, qkv,"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := FitProfile(&Trace{Samples: c.ss, Sources: []string{"x.csv"}}, g, FitOptions{Trace: "x.csv", Format: "native", NoTrees: true})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for op, want := range c.from {
				k, _ := models.ParseOpKind(op)
				if o, _ := p.Op(k); o.From != want {
					t.Errorf("%s: from %q, want %q", op, o.From, want)
				}
			}
			if !strings.Contains(p.Describe(), c.describe) {
				t.Errorf("describe %q lacks %q", p.Describe(), c.describe)
			}
			note := strings.Join(p.Notes, "\n")
			if hasDefault := strings.Contains(note, "Not fitted, too few usable timings"); hasDefault != strings.Contains(c.describe, "not fitted") {
				t.Errorf("notes %q: default note %v", note, hasDefault)
			}
		})
	}
}

// Attention timings in a native trace are fitted instead of assumed.
func TestFitAttention(t *testing.T) {
	g := mustGPU(t, "h100")
	var ss []Sample
	// Exact times 3 µs + max(FLOPs/(989.4e12·0.6), bytes/(3.35e12·0.7)).
	for i := 1; i <= 40; i++ {
		f, b := float64(i)*1e10, float64(41-i)*2e7
		ss = append(ss, Sample{GPU: "h100", Op: models.Op{Kind: models.OpAttnPrefill, Tokens: 100 * i, FLOPs: f, Bytes: b},
			Seconds: 3e-6 + math.Max(f/(989.4e12*0.6), b/(3.35e12*0.7))})
	}
	p, err := FitProfile(&Trace{Samples: ss}, g, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := p.Attention
	if math.Abs(a.ComputeEff-0.6) > 1e-4 || math.Abs(a.MemoryEff-0.7) > 1e-4 || math.Abs(a.OverheadS-3e-6) > 1e-9 || !strings.HasPrefix(a.Source, "fit to 40") {
		t.Errorf("attention %+v", a)
	}
}

// Fitting a perfect trace of a profile with a wave term recovers its tile
// and parameters; on a trace without one (TestFitRecoversParameters), the
// fit takes none.
func TestFitRecoversWaveTerm(t *testing.T) {
	g := mustGPU(t, "h100")
	truth := waveProfile(g) // mlp_up: o 2 µs, η 0.8, h 200, μ 0.9, η_w 0.75, 128 × 256 tiles
	want, _ := truth.Op(models.OpMLPUp)
	k, err := truth.Calibrated(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	var tokens []int
	for n := 1; n <= 4096; n = n*5/4 + 8 {
		tokens = append(tokens, n)
	}
	var ss []Sample
	for _, s := range synthetic(t, k, "h100", []string{"llama-2-7b", "llama-2-70b", "llama-3-8b"}, []int{1, 2, 4, 8}, tokens) {
		if s.Op.Kind == models.OpMLPUp {
			ss = append(ss, s)
		}
	}
	got, _ := fitClass(models.OpMLPUp, ss, g)
	if got.TileM != 128 || got.TileN != 256 {
		t.Fatalf("tile %d × %d, want 128 × 256", got.TileM, got.TileN)
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{{"overhead", got.OverheadS, want.OverheadS}, {"compute_eff", got.ComputeEff, want.ComputeEff},
		{"half_tokens", got.HalfTokens, want.HalfTokens}, {"memory_eff", got.MemoryEff, want.MemoryEff},
		{"wave_eff", got.WaveEff, want.WaveEff}} {
		if math.Abs(f.got-f.want) > 1e-4*f.want {
			t.Errorf("%s: fitted %.8g, true %.8g", f.name, f.got, f.want)
		}
	}
	if got.Fit.P90APE > 1e-3 {
		t.Errorf("in-sample p90 error %.3g %% on a perfect trace", got.Fit.P90APE)
	}
	// The wave term must be active on part of the trace, or the test shows nothing.
	pts := points(ss, g)
	withTile(pts, tile{128, 256}, g.SMs)
	waveWins := 0
	m := params{o: want.OverheadS, em: want.MemoryEff, ec: want.ComputeEff, h: want.HalfTokens}
	for i := range pts {
		if pts[i].w/want.WaveEff < math.Max(m.at(&pts[i])-m.o, pts[i].bm/want.MemoryEff) {
			waveWins++
		}
	}
	if waveWins < len(pts)/10 {
		t.Errorf("the wave term prices %d of %d samples; want at least a tenth", waveWins, len(pts))
	}
	// Without the GPU's SM count there is no wave term to fit.
	noSMs := *g
	noSMs.SMs = 0
	if o, _ := fitClass(models.OpMLPUp, ss, &noSMs); o.TileM != 0 || o.WaveEff != 0 {
		t.Errorf("fit without SMs took a wave term: %+v", o)
	}
}

// TestFitProgress: OnProgress is told each stage of the fit once, in order
// (one per fitted operator class, then attention, all-reduce and trees),
// and the profile is the same with it as without.
func TestFitProgress(t *testing.T) {
	f, err := os.Open("testdata/h200_randn.csv")
	if err != nil {
		t.Fatal(err)
	}
	ss, err := ReadNative(f, "h200_randn.csv", models.Builtin())
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	tr := &Trace{Samples: ss, Sources: []string{"h200_randn.csv"}}
	g := mustGPU(t, "h200")
	stages := len(fittedKinds) + 3 // the classes, attention, all-reduce, trees
	for _, noTrees := range []bool{false, true} {
		plain, err := FitProfile(tr, g, FitOptions{NoTrees: noTrees})
		if err != nil {
			t.Fatal(err)
		}
		var seen []int
		p, err := FitProfile(tr, g, FitOptions{NoTrees: noTrees, OnProgress: func(done, total int) {
			if total != stages {
				t.Errorf("total %d, want %d", total, stages)
			}
			seen = append(seen, done)
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != stages || seen[0] != 1 || seen[len(seen)-1] != stages {
			t.Errorf("no-trees %v: progress %v, want 1 … %d", noTrees, seen, stages)
		}
		if string(p.WriteTOML()) != string(plain.WriteTOML()) {
			t.Errorf("no-trees %v: OnProgress changed the profile", noTrees)
		}
	}
}
