package metrics

import (
	"math"
	"math/bits"
	"slices"

	"github.com/servesim/servesim/sim"
)

// Exact percentiles need sorted samples (100,000 per latency for a
// 100k-request run, eight latencies, plus about 600,000 ITL runs). A
// least-significant digit radix sort over the samples' keys sorts them in a
// fraction of pdqsort's time at that size and gives the same sorted slice:
// for non-negative float64 and for int64 keys mapped as below, the order of
// the keys is the order of the values, and a sorted slice of values is
// unique once equal values are indistinguishable. Two float64 values that
// compare equal but differ in bits (−0 and +0) or NaN (which slices.Sort
// puts first in an unspecified order) make the slice fall back to
// slices.Sort, so the result is always slices.Sort's.
//
// The sort passes only over the bits in which keys differ: the keys less
// the smallest span bits.Len64(max−min) bits, cut into the fewest digits of
// at most radixBits bits (a 100 s range of nanoseconds, 37 bits, is four
// passes of 10 bits; a float64 in milliseconds, all 64, six of 11).

// radixMin is the length below which a comparison sort is used: the radix
// sort's fixed cost (a count per digit value and pass) is not worth paying.
const radixMin = 256

// radixBits is the widest digit: 2¹¹ counts of 8 bytes (16 KiB) a pass,
// which stay in a 32 KiB L1 data cache while the pass scatters.
const radixBits = 11

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

// floatOfKey is floatKey's inverse.
func floatOfKey(k uint64) float64 {
	if k>>63 != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}

// timeKey maps a sim.Time to a uint64 of the same order; timeOfKey is its
// inverse.
func timeKey(t sim.Time) uint64   { return uint64(t) ^ 1<<63 }
func timeOfKey(k uint64) sim.Time { return sim.Time(k ^ 1<<63) }

// sortedTimeKeys returns the keys of the values of bs, sorted, in scratch
// (grown when short), and scratch for reuse.
func sortedTimeKeys(bs [][]sim.Time, scratch []uint64) ([]uint64, []uint64) {
	keys, scratch := keysIn(scratch, blocks[sim.Time](bs).len())
	i := 0
	for _, b := range bs {
		for _, t := range b {
			keys[i] = timeKey(t)
			i++
		}
	}
	return sortKeys(keys, scratch[len(keys):]), scratch
}

// sortedFloatKeys returns the keys of the values of bs, sorted, in scratch
// (grown when short), and scratch for reuse; ok is false, and nothing
// sorted, when a value is NaN or −0 (see the comment above).
func sortedFloatKeys(bs [][]float64, scratch []uint64) (sorted, _ []uint64, ok bool) {
	keys, scratch := keysIn(scratch, blocks[float64](bs).len())
	i := 0
	for _, b := range bs {
		for _, f := range b {
			if f != f || (f == 0 && math.Signbit(f)) {
				return nil, scratch, false
			}
			keys[i] = floatKey(f)
			i++
		}
	}
	return sortKeys(keys, scratch[len(keys):]), scratch, true
}

// sortKeys sorts keys with tmp (as long) as the radix sort's other buffer
// and returns the one holding the result.
func sortKeys(keys, tmp []uint64) []uint64 {
	if len(keys) < radixMin {
		slices.Sort(keys)
		return keys
	}
	return radixTop(keys, tmp, 0, nil)
}

// sortFloats sorts v ascending, as slices.Sort does; scratch is reused
// when it is long enough and returned for the next call.
func sortFloats(v []float64, scratch []uint64) []uint64 {
	sorted, scratch, ok := sortedFloatKeys([][]float64{v}, scratch)
	if !ok {
		slices.Sort(v)
		return scratch
	}
	for i, k := range sorted {
		v[i] = floatOfKey(k)
	}
	return scratch
}

// sortTimes sorts v ascending; scratch is reused when it is long enough and
// returned for the next call.
func sortTimes(v []sim.Time, scratch []uint64) []uint64 {
	sorted, scratch := sortedTimeKeys([][]sim.Time{v}, scratch)
	for i, k := range sorted {
		v[i] = timeOfKey(k)
	}
	return scratch
}

// keysIn returns the first n of scratch, grown to at least 2n (the keys and
// the radix sort's other buffer), and scratch sliced to 2n.
func keysIn(scratch []uint64, n int) ([]uint64, []uint64) {
	if cap(scratch) < 2*n {
		scratch = make([]uint64, 2*n)
	}
	return scratch[:n], scratch[:2*n]
}

// topBits is how many of the bits in which keys differ (their span) the
// radix passes of radixTop sort: two passes (the top bits of the span
// take at most 22, one more than topBits, after the shift). Below them lie
// 2^(span−21) key values, a bucket: 100,000 nanosecond latencies spanning 37 bits (E2E
// up to two minutes) sit 65 µs apart in a bucket, a few samples at most
// share one, and insertion sort puts them in order in about one
// comparison a key.
const topBits = 2*radixBits - 1

// radixTop sorts v by its bits from skip up, as radix does, with tmp as
// the other buffer, and returns the one holding the result. When the keys
// span more than topBits bits it sorts them by the top topBits of the span
// (two passes, not three to six) and then by insertion, which moves a key
// past only those of its bucket; keys that share buckets too much (more
// than insertionMoves moves a key) are sorted again by radix, whole. The
// result is radix's order of the values above skip; keys equal there keep
// their order only if they are equal below it too (sortMergeITL sums
// them, sortKeys cannot tell them apart).
func radixTop(v, tmp []uint64, skip int, counts *[]int) []uint64 {
	if len(v) == 0 {
		return v
	}
	lo, hi := bounds(v, skip)
	span := bits.Len64(hi - lo)
	if span <= topBits {
		return radixIn(v, tmp, skip, lo, hi, counts)
	}
	cut := span - topBits // x>>(skip+cut) is monotone in x>>skip: its bounds are lo's and hi's
	s := radixIn(v, tmp, skip+cut, lo>>cut, hi>>cut, counts)
	other := tmp
	if &s[0] == &tmp[0] {
		other = v
	}
	limit := insertionMoves * len(s)
	for i := 1; i < len(s); i++ {
		x := s[i]
		if x>>skip >= s[i-1]>>skip {
			continue
		}
		j := i
		for ; j > 0 && s[j-1]>>skip > x>>skip; j-- {
			s[j] = s[j-1]
		}
		s[j] = x
		if limit -= i - j; limit < 0 { // too many share a bucket: the sort would go quadratic
			return radixIn(s, other, skip, lo, hi, counts)
		}
	}
	return s
}

// insertionMoves is the most moves a key radixTop's insertion sort may
// make on average before it gives up.
const insertionMoves = 4

// bounds returns the least and greatest of v's values' bits from skip up.
func bounds(v []uint64, skip int) (lo, hi uint64) {
	lo = math.MaxUint64
	for _, x := range v {
		lo, hi = min(lo, x>>skip), max(hi, x>>skip)
	}
	return lo, hi
}

// radixIn is radix for values whose bits from skip up lie in [lo, hi].
// Its counts are kept in *counts (grown when short) unless counts is nil.
func radixIn(v, tmp []uint64, skip int, lo, hi uint64, counts *[]int) []uint64 {
	span := bits.Len64(hi - lo)
	if span == 0 {
		return v
	}
	passes := (span + radixBits - 1) / radixBits
	width := (span + passes - 1) / passes
	mask := uint64(1)<<width - 1
	var cs []int
	if counts == nil || cap(*counts) < passes<<width {
		cs = make([]int, passes<<width)
		if counts != nil {
			*counts = cs
		}
	} else {
		cs = (*counts)[:passes<<width]
		clear(cs)
	}
	for _, x := range v {
		k := x>>skip - lo
		for d := range passes {
			cs[d<<width+int(k>>(d*width)&mask)]++
		}
	}
	src, dst := v, tmp
	for d := range passes {
		c := cs[d<<width : (d+1)<<width]
		shift := d * width
		if c[(src[0]>>skip-lo)>>shift&mask] == len(v) {
			continue // one digit value for all: this pass would copy
		}
		sum := 0
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, x := range src {
			i := (x>>skip - lo) >> shift & mask
			dst[c[i]] = x
			c[i]++
		}
		src, dst = dst, src
	}
	return src
}
