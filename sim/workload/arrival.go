package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Arrival processes.
const (
	ProcessPoisson  = "poisson"  // exponential gaps, mean 1/Rate
	ProcessGamma    = "gamma"    // gamma gaps, shape Burstiness, mean 1/Rate (vLLM bench --burstiness)
	ProcessConstant = "constant" // every gap exactly 1/Rate
)

// Arrival describes when requests arrive: a renewal process with
// independent, identically distributed gaps of mean 1/Rate.
//
// Process "gamma" draws gaps from Gamma(shape = Burstiness, scale =
// 1/(Rate·Burstiness)), exactly as vLLM's `bench serve` does with
// np.random.gamma(shape=burstiness, scale=theta): the mean gap is 1/Rate and
// its coefficient of variation 1/√Burstiness, so Burstiness < 1 is burstier
// than Poisson and Burstiness > 1 smoother. Burstiness 1 gives the same
// distribution as "poisson".
//
// The zero Process means "poisson" and the zero Burstiness means 1 (vLLM's
// default); Burstiness other than 0 or 1 is an error with "poisson", and
// other than 0 with "constant", since it would be silently ignored.
type Arrival struct {
	Process    string  // "poisson" (or ""), "gamma" or "constant"
	Rate       float64 // requests per second, > 0
	Burstiness float64 // gamma shape; 0 means 1
}

// Validate reports whether a describes a valid arrival process. Rate +Inf
// (vLLM bench's default, offline load) sends every request at time 0: it
// is valid with the default process only, since gamma's burstiness and
// constant gaps would mean nothing.
func (a Arrival) Validate() error {
	if math.IsInf(a.Rate, 1) {
		if a.Process != "" && a.Process != ProcessPoisson {
			return fmt.Errorf("workload: arrival rate inf sends every request at time 0: it takes no arrival process (%q given; leave it unset or %q)", a.Process, ProcessPoisson)
		}
		if a.Burstiness != 0 && a.Burstiness != 1 {
			return fmt.Errorf("workload: arrival rate inf with burstiness %v: every request arrives at time 0, burstiness does not apply", a.Burstiness)
		}
		return nil
	}
	if !(a.Rate > 0) {
		return fmt.Errorf("workload: arrival rate %v: must be a number > 0 (requests/s), or inf", a.Rate)
	}
	if !(a.Burstiness >= 0) || math.IsInf(a.Burstiness, 0) {
		return fmt.Errorf("workload: arrival burstiness %v: must be a finite number > 0 (0 means 1)", a.Burstiness)
	}
	switch a.Process {
	case "", ProcessPoisson:
		if a.Burstiness != 0 && a.Burstiness != 1 {
			return fmt.Errorf("workload: arrival burstiness %v given with process %q: use process %q", a.Burstiness, ProcessPoisson, ProcessGamma)
		}
	case ProcessGamma:
		if b := a.Burstiness; b != 0 && math.IsInf(1/(a.Rate*b), 0) {
			// The gaps' scale 1/(rate·shape) overflows: every gap would be
			// NaN (0 × ∞).
			return fmt.Errorf("workload: arrival burstiness %v at rate %v: the gamma gaps' scale 1/(rate × burstiness) overflows float64; give a larger burstiness", b, a.Rate)
		}
	case ProcessConstant:
		if a.Burstiness != 0 {
			return fmt.Errorf("workload: arrival burstiness %v given with process %q: constant gaps have no burstiness", a.Burstiness, ProcessConstant)
		}
	default:
		return fmt.Errorf("workload: arrival process %q: want %q, %q or %q", a.Process, ProcessPoisson, ProcessGamma, ProcessConstant)
	}
	return nil
}

// String describes a, e.g. "gamma rate=4 burstiness=0.5".
func (a Arrival) String() string {
	p := a.Process
	if p == "" {
		p = ProcessPoisson
	}
	if math.IsInf(a.Rate, 1) {
		return "rate=inf (all at time 0)"
	}
	s := p + " rate=" + ftoa(a.Rate)
	if p == ProcessGamma {
		b := a.Burstiness
		if b == 0 {
			b = 1
		}
		s += " burstiness=" + ftoa(b)
	}
	return s
}

// gapSampler draws inter-arrival gaps in seconds. It is a plain struct
// switched on kind, so a draw costs no interface call and no allocation.
type gapSampler struct {
	kind  int // 0 poisson, 1 gamma, 2 constant
	rate  float64
	gap   float64 // constant gap 1/rate
	scale float64 // gamma scale 1/(rate·shape)
	gamma gammaSampler
}

func newGapSampler(a Arrival) gapSampler {
	g := gapSampler{rate: a.Rate, gap: 1 / a.Rate}
	switch a.Process {
	case ProcessGamma:
		b := a.Burstiness
		if b == 0 {
			b = 1
		}
		g.kind = 1
		g.scale = 1 / (a.Rate * b)
		g.gamma = newGammaSampler(b)
	case ProcessConstant:
		g.kind = 2
	}
	return g
}

func (g *gapSampler) next(r *rand.Rand) float64 {
	switch g.kind {
	case 1:
		return g.gamma.sample(r) * g.scale
	case 2:
		return g.gap
	default:
		return r.ExpFloat64() / g.rate // ExpFloat64 has mean 1
	}
}

// gammaSampler draws from Gamma(shape, 1) by Marsaglia and Tsang, "A simple
// method for generating gamma variables", ACM TOMS 26(3), 2000. For shape < 1
// it draws Gamma(shape+1) and multiplies by U^(1/shape) (ibid., section 6).
type gammaSampler struct {
	d, c     float64 // d = a − 1/3, c = 1/√(9d), with a = shape or shape+1
	invShape float64 // 1/shape, used when small
	small    bool    // shape < 1
}

func newGammaSampler(shape float64) gammaSampler {
	var g gammaSampler
	a := shape
	if a < 1 {
		g.small = true
		g.invShape = 1 / shape
		a++
	}
	g.d = a - 1.0/3
	g.c = 1 / math.Sqrt(9*g.d)
	return g
}

func (g *gammaSampler) sample(r *rand.Rand) float64 {
	for {
		x := r.NormFloat64()
		v := 1 + g.c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		x2 := x * x
		// The squeeze 1 − 0.0331x⁴ accepts most draws without a logarithm.
		if u < 1-0.0331*x2*x2 || math.Log(u) < 0.5*x2+g.d*(1-v+math.Log(v)) {
			y := g.d * v
			if g.small {
				y *= math.Pow(r.Float64(), g.invShape)
			}
			return y
		}
	}
}
