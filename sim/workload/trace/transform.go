package trace

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// The transformations below wrap a Source and return another. Each streams
// (O(1) state, no allocation per request), passes the inner source's error
// through Err, and numbers the requests it yields 0, 1, 2, ... afresh.

// Window keeps the requests that arrive in [start, end) and shifts them by
// −start, so the window begins at time 0. end 0 means no end. It stops
// reading at the first arrival at or after end (arrivals never decrease).
func Window(src workload.Source, start, end sim.Time) workload.ErrSource {
	return &window{src: src, start: start, end: end}
}

type window struct {
	src        workload.Source
	start, end sim.Time
	n          int64
	done       bool
}

func (w *window) Next(r *workload.Request) bool {
	for !w.done {
		if !w.src.Next(r) {
			w.done = true
			return false
		}
		if w.end > 0 && r.Arrival >= w.end {
			w.done = true
			return false
		}
		if r.Arrival < w.start {
			continue
		}
		r.Arrival -= w.start
		r.ID = w.n
		w.n++
		return true
	}
	return false
}

func (w *window) Err() error { return workload.SourceErr(w.src) }

// Sample keeps each request with probability p, drawing from rng: a seeded
// Bernoulli thinning that keeps the trace's order and burst shape (a
// Poisson process thinned stays Poisson, at p times the rate).
func Sample(src workload.Source, p float64, rng *rand.Rand) workload.ErrSource {
	return &sample{src: src, p: p, rng: rng}
}

type sample struct {
	src workload.Source
	p   float64
	rng *rand.Rand
	n   int64
}

func (s *sample) Next(r *workload.Request) bool {
	for s.src.Next(r) {
		if s.rng.Float64() < s.p {
			r.ID = s.n
			s.n++
			return true
		}
	}
	return false
}

func (s *sample) Err() error { return workload.SourceErr(s.src) }

// Limit yields the first n requests.
func Limit(src workload.Source, n int64) workload.ErrSource {
	return &limit{src: src, n: n}
}

type limit struct {
	src  workload.Source
	n, i int64
}

func (l *limit) Next(r *workload.Request) bool {
	if l.i >= l.n || !l.src.Next(r) {
		l.i = l.n
		return false
	}
	r.ID = l.i
	l.i++
	return true
}

func (l *limit) Err() error { return workload.SourceErr(l.src) }

// Scale multiplies the arrival rate by factor > 0: every arrival time t
// becomes t/factor (rounded to the nanosecond), so every inter-arrival gap
// shrinks (factor > 1) or stretches (factor < 1) by the same ratio and the
// burst shape (the gaps' coefficient of variation, the per-minute profile)
// is kept. Lengths are untouched.
func Scale(src workload.Source, factor float64) workload.ErrSource {
	return &scale{src: src, inv: 1 / factor}
}

type scale struct {
	src workload.Source
	inv float64
	n   int64
	err error
}

func (s *scale) Next(r *workload.Request) bool {
	if s.err != nil || !s.src.Next(r) {
		return false
	}
	t := float64(r.Arrival) * s.inv
	if !(t < math.MaxInt64) {
		s.err = fmt.Errorf("trace: rate scaling puts request %d at %.4g s, past what simulated time holds", s.n, t/1e9)
		return false
	}
	r.Arrival = sim.Time(math.Round(t))
	r.ID = s.n
	s.n++
	return true
}

func (s *scale) Err() error {
	if s.err != nil {
		return s.err
	}
	return workload.SourceErr(s.src)
}

// Clip fits every request into a context of maxContext ≥ 2 tokens (the
// model's max_model_len): a request with prompt + output > maxContext keeps
// its prompt and loses output tokens, or, if the prompt alone does not
// leave room for one output token, is cut to maxContext−1 prompt tokens and
// 1 output token. Prefix hashes beyond the clipped prompt are dropped.
// Clipped() counts the requests changed.
func Clip(src workload.Source, maxContext int) *Clipper {
	return &Clipper{src: src, max: maxContext}
}

// Clipper is the Source Clip returns.
type Clipper struct {
	src     workload.Source
	max     int
	n       int64
	clipped int64
}

// Next yields the next request, clipped.
func (c *Clipper) Next(r *workload.Request) bool {
	if !c.src.Next(r) {
		return false
	}
	if r.PromptTokens+r.OutputTokens > c.max {
		c.clipped++
		if r.PromptTokens >= c.max {
			r.PromptTokens, r.OutputTokens = c.max-1, 1
		} else {
			r.OutputTokens = c.max - r.PromptTokens
		}
		if b := r.PrefixBlockTokens; b > 0 {
			if keep := (r.PromptTokens + b - 1) / b; len(r.Prefix) > keep {
				r.Prefix = r.Prefix[:keep]
			}
		}
	}
	r.ID = c.n
	c.n++
	return true
}

// Err passes the inner source's error through.
func (c *Clipper) Err() error { return workload.SourceErr(c.src) }

// Clipped returns how many requests were clipped so far.
func (c *Clipper) Clipped() int64 { return c.clipped }

// Repeat replays a trace n times back to back: copy k (from 0) is the
// stream open returns, shifted by k·period. A period of 0 means "one copy's
// span plus its mean gap": last + (last − first)/(m − 1) for a copy of m
// requests arriving first..last (1 s past the last request for a copy of
// one), which keeps the gap across the seam typical. open is called once
// per copy, so a file is read again rather than held in memory; a source
// that is an io.Closer is closed when drained. Prefix hashes repeat as
// they are: a later copy finds the earlier copy's prefixes.
func Repeat(open func() (workload.Source, error), n int, period sim.Time) workload.ErrSource {
	return &repeat{open: open, n: n, period: period}
}

type repeat struct {
	open        func() (workload.Source, error)
	n, k        int
	period      sim.Time
	cur         workload.Source
	shift       sim.Time
	first, last sim.Time
	m           int64 // requests in the current copy
	id          int64
	err         error
}

func (p *repeat) Next(r *workload.Request) bool {
	for p.err == nil && p.k < p.n {
		if p.cur == nil {
			src, err := p.open()
			if err != nil {
				p.err = err
				return false
			}
			p.cur, p.m = src, 0
		}
		if p.cur.Next(r) {
			if p.k == 0 {
				if p.m == 0 {
					p.first = r.Arrival
				}
				p.last = r.Arrival
			}
			p.m++
			if r.Arrival > math.MaxInt64-p.shift {
				p.err = fmt.Errorf("trace: repeat %d puts request %d past what simulated time holds", p.k, p.id)
				return false
			}
			r.Arrival += p.shift
			r.ID = p.id
			p.id++
			return true
		}
		if err := workload.SourceErr(p.cur); err != nil {
			p.err = err
			return false
		}
		if c, ok := p.cur.(io.Closer); ok {
			if err := c.Close(); err != nil {
				p.err = err
				return false
			}
		}
		p.cur = nil
		if p.k == 0 {
			if p.m == 0 {
				return false // an empty trace repeats to nothing
			}
			if p.period == 0 {
				p.period = p.last + sim.Second
				if p.m > 1 {
					p.period = p.last + (p.last-p.first)/sim.Time(p.m-1)
				}
			}
		}
		p.k++
		if p.k < p.n {
			if p.shift > math.MaxInt64-p.period {
				p.err = fmt.Errorf("trace: repeat %d starts past what simulated time holds", p.k)
				return false
			}
			p.shift += p.period
		}
	}
	return false
}

func (p *repeat) Err() error { return p.err }

// Close closes the copy being read, if it is an io.Closer.
func (p *repeat) Close() error {
	if c, ok := p.cur.(io.Closer); ok {
		p.cur = nil
		return c.Close()
	}
	return nil
}

// Arrivals gives a length-only trace arrival times from a synthetic arrival
// process: request i arrives at the sum of i+1 gaps drawn as workload's
// Synthetic draws them (the same PCG stream, workload.StreamArrivals, for
// the same seed, so a length trace and a synthetic workload with one seed
// share their arrival times). The trace's own times, if any, are replaced.
func Arrivals(src workload.Source, a workload.Arrival, seed uint64) (workload.ErrSource, error) {
	gen, err := workload.Synthetic{
		Arrival: a,
		Prompt:  workload.Constant{Value: 1},
		Output:  workload.Constant{Value: 1},
		Count:   math.MaxInt, // the trace ends the stream
		Seed:    seed,
	}.Source()
	if err != nil {
		return nil, fmt.Errorf("trace: arrivals: %w", err)
	}
	return &arrivals{src: src, gen: gen}, nil
}

type arrivals struct {
	src workload.Source
	gen workload.Source
	tmp workload.Request
	n   int64
	err error
}

func (a *arrivals) Next(r *workload.Request) bool {
	if a.err != nil || !a.src.Next(r) {
		return false
	}
	if !a.gen.Next(&a.tmp) {
		a.err = workload.SourceErr(a.gen)
		if a.err == nil {
			a.err = fmt.Errorf("trace: arrivals: the arrival process ended at request %d", a.n)
		}
		return false
	}
	r.Arrival = a.tmp.Arrival
	r.ID = a.n
	a.n++
	return true
}

func (a *arrivals) Err() error {
	if a.err != nil {
		return a.err
	}
	return workload.SourceErr(a.src)
}
