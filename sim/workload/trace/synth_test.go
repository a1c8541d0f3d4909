package trace

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// freqCheck draws n samples from d and checks each value's frequency
// against p within 5 standard errors √(p(1−p)/n), and that nothing else
// is drawn.
func freqCheck(t *testing.T, d workload.Dist, p map[float64]float64, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	count := map[float64]int{}
	for i := 0; i < n; i++ {
		count[d.Sample(r)]++
	}
	for v, c := range count {
		q, ok := p[v]
		if !ok {
			t.Fatalf("%s drew %v, not in the support", d, v)
		}
		se := math.Sqrt(q * (1 - q) / float64(n))
		if f := float64(c) / float64(n); math.Abs(f-q) > 5*se {
			t.Errorf("%s: P(%v) = %.4f, want %.4f ± %.4f", d, v, f, q, 5*se)
		}
	}
}

func TestEmpirical(t *testing.T) {
	e, err := NewEmpirical([]int{5, 1, 2, 1}, "x")
	if err != nil {
		t.Fatal(err)
	}
	// Mean (5+1+2+1)/4 = 2.25; P(1) = 2/4, P(2) = P(5) = 1/4.
	if e.Mean() != 2.25 || e.N() != 4 || e.String() != "empirical:x" {
		t.Errorf("mean %v, n %d, %q", e.Mean(), e.N(), e.String())
	}
	freqCheck(t, e, map[float64]float64{1: 0.5, 2: 0.25, 5: 0.25}, 100_000)
	if _, err := NewEmpirical(nil, "x"); err == nil {
		t.Error("empty sample accepted")
	}
	r := rand.New(rand.NewPCG(1, 1))
	if a := testing.AllocsPerRun(100, func() { e.Sample(r) }); a != 0 {
		t.Errorf("Sample allocates %v times", a)
	}
}

func TestZipf(t *testing.T) {
	// Exponent 1 on 1..3: weights 1, 1/2, 1/3, total 11/6, so P = 6/11,
	// 3/11, 2/11; mean (1·1 + 2·½ + 3·⅓)/(11/6) = 3·6/11 = 18/11.
	z, err := NewZipf(1, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(z.Mean()-18.0/11) > 1e-12 || z.String() != "zipf:1,1,3" {
		t.Errorf("mean %v, %q", z.Mean(), z.String())
	}
	freqCheck(t, z, map[float64]float64{1: 6.0 / 11, 2: 3.0 / 11, 3: 2.0 / 11}, 100_000)
	// Shifted: LO = 100 puts rank k at 99 + k; exponent 2 on 100..101:
	// weights 1 and 1/4, P = 0.8, 0.2.
	z2, _ := NewZipf(2, 100, 101)
	freqCheck(t, z2, map[float64]float64{100: 0.8, 101: 0.2}, 100_000)
	// A one-value support is a constant.
	z3, _ := NewZipf(0.5, 7, 7)
	if z3.Mean() != 7 || z3.Sample(rand.New(rand.NewPCG(1, 1))) != 7 {
		t.Error("zipf on 7..7 is not 7")
	}
	// The mean of a long tail matches the direct sum Σ k^(1−s)/Σ k^(−s).
	z4, _ := NewZipf(1.1, 1, 100_000)
	var num, den float64
	for k := 1; k <= 100_000; k++ {
		num += math.Pow(float64(k), -0.1)
		den += math.Pow(float64(k), -1.1)
	}
	if math.Abs(z4.Mean()-num/den) > 1e-9*z4.Mean() {
		t.Errorf("zipf:1.1,1,100000 mean %v, direct sum %v", z4.Mean(), num/den)
	}
	for _, bad := range []struct {
		s      float64
		lo, hi int
	}{{0, 1, 2}, {math.Inf(1), 1, 2}, {math.NaN(), 1, 2}, {1, 0, 2}, {1, 3, 2}, {1, 1, 1 << 23}} {
		if _, err := NewZipf(bad.s, bad.lo, bad.hi); err == nil {
			t.Errorf("NewZipf(%v, %d, %d) accepted", bad.s, bad.lo, bad.hi)
		}
	}
}

func TestParseDist(t *testing.T) {
	tests := []struct {
		spec, dir string
		mean      float64
		str       string
	}{
		{"zipf:1,1,3", "", 18.0 / 11, "zipf:1,1,3"},
		// Output lengths of testdata/lengths.csv: (918 + 905 + 54)/3.
		{"empirical:testdata/lengths.csv:output", "", (918.0 + 905 + 54) / 3, "empirical:testdata/lengths.csv:output"},
		// Prompt lengths, the file relative to dir: (74 + 290 + 3772)/3.
		{"empirical:lengths.csv:prompt", "testdata", (74.0 + 290 + 3772) / 3, "empirical:lengths.csv:prompt"},
		{"lognormal:1,0", "", math.E, "lognormal:1,0"}, // workload.ParseDist's specs pass through
		{"128", "", 128, "constant:128"},
	}
	for _, tt := range tests {
		d, err := ParseDist(tt.spec, tt.dir)
		if err != nil {
			t.Errorf("ParseDist(%q): %v", tt.spec, err)
			continue
		}
		if math.Abs(d.Mean()-tt.mean) > 1e-12*tt.mean || d.String() != tt.str {
			t.Errorf("ParseDist(%q) = %s with mean %v, want %s, %v", tt.spec, d, d.Mean(), tt.str, tt.mean)
		}
	}
	for _, bad := range []struct{ spec, want string }{
		{"zipf:1,2", "zipf needs 3 parameters"},
		{"zipf:a,1,2", "zipf parameters are a number and two whole numbers"},
		{"zipf:0,1,2", "zipf exponent 0: must be a finite number > 0"},
		{"empirical:x", "want empirical:FILE:prompt"},
		{"empirical:testdata/lengths.csv:total", `column "total": want prompt or output`},
		{"empirical:testdata/none.csv:prompt", "no such file"},
		{"normal:5", "normal needs 2 parameters"},
	} {
		if _, err := ParseDist(bad.spec, ""); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseDist(%q) = %v, want …%s…", bad.spec, err, bad.want)
		}
	}
}

func chatSum(sumOutput workload.Dist) Mix {
	return Mix{
		Arrival: workload.Arrival{Rate: 10},
		Classes: []Class{
			{Name: "chat", Weight: 7, Prompt: workload.Constant{Value: 500}, Output: workload.Constant{Value: 200}, TTFTSLO: 500 * sim.Millisecond, TPOTSLO: 50 * sim.Millisecond},
			{Name: "summarize", Weight: 3, Prompt: workload.Uniform{Lo: 2000, Hi: 4000}, Output: sumOutput, TTFTSLO: 3 * sim.Second, MaxOutput: 300},
		},
		Count: 100_000,
		Seed:  3,
	}
}

// TestMix: weights 7:3 give chat a share of 0.7 ± 5·√(0.21/100,000) =
// 0.7 ± 0.0072; every request carries its class's lengths and SLOs;
// arrivals are the Synthetic ones for the seed; changing the summarize
// class's output distribution changes neither arrivals nor classes.
func TestMix(t *testing.T) {
	src, err := chatSum(workload.Constant{Value: 1000}).Source()
	if err != nil {
		t.Fatal(err)
	}
	reqs := drainAll(t, src)
	chat := 0
	for _, r := range reqs {
		switch r.Class {
		case "chat":
			chat++
			if r.PromptTokens != 500 || r.OutputTokens != 200 || r.TTFTSLO != 500*sim.Millisecond || r.TPOTSLO != 50*sim.Millisecond {
				t.Fatalf("chat request %+v", r)
			}
		case "summarize":
			if r.PromptTokens < 2000 || r.PromptTokens > 4000 || r.OutputTokens != 300 || r.TTFTSLO != 3*sim.Second || r.TPOTSLO != 0 {
				t.Fatalf("summarize request %+v (output clamped to 300)", r)
			}
		default:
			t.Fatalf("class %q", r.Class)
		}
	}
	if f := float64(chat) / float64(len(reqs)); len(reqs) != 100_000 || math.Abs(f-0.7) > 0.0072 {
		t.Errorf("%d requests, chat share %v", len(reqs), f)
	}
	syn, _ := workload.Synthetic{Arrival: workload.Arrival{Rate: 10}, Prompt: workload.Constant{Value: 1}, Output: workload.Constant{Value: 1}, Count: 100_000, Seed: 3}.Source()
	if !slices.Equal(arrivalsOf(reqs), arrivalsOf(drainAll(t, syn))) {
		t.Error("arrivals differ from Synthetic's")
	}
	src2, _ := chatSum(workload.LogNormal{Mu: 5, Sigma: 1}).Source()
	reqs2 := drainAll(t, src2)
	for i := range reqs {
		if reqs[i].Arrival != reqs2[i].Arrival || reqs[i].Class != reqs2[i].Class || reqs[i].PromptTokens != reqs2[i].PromptTokens {
			t.Fatalf("request %d changed with another summarize output distribution: %+v vs %+v", i, reqs[i], reqs2[i])
		}
	}
	var r workload.Request
	if a := testing.AllocsPerRun(1000, func() { src2.Next(&r) }); a != 0 {
		t.Errorf("Mix.Next allocates %v times", a)
	}
}

func TestMixValidate(t *testing.T) {
	ok := chatSum(workload.Constant{Value: 1})
	tests := []struct {
		edit func(*Mix)
		want string
	}{
		{func(m *Mix) { m.Classes = nil }, "no classes"},
		{func(m *Mix) { m.Classes[0].Name = "" }, "class 0 has no name"},
		{func(m *Mix) { m.Classes[1].Name = "chat" }, `class "chat" appears twice`},
		{func(m *Mix) { m.Classes[0].Weight = 0 }, "weight 0 must be"},
		{func(m *Mix) { m.Classes[0].Weight = math.Inf(1) }, "weight +Inf must be"},
		{func(m *Mix) { m.Classes[0].Output = nil }, "length distributions are required"},
		{func(m *Mix) { m.Classes[0].TTFTSLO = -1 }, "SLOs must be ≥ 0"},
		{func(m *Mix) { m.Classes[0].MaxPrompt = -1 }, "max lengths must be ≥ 0"},
		{func(m *Mix) { m.Count = 0 }, "set a count, a duration or both"},
		{func(m *Mix) { m.Arrival.Rate = 0 }, "arrival rate 0"},
	}
	for _, tt := range tests {
		m := ok
		m.Classes = slices.Clone(ok.Classes)
		tt.edit(&m)
		if _, err := m.Source(); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "trace: mix: ") {
			t.Errorf("%s: got %v", tt.want, err)
		}
	}
}
