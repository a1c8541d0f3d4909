package workload

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestParseDist(t *testing.T) {
	// lognormal-mean:100,0.5: σ² = ln(1+0.25) = 0.22314355131420976,
	// σ = 0.47238072707743883, μ = ln(100) − σ²/2 = 4.605170185988092 − 0.11157177565710488.
	s2 := math.Log(1.25)
	tests := []struct {
		in   string
		want Dist
	}{
		{"128", Constant{128}},
		{" 128 ", Constant{128}},
		{"constant:128", Constant{128}},
		{"Constant: 2.5", Constant{2.5}},
		{"uniform:10,20", Uniform{10, 20}},
		{"uniform:0,0", Uniform{0, 0}},
		{"normal:100,0", Normal{100, 0}},
		{"normal: -5 , 3", Normal{-5, 3}},
		{"lognormal:5.5,0.8", LogNormal{5.5, 0.8}},
		{"lognormal:-1,0", LogNormal{-1, 0}},
		{"lognormal-mean:100,0.5", LogNormal{math.Log(100) - s2/2, math.Sqrt(s2)}},
		{"1e3", Constant{1000}},
	}
	for _, tt := range tests {
		got, err := ParseDist(tt.in)
		if err != nil {
			t.Errorf("ParseDist(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseDist(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
		back, err := ParseDist(got.String())
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("round trip of %q via %q = %#v, %v", tt.in, got.String(), back, err)
		}
	}
}

func TestParseDistErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"normal:5", `workload: length "normal:5": normal needs 2 parameters (mean,std)`},
		{"constant:1,2", `workload: length "constant:1,2": constant needs 1 parameter (value)`},
		{"uniform:1,2,3", `uniform needs 2 parameters (lo,hi)`},
		{"lognormal:1", `lognormal needs 2 parameters (mu,sigma)`},
		{"poisson:3", `unknown distribution "poisson"`},
		{"", `want a number or NAME:PARAMS`},
		{"abc", `want a number or NAME:PARAMS`},
		{"normal:x,1", `normal parameter mean: "x" is not a finite number`},
		{"normal:1,", `normal parameter std: "" is not a finite number`},
		{"normal:1,inf", `"inf" is not a finite number`},
		{"normal:NaN,1", `"NaN" is not a finite number`},
		{"normal:1,-1", `normal: std must be >= 0`},
		{"uniform:5,4", `uniform: lo must be <= hi`},
		{"uniform:-1,4", `uniform: lo must be >= 0`},
		{"constant:0", `constant must be a finite number > 0`},
		{"-3", `constant must be a finite number > 0`},
		{"Inf", `constant must be a finite number > 0`},
		{"NaN", `constant must be a finite number > 0`},
		{"lognormal:1,-0.5", `sigma finite and >= 0`},
		{"lognormal:800,0", `mean +Inf is not finite`}, // e^800 > MaxFloat64 ≈ e^709.78
		{"lognormal-mean:0,1", `lognormal-mean: mean must be > 0`},
		{"lognormal-mean:10,-1", `lognormal-mean: cv must be >= 0`},
	}
	for _, tt := range tests {
		d, err := ParseDist(tt.in)
		if err == nil {
			t.Errorf("ParseDist(%q) = %v, want error containing %q", tt.in, d, tt.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), "workload: length ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseDist(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

func FuzzParseDist(f *testing.F) {
	for _, s := range []string{"128", "constant:1", "uniform:1,2", "normal:100,20",
		"lognormal:5.5,0.8", "lognormal-mean:100,2", "normal:5", "x:1,2", ":", "uniform:1e308,1.7e308"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDist(s)
		if err != nil {
			if d != nil {
				t.Fatalf("ParseDist(%q) returned both %v and %v", s, d, err)
			}
			return
		}
		m := d.Mean()
		if math.IsNaN(m) || math.IsInf(m, 0) {
			t.Fatalf("ParseDist(%q) accepted a distribution with mean %v", s, m)
		}
		back, err := ParseDist(d.String())
		if err != nil {
			t.Fatalf("ParseDist(%q).String() = %q does not parse: %v", s, d.String(), err)
		}
		if !reflect.DeepEqual(back, d) || back.String() != d.String() {
			t.Fatalf("round trip %q -> %#v -> %q -> %#v", s, d, d.String(), back)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 4 {
			tokens(d.Sample(r), MaxTokens) // must not panic
		}
	})
}

// TestDistMeans checks that sample means converge to Mean(). With n draws
// the sample mean has standard error σ/√n; the tolerance is 5 standard
// errors, so a correct sampler fails with probability < 1e-6 (and the seed
// is fixed besides).
func TestDistMeans(t *testing.T) {
	const n = 100_000
	tests := []struct {
		d     Dist
		sigma float64 // standard deviation of d
	}{
		{Constant{7}, 0},
		{Uniform{10, 30}, 20 / math.Sqrt(12)}, // (hi−lo)/√12
		{Normal{100, 15}, 15},
		// lognormal: σ_X² = (e^{s²}−1)·e^{2μ+s²} = (e^0.64−1)·e^{11.64};
		// σ_X = 336.3 for μ=5.5, s=0.8 (mean e^{5.82} = 336.97).
		{LogNormal{5.5, 0.8}, math.Sqrt((math.Exp(0.64) - 1) * math.Exp(11+0.64))},
	}
	for _, tt := range tests {
		r := rand.New(rand.NewPCG(42, StreamOutput))
		var sum float64
		for range n {
			sum += tt.d.Sample(r)
		}
		mean := sum / n
		tol := 5*tt.sigma/math.Sqrt(n) + 1e-9*math.Abs(tt.d.Mean())
		if math.Abs(mean-tt.d.Mean()) > tol {
			t.Errorf("%v: sample mean %v, Mean() %v, tolerance %v", tt.d, mean, tt.d.Mean(), tol)
		}
	}
	// Hand check of Mean: lognormal:0,1 has mean e^{0.5} = 1.6487212707001282.
	if got := (LogNormal{0, 1}).Mean(); math.Abs(got-1.6487212707001282) > 1e-15 {
		t.Errorf("LogNormal{0,1}.Mean() = %v", got)
	}
	// LogNormalMeanCV(100, 0.5) must have mean 100 and cv 0.5:
	// cv² = e^{σ²} − 1 = 1.25 − 1 = 0.25.
	ln := LogNormalMeanCV(100, 0.5)
	if math.Abs(ln.Mean()-100) > 1e-12 || math.Abs(math.Exp(ln.Sigma*ln.Sigma)-1-0.25) > 1e-12 {
		t.Errorf("LogNormalMeanCV(100, 0.5) = %+v: mean %v", ln, ln.Mean())
	}
}

func TestDistValueFlag(t *testing.T) {
	var out DistValue
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.Var(&out, "output-len", "output length distribution")
	if err := fs.Parse([]string{"--output-len=lognormal:5.5,0.8"}); err != nil {
		t.Fatal(err)
	}
	if want := (LogNormal{5.5, 0.8}); out.Dist != want {
		t.Errorf("flag set %#v, want %#v", out.Dist, want)
	}
	if got := fs.Lookup("output-len").Value.String(); got != "lognormal:5.5,0.8" {
		t.Errorf("String() = %q", got)
	}
	err := fs.Parse([]string{"--output-len=normal:5"})
	if err == nil || !strings.Contains(err.Error(), `workload: length "normal:5": normal needs 2 parameters`) {
		t.Errorf("bad flag value: error %v", err)
	}
	var zero DistValue
	if zero.String() != "" || zero.Type() != "dist" {
		t.Errorf("zero DistValue: String %q Type %q", zero.String(), zero.Type())
	}
	var tv DistValue
	if err := tv.UnmarshalText([]byte("uniform:1,9")); err != nil {
		t.Fatal(err)
	}
	if b, _ := tv.MarshalText(); string(b) != "uniform:1,9" {
		t.Errorf("MarshalText = %q", b)
	}
}

func TestTokens(t *testing.T) {
	tests := []struct {
		v    float64
		hi   int
		want int
	}{
		{2.5, MaxTokens, 3},  // halves round away from zero
		{2.49, MaxTokens, 2}, // nearest
		{0.4, MaxTokens, 1},  // rounds to 0, clamped to 1
		{-50, MaxTokens, 1},
		{math.NaN(), MaxTokens, 1},
		{math.Inf(1), MaxTokens, MaxTokens},
		{1e300, MaxTokens, MaxTokens},
		{4097, 4096, 4096},
		{4096, 4096, 4096},
		{4095.6, 4096, 4096},
		{4095.4, 4096, 4095},
	}
	for _, tt := range tests {
		if got := tokens(tt.v, tt.hi); got != tt.want {
			t.Errorf("tokens(%v, %d) = %d, want %d", tt.v, tt.hi, got, tt.want)
		}
	}
}
