package metrics

import (
	"cmp"
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

// timeKey maps a sim.Time to a uint64 of the same order.
func timeKey(t sim.Time) uint64 { return uint64(t) ^ 1<<63 }

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
	return sortInPlace(v, scratch, floatKey)
}

// sortTimes sorts v ascending; scratch is reused when it is long enough and
// returned for the next call.
func sortTimes(v, scratch []sim.Time) []sim.Time {
	if len(v) < radixMin {
		slices.Sort(v)
		return scratch
	}
	return sortInPlace(v, scratch, timeKey)
}

// sortInPlace radix-sorts v with scratch (grown to len(v)) as the other
// buffer, the result in v, and returns scratch.
func sortInPlace[T any](v, scratch []T, key func(T) uint64) []T {
	if cap(scratch) < len(v) {
		scratch = make([]T, len(v))
	}
	tmp := scratch[:len(v)]
	// The first pass reads v and writes tmp; from then on v is free to be
	// the other buffer.
	if out := radix([][]T{v}, tmp, v, key); &out[0] != &v[0] {
		copy(v, out)
	}
	return scratch
}

// sortMergeITL returns the runs of blocks sorted by gap, equal gaps merged
// (their counts added), in one new slice.
func sortMergeITL(blocks [][]itlRun) []itlRun {
	n := 0
	for _, b := range blocks {
		n += len(b)
	}
	var runs []itlRun
	if n < radixMin {
		runs = slices.Concat(blocks...)
		slices.SortFunc(runs, func(a, b itlRun) int { return cmp.Compare(a.gap, b.gap) })
	} else {
		runs = radix(blocks, make([]itlRun, n), make([]itlRun, n), func(r itlRun) uint64 { return timeKey(r.gap) })
	}
	out := runs[:0]
	for _, r := range runs {
		if k := len(out) - 1; k >= 0 && out[k].gap == r.gap {
			out[k].n += r.n
			continue
		}
		out = append(out, r)
	}
	return out
}

// radix sorts the values of blocks, taken in order, by key (ascending,
// stable) and returns them in a or b, each as long as the blocks together;
// b may be a block (the first pass reads the blocks and writes a). Passes in
// which every key has the same digit are skipped after the first.
func radix[T any](blocks [][]T, a, b []T, key func(T) uint64) []T {
	if len(a) == 0 {
		return a
	}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for _, blk := range blocks {
		for _, x := range blk {
			k := key(x)
			lo, hi = min(lo, k), max(hi, k)
		}
	}
	span := bits.Len64(hi - lo)
	passes := max(1, (span+radixBits-1)/radixBits)
	width := max(1, (span+passes-1)/passes)
	mask := uint64(1)<<width - 1
	counts := make([]int, passes<<width)
	for _, blk := range blocks {
		for _, x := range blk {
			k := key(x) - lo
			for d := range passes {
				counts[d<<width+int(k>>(d*width)&mask)]++
			}
		}
	}
	src, dst := blocks, a
	for d := range passes {
		c := counts[d<<width : (d+1)<<width]
		shift := d * width
		if d > 0 && c[(key(src[0][0])-lo)>>shift&mask] == len(a) {
			continue // one digit value for all: this pass would copy
		}
		sum := 0
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, blk := range src {
			for _, x := range blk {
				i := (key(x) - lo) >> shift & mask
				dst[c[i]] = x
				c[i]++
			}
		}
		src = [][]T{dst}
		if &dst[0] == &a[0] {
			dst = b
		} else {
			dst = a
		}
	}
	return src[0]
}
