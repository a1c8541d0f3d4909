package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/servesim/servesim/sim"
)

// Stage is one stage of a rate schedule, as load generators run them
// (inference-perf's load.stages, a k6-style step): arrivals at Rate for
// Duration, from the stage's start.
type Stage struct {
	Rate     float64  // requests per second, finite and > 0
	Duration sim.Time // > 0
}

// validateStages checks a rate schedule.
func validateStages(st []Stage) error {
	for i, g := range st {
		if !(g.Rate > 0) || math.IsInf(g.Rate, 0) {
			return fmt.Errorf("workload: stage %d: rate %v: must be a finite number > 0 (requests/s)", i, g.Rate)
		}
		if g.Duration <= 0 {
			return fmt.Errorf("workload: stage %d: duration %v: must be > 0", i, g.Duration)
		}
	}
	return nil
}

// clock is a synthetic source's arrival schedule: one stage or several, an
// arrival process, optional rescaling to fill each stage, and optional
// draining between stages. It works in float64 seconds; the caller converts
// each arrival once.
type clock struct {
	proc    Arrival // process and burstiness; the rate is each stage's
	rng     *rand.Rand
	pcg     *rand.PCG // rng's state, copied to look ahead when rescaling
	stages  []stage
	rescale bool
	drain   bool
	gap     float64 // seconds between stages (after the drain, if any)

	k       int // current stage
	gaps    gapSampler
	start   float64 // current stage's start, s
	t       float64 // last arrival (unscaled: start + gaps so far), s
	i       int64   // arrivals yielded in the stage
	n       int64   // rescaling: the stage's arrivals
	total   float64 // rescaling: the sum of the stage's n gaps
	cum     float64 // rescaling: gaps summed so far
	waiting bool    // the stage is over and draining
}

// stage is a Stage in seconds with an optional count.
type stage struct {
	rate  float64
	dur   float64 // 0 = no limit
	count int64   // 0 = no limit
}

// end returns the stage's end in sim.Time when it starts at start seconds
// (sim.Forever when that is past what sim.Time holds).
func (st stage) end(start float64) sim.Time {
	if t, err := sim.FromSecondsChecked(start + st.dur); err == nil {
		return t
	}
	return sim.Forever
}

// Clock results.
const (
	clockOK = iota
	clockEnd
	clockBlocked
)

func newClock(proc Arrival, seed uint64, st []stage, rescale, drain bool, gap float64) *clock {
	pcg := rand.NewPCG(seed, StreamArrivals)
	c := &clock{proc: proc, rng: rand.New(pcg), pcg: pcg, stages: st, rescale: rescale, drain: drain, gap: gap}
	c.begin(0, 0)
	return c
}

// begin starts stage k at time start (seconds).
func (c *clock) begin(k int, start float64) {
	st := c.stages[k]
	c.k, c.start, c.t, c.i, c.cum = k, start, start, 0, 0
	a := c.proc
	a.Rate = st.rate
	c.gaps = newGapSampler(a)
	if !c.rescale {
		return
	}
	// The stage's n gaps are drawn twice: once here, from a copy of the
	// generator, to sum them, and again as the arrivals are yielded, so the
	// schedule streams in O(1) memory.
	c.n = st.count
	if st.dur > 0 && st.count == 0 {
		c.n = int64(st.rate * st.dur) // inference-perf: int(rate × duration)
	}
	look := *c.pcg
	r := rand.New(&look)
	c.total = 0
	for range c.n {
		c.total += c.gaps.next(r)
	}
}

// span returns the length the rescaled stage fills: its duration, or
// count/rate (vLLM bench's target_total_delay_s) when it has only a count.
func (c *clock) span() float64 {
	if st := c.stages[c.k]; st.dur > 0 {
		return st.dur
	}
	return float64(c.n) / c.stages[c.k].rate
}

// next returns the next arrival in seconds, or reports that the schedule
// has ended or waits for a drain. lastFinish and inflight describe the
// requests yielded so far (used only when draining).
func (c *clock) next(inflight int64, lastFinish float64) (float64, int) {
	for {
		if c.waiting {
			if inflight > 0 {
				return 0, clockBlocked
			}
			c.waiting = false
			st := c.stages[c.k]
			c.begin(c.k+1, math.Max(c.start+st.dur, lastFinish)+c.gap)
			continue
		}
		st := c.stages[c.k]
		if c.rescale {
			if c.i < c.n {
				c.cum += c.gaps.next(c.rng)
				c.i++
				if c.total == 0 || math.IsInf(st.rate, 1) { // rate inf: all at the start
					return c.start, clockOK
				}
				return c.start + c.span()*(c.cum/c.total), clockOK
			}
		} else if st.count == 0 || c.i < st.count {
			if c.gaps.kind == 2 { // constant: (i+1)/rate exactly, not a running sum
				c.t = c.start + float64(c.i+1)/st.rate
			} else {
				c.t += c.gaps.next(c.rng)
			}
			// Compared in sim.Time, as the arrival will be: an arrival that
			// rounds to the stage's end is past it (no conversion without
			// an end: once a request).
			if st.dur == 0 {
				c.i++
				return c.t, clockOK
			}
			if t, err := sim.FromSecondsChecked(c.t); err == nil && t < st.end(c.start) {
				c.i++
				return c.t, clockOK
			}
		}
		if c.k+1 >= len(c.stages) {
			return 0, clockEnd
		}
		if c.drain {
			c.waiting = true
			continue
		}
		c.begin(c.k+1, c.start+st.dur+c.gap)
	}
}

// errNoStages is returned for drain or gap settings without stages.
var errNoStages = errors.New("workload: synthetic: drain and gap apply between stages: give two stages or more")
