package metrics

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/servesim/servesim/sim"
)

// The implementation of the ITL sample before itlSamples (runs of 16
// bytes in blocks, an LSD radix sort into a second buffer, the values kept
// in a third), kept as the reference its replacement is tested against.

// refSortMergeITL sorts the runs of blocks by gap, equal gaps merged (their
// counts added), and returns them in blocks: those of the argument, the
// merged runs written over them in order (fewer runs than there were, so
// they fit) and the blocks left empty dropped; scratch is used when it is
// long enough and returned. Each run is packed into one uint64, its gap
// less the smallest above its count, when the two fit (gaps spanning 30
// bits, about a second of nanoseconds, leave 34 bits for counts), so the
// radix sort moves 8 bytes a run instead of 16; otherwise the runs are
// sorted by comparison, in a new slice.
func refSortMergeITL(blocks [][]itlRun, scratch []uint64) ([][]itlRun, []uint64) {
	n := 0
	lo, hi, nmax := sim.Time(math.MaxInt64), sim.Time(math.MinInt64), int64(0)
	for _, b := range blocks {
		n += len(b)
		for _, r := range b {
			lo, hi, nmax = min(lo, r.gap), max(hi, r.gap), max(nmax, r.n)
		}
	}
	if n == 0 {
		return nil, scratch
	}
	nb := bits.Len64(uint64(nmax))
	if n < radixMin || bits.Len64(uint64(hi-lo))+nb > 64 {
		runs := slices.Concat(blocks...)
		slices.SortFunc(runs, func(a, b itlRun) int { return cmp.Compare(a.gap, b.gap) })
		out := runs[:0] // merged in place: out never passes the run it reads
		for _, r := range runs {
			if k := len(out) - 1; k >= 0 && out[k].gap == r.gap {
				out[k].n += r.n
				continue
			}
			out = append(out, r)
		}
		return [][]itlRun{out}, scratch
	}
	packed, scratch := keysIn(scratch, n)
	i := 0
	for _, b := range blocks {
		for _, r := range b {
			packed[i] = uint64(r.gap-lo)<<nb | uint64(r.n)
			i++
		}
	}
	// Not radixTop: gaps are step times, thousands within a microsecond
	// of each other (two insertion moves a run on the default run: slower
	// than a third pass).
	sorted := radix(packed, scratch[n:2*n], nb)
	// Merge into the blocks: block k, position j is the next to write;
	// cur is the run being summed, written when the gap changes.
	mask := uint64(1)<<nb - 1
	k, j := 0, 0
	cur := itlRun{lo + sim.Time(sorted[0]>>nb), 0}
	for _, p := range sorted {
		if g := lo + sim.Time(p>>nb); g != cur.gap {
			if j == len(blocks[k]) {
				k, j = k+1, 0
			}
			blocks[k][j] = cur
			j++
			cur = itlRun{g, 0}
		}
		cur.n += int64(p & mask)
	}
	if j == len(blocks[k]) {
		k, j = k+1, 0
	}
	blocks[k][j] = cur
	blocks[k] = blocks[k][:j+1]
	clear(blocks[k+1:])
	return blocks[:k+1], scratch
}

// radix sorts v by its bits from skip up (ascending, stable) with tmp
// (len(v)) as the other buffer and returns the one holding the result.
// Passes in which every value has the same digit are skipped.
func radix(v, tmp []uint64, skip int) []uint64 {
	if len(v) == 0 {
		return v
	}
	lo, hi := bounds(v, skip)
	return radixIn(v, tmp, skip, lo, hi, nil)
}

// refWeightedStats summarizes the sample of ITL gaps in milliseconds in
// which each run's gap occurs its count times (the runs in blocks, sorted
// by gap), without expanding it; v is scratch for the values (grown when
// short) and is returned for reuse. It gives the same percentiles, median,
// min and max as sampleStats on the expanded sample, and the same mean and
// std up to floating-point summation order. The order statistics are read
// in one pass in order (orderStats), not by a search over cumulative
// counts, which would take another array of the runs' length.
func refWeightedStats(runs [][]itlRun, v []float64) (Stats, []float64) {
	l := blocks[itlRun](runs).len()
	v = slices.Grow(v[:0], l)[:l]
	var n int64
	var sum float64
	i := 0
	for _, b := range runs {
		for _, r := range b {
			vi := r.gap.Milliseconds()
			v[i] = vi
			i++
			n += r.n
			sum += vi * float64(r.n)
		}
	}
	if n == 0 {
		return Stats{}, v
	}
	mean := sum / float64(n)
	var ss float64
	i = 0
	for _, b := range runs {
		for _, r := range b {
			vi := v[i]
			i++
			ss += (vi - mean) * (vi - mean) * float64(r.n)
		}
	}
	s := Stats{N: n, Mean: mean, Std: math.Sqrt(ss / float64(n))}
	var q orderStats
	q.ask(s)
	j := 0 // the next rank in q.k to find
	var cum int64
	i = 0
	for _, b := range runs {
		for _, r := range b {
			cum += r.n // ranks below cum hold v[i]
			for ; j < q.n && q.k[j] < cum; j++ {
				q.v[j] = v[i]
			}
			i++
		}
	}
	return finish(s, q.at), v
}
