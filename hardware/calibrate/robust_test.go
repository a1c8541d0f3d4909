package calibrate

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// screen rejects what no kernel can take, by reason.
func TestScreen(t *testing.T) {
	g := mustGPU(t, "h100") // 989.4e12 BF16 FLOP/s, 3.35e12 B/s HBM, 450e9 B/s NVLink
	gemm := models.Op{Kind: models.OpQKV, Count: 1, Tokens: 1024, FLOPs: 1e12, Bytes: 1e8, Compute: models.BF16}
	ar := models.Op{Kind: models.OpAllReduce, Count: 1, CommBytes: 1e9, Compute: models.BF16}
	cases := []struct {
		name string
		op   models.Op
		tp   int
		sec  float64
		want int
	}{
		// 1e12 FLOPs at 989.4e12 FLOP/s take 1.01 ms; 1e8 bytes at 3.35e12 B/s 29.9 µs.
		{"at the roofline", gemm, 1, 1.011e-3, -1},
		{"at 3× the peak (L2, datasheet slack)", gemm, 1, 1.011e-3 / 3, -1},
		{"at 5× the peak FLOP/s", gemm, 1, 1.011e-3 / 5, rejectFLOPs},
		{"NaN", gemm, 1, math.NaN(), rejectNonFinite},
		{"+Inf", gemm, 1, math.Inf(1), rejectNonFinite},
		{"zero", gemm, 1, 0, rejectNonFinite},
		{"negative", gemm, 1, -1e-3, rejectNonFinite},
		{"time_us = 1e308", gemm, 1, 1e308 * 1e-6, rejectTooLong},
		{"11 s", gemm, 1, 11, rejectTooLong},
		// A memory-bound op: no FLOPs, 1e9 bytes take 0.299 ms at HBM speed.
		{"bytes at 5× the bandwidth", models.Op{Kind: models.OpAdd, Count: 1, Tokens: 8, Bytes: 1e9}, 1, 0.299e-3 / 5, rejectBytes},
		// 2·(8−1)/8 · 1e9 / 450e9 = 3.89 ms on the ring.
		{"all-reduce at the ring bound", ar, 8, 3.89e-3, -1},
		{"all-reduce at 5× the link", ar, 8, 3.89e-3 / 5, rejectLink},
	}
	for _, c := range cases {
		s := Sample{GPU: "h100", TP: c.tp, Op: c.op, Seconds: c.sec}
		if got := screen(&s, g); got != c.want {
			t.Errorf("%s: screen = %d, want %d", c.name, got, c.want)
		}
	}
}

// grossOutliers flags only residuals far outside the class's scatter.
func TestGrossOutliers(t *testing.T) {
	cases := []struct {
		name string
		res  []float64
		want []int // indices flagged
	}{
		{"none", []float64{0, 0.1, -0.1, 0.05, -0.05}, nil},
		// MAD 0.1: 10 MADs = 1 < ln 10 = 2.30: a 4× miss (1.39) stays.
		{"4× miss stays", []float64{0, 0.1, -0.1, 0.1, -0.1, math.Log(4)}, nil},
		{"unit slip (1000×)", []float64{0, 0.1, -0.1, 0.1, -0.1, math.Log(1000)}, []int{5}},
		{"too fast by 100×", []float64{0, 0.1, -0.1, 0.1, -0.1, -math.Log(100), 0.05}, []int{5}},
		// Median 0.3, MAD 0.6: 10 MADs = 6 > ln 10: a 20× miss (3.0, 2.7 off
		// the median) stays, a 1e6× one (13.8) goes.
		{"wide class", []float64{0, 0.5, -0.5, 0.5, -0.5, 0.3, -0.3, math.Log(20), math.Log(1e6)}, []int{8}},
		{"NaN", []float64{0, 0.1, math.NaN(), -0.1}, []int{2}},
		{"too few to judge", []float64{0, 100}, nil},
	}
	for _, c := range cases {
		got := grossOutliers(c.res)
		var idx []int
		for i, o := range got {
			if o {
				idx = append(idx, i)
			}
		}
		if len(idx) != len(c.want) || (len(idx) > 0 && !equalInts(idx, c.want)) {
			t.Errorf("%s: flagged %v, want %v", c.name, idx, c.want)
		}
	}
}

func equalInts(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// One poisoned row does not move a fit (issue 11: one time_us = 1e308 took
// the median error from 9.95 % to 3,906 %): a non-physical time is
// screened out and a unit slip is a gross outlier, each counted by reason
// in the profile. Synthetic exact times, so the clean fit is exact.
func TestFitIgnoresPoisonedRows(t *testing.T) {
	g := mustGPU(t, "h100")
	k, _ := handProfile(g).Calibrated(g, 1)
	clean := synthetic(t, k, "h100", []string{"llama-2-7b"}, []int{1}, []int{1, 8, 64, 256, 1024, 4096, 16, 32, 128})
	fit := func(ss []Sample) *Profile {
		p, err := FitProfile(&Trace{Samples: ss, Sources: []string{"x.csv"}}, g, FitOptions{Trace: "x.csv", Format: "native", NoTrees: true})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	want := fit(clean)
	var qkv Sample
	for _, s := range clean {
		if s.Op.Kind == models.OpQKV && s.Op.Tokens == 256 {
			qkv = s
		}
	}
	huge, slip, fast := qkv, qkv, qkv
	huge.Seconds, huge.Where = 1e308*1e-6, "x.csv line 100" // time_us = 1e308
	slip.Seconds, slip.Where = qkv.Seconds*1000, "x.csv line 101"
	fast.Seconds, fast.Where = qkv.Seconds/1e4, "x.csv line 102"
	got := fit(append(append([]Sample(nil), clean...), huge, slip, fast))
	for i, o := range got.Ops {
		w := want.Ops[i]
		for _, v := range [][2]float64{{o.OverheadS, w.OverheadS}, {o.ComputeEff, w.ComputeEff}, {o.MemoryEff, w.MemoryEff}, {o.HalfTokens, w.HalfTokens}} {
			if math.Abs(v[0]-v[1]) > 1e-9*math.Max(1, math.Abs(v[1])) {
				t.Errorf("%s: poisoned fit %+v, clean %+v", o.Op, o, w)
				break
			}
		}
		if o.Fit.MedianAPE > w.Fit.MedianAPE+0.01 {
			t.Errorf("%s: median error %.3g %%, clean %.3g %%", o.Op, o.Fit.MedianAPE, w.Fit.MedianAPE)
		}
	}
	if got.Source.Rejected != 3 || got.Source.Samples != want.Source.Samples {
		t.Errorf("rejected %d, samples %d (clean %d)", got.Source.Rejected, got.Source.Samples, want.Source.Samples)
	}
	note := strings.Join(got.Notes, "\n")
	for _, w := range []string{"Rejected 3 of", "1 longer than 10 s", "(first: x.csv line 100)",
		"1 faster than 4× the GPU's peak FLOP/s allows (first: x.csv line 102)", "1 gross outlier", "(first: x.csv line 101)"} {
		if !strings.Contains(note, w) {
			t.Errorf("notes lack %q:\n%s", w, note)
		}
	}
	if d := got.Describe(); !strings.Contains(d, "3 timings rejected (see notes)") {
		t.Errorf("describe: %s", d)
	}
	// The count survives the file.
	if q, err := ParseProfile(got.WriteTOML(), "got.toml"); err != nil || q.Source.Rejected != 3 {
		t.Errorf("read back: %v, %+v", err, q)
	}
}

// The shared Vidur H100 trace plus one poisoned row (a unit slip and a
// time_us = 1e308) gives the same fit as without it.
func TestFitVidurPoisoned(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the Vidur H100 trace twice")
	}
	dir := vidurDir(t)
	g := mustGPU(t, "h100")
	tr, err := LoadVidur(dir, "h100", VidurOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opt := FitOptions{Trace: "vidur-profiling", Format: "vidur", NoTrees: true}
	want, err := FitProfile(tr, g, opt)
	if err != nil {
		t.Fatal(err)
	}
	var row Sample
	for _, s := range tr.Samples {
		if s.Op.Kind == models.OpMLPUp && s.Op.Tokens >= 512 {
			row = s
			break
		}
	}
	slip, huge := row, row
	slip.Seconds *= 1000 // ms written as µs
	huge.Seconds = 1e305 // 1e308 ms
	bad := &Trace{Samples: append(append([]Sample(nil), tr.Samples...), slip, huge), Sources: tr.Sources, IterOverhead: tr.IterOverhead}
	got, err := FitProfile(bad, g, opt)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range got.Ops {
		w := want.Ops[i]
		if rel := math.Abs(o.ComputeEff/w.ComputeEff - 1); rel > 1e-3 || math.Abs(o.Fit.MedianAPE-w.Fit.MedianAPE) > 0.05 {
			t.Errorf("%s: poisoned η %.4g, median error %.2f %%; clean η %.4g, %.2f %%", o.Op, o.ComputeEff, o.Fit.MedianAPE, w.ComputeEff, w.Fit.MedianAPE)
		}
	}
	if got.Source.Rejected != 2 {
		t.Errorf("rejected %d, want 2; notes %q", got.Source.Rejected, got.Notes)
	}
}
