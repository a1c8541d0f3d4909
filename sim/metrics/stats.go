package metrics

import (
	"math"
	"slices"
)

// Stats summarizes a sample. For latencies every value is in milliseconds.
// An empty sample gives N = 0 and zeros everywhere (never NaN, which JSON
// cannot hold; vLLM likewise reports 0 for an empty list).
//
// Percentiles are exact, by numpy's default (method "linear"): for sorted
// x[0..n−1] and p in [0, 100], h = (p/100)·(n−1), and the percentile is
// x[⌊h⌋] + (h−⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]), evaluated with numpy's _lerp so
// results agree to the last bit. Median is numpy's median (mean of the two
// middle values for even n). Std is the population standard deviation
// (numpy's default ddof = 0, as vLLM reports it).
type Stats struct {
	N      int64   `json:"n"`
	Mean   float64 `json:"mean"`
	Std    float64 `json:"std"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
}

// sampleStats summarizes the sorted sample x.
func sampleStats(x []float64) Stats {
	var sum float64
	for _, v := range x {
		sum += v
	}
	return sampleStatsSum(x, sum)
}

// sampleStatsSum is sampleStats for a caller that summed x already, in
// order from x[0] (the same additions, so the same sum).
func sampleStatsSum(x []float64, sum float64) Stats {
	n := int64(len(x))
	if n == 0 {
		return Stats{}
	}
	mean := sum / float64(n)
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return finish(Stats{N: n, Mean: mean, Std: math.Sqrt(ss / float64(n))}, func(k int64) float64 { return x[k] })
}

// orderStats holds the order statistics finish asks for (at most 10
// ranks: min, max, two for the median and two for each percentile), so a
// sample held in a form without random access (runs of a value) is read
// once, in order: ask learns the ranks, the caller fills v[j] with the
// value of rank k[j], and at answers finish.
type orderStats struct {
	n int
	k [16]int64   // the ranks asked, ascending, distinct
	v [16]float64 // their values
}

// ask records the ranks finish(s, …) reads, sorted and without repeats.
func (q *orderStats) ask(s Stats) {
	q.n = 0
	finish(s, func(k int64) float64 {
		if !slices.Contains(q.k[:q.n], k) {
			q.k[q.n] = k
			q.n++
		}
		return 0 // the values read do not change which ranks are read
	})
	slices.Sort(q.k[:q.n])
}

// at returns the value of rank k, one of those ask recorded.
func (q *orderStats) at(k int64) float64 {
	i, _ := slices.BinarySearch(q.k[:q.n], k)
	return q.v[i]
}

// finish fills the order statistics of s, for a sample of s.N values whose
// k-th smallest is at(k).
func finish(s Stats, at func(int64) float64) Stats {
	n := s.N
	s.Min, s.Max = at(0), at(n-1)
	if n%2 == 1 {
		s.Median = at(n / 2)
	} else {
		s.Median = (at(n/2-1) + at(n/2)) / 2
	}
	s.P90 = percentile(n, at, 90)
	s.P95 = percentile(n, at, 95)
	s.P99 = percentile(n, at, 99)
	return s
}

// percentile is numpy.percentile(x, p) (method "linear") for the sorted
// sample of n values whose k-th smallest is at(k).
func percentile(n int64, at func(int64) float64, p float64) float64 {
	h := p / 100 * float64(n-1) // numpy: q = p/100, virtual index (n−1)·q
	lo := math.Floor(h)
	i := int64(lo)
	if i >= n-1 {
		return at(n - 1)
	}
	return lerp(at(i), at(i+1), h-lo)
}

// lerp is numpy's _lerp: a + (b−a)·t, computed from b for t ≥ 0.5 so the
// result is exact at both ends and monotone.
func lerp(a, b, t float64) float64 {
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}
