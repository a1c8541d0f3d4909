package calibrate

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// The table's factor by hand: bilinear in (log2 w, log2 u), the edge
// values beyond the axes.
func TestResidualAt(t *testing.T) {
	ws := []float64{1, 4, 16}
	us := []float64{100, 400}
	r := [][]float64{{1, 2}, {0.5, 1}, {1.5, 1.5}}
	for _, c := range []struct {
		w, u, want float64
		why        string
	}{
		{1, 100, 1, "a corner"},
		{4, 400, 1, "another point"},
		{2, 100, 0.75, "log2(2/1)/log2(4/1) = 1/2 of the way from 1 to 0.5"},
		{1, 200, 1.5, "1/2 of the way from 1 to 2 along u"},
		{2, 200, 1.125, "rows at u = 200: 1.5 and 0.75; half way: 1.125"},
		{8, 400, 1.25, "log2(8/4)/log2(16/4) = 1/2 from 1 to 1.5"},
		{0.5, 50, 1, "below both axes: the corner (1, 100)"},
		{64, 1000, 1.5, "beyond both axes: the corner (16, 400)"},
		{2, 1e6, 1.5, "beyond u: the u = 400 column, half way from 2 to 1"},
	} {
		if got := residualAt(ws, us, r, c.w, c.u); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("w %g, u %g: %g, want %g (%s)", c.w, c.u, got, c.want, c.why)
		}
	}
	// One point per axis: the one factor everywhere.
	if got := residualAt([]float64{8}, []float64{1e3}, [][]float64{{0.9}}, 100, 1); got != 0.9 {
		t.Errorf("1×1 table: %g, want 0.9", got)
	}
}

// A decode operator's work units are its decodes × the KV heads one GPU
// holds (config.json of each model): Llama-3.1-8B 8 KV heads, at TP 2 4;
// Llama-2-7B 32 (MHA); Llama-2-70B at TP 16, 8 heads replicated to 1 per
// GPU; an MLA model 1 (its latent).
func TestDecodeWorkUnits(t *testing.T) {
	cat := models.Builtin()
	for _, c := range []struct {
		model string
		tp    int
		want  int
	}{{"llama-3.1-8b", 1, 8}, {"llama-3.1-8b", 2, 4}, {"llama-2-7b", 1, 32}, {"llama-2-70b", 16, 1}, {"deepseek-v3", 8, 1}} {
		m, err := cat.Get(c.model)
		if err != nil {
			t.Fatal(err)
		}
		ops := m.Ops(models.Batch{Decodes: 10, DecodeCtx: 10000}, models.Parallel{TP: c.tp, Weights: models.BF16, KV: models.BF16}, nil)
		op, ok := opOf(ops, models.OpAttnDecode)
		if !ok {
			t.Fatalf("%s: no decode attention", c.model)
		}
		if w, u := decodeWork(op.Tokens, op.KVHeads, op.Bytes); op.KVHeads != c.want || w != float64(10*c.want) || u != op.Bytes/w {
			t.Errorf("%s TP %d: KV heads %d, units %g, bytes/unit %g; want %d, %d, %g", c.model, c.tp, op.KVHeads, w, u, c.want, 10*c.want, op.Bytes/float64(10*c.want))
		}
	}
}

// The residual fit recovers a known table from times it generated, is all
// ones on times the additive form generated (metamorphic), and the kernel
// model prices a call as the fit does.
func TestFitResidualRecovers(t *testing.T) {
	_, g, ss, add := attnFixture(t)
	var dec []AttnSample
	for _, s := range ss {
		if s.HasD && !s.HasP && doubling(s.Row) {
			dec = append(dec, s)
		}
	}
	if len(dec) < 16 {
		t.Fatalf("testdata/bundle: %d doubling-grid decode-only calls", len(dec))
	}
	// A factor by (w, context) the table should give back at its points.
	factor := func(w float64, ctx int) float64 { return 0.8 + 0.02*math.Log2(w) + 0.01*math.Log2(float64(ctx)) }
	for _, exact := range []bool{true, false} {
		for i := range dec {
			dec[i].Seconds = add.decodeTime(g, &dec[i].Decode)
			if !exact {
				w, _ := decodeWork(dec[i].Decode.Tokens, dec[i].Decode.KVHeads, dec[i].Decode.Bytes)
				dec[i].Seconds *= factor(w, dec[i].Row.KVDecode)
			}
		}
		a := add
		fitResidual(&a, dec, g)
		if len(a.DecodeResidual) == 0 {
			t.Fatal("no table")
		}
		for _, s := range dec {
			w, u := decodeWork(s.Decode.Tokens, s.Decode.KVHeads, s.Decode.Bytes)
			want := 1.0
			if !exact {
				want = factor(w, s.Row.KVDecode)
			}
			// At its own call the table holds its ratio, rounded to 4 digits.
			if got := residualAt(a.DecodeResidualUnits, a.DecodeResidualBytes, a.DecodeResidual, w, u); math.Abs(got/want-1) > 2e-3 {
				t.Errorf("exact %v, %s: factor %g, want %g", exact, s.Where, got, want)
			}
			if got := a.decodeTime(g, &s.Decode); math.Abs(got/s.Seconds-1) > 2e-3 {
				t.Errorf("exact %v, %s: %g s, want %g s", exact, s.Where, got, s.Seconds)
			}
		}
		// The kernel model prices each call as the fit's model does.
		p := handProfile(g)
		p.Attention = a
		p.Attention.From = "fit"
		k, err := p.Calibrated(g, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range dec {
			if got, want := k.OpTime(&s.Decode), a.decodeTime(g, &s.Decode); math.Abs(got/want-1) > 1e-12 {
				t.Fatalf("%s: kernel %g s, fit model %g s", s.Where, got, want)
			}
		}
		// A mixed call's decodes do not take the table, unless the profile
		// has no mixed-call parameters (they are then priced as
		// decode-only calls); the kernel agrees either way.
		mixed := dec[len(dec)-1].Decode
		mixed.Mixed = true
		q := a
		q.DecodeResidual, q.DecodeResidualUnits, q.DecodeResidualBytes = nil, nil, nil
		if got, want := a.decodeTime(g, &mixed), q.decodeTime(g, &mixed); got != want {
			t.Errorf("mixed call: %g s with the table, %g s without", got, want)
		}
		noMixed := a
		noMixed.MixedComputeEff, noMixed.MixedMemoryEff, noMixed.MixedOverheadS = 0, 0, 0
		pm := handProfile(g)
		pm.Attention = noMixed
		pm.Attention.From = "fit"
		km, err := pm.Calibrated(g, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range []models.Op{mixed, dec[len(dec)-1].Decode} {
			if got, want := km.OpTime(&op), noMixed.decodeTime(g, &op); math.Abs(got/want-1) > 1e-12 {
				t.Errorf("no mixed parameters, mixed %v: kernel %g s, fit model %g s", op.Mixed, got, want)
			}
		}
		if got, want := noMixed.decodeTime(g, &mixed), noMixed.decodeTime(g, &dec[len(dec)-1].Decode); got != want {
			t.Errorf("no mixed parameters: mixed decodes %g s, decode-only %g s", got, want)
		}
	}
}

// The profile round-trips the residual table through TOML, and a bad one
// is an error naming the file, line and field.
func TestResidualTOML(t *testing.T) {
	p := handProfile(mustGPU(t, "h100"))
	p.Attention = Attention{ComputeEff: 0.55, MemoryEff: 0.3, OverheadS: 9e-6,
		DecodeComputeEff: 1, DecodeMemoryEff: 0.75, DecodeOverheadS: 12e-6, DecodePerSeqS: 6e-8,
		DecodeResidualUnits: []float64{8, 64}, DecodeResidualBytes: []float64{1e4, 1e6},
		DecodeResidual: [][]float64{{0.9, 1.1}, {0.95, 1.0}}, From: "fit", Source: "test"}
	text := string(p.WriteTOML())
	q, err := ParseProfile([]byte(text), "p.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(q.Attention, p.Attention) {
		t.Fatalf("round trip: %+v, want %+v", q.Attention, p.Attention)
	}
	c := p.Clone()
	c.Attention.DecodeResidual[0][0] = 2
	if p.Attention.DecodeResidual[0][0] != 0.9 {
		t.Fatal("Clone shares the residual table")
	}
	for _, c := range []struct{ from, to, want string }{
		{"[0.9, 1.1]", "[0.9]", `field "attention.decode_residual": row 1 has 1 factors, decode_residual_unit_bytes 2 values`},
		{"[0.9, 1.1]", "[0.9, 9.0]", `field "attention.decode_residual": row 1, value 2 (9): want a factor in [0.25, 4]`},
		{"decode_residual_units = [8.0, 64.0]", "decode_residual_units = [64.0, 8.0]", `field "attention.decode_residual_units": value 2 (8): want ascending`},
		{"decode_residual_units = [8.0, 64.0]", "decode_residual_units = [8.0]", `field "attention.decode_residual": has 2 rows, decode_residual_units 1 values`},
		{"decode_residual_unit_bytes = [10000.0, 1e+06]", "decode_residual_unit_bytes = [0.0, 1e+06]", `field "attention.decode_residual_unit_bytes": value 1 (0)`},
		{"decode_residual_unit_bytes = [10000.0, 1e+06]\n", "", `field "attention.decode_residual": needs both axes`},
	} {
		bad := strings.Replace(text, c.from, c.to, 1)
		if bad == text {
			t.Fatalf("%q not in the profile:\n%s", c.from, text)
		}
		if _, err := ParseProfile([]byte(bad), "p.toml"); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "p.toml line") {
			t.Errorf("%q → %q: %v, want %q with its line", c.from, c.to, err, c.want)
		}
	}
}

// fastLog2 agrees with math.Log2 to 1e-10 over the range a lookup meets
// (work units 1–2^24, bytes per unit 1 B–1 TB) and at powers of two.
func TestFastLog2(t *testing.T) {
	worst := 0.0
	for x := 1e-3; x < 1e13; x *= 1.0137 {
		worst = math.Max(worst, math.Abs(fastLog2(x)-math.Log2(x)))
	}
	for e := -20; e <= 40; e++ {
		if got := fastLog2(math.Ldexp(1, e)); math.Abs(got-float64(e)) > 1e-12 {
			t.Errorf("2^%d: %v", e, got)
		}
	}
	if worst > 1e-10 {
		t.Errorf("worst |fastLog2 − math.Log2| = %g", worst)
	}
	for i := 1; i < len(log2Small); i++ {
		if log2Small[i] != fastLog2(float64(i)) || log2Of(float64(i)) != log2Small[i] {
			t.Fatalf("log2Small[%d]", i)
		}
	}
	if log2Of(2.5) != fastLog2(2.5) || log2Of(1e6) != fastLog2(1e6) {
		t.Error("log2Of off the table")
	}
}

// A transfer keeps the residual table only to a GPU with the same SM
// count (gpus.toml: h100 and h200 132, b200 148), and says which.
func TestTransferResidual(t *testing.T) {
	p := handProfile(mustGPU(t, "h100"))
	p.Peaks.SMs = 132
	p.Attention = Attention{ComputeEff: 0.55, MemoryEff: 0.3, OverheadS: 9e-6,
		DecodeComputeEff: 1, DecodeMemoryEff: 0.75, DecodeOverheadS: 12e-6, DecodePerSeqS: 6e-8,
		DecodeResidualUnits: []float64{8, 64}, DecodeResidualBytes: []float64{1e4, 1e6},
		DecodeResidual: [][]float64{{0.9, 1.1}, {0.95, 1.0}}, From: "fit", Source: "test"}
	for _, c := range []struct {
		gpu  string
		keep bool
		note string
	}{{"h200", true, "residual table is kept: h100 and h200 have the same 132 SMs"}, {"b200", false, "residual table is left out: it records the kernel's regimes on h100's 132 SMs, not on b200's 148"}} {
		q, err := Transfer(p, mustGPU(t, c.gpu))
		if err != nil {
			t.Fatal(err)
		}
		if has := len(q.Attention.DecodeResidual) > 0; has != c.keep {
			t.Errorf("%s: table kept %v, want %v", c.gpu, has, c.keep)
		}
		if !strings.Contains(strings.Join(q.Notes, " "), c.note) {
			t.Errorf("%s: notes %q lack %q", c.gpu, q.Notes, c.note)
		}
		if len(p.Attention.DecodeResidual) == 0 {
			t.Fatal("Transfer changed its input")
		}
	}
}

// TestFrexp wants math.Frexp's fraction and exponent to the bit, over
// normal, subnormal and special values of both signs.
func TestFrexp(t *testing.T) {
	xs := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 3, 1e300, 1e-300, math.SmallestNonzeroFloat64,
		2.2250738585072014e-308, 2.225073858507201e-308, math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		xs = append(xs, math.Float64frombits(r.Uint64()), r.Float64()*1e12, math.Ldexp(r.Float64(), r.IntN(2200)-1100))
	}
	for _, x := range xs {
		gf, ge := frexp(x)
		wf, we := math.Frexp(x)
		if math.Float64bits(gf) != math.Float64bits(wf) && !(math.IsNaN(gf) && math.IsNaN(wf)) || ge != we {
			t.Fatalf("frexp(%v) = %v, %d; math.Frexp %v, %d", x, gf, ge, wf, we)
		}
	}
}
