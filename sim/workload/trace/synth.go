package trace

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// Compile-time checks.
var (
	_ workload.Dist = (*Empirical)(nil)
	_ workload.Dist = (*Zipf)(nil)
)

// Empirical is the empirical distribution of a sample of lengths: Sample
// returns one of the observed values, each with its observed frequency (a
// bootstrap draw), so a synthetic workload reproduces the trace's length
// histogram exactly, tail included. It stores the distinct values and
// their cumulative counts, not the sample.
type Empirical struct {
	values []float64 // distinct, ascending
	cum    []int64   // cum[i] = how many observations are ≤ values[i]
	mean   float64
	label  string
}

// NewEmpirical fits an Empirical distribution to lengths. label names it in
// String ("empirical:" + label). It fails on an empty sample.
func NewEmpirical(lengths []int, label string) (*Empirical, error) {
	if len(lengths) == 0 {
		return nil, errors.New("trace: empirical distribution of an empty sample")
	}
	x := slices.Clone(lengths)
	slices.Sort(x)
	e := &Empirical{label: label}
	var sum float64
	for i, v := range x {
		sum += float64(v)
		if i == 0 || v != x[i-1] {
			e.values = append(e.values, float64(v))
			e.cum = append(e.cum, 0)
		}
		e.cum[len(e.cum)-1] = int64(i + 1)
	}
	e.mean = sum / float64(len(x))
	return e, nil
}

// Sample draws one observed value: k uniform on [0, n), the value whose
// cumulative count first exceeds k.
func (e *Empirical) Sample(r *rand.Rand) float64 {
	k := r.Int64N(e.cum[len(e.cum)-1])
	i := sort.Search(len(e.cum), func(i int) bool { return e.cum[i] > k })
	return e.values[i]
}

// Mean returns the sample mean.
func (e *Empirical) Mean() float64 { return e.mean }

// String returns "empirical:" + the label given to NewEmpirical (for one
// fitted by ParseDist, the spec it was given).
func (e *Empirical) String() string { return "empirical:" + e.label }

// N returns the number of observations.
func (e *Empirical) N() int64 { return e.cum[len(e.cum)-1] }

// FitLengths drains src and fits the empirical distributions of its prompt
// and output lengths. label names them ("FILE" gives "empirical:FILE:prompt"
// and "empirical:FILE:output").
func FitLengths(src workload.Source, label string) (prompt, output *Empirical, err error) {
	var p, o []int
	var r workload.Request
	for src.Next(&r) {
		p = append(p, r.PromptTokens)
		o = append(o, r.OutputTokens)
	}
	if err := workload.SourceErr(src); err != nil {
		return nil, nil, err
	}
	if prompt, err = NewEmpirical(p, label+":prompt"); err != nil {
		return nil, nil, fmt.Errorf("trace: %s: no requests to fit", label)
	}
	output, _ = NewEmpirical(o, label+":output")
	return prompt, output, nil
}

// maxZipfSupport bounds Zipf's support (the table holds one float64 per value).
const maxZipfSupport = 1 << 22

// Zipf is a Zipf (discrete power-law) length distribution on the integers
// Lo..Hi: value Lo+k−1 has probability ∝ k^(−S) for rank k = 1..Hi−Lo+1.
// S > 0 sets the tail (larger S: more mass on short lengths); unlike
// math/rand's Zipf it allows S ≤ 1, as the support is finite. Sampling
// inverts a cumulative table by binary search, so it is exact.
type Zipf struct {
	S      float64
	Lo, Hi int
	cdf    []float64 // cdf[k] = P(rank ≤ k+1), cdf[last] = 1
	mean   float64
}

// NewZipf returns the Zipf distribution with exponent s > 0 on lo..hi, 1 ≤
// lo ≤ hi, with at most 2²² values.
func NewZipf(s float64, lo, hi int) (*Zipf, error) {
	switch {
	case !(s > 0) || math.IsInf(s, 0):
		return nil, fmt.Errorf("trace: zipf exponent %v: must be a finite number > 0", s)
	case lo < 1 || hi < lo:
		return nil, fmt.Errorf("trace: zipf range %d..%d: want 1 ≤ lo ≤ hi", lo, hi)
	case hi-lo+1 > maxZipfSupport:
		return nil, fmt.Errorf("trace: zipf range %d..%d: at most %d values", lo, hi, maxZipfSupport)
	}
	n := hi - lo + 1
	z := &Zipf{S: s, Lo: lo, Hi: hi, cdf: make([]float64, n)}
	var tot, m float64
	for k := 1; k <= n; k++ {
		w := math.Pow(float64(k), -s)
		tot += w
		z.cdf[k-1] = tot
		m += w * float64(lo+k-1)
	}
	for i := range z.cdf {
		z.cdf[i] /= tot
	}
	z.cdf[n-1] = 1
	z.mean = m / tot
	return z, nil
}

// Sample draws a value by inverting the cumulative table.
func (z *Zipf) Sample(r *rand.Rand) float64 {
	u := r.Float64()
	k := sort.SearchFloat64s(z.cdf, u) // first k with cdf[k] ≥ u
	if k < len(z.cdf) && z.cdf[k] == u {
		k++ // P(rank ≤ k+1) = u exactly: u belongs to the next rank's interval [cdf[k], cdf[k+1])
	}
	if k >= len(z.cdf) {
		k = len(z.cdf) - 1
	}
	return float64(z.Lo + k)
}

// Mean returns Σ v·P(v).
func (z *Zipf) Mean() float64 { return z.mean }

// String returns "zipf:S,LO,HI".
func (z *Zipf) String() string {
	return "zipf:" + strconv.FormatFloat(z.S, 'g', -1, 64) + "," + strconv.Itoa(z.Lo) + "," + strconv.Itoa(z.Hi)
}

// ParseDist reads a length distribution: every spec workload.ParseDist
// reads, and
//
//	zipf:S,LO,HI                Zipf on LO..HI with exponent S
//	empirical:FILE:prompt       the prompt lengths of a trace file (any format)
//	empirical:FILE:output       its output lengths
//
// A relative FILE is taken from dir (the scenario file's directory; "" for
// the working directory). An empirical spec reads the whole file once.
func ParseDist(spec, dir string) (workload.Dist, error) {
	name, args, _ := strings.Cut(spec, ":")
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "zipf":
		f := strings.Split(args, ",")
		if len(f) != 3 {
			return nil, fmt.Errorf("trace: length %q: zipf needs 3 parameters (s,lo,hi)", spec)
		}
		s, err1 := strconv.ParseFloat(strings.TrimSpace(f[0]), 64)
		lo, err2 := strconv.Atoi(strings.TrimSpace(f[1]))
		hi, err3 := strconv.Atoi(strings.TrimSpace(f[2]))
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("trace: length %q: zipf parameters are a number and two whole numbers", spec)
		}
		z, err := NewZipf(s, lo, hi)
		if err != nil {
			return nil, fmt.Errorf("trace: length %q: %v", spec, strings.TrimPrefix(err.Error(), "trace: "))
		}
		return z, nil
	case "empirical":
		i := strings.LastIndex(args, ":")
		if i < 0 {
			return nil, fmt.Errorf("trace: length %q: want empirical:FILE:prompt or empirical:FILE:output", spec)
		}
		file, col := args[:i], strings.ToLower(strings.TrimSpace(args[i+1:]))
		if col != "prompt" && col != "output" {
			return nil, fmt.Errorf("trace: length %q: column %q: want prompt or output", spec, col)
		}
		path := file
		if dir != "" && !filepath.IsAbs(file) {
			path = filepath.Join(dir, file)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("trace: length %q: %w", spec, err)
		}
		defer f.Close()
		rd, err := NewReader(f, path, ReaderOptions{})
		if err != nil {
			return nil, err
		}
		p, o, err := FitLengths(rd, file)
		if err != nil {
			return nil, err
		}
		if col == "prompt" {
			return p, nil
		}
		return o, nil
	}
	return workload.ParseDist(spec)
}

// Class is one traffic class of a Mix: its share of the requests, its
// length distributions and its own latency objectives.
type Class struct {
	Name   string
	Weight float64 // relative share, > 0 (weights need not sum to 1)
	Prompt workload.Dist
	Output workload.Dist
	// TTFTSLO and TPOTSLO are copied into each request (0 = the run's).
	TTFTSLO, TPOTSLO sim.Time
	// MaxPrompt and MaxOutput clamp sampled lengths (0 = 2³¹−1).
	MaxPrompt, MaxOutput int
}

// Random streams of a Mix, beside workload's StreamArrivals (1): the class
// of each request, and class i's prompt and output lengths.
const (
	StreamClass       uint64 = 16
	StreamClassLength uint64 = 32 // class i: prompts 32+2i, outputs 33+2i
	StreamSample      uint64 = 17 // Sample's thinning, in Open
)

// Mix is a multi-class synthetic workload: one arrival process for the
// total traffic, each request's class drawn independently with
// probability Weight/ΣWeights, and its lengths from that class's
// distributions. Requests carry Class, TTFTSLO and TPOTSLO.
//
// Count and Duration end the stream as in workload.Synthetic (at least one
// must be set). Every purpose has its own random stream from Seed:
// arrivals (workload.StreamArrivals), classes (StreamClass), and each
// class's prompts and outputs (StreamClassLength+2i, +2i+1), so changing one
// class's lengths changes neither the arrival times nor the class sequence.
// Lengths are rounded half away from zero and clamped to [1, Max].
type Mix struct {
	Arrival  workload.Arrival
	Classes  []Class
	Count    int
	Duration sim.Time
	Seed     uint64
}

// Validate checks m.
func (m Mix) Validate() error {
	if len(m.Classes) == 0 {
		return errors.New("trace: mix: no classes")
	}
	names := make(map[string]bool)
	for i, c := range m.Classes {
		switch {
		case c.Name == "":
			return fmt.Errorf("trace: mix: class %d has no name", i)
		case names[c.Name]:
			return fmt.Errorf("trace: mix: class %q appears twice", c.Name)
		case !(c.Weight > 0) || math.IsInf(c.Weight, 0):
			return fmt.Errorf("trace: mix: class %q: weight %v must be a finite number > 0", c.Name, c.Weight)
		case c.Prompt == nil || c.Output == nil:
			return fmt.Errorf("trace: mix: class %q: prompt and output length distributions are required", c.Name)
		case c.TTFTSLO < 0 || c.TPOTSLO < 0:
			return fmt.Errorf("trace: mix: class %q: SLOs must be ≥ 0", c.Name)
		case c.MaxPrompt < 0 || c.MaxOutput < 0:
			return fmt.Errorf("trace: mix: class %q: max lengths must be ≥ 0 (0 = none)", c.Name)
		}
		names[c.Name] = true
	}
	return nil
}

// Source validates m and returns its stream.
func (m Mix) Source() (workload.ErrSource, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	gen, err := workload.Synthetic{
		Arrival:  m.Arrival,
		Prompt:   workload.Constant{Value: 1},
		Output:   workload.Constant{Value: 1},
		Count:    m.Count,
		Duration: m.Duration,
		Seed:     m.Seed,
	}.Source()
	if err != nil {
		return nil, fmt.Errorf("trace: mix: %w", err)
	}
	s := &mixSource{gen: gen, classes: m.Classes, class: rand.New(rand.NewPCG(m.Seed, StreamClass))}
	var tot float64
	for i, c := range m.Classes {
		tot += c.Weight
		s.cum = append(s.cum, tot)
		s.prompts = append(s.prompts, rand.New(rand.NewPCG(m.Seed, StreamClassLength+2*uint64(i))))
		s.outputs = append(s.outputs, rand.New(rand.NewPCG(m.Seed, StreamClassLength+2*uint64(i)+1)))
		maxP, maxO := c.MaxPrompt, c.MaxOutput
		if maxP == 0 {
			maxP = maxTokens
		}
		if maxO == 0 {
			maxO = maxTokens
		}
		s.maxP, s.maxO = append(s.maxP, maxP), append(s.maxO, maxO)
	}
	for i := range s.cum {
		s.cum[i] /= tot
	}
	s.cum[len(s.cum)-1] = 1
	return s, nil
}

type mixSource struct {
	gen              workload.Source
	classes          []Class
	cum              []float64
	class            *rand.Rand
	prompts, outputs []*rand.Rand
	maxP, maxO       []int
}

func (s *mixSource) Next(r *workload.Request) bool {
	if !s.gen.Next(r) {
		return false
	}
	u := s.class.Float64()
	i := 0
	for i < len(s.cum)-1 && u >= s.cum[i] {
		i++
	}
	c := &s.classes[i]
	r.PromptTokens = tokens(c.Prompt.Sample(s.prompts[i]), s.maxP[i])
	r.OutputTokens = tokens(c.Output.Sample(s.outputs[i]), s.maxO[i])
	r.Class, r.TTFTSLO, r.TPOTSLO = c.Name, c.TTFTSLO, c.TPOTSLO
	return true
}

func (s *mixSource) Err() error { return workload.SourceErr(s.gen) }

// tokens rounds a sampled length half away from zero and clamps it to
// [1, hi] (NaN becomes 1), as workload.Synthetic does.
func tokens(v float64, hi int) int {
	x := math.Round(v)
	if !(x >= 1) {
		return 1
	}
	if x >= float64(hi) {
		return hi
	}
	return int(x)
}
