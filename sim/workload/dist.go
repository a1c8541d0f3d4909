package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Dist is a distribution of token lengths. Sample draws one value from r;
// Mean is the distribution's mean (of the continuous value, before the
// rounding and clamping a Synthetic workload applies); String gives the
// spec that ParseDist reads back into an equal Dist.
type Dist interface {
	Sample(r *rand.Rand) float64
	Mean() float64
	String() string
}

// Compile-time checks.
var (
	_ Dist        = Constant{}
	_ Dist        = Uniform{}
	_ Dist        = Normal{}
	_ Dist        = LogNormal{}
	_ pflag.Value = (*DistValue)(nil)
)

// Constant always yields Value. It draws nothing from r.
type Constant struct{ Value float64 }

// Sample returns d.Value.
func (d Constant) Sample(*rand.Rand) float64 { return d.Value }

// Mean returns d.Value.
func (d Constant) Mean() float64 { return d.Value }

// String returns "constant:VALUE".
func (d Constant) String() string { return "constant:" + ftoa(d.Value) }

// Uniform is the continuous uniform distribution on [Lo, Hi). After rounding
// to whole tokens the end points Lo and Hi each get half the weight of an
// inner integer.
type Uniform struct{ Lo, Hi float64 }

// Sample returns Lo + (Hi−Lo)·U with U uniform on [0, 1).
func (d Uniform) Sample(r *rand.Rand) float64 { return d.Lo + (d.Hi-d.Lo)*r.Float64() }

// Mean returns (Lo+Hi)/2.
func (d Uniform) Mean() float64 { return (d.Lo + d.Hi) / 2 }

// String returns "uniform:LO,HI".
func (d Uniform) String() string { return "uniform:" + ftoa(d.Lo) + "," + ftoa(d.Hi) }

// Normal is the normal distribution with mean Mu and standard deviation
// Sigma. Lengths drawn from it are clamped to at least 1 token.
type Normal struct{ Mu, Sigma float64 }

// Sample returns Mu + Sigma·Z with Z standard normal.
func (d Normal) Sample(r *rand.Rand) float64 { return d.Mu + d.Sigma*r.NormFloat64() }

// Mean returns Mu.
func (d Normal) Mean() float64 { return d.Mu }

// String returns "normal:MU,SIGMA".
func (d Normal) String() string { return "normal:" + ftoa(d.Mu) + "," + ftoa(d.Sigma) }

// LogNormal is exp(N(Mu, Sigma²)): Mu and Sigma are the mean and standard
// deviation of the underlying normal, as numpy.random.lognormal takes them.
type LogNormal struct{ Mu, Sigma float64 }

// Sample returns exp(Mu + Sigma·Z) with Z standard normal.
func (d LogNormal) Sample(r *rand.Rand) float64 { return math.Exp(d.Mu + d.Sigma*r.NormFloat64()) }

// Mean returns exp(Mu + Sigma²/2).
func (d LogNormal) Mean() float64 { return math.Exp(d.Mu + d.Sigma*d.Sigma/2) }

// String returns "lognormal:MU,SIGMA".
func (d LogNormal) String() string { return "lognormal:" + ftoa(d.Mu) + "," + ftoa(d.Sigma) }

// LogNormalMeanCV returns the log-normal distribution with the given mean
// and coefficient of variation (std/mean): σ² = ln(1+cv²), μ = ln(mean) − σ²/2.
func LogNormalMeanCV(mean, cv float64) LogNormal {
	s2 := math.Log1p(cv * cv)
	return LogNormal{Mu: math.Log(mean) - s2/2, Sigma: math.Sqrt(s2)}
}

// ftoa formats v in the shortest form that parses back to the same float.
func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// ParseDist reads a length distribution spec:
//
//	128 or constant:128     always 128
//	uniform:LO,HI           continuous uniform on [LO, HI), 0 ≤ LO ≤ HI
//	normal:MEAN,STD         normal, STD ≥ 0
//	lognormal:MU,SIGMA      exp(N(MU, SIGMA²)), MU and SIGMA of the underlying normal, SIGMA ≥ 0
//	lognormal-mean:MEAN,CV  the log-normal with that mean and coefficient of
//	                        variation (MEAN > 0, CV ≥ 0); it becomes a LogNormal,
//	                        so its String is the lognormal:MU,SIGMA form
//
// Names are case-insensitive and spaces around names and numbers are
// ignored. Every parameter must be a finite number, a constant must be > 0,
// and the distribution's mean must be finite. Errors name the spec:
//
//	workload: length "normal:5": normal needs 2 parameters (mean,std)
func ParseDist(s string) (Dist, error) {
	name, args, found := strings.Cut(s, ":")
	if !found {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, distErr(s, "want a number or NAME:PARAMS with NAME one of constant, uniform, normal, lognormal, lognormal-mean")
		}
		return checkDist(s, Constant{v})
	}
	name = strings.ToLower(strings.TrimSpace(name))
	var want []string // parameter names
	switch name {
	case "constant":
		want = []string{"value"}
	case "uniform":
		want = []string{"lo", "hi"}
	case "normal":
		want = []string{"mean", "std"}
	case "lognormal":
		want = []string{"mu", "sigma"}
	case "lognormal-mean":
		want = []string{"mean", "cv"}
	default:
		return nil, distErr(s, fmt.Sprintf("unknown distribution %q (want constant, uniform, normal, lognormal or lognormal-mean)", name))
	}
	fields := strings.Split(args, ",")
	if len(fields) != len(want) {
		noun := "parameters"
		if len(want) == 1 {
			noun = "parameter"
		}
		return nil, distErr(s, fmt.Sprintf("%s needs %d %s (%s)", name, len(want), noun, strings.Join(want, ",")))
	}
	var p [2]float64
	for i, f := range fields {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, distErr(s, fmt.Sprintf("%s parameter %s: %q is not a finite number", name, want[i], strings.TrimSpace(f)))
		}
		p[i] = v
	}
	switch name {
	case "constant":
		return checkDist(s, Constant{p[0]})
	case "uniform":
		return checkDist(s, Uniform{p[0], p[1]})
	case "normal":
		return checkDist(s, Normal{p[0], p[1]})
	case "lognormal":
		return checkDist(s, LogNormal{p[0], p[1]})
	default: // lognormal-mean
		if !(p[0] > 0) {
			return nil, distErr(s, "lognormal-mean: mean must be > 0")
		}
		if !(p[1] >= 0) {
			return nil, distErr(s, "lognormal-mean: cv must be >= 0")
		}
		return checkDist(s, LogNormalMeanCV(p[0], p[1]))
	}
}

// checkDist validates a parsed distribution, so that ParseDist(d.String())
// accepts exactly what ParseDist produced.
func checkDist(s string, d Dist) (Dist, error) {
	bad := func(msg string) (Dist, error) { return nil, distErr(s, msg) }
	switch d := d.(type) {
	case Constant:
		if !(d.Value > 0) || math.IsInf(d.Value, 0) {
			return bad("constant must be a finite number > 0")
		}
	case Uniform:
		if !(d.Lo >= 0) {
			return bad("uniform: lo must be >= 0")
		}
		if !(d.Lo <= d.Hi) {
			return bad("uniform: lo must be <= hi")
		}
	case Normal:
		if !(d.Sigma >= 0) {
			return bad("normal: std must be >= 0")
		}
	case LogNormal:
		if math.IsNaN(d.Mu) || math.IsInf(d.Mu, 0) || !(d.Sigma >= 0) || math.IsInf(d.Sigma, 0) {
			return bad("lognormal: mu must be finite and sigma finite and >= 0")
		}
	}
	if m := d.Mean(); math.IsInf(m, 0) || math.IsNaN(m) {
		return bad("mean " + ftoa(m) + " is not finite")
	}
	return d, nil
}

func distErr(s, msg string) error {
	return fmt.Errorf("workload: length %q: %s", s, msg)
}

// DistValue holds a Dist as a command-line flag value (pflag.Value) and as a
// TOML/JSON string (encoding.TextMarshaler and TextUnmarshaler), so that
// --output-len=lognormal:5.5,0.8 sets it.
type DistValue struct{ Dist Dist }

// Set parses s with ParseDist.
func (v *DistValue) Set(s string) error {
	d, err := ParseDist(s)
	if err != nil {
		return err
	}
	v.Dist = d
	return nil
}

// String returns the distribution's spec, or "" when none is set.
func (v *DistValue) String() string {
	if v == nil || v.Dist == nil {
		return ""
	}
	return v.Dist.String()
}

// Type returns "dist", the name pflag prints in usage text.
func (v *DistValue) Type() string { return "dist" }

// MarshalText returns the spec.
func (v DistValue) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText parses the spec with ParseDist.
func (v *DistValue) UnmarshalText(b []byte) error { return v.Set(string(b)) }
