package metrics

import (
	"fmt"
	"math"
	"slices"

	"github.com/servesim/servesim/sim"
)

// SaturationMargin is the share of the second half's admitted arrivals by
// which completions must fall short for a run to count as saturated. Basis
// (queueing theory): a queue offered λ req/s by a server that completes
// μ < λ grows at λ − μ = λ(1 − 1/ρ), ρ = λ/μ, while in a stable one (ρ < 1)
// completions keep pace with arrivals and the outstanding count only
// fluctuates about its mean L = λW (Little's law). A shortfall above 5 % of
// arrivals is growth at ρ > 1/(1 − 0.05) ≈ 1.053; closer to ρ = 1 a finite
// run cannot tell growth from fluctuation.
const SaturationMargin = 0.05

// SaturationZ is the other floor on the shortfall: SaturationZ standard
// deviations of a Poisson count of the half's arrivals (√A), so that a
// burst of arrivals a stable server has not yet caught up with (one-sided
// 2σ: about 2.3 % of windows) is not read as growth. It dominates the 5 %
// margin below (2/0.05)² = 1,600 arrivals in the half. Measured on M/D/1
// queues (TestSaturationMD1Seeds): at ρ = 0.7 no seed of 100 to 10,000
// requests is flagged; at ρ = 1.5 every seed of 1,000 is.
const SaturationZ = 2

// SaturationMinArrivals is the fewest admitted arrivals in each of the last
// two quarters for saturation to be judged: below 1/SaturationMargin = 20 a
// 5 % shortfall is less than one request.
const SaturationMinArrivals = 20

// Saturation says whether a run's queue kept growing while requests arrived,
// judged from the records alone, after the run.
//
// The arrival window runs from the first to the last arrival (rejected
// requests included), split into four equal quarters. The outstanding count
// N(t) is the admitted (not rejected) requests that arrived by t and had not
// finished by t. The run is saturated when over the window's second half
// completions fell short of admitted arrivals A by more than
// max(SaturationMargin·A, SaturationZ·√A), and N grew in each of the two
// quarters (the queue kept growing, not one burst). The first half is left
// out: a stable system fills to L = λW in about its latency W, so a run
// whose latency is more than half its window is still filling in the second
// half and cannot be told from an overloaded one (it may read as
// saturated). Judged is false (and Saturated too) when either of the last
// two quarters has fewer than SaturationMinArrivals admitted arrivals.
//
// Offered load is over the arrival window: (arrivals − 1)/window req/s (exact
// for evenly spaced arrivals), and that rate times the mean output tokens of
// the served requests (a rejected request's output length is never
// produced). Capacity is what the server completed per second in the
// window's second half: while saturated the server works flat out, so that
// is its service capacity. A saturated run with fewer than
// SaturationMinArrivals completions there (its latency exceeds half its
// window) is measured from the window's middle to its last completion
// instead. Output tokens are counted at each request's completion. SteadyOutputThroughput is the output tok/s the deployment
// sustains at this load: the offered output tok/s times the served share
// when not saturated, the capacity when saturated. It, not the throughput
// from first arrival to last completion (drain tail included), is what cost
// per token divides by.
//
// GrowthStart to GrowthEnd (seconds after the first arrival) is the span the
// queue kept growing: GrowthEnd is when N(t) first reached its largest value
// in the arrival window, GrowthStart the last time before that N(t) was at
// its smallest value since the first arrival. Outstanding* are N at the
// window's middle, at its end and at that peak.
type Saturation struct {
	Judged    bool `json:"judged"`
	Saturated bool `json:"saturated"`

	WindowS           float64 `json:"arrival_window_s"`
	OfferedRate       float64 `json:"offered_req_per_s"`
	OfferedOutputRate float64 `json:"offered_output_tok_per_s"`
	CapacityRate      float64 `json:"capacity_req_per_s"`
	CapacityOutput    float64 `json:"capacity_output_tok_per_s"`

	SteadyOutputThroughput float64 `json:"steady_output_tok_per_s"`

	OutstandingMid  int     `json:"outstanding_mid"`
	OutstandingEnd  int     `json:"outstanding_end"`
	OutstandingPeak int     `json:"outstanding_peak"`
	GrowthStart     float64 `json:"growth_start_s"`
	GrowthEnd       float64 `json:"growth_end_s"`
}

// Line is the summary's one-line verdict: "no", "yes (…)" or why it was not
// judged.
func (s *Saturation) Line() string {
	switch {
	case !s.Judged:
		return fmt.Sprintf("not judged (under %d arrivals per quarter of the arrival window)", SaturationMinArrivals)
	case !s.Saturated:
		return "no"
	}
	return fmt.Sprintf("yes: queue grew %.2f–%.2f s to %d outstanding", s.GrowthStart, s.GrowthEnd, s.OutstandingPeak)
}

// served is what saturation keeps of a served request besides its
// arrival (kept apart, as a key: Collector.keys[kArrival]).
type served struct {
	finish sim.Time
	out    int64
}

// saturation computes the Saturation of served requests (their arrivals
// arr, sorted keys (timeKey) as a list like itlSamples's; their finish
// times and output tokens in blocks, any order) and rejected arrivals rej
// (sorted here, in place). It copies the finish times, as keys, into a
// sorted slice for the walk over N(t): once per summary, not per step.
// scratch, when it holds a value a served request, is used for them, else
// they are allocated.
func saturation(arr itlSamples, blocks [][]served, rej []sim.Time, scratch []uint64) Saturation {
	var s Saturation
	nServed := arr.n
	n := nServed + len(rej)
	if n < 2 {
		return s
	}
	slices.Sort(rej)
	t0, t1 := sim.Time(math.MaxInt64), sim.Time(math.MinInt64)
	if nServed > 0 {
		t0, t1 = timeOfKey(*arr.at(0)), timeOfKey(*arr.at(nServed - 1))
	}
	var outSum int64
	for _, b := range blocks {
		for _, r := range b {
			outSum += r.out
		}
	}
	if len(rej) > 0 {
		t0, t1 = min(t0, rej[0]), max(t1, rej[len(rej)-1])
	}
	T := t1 - t0
	if T <= 0 {
		return s
	}
	s.WindowS = T.Seconds()
	rate := float64(n-1) / s.WindowS
	s.OfferedRate = rate
	if nServed > 0 {
		s.OfferedOutputRate = rate * float64(outSum) / float64(nServed)
	}

	// Arrivals and completions of admitted requests in each quarter
	// (q[k], q[k+1]]; the first quarter also holds t0 itself.
	q := [5]sim.Time{t0, t0 + T/4, t0 + T/2, t0 + 3*T/4, t1}
	quarter := func(t sim.Time) int {
		k := 0
		for k < 3 && t > q[k+1] {
			k++
		}
		return k
	}
	var arrQ, done [4]int
	var secondHalfOut, afterMidOut int64
	afterMid, lastFinish := 0, q[2]
	for k, b := range arr.b {
		for _, a := range b[:min(itlBlock, nServed-k<<itlBlockBits)] {
			arrQ[quarter(timeOfKey(a))]++
		}
	}
	if cap(scratch) < nServed {
		scratch = make([]uint64, nServed)
	}
	fin := scratch[:0:nServed]
	for _, b := range blocks {
		for _, r := range b {
			if r.finish > q[2] {
				afterMid++
				afterMidOut += r.out
				lastFinish = max(lastFinish, r.finish)
			}
			if r.finish <= t1 {
				fin = append(fin, timeKey(r.finish))
				k := quarter(r.finish)
				done[k]++
				if k >= 2 {
					secondHalfOut += r.out
				}
			}
		}
	}
	s.OutstandingMid = arrQ[0] + arrQ[1] - done[0] - done[1]
	s.OutstandingEnd = s.OutstandingMid + arrQ[2] + arrQ[3] - done[2] - done[3]
	half := (t1 - q[2]).Seconds()
	s.CapacityRate = float64(done[2]+done[3]) / half
	s.CapacityOutput = float64(secondHalfOut) / half
	s.Judged = arrQ[2] >= SaturationMinArrivals && arrQ[3] >= SaturationMinArrivals
	ah, sh := float64(arrQ[2]+arrQ[3]), float64(arrQ[2]+arrQ[3]-done[2]-done[3])
	s.Saturated = s.Judged && arrQ[2] > done[2] && arrQ[3] > done[3] &&
		sh > max(SaturationMargin*ah, SaturationZ*math.Sqrt(ah))
	s.SteadyOutputThroughput = s.OfferedOutputRate * float64(nServed) / float64(n)
	if s.Saturated && done[2]+done[3] < SaturationMinArrivals && lastFinish > t1 {
		// Saturated with too few completions in the window's second half to
		// measure a rate (a run whose latency exceeds half its window): the
		// server works flat out from the window's middle until its queue is
		// empty, so its capacity is the completions over that span, drain
		// included (biased high by the work in flight at the window's end,
		// which is why it is the fallback, not the rule).
		span := (lastFinish - q[2]).Seconds()
		s.CapacityRate = float64(afterMid) / span
		s.CapacityOutput = float64(afterMidOut) / span
	}
	if s.Saturated {
		s.SteadyOutputThroughput = s.CapacityOutput
	}
	slices.Sort(fin) // in finish order, sorted already: one pass of pdqsort
	s.growth(arr, fin, t0)
	return s
}

// growth fills the growth span and peak from a walk over the admitted
// arrivals and the completions up to the last arrival (both sorted, as
// keys: timeKey), reading N after every event at an instant (an arrival
// and a completion at the same time do not make a peak).
func (s *Saturation) growth(arrivals itlSamples, fin []uint64, t0 sim.Time) {
	nOut, lo, peak := 0, 0, 0
	loAt, peakAt, startAt := t0, t0, t0
	i, j := 0, 0
	for i < arrivals.n || j < len(fin) {
		k := uint64(math.MaxUint64)
		if i < arrivals.n {
			k = *arrivals.at(i)
		}
		if j < len(fin) {
			k = min(k, fin[j])
		}
		for ; i < arrivals.n && *arrivals.at(i) == k; i++ {
			nOut++
		}
		for ; j < len(fin) && fin[j] == k; j++ {
			nOut--
		}
		t := timeOfKey(k)
		if nOut <= lo {
			lo, loAt = nOut, t
		}
		if nOut > peak {
			peak, peakAt, startAt = nOut, t, loAt
		}
	}
	s.OutstandingPeak = peak
	s.GrowthStart, s.GrowthEnd = (startAt - t0).Seconds(), (peakAt - t0).Seconds()
}
