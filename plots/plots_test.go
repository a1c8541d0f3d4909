package plots

import (
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// wantError checks a table case's error: with want "" there must be none
// (else the test stops), and wantError returns false, the case going on;
// otherwise err must start with prefix and hold want, and it returns true:
// the case is done.
func wantError(t *testing.T, err error, prefix, want string) (done bool) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one starting with %q and holding %q", err, prefix, want)
	}
	return true
}

// golden compares got with testdata/golden/NAME.golden (rewritten with
// -update: go test ./plots -update, then read the diff).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./plots -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (go test ./plots -update rewrites it; read the diff):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// checkPNG decodes a PNG and checks its size and that it is not blank: more
// than two distinct colours, and between 2 % and 60 % of the pixels not
// white (a plot with titles, axes and data, not an empty or solid image).
func checkPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("%s: %d×%d pixels, want %d×%d", path, b.Dx(), b.Dy(), w, h)
	}
	colors := map[[4]uint8]bool{}
	ink := 0
	b := img.Bounds()
	var pix []uint8 // 4 bytes a pixel, rows packed
	switch m := img.(type) {
	case *image.RGBA:
		pix = m.Pix
	case *image.NRGBA:
		pix = m.Pix
	default:
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
				pix = append(pix, c.R, c.G, c.B, c.A)
			}
		}
	}
	for i := 0; i+3 < len(pix); i += 4 {
		c := [4]uint8{pix[i], pix[i+1], pix[i+2], pix[i+3]}
		if len(colors) < 1000 {
			colors[c] = true
		}
		if c != [4]uint8{255, 255, 255, 255} {
			ink++
		}
	}
	frac := float64(ink) / float64(w*h)
	if len(colors) <= 2 || frac < 0.02 || frac > 0.6 {
		t.Errorf("%s looks blank or solid: %d colours, %.1f %% non-white pixels", path, len(colors), 100*frac)
	}
}

func readResults(t testing.TB, name string) *Results {
	t.Helper()
	res, err := ReadResultsFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func loadRun(t *testing.T, dir string) *Run {
	t.Helper()
	r, err := LoadRun(filepath.Join("testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// save draws d to a temporary PNG of the default size and checks it.
func save(t *testing.T, d Drawer, name string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".png")
	if err := Save(d, path, DefaultWidth, DefaultHeight); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, path, DefaultWidth, DefaultHeight)
}

func TestBatchLatencyFixture(t *testing.T) {
	res := readResults(t, "batch-latency.csv")
	fig, nums, err := BatchLatency(res, BatchLatencyOptions{SLO: SLO{TTFTms: 2000, TPOTms: 50}})
	if err != nil {
		t.Fatal(err)
	}
	save(t, fig, "batch-latency")
	golden(t, "batch-latency", nums.String())
	// From the fixture (mean of seeds 1 and 2), first step gain g1 = T(2) − T(1):
	//   h200: g1 = 331.96 − 168.82 = 163.14 tok/s per sequence; 32→64 gains
	//   (4081.69 − 3213.48)/32 = 27.13 = 0.166·g1 ≥ 0.1·g1, 64→128 gains
	//   (4125.10 − 4081.69)/64 = 0.68 = 0.004·g1 < 0.1·g1: knee 64, whose p95
	//   TTFT 1088 ms ≤ 2000 and TPOT 14.1 ms ≤ 50: sweet spot 64.
	//   h100: g1 = 127.08; 64→128: (3695.13 − 3394.33)/64 = 4.70 = 0.037·g1:
	//   knee 64, but its TTFT 5836 ms > 2000, as every smaller batch's; the
	//   next, 128, has TTFT 146.6 ms and TPOT 22.8 ms: sweet spot 128.
	//   a100: the smallest p95 TTFT is 19,098 ms > 2000: no sweet spot.
	want := map[string]struct{ knee, spot float64 }{"h200": {64, 64}, "h100": {64, 128}, "a100": {64, -1}}
	for _, c := range nums.Curves {
		w := want[c.Label]
		spot := -1.0
		if c.SweetSpot >= 0 {
			spot = c.X[c.SweetSpot]
		}
		if c.X[c.Knee] != w.knee || spot != w.spot {
			t.Errorf("%s: knee %g, sweet spot %g; want %g, %g", c.Label, c.X[c.Knee], spot, w.knee, w.spot)
		}
	}
}

func TestSweetSpot(t *testing.T) {
	// Throughput 100, 200, 380, 400 at x = 1, 2, 4, 8: g1 = 100/1 = 100,
	// g2 = 180/2 = 90 (0.9·g1), g3 = 20/4 = 5 (0.05·g1 < 0.1·g1): knee at
	// x = 4 (index 2).
	xs, thr := []float64{1, 2, 4, 8}, []float64{100, 200, 380, 400}
	tpotOK := []float64{10, 10, 10, 10}
	for _, tc := range []struct {
		name       string
		thr, ttft  []float64
		tpot       []float64
		slo        SLO
		knee, spot int
	}{
		{"knee meets", thr, []float64{5000, 3000, 800, 500}, tpotOK, SLO{TTFTms: 1000}, 2, 2},
		{"no SLO: the knee", thr, []float64{5000, 3000, 800, 500}, tpotOK, SLO{}, 2, 2},
		{"above the knee", thr, []float64{5000, 3000, 1500, 500}, tpotOK, SLO{TTFTms: 1000}, 2, 3},
		{"below the knee (TPOT)", thr, []float64{50, 50, 50, 50}, []float64{10, 20, 60, 90}, SLO{TPOTms: 50}, 2, 1},
		{"none meets", thr, []float64{5000, 3000, 1500, 1100}, tpotOK, SLO{TTFTms: 1000}, 2, -1},
		{"NaN latency never meets", thr, []float64{5000, 3000, math.NaN(), 500}, tpotOK, SLO{TTFTms: 1000}, 2, 3},
		// g1 = 0: no gain to taper from, knee at the first point.
		{"flat first step", []float64{100, 100, 200, 300}, []float64{1, 1, 1, 1}, tpotOK, SLO{TTFTms: 10}, 0, 0},
		// Gains 100, 100/1·… stay ≥ 0.1·g1: no taper, knee at the last point.
		{"no taper", []float64{100, 200, 400, 800}, []float64{1, 1, 1, 1}, tpotOK, SLO{}, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := BatchLatencyCurve{X: xs, Throughput: tc.thr, TTFT: tc.ttft, TPOT: tc.tpot}
			c.sweetSpot(tc.slo, 0.1)
			if c.Knee != tc.knee || c.SweetSpot != tc.spot {
				t.Errorf("knee %d, sweet spot %d; want %d, %d (rel gains %v)", c.Knee, c.SweetSpot, tc.knee, tc.spot, c.RelGain)
			}
		})
	}
	one := BatchLatencyCurve{X: []float64{4}, Throughput: []float64{1}, TTFT: []float64{1}, TPOT: []float64{1}}
	one.sweetSpot(SLO{}, 0.1)
	if one.Knee != 0 || one.SweetSpot != 0 {
		t.Errorf("one point: knee %d, sweet spot %d; want 0, 0", one.Knee, one.SweetSpot)
	}
}

func TestGoodputFixture(t *testing.T) {
	fig, nums, err := Goodput(readResults(t, "goodput.csv"), GoodputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	save(t, fig, "goodput")
	golden(t, "goodput", nums.String())
	// Mean attainment over the two seeds: chunked 0.9620 at 20 req/s and
	// 0.5745 at 24: 20 + (0.9620 − 0.9)/(0.9620 − 0.5745)·4 = 20.640;
	// prefill-first 0.9925 at 16 and 0.7990 at 20: 16 + 0.0925/0.1935·4 = 17.912.
	for i, want := range []float64{20.640, 17.912} {
		if got := nums.Curves[i].MaxRate; math.Abs(got-want) > 0.001 {
			t.Errorf("%s: max goodput rate %.4f, want %.3f", nums.Curves[i].Label, got, want)
		}
	}
	// batching.csv: one seed, seven batch policies at 2, 5 and 12 req/s.
	fig, nums, err = Goodput(readResults(t, "batching.csv"), GoodputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	save(t, fig, "goodput-batching")
	golden(t, "goodput-batching", nums.String())
}

func TestMaxGoodputRate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		att      []float64
		want     float64
		censored bool
	}{
		// 4 + (0.95 − 0.9)/(0.95 − 0.7)·(6 − 4) = 4 + 0.2·2 = 4.4
		{"interpolated", []float64{1, 0.95, 0.7}, 4.4, false},
		// crosses exactly at a grid point: 4 + (0.9 − 0.9)/… = 4
		{"on the target", []float64{1, 0.9, 0.5}, 4, false},
		{"never below", []float64{1, 0.99, 0.95}, 6, true},
		{"below at the lowest rate", []float64{0.8, 0.5, 0.1}, math.NaN(), false},
		// first crossing wins: 2 + (1 − 0.9)/(1 − 0.8)·2 = 3, the recovery at 6 ignored
		{"noisy recovery", []float64{1, 0.8, 0.95}, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := GoodputCurve{Rate: []float64{2, 4, 6}, Attainment: tc.att}
			c.maxGoodputRate(0.9)
			ok := math.Abs(c.MaxRate-tc.want) <= 1e-12 || math.IsNaN(c.MaxRate) && math.IsNaN(tc.want)
			if !ok || c.Censored != tc.censored {
				t.Errorf("max rate %v censored %v; want %v, %v", c.MaxRate, c.Censored, tc.want, tc.censored)
			}
		})
	}
}

func TestPerceptionFixture(t *testing.T) {
	res := readResults(t, "batching.csv")
	p, nums, err := Perception(res, MatrixOptions{SLO: SLO{TTFTms: 2000}})
	if err != nil {
		t.Fatal(err)
	}
	save(t, p, "perception")
	golden(t, "perception", nums.String())
	// 21 configurations; the median of 21 output throughputs is the 11th.
	if len(nums.Points) != 21 || !nums.ThroughputFromMedian || nums.TTFTFromMedian || nums.TTFTLine != 2000 {
		t.Errorf("%d points, lines %+v", len(nums.Points), nums)
	}
	counts := map[string]int{}
	for _, pt := range nums.Points {
		counts[pt.Quadrant]++
		if (pt.TTFT <= 2000) != strings.HasPrefix(pt.Quadrant, "feels fast") || (pt.Throughput >= nums.ThroughputLine) != strings.HasSuffix(pt.Quadrant, "has capacity") {
			t.Errorf("%s in quadrant %q at TTFT %g, throughput %g", pt.Config, pt.Quadrant, pt.TTFT, pt.Throughput)
		}
	}
	// At least half the points are at or above the median throughput.
	if counts[FastHasCapacity]+counts[SlowHasCapacity] < 11 {
		t.Errorf("quadrant counts %v", counts)
	}
}

func TestQuadrant(t *testing.T) {
	for _, tc := range []struct {
		ttft, thr float64
		want      string
	}{
		{100, 500, FastHasCapacity}, {200, 500, FastHasCapacity}, // on the TTFT line: fast
		{100, 499, FastLowCapacity}, {201, 500, SlowHasCapacity}, {201, 10, SlowLowCapacity},
	} {
		if got := quadrant(tc.ttft, tc.thr, 200, 500, 0); got != tc.want {
			t.Errorf("quadrant(%g, %g) = %q, want %q", tc.ttft, tc.thr, got, tc.want)
		}
	}
}

func TestProviderFitFixture(t *testing.T) {
	res := readResults(t, "batch-latency.csv")
	p, nums, err := ProviderFit(res, MatrixOptions{SLO: SLO{TTFTms: 2000}})
	if err != nil {
		t.Fatal(err)
	}
	save(t, p, "provider-fit")
	golden(t, "provider-fit", nums.String())
	// Within TTFT ≤ 2000 ms: h100 at 128 and 256 ($0.2258 each, the first
	// wins), h200 at 64 ($0.2725), 128 and 256 ($0.2699): the cheapest is
	// h100 at 128.
	if c := nums.Cheapest; c < 0 || nums.Points[c].Config != "gpu=h100, batch.max_num_seqs=128" {
		t.Errorf("cheapest %d", c)
	}
	// With a floor of 4000 tok/s only h200 at 64, 128, 256 qualify (4081.69,
	// 4125.10, 4125.10): the cheapest is 128 at $0.2699.
	_, nums, err = ProviderFit(res, MatrixOptions{SLO: SLO{TTFTms: 2000}, TargetThroughput: 4000})
	if err != nil {
		t.Fatal(err)
	}
	if c := nums.Cheapest; c < 0 || nums.Points[c].Config != "gpu=h200, batch.max_num_seqs=128" {
		t.Errorf("cheapest with a throughput floor: %d", c)
	}
}

// TestMatrixEverySLO checks that both matrices apply every objective set,
// not only TTFT: with TPOT ≤ 20 ms added, h100 at 128 (p95 TPOT the mean of
// 22.4963 and 23.0767 = 22.79 ms) misses, so the cheapest meeting every SLO
// is h200 at 128 ($0.2699, p95 TPOT (15.3005+16.1561)/2 = 15.73 ms), and
// h100 at 128 feels slow although its p95 TTFT (146.58 ms) is under the line.
func TestMatrixEverySLO(t *testing.T) {
	res := readResults(t, "batch-latency.csv")
	slo := SLO{TTFTms: 2000, TPOTms: 20}
	_, fit, err := ProviderFit(res, MatrixOptions{SLO: slo})
	if err != nil {
		t.Fatal(err)
	}
	if c := fit.Cheapest; c < 0 || fit.Points[c].Config != "gpu=h200, batch.max_num_seqs=128" {
		t.Fatalf("cheapest %d", c)
	}
	_, per, err := Perception(res, MatrixOptions{SLO: slo})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pts    []MatrixPoint
		config string
		meets  bool
		quad   string // "" for provider-fit
	}{
		{fit.Points, "gpu=h100, batch.max_num_seqs=128", false, ""},
		{fit.Points, "gpu=h200, batch.max_num_seqs=128", true, ""},
		{fit.Points, "gpu=h100, batch.max_num_seqs=64", false, ""}, // TTFT (4817+6854)/2 = 5836 ms > 2000
		{per.Points, "gpu=h100, batch.max_num_seqs=128", false, "feels slow"},
		{per.Points, "gpu=h200, batch.max_num_seqs=128", true, "feels fast"},
	} {
		i := slices.IndexFunc(tc.pts, func(p MatrixPoint) bool { return p.Config == tc.config })
		if i < 0 {
			t.Fatalf("no %s", tc.config)
		}
		p := tc.pts[i]
		if p.MeetsSLO() != tc.meets || !strings.HasPrefix(p.Quadrant, tc.quad) {
			t.Errorf("%s: meets %v (misses %q), quadrant %q; want %v, %q", tc.config, p.MeetsSLO(), p.Misses, p.Quadrant, tc.meets, tc.quad)
		}
	}
	// Every point ringed or placed as meeting the SLO meets each objective.
	for _, p := range fit.Points {
		if p.MeetsSLO() != (p.TTFT <= slo.TTFTms && p.TPOT <= slo.TPOTms) {
			t.Errorf("%s: meets %v at TTFT %g, TPOT %g", p.Config, p.MeetsSLO(), p.TTFT, p.TPOT)
		}
	}
}

func TestCostBins(t *testing.T) {
	// 0.2 to 6.4 spans 32× > 4: log bins, edges 0.2·32^(i/5) = 0.2, 0.4, 0.8, 1.6, 3.2, 6.4.
	e := costEdges(0.2, 6.4, 5)
	for i, want := range []float64{0.2, 0.4, 0.8, 1.6, 3.2, 6.4} {
		if math.Abs(e[i]-want) > 1e-12 {
			t.Errorf("edge %d = %v, want %v", i, e[i], want)
		}
	}
	for _, tc := range []struct {
		v    float64
		want int
	}{{0.2, 0}, {0.39, 0}, {0.4, 1}, {3.3, 4}, {6.4, 4}} {
		if got := costBin(e, tc.v); got != tc.want {
			t.Errorf("bin of %v = %d, want %d", tc.v, got, tc.want)
		}
	}
	// 1 to 3: equal bins of 0.4.
	if e := costEdges(1, 3, 5); math.Abs(e[1]-1.4) > 1e-12 {
		t.Errorf("linear edges %v", e)
	}
}

func TestCDFFixture(t *testing.T) {
	runs := []*Run{loadRun(t, "run-chunked"), loadRun(t, "run-prefill-first")}
	fig, nums, err := CDF(runs, CDFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	save(t, fig, "cdf")
	golden(t, "cdf", nums.String())
	// The quantiles, from requests.csv, equal the simulator's own in
	// summary.json (the same linear interpolation); TPOT in requests.csv is
	// rounded to the nanosecond, so they agree to 1e-6 ms.
	for i, r := range runs {
		s := nums.Series[i]
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"ttft p50", s.TTFT.Values[3], r.Summary.TTFT.Median}, {"ttft p90", s.TTFT.Values[5], r.Summary.TTFT.P90},
			{"ttft p99", s.TTFT.Values[7], r.Summary.TTFT.P99}, {"tpot p50", s.TPOT.Values[3], r.Summary.TPOT.Median},
			{"tpot p99", s.TPOT.Values[7], r.Summary.TPOT.P99},
		} {
			if math.Abs(c.got-c.want) > 2e-6 {
				t.Errorf("%s %s: %v from requests.csv, %v in summary.json", r.Label, c.name, c.got, c.want)
			}
		}
		if s.TTFT.N != r.Summary.TTFT.N || s.TPOT.N != r.Summary.TPOT.N {
			t.Errorf("%s: n %d/%d, summary %d/%d", r.Label, s.TTFT.N, s.TPOT.N, r.Summary.TTFT.N, r.Summary.TPOT.N)
		}
	}
}

func TestQuantileAndECDF(t *testing.T) {
	s := []float64{1, 2, 3, 4}
	// h = p·(n−1): p50 → h 1.5 → 2 + 0.5·(3−2) = 2.5; p90 → h 2.7 → 3 + 0.7·1 = 3.7.
	if q := quantile(s, 0.5); q != 2.5 {
		t.Errorf("p50 %v", q)
	}
	if q := quantile(s, 0.9); math.Abs(q-3.7) > 1e-12 {
		t.Errorf("p90 %v", q)
	}
	if q := quantile(s, 1); q != 4 {
		t.Errorf("p100 %v", q)
	}
	// Three of four ranks (m = 3): i = 0, round(1·3/2) = 2, 3; y = 100·(i+1)/4.
	got := ecdf(s, 3, false)
	want := plotter.XYs{{X: 1, Y: 25}, {X: 3, Y: 75}, {X: 4, Y: 100}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ecdf %v, want %v", got, want)
	}
}

func TestErrorsNotPanics(t *testing.T) {
	empty, _ := ReadResults(strings.NewReader("gpu,batch.max_num_seqs,seed,output_tok_per_s,ttft_p95_ms,tpot_p95_ms,cost_per_m_output_tokens,goodput_req_per_s,request_throughput,slo_attainment\n"), "e.csv")
	allNaN, _ := ReadResults(strings.NewReader("gpu,batch.max_num_seqs,seed,output_tok_per_s,ttft_p95_ms,tpot_p95_ms,cost_per_m_output_tokens,goodput_req_per_s,request_throughput,slo_attainment\n"+
		"a,1,1,NaN,NaN,NaN,NaN,NaN,NaN,NaN\na,2,1,NaN,NaN,NaN,NaN,NaN,NaN,NaN\n"), "n.csv")
	noMetrics, _ := ReadResults(strings.NewReader("gpu,seed,x\na,1,2\n"), "m.csv")
	for _, tc := range []struct {
		name string
		f    func() error
		err  string
	}{
		{"batch-latency empty", func() error { _, _, err := BatchLatency(empty, BatchLatencyOptions{}); return err }, "no rows"},
		{"goodput empty", func() error { _, _, err := Goodput(empty, GoodputOptions{}); return err }, "no rows"},
		{"perception empty", func() error { _, _, err := Perception(empty, MatrixOptions{}); return err }, "no rows"},
		{"provider-fit all NaN", func() error { _, _, err := ProviderFit(allNaN, MatrixOptions{}); return err }, "every configuration has a NaN"},
		{"perception all NaN", func() error { _, _, err := Perception(allNaN, MatrixOptions{}); return err }, "every configuration has a NaN"},
		{"missing metric", func() error { _, _, err := Goodput(noMetrics, GoodputOptions{}); return err }, `no metric column "goodput_req_per_s"`},
		{"bad stat", func() error { _, _, err := BatchLatency(empty, BatchLatencyOptions{Stat: "p42"}); return err }, `latency statistic "p42"`},
		{"bad target", func() error { _, _, err := Goodput(empty, GoodputOptions{Target: 2}); return err }, "target attainment 2"},
		{"bad taper", func() error { _, _, err := BatchLatency(empty, BatchLatencyOptions{Taper: 1.5}); return err }, "taper 1.5"},
		{"negative SLO", func() error { _, _, err := Perception(empty, MatrixOptions{SLO: SLO{TTFTms: -1}}); return err }, "SLO ttft -1"},
		{"cdf no runs", func() error { _, _, err := CDF(nil, CDFOptions{}); return err }, "no runs"},
		{"cdf nothing served", func() error {
			_, _, err := CDF([]*Run{{Dir: "d", Requests: []Request{{Rejected: "x"}}}}, CDFOptions{})
			return err
		}, "no served request"},
		{"dashboard no requests", func() error { _, _, err := Dashboard(&Run{Dir: "d"}, DashboardOptions{}); return err }, "no requests"},
		{"dashboard bad window", func() error {
			_, _, err := Dashboard(&Run{Requests: []Request{{Rejected: "x"}}}, DashboardOptions{Window: math.NaN()})
			return err
		}, "window NaN"},
		{"dashboard too many windows", func() error {
			_, _, err := Dashboard(&Run{Requests: []Request{{Arrival: 0, Finish: 1e12, FirstToken: 1}}}, DashboardOptions{Window: 1e-6})
			return err
		}, "at most 100000"},
		{"save bad size", func() error { return Save(plot.New(), filepath.Join(t.TempDir(), "x.png"), 0, 10) }, "want positive pixels"},
		{"save bad format", func() error { return Save(plot.New(), filepath.Join(t.TempDir(), "x.gif"), 10, 10) }, "unknown image format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f()
			if err == nil || !strings.HasPrefix(err.Error(), "plots: ") || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want one holding %q", err, tc.err)
			}
		})
	}
}

func TestDrawSweep(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"goodput.csv", []string{"goodput.png", "perception.png", "provider-fit.png"}},
		{"batch-latency.csv", []string{"batch-latency.png", "perception.png", "provider-fit.png"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			files, err := DrawSweep(dir, filepath.Join("testdata", tc.file), SweepOptions{SLO: SLO{TTFTms: 300, TPOTms: 30}, Width: 800, Height: 500})
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != len(tc.want) {
				t.Fatalf("wrote %v, want %v", files, tc.want)
			}
			for i, f := range files {
				if filepath.Base(f) != tc.want[i] {
					t.Errorf("file %d %s, want %s", i, f, tc.want[i])
				}
				checkPNG(t, f, 800, 500)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != len(tc.want) {
				t.Errorf("directory holds %d entries (temporary files left?), want %d", len(ents), len(tc.want))
			}
		})
	}
	if _, err := DrawSweep(t.TempDir(), "testdata/nonexistent.csv", SweepOptions{}); err == nil {
		t.Error("no error for a missing results file")
	}
}

func TestPlanChart(t *testing.T) {
	opts := []PlanOption{
		{Label: "b200 colocated 2×TP2", CostPerHour: 24, GPUs: 4, GPU: "b200", Rate: 20, CostPerMTok: 1.826},
		{Label: "h100 colocated 6×TP2", CostPerHour: 36, GPUs: 12, GPU: "h100", Rate: 20},
		{Label: "h200 colocated 5×TP2", CostPerHour: 40, GPUs: 10, GPU: "h200"},
	}
	for i, want := range []string{
		"$24/h, 4 GPUs, 5 req/s per GPU, $1.83 per M output tokens", // 20 req/s / 4 GPUs = 5; 3 significant digits
		"$36/h, 12 GPUs, 1.67 req/s per GPU",                        // 20 / 12 = 1.667
		"$40/h, 10 GPUs",                                            // no rate given
	} {
		if got := opts[i].BarLabel(); got != want {
			t.Errorf("label %d: %q, want %q", i, got, want)
		}
	}
	p, err := PlanChart(opts, "Cheapest deployments")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.png")
	if err := Save(p, path, 1600, 1000); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, path, 1600, 1000)
	if _, err := PlanChart(nil, "x"); err == nil {
		t.Error("no error for an empty plan")
	}
	if _, err := PlanChart([]PlanOption{{Label: "x", CostPerHour: math.NaN(), GPUs: 1}}, "x"); err == nil {
		t.Error("no error for a NaN cost")
	}
}

func TestValidationSuiteFigure(t *testing.T) {
	fig, err := ValidationSuite("t", "c", []SuitePanel{{Title: "TTFT", Unit: "ms", Points: []SuitePoint{{"a", 0, 10, 12}, {"a", 1, 20, 30}, {"b", 0, 5, math.NaN()}}}})
	if err != nil || len(fig.Panels) != 1 || len(fig.Panels[0]) != 1 {
		t.Fatalf("fig %v, err %v", fig, err)
	}
	if _, err := ValidationSuite("t", "c", []SuitePanel{{Title: "TTFT", Unit: "ms", Points: []SuitePoint{{"a", 0, 0, 1}}}}); err == nil || !strings.HasPrefix(err.Error(), "plots: ") {
		t.Errorf("no drawable point: err = %v", err)
	}
}

// The plots drawn at once (Workers) are the same bytes as drawn one after
// the other, listed in the same order.
func TestDrawSweepWorkersIdentical(t *testing.T) {
	var names [2][]string
	var bytes [2]map[string]string
	for k, workers := range []int{1, 3} {
		dir := t.TempDir()
		files, err := DrawSweep(dir, filepath.Join("testdata", "goodput.csv"), SweepOptions{SLO: SLO{TTFTms: 300, TPOTms: 30}, Width: 400, Height: 250, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		bytes[k] = map[string]string{}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			names[k] = append(names[k], filepath.Base(f))
			bytes[k][filepath.Base(f)] = string(b)
		}
	}
	if fmt.Sprint(names[0]) != fmt.Sprint(names[1]) || len(names[0]) != 3 {
		t.Fatalf("files %v with 1 worker, %v with 3", names[0], names[1])
	}
	for _, n := range names[0] {
		if bytes[0][n] != bytes[1][n] {
			t.Errorf("%s differs between 1 and 3 workers", n)
		}
	}
}
