package metrics

import (
	"cmp"
	"math"
	"slices"
)

// Exact percentiles need sorted samples (100,000 per latency for a
// 100k-request run, eight latencies, plus the ITL runs). A least-significant
// digit radix sort over the samples' bit patterns, 8 bits a pass, sorts them
// in about a tenth of pdqsort's time at that size and gives the same sorted
// slice: for non-negative float64 and for int64 keys mapped as below, the
// order of the keys is the order of the values, and a sorted slice of values
// is unique once equal values are indistinguishable. Two float64 values that
// compare equal but differ in bits (−0 and +0) or NaN (which slices.Sort
// puts first in an unspecified order) make the slice fall back to
// slices.Sort, so the result is always slices.Sort's.

// radixMin is the length below which slices.Sort is used as it is: the
// radix sort's fixed cost (a 256-entry count per pass) is not worth paying.
const radixMin = 256

// floatKey maps a float64 to a uint64 whose unsigned order is the value's
// order (IEEE 754 total order: flip every bit of a negative, the sign bit
// of a positive).
func floatKey(f float64) uint64 {
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// sortFloats sorts v ascending, as slices.Sort does; scratch is reused
// when it is long enough and returned for the next call.
func sortFloats(v, scratch []float64) []float64 {
	if len(v) < radixMin {
		slices.Sort(v)
		return scratch
	}
	for _, f := range v {
		if f != f || (f == 0 && math.Signbit(f)) { // NaN or −0: see the comment above
			slices.Sort(v)
			return scratch
		}
	}
	if cap(scratch) < len(v) {
		scratch = make([]float64, len(v))
	}
	tmp := scratch[:len(v)]
	radix(v, tmp, floatKey)
	return scratch
}

// sortITL sorts ITL runs by gap; runs of equal gap may come out in any
// order (sortMergeITL adds their counts).
func sortITL(runs []itlRun) {
	if len(runs) < radixMin {
		slices.SortFunc(runs, func(a, b itlRun) int { return cmp.Compare(a.gap, b.gap) })
		return
	}
	radix(runs, make([]itlRun, len(runs)), func(r itlRun) uint64 { return uint64(r.gap) ^ 1<<63 })
}

// radix sorts v by key (ascending, stable) with tmp (len(v)) as the
// other buffer; the sorted values end in v. Passes in which every key has
// the same digit are skipped.
func radix[T any](v, tmp []T, key func(T) uint64) {
	var counts [8][256]int
	for _, x := range v {
		k := key(x)
		for d := range 8 {
			counts[d][byte(k>>(8*d))]++
		}
	}
	src, dst := v, tmp
	for d := range 8 {
		c := &counts[d]
		if c[byte(key(src[0])>>(8*d))] == len(src) {
			continue // one digit value for all: this pass would copy
		}
		var pos [256]int
		sum := 0
		for i, n := range c {
			pos[i] = sum
			sum += n
		}
		shift := 8 * d
		for _, x := range src {
			b := byte(key(x) >> shift)
			dst[pos[b]] = x
			pos[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &v[0] {
		copy(v, src)
	}
}
