package metrics

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/servesim/servesim/sim"
)

// The ITL sample is kept as runs of equal gaps, each packed into one
// uint64 when it is added: the gap (nanoseconds) above itlCountBits bits
// of count. A 100k-request run at 12 req/s adds 720,000 runs: 5.8 MB at 8
// bytes a run, sorted in place by the gap bits (an American flag sort: a
// most-significant digit radix sort that permutes within the array), so
// Summary takes no second buffer of the runs' length; on a machine where
// every fresh page costs a fault, the bytes not touched are the time
// saved. Runs that do not pack (a gap of 2⁴⁰ ns, 18 minutes, or more; a
// count of 2²⁴ or more in one call) are kept apart, unpacked, in wide.

const (
	itlCountBits = 24
	itlMaxCount  = 1<<itlCountBits - 1
	itlMaxGap    = 1<<(64-itlCountBits) - 1

	// itlBlockBits sets the packed runs' block: 8192 runs, 64 KiB. Blocks
	// are never copied as the sample grows; all are full but the last, so
	// run i is b[i>>itlBlockBits][i&itlBlockMask].
	itlBlockBits = 13
	itlBlock     = 1 << itlBlockBits
	itlBlockMask = itlBlock - 1

	// itlInsertion is the longest range of runs the sort puts in order
	// by insertion rather than by another digit.
	itlInsertion = 24
)

// itlRun is a run of n gaps equal to gap, unpacked.
type itlRun struct {
	gap sim.Time
	n   int64
}

// itlSamples is the ITL sample: runs packed in blocks and the wide ones.
// The zero value is empty.
type itlSamples struct {
	b    [][]uint64 // n packed runs, gap<<itlCountBits | count; len(b) = ⌈n/itlBlock⌉
	n    int
	wide []itlRun
	// spare, when not nil, is the next block (one itlSorter freed).
	spare []uint64
}

// at returns the place of packed run i.
func (s *itlSamples) at(i int) *uint64 { return &s.b[i>>itlBlockBits][i&itlBlockMask] }

// add adds n ≥ 1 gaps equal to gap ≥ 0. A run with the same gap as the
// last packed one merges into it while the count fits.
func (s *itlSamples) add(gap sim.Time, n int64) {
	if uint64(gap) > itlMaxGap || n > itlMaxCount {
		s.wide = append(s.wide, itlRun{gap, n})
		return
	}
	if s.n > 0 {
		if l := s.at(s.n - 1); *l>>itlCountBits == uint64(gap) && *l&itlMaxCount+uint64(n) <= itlMaxCount {
			*l += uint64(n)
			return
		}
	}
	if s.n&itlBlockMask == 0 {
		b := s.spare
		if s.spare = nil; b == nil {
			b = make([]uint64, itlBlock)
		}
		s.b = append(s.b, b)
	}
	*s.at(s.n) = uint64(gap)<<itlCountBits | uint64(n)
	s.n++
}

// clone returns a copy of s that shares no memory with it.
func (s *itlSamples) clone() itlSamples {
	c := itlSamples{n: s.n, wide: slices.Clone(s.wide)}
	for _, b := range s.b {
		c.b = append(c.b, slices.Clone(b))
	}
	return c
}

// sortMerge sorts the runs by gap and merges those of equal gaps (their
// counts added), in place: the packed runs are written over the first of
// their blocks (a merged count above itlMaxCount takes several runs of
// the gap, no more than it merged), the blocks left empty dropped, and the
// wide runs likewise in wide. No result depends on the order of the runs,
// so the sample is the same afterwards.
func (s *itlSamples) sortMerge() {
	if s.n > 0 {
		sortGaps(s.b, s.n)
		s.compact()
	}
	if len(s.wide) > 0 {
		slices.SortFunc(s.wide, func(a, b itlRun) int { return cmp.Compare(a.gap, b.gap) })
		out := s.wide[:0] // out never passes the run it reads
		for _, r := range s.wide {
			if k := len(out) - 1; k >= 0 && out[k].gap == r.gap {
				out[k].n += r.n
				continue
			}
			out = append(out, r)
		}
		s.wide = out
	}
}

// compact merges the sorted packed runs of equal gaps. The runs written
// for a gap are no more than those read for it, so writing never passes
// reading.
func (s *itlSamples) compact() {
	w := 0
	put := func(gap, n uint64) {
		for ; n > itlMaxCount; n -= itlMaxCount {
			*s.at(w) = gap<<itlCountBits | itlMaxCount
			w++
		}
		*s.at(w) = gap<<itlCountBits | n
		w++
	}
	cur, sum := *s.at(0)>>itlCountBits, uint64(0)
	for k, b := range s.b {
		for _, x := range b[:min(itlBlock, s.n-k<<itlBlockBits)] {
			if g := x >> itlCountBits; g != cur {
				put(cur, sum)
				cur, sum = g, 0
			}
			sum += x & itlMaxCount
		}
	}
	put(cur, sum)
	s.n = w
	nb := (w + itlBlockMask) >> itlBlockBits
	clear(s.b[nb:])
	s.b = s.b[:nb]
}

// sortGaps sorts the n runs of the blocks b (itlBlock runs a block, as in
// itlSamples) by gap, in place: by digits (gapSorter) into ranges of at
// most itlInsertion runs, in order, and then by insertion, which moves a
// run only within its range.
func sortGaps(b [][]uint64, n int) {
	if n > itlInsertion {
		var g gapSorter
		g.sort(b, 0, n, 0)
	}
	insertionGaps(b, 0, n)
}

// gapSorter sorts packed runs by their gap bits. lv holds, for each depth
// of the recursion, a digit's counts and next places.
type gapSorter struct {
	lv   [][]int
	left []int // digits with runs not yet placed
}

// sort orders runs [lo, hi) of b by the top digit of the bits in which
// their gaps differ (at most radixBits bits), permuted in place (an
// American flag sort), and then the runs of each digit value by the rest
// while they are more than itlInsertion: ranges of fewer are left to
// sortGaps's insertion.
func (g *gapSorter) sort(b [][]uint64, lo, hi, depth int) {
	gmin, gmax := uint64(math.MaxUint64), uint64(0)
	for k := lo >> itlBlockBits; k<<itlBlockBits < hi; k++ {
		for _, x := range part(b, k, lo, hi) {
			gmin, gmax = min(gmin, x>>itlCountBits), max(gmax, x>>itlCountBits)
		}
	}
	span := bits.Len64(gmax - gmin)
	if span == 0 {
		return // one gap
	}
	// A digit of about n/4 values (fewer would take more levels, more
	// would make counts that cost more than the runs) leaves about 4 runs
	// to a value.
	w := min(radixBits, span, max(1, bits.Len(uint(hi-lo))-2))
	shift := itlCountBits + span - w
	base := gmin << itlCountBits // digit of x: (x − base) >> shift, below 1<<w
	nd := 1 << w
	if len(g.lv) <= depth {
		g.lv = append(g.lv, make([]int, 2<<radixBits+1))
	}
	c, next := g.lv[depth][:nd+1], g.lv[depth][nd+1:2*nd+1]
	clear(c)
	for k := lo >> itlBlockBits; k<<itlBlockBits < hi; k++ {
		for _, x := range part(b, k, lo, hi) {
			c[(x-base)>>shift+1]++
		}
	}
	for d := 1; d <= nd; d++ {
		c[d] += c[d-1]
	}
	for d := range nd {
		next[d] = lo + c[d]
	}
	// Sweeps over the runs not yet placed (from next[d] to the end of
	// digit d's range): each run read is swapped into its own digit's next
	// place, and the run found there takes its place, to be read in the
	// next sweep. Every swap places one run, and the runs read in a sweep
	// are in order, so their loads overlap (swapping until a run of digit
	// d comes back, as the classic American flag sort does, makes each
	// load wait for the one before).
	left := g.left[:0]
	for d := range nd {
		if next[d] < lo+c[d+1] {
			left = append(left, d)
		}
	}
	for len(left) > 0 {
		keep := left[:0]
		for _, d := range left {
			end := lo + c[d+1]
			for i := next[d]; i < end; i++ {
				p := &b[i>>itlBlockBits][i&itlBlockMask]
				x := *p
				e := int((x - base) >> shift)
				j := next[e]
				next[e]++
				q := &b[j>>itlBlockBits][j&itlBlockMask]
				*p, *q = *q, x
			}
			if next[d] < end {
				keep = append(keep, d)
			}
		}
		left = keep
	}
	g.left = left
	for d := range nd {
		if c[d+1]-c[d] > itlInsertion {
			g.sort(b, lo+c[d], lo+c[d+1], depth+1)
		}
	}
}

// part returns the runs of block k in [lo, hi).
func part(b [][]uint64, k, lo, hi int) []uint64 {
	from := k << itlBlockBits
	return b[k][max(lo-from, 0):min(hi-from, itlBlock)]
}

// insertionGaps sorts runs [lo, hi) of the blocks b by gap, by insertion.
func insertionGaps(b [][]uint64, lo, hi int) {
	if hi-lo < 2 {
		return
	}
	prev := b[lo>>itlBlockBits][lo&itlBlockMask]
	for i := lo + 1; i < hi; i++ {
		p := &b[i>>itlBlockBits][i&itlBlockMask]
		x := *p
		if x>>itlCountBits >= prev>>itlCountBits {
			prev = x
			continue
		}
		*p = prev
		j := i - 1
		for ; j > lo; j-- {
			y := b[(j-1)>>itlBlockBits][(j-1)&itlBlockMask]
			if y>>itlCountBits <= x>>itlCountBits {
				break
			}
			b[j>>itlBlockBits][j&itlBlockMask] = y
		}
		b[j>>itlBlockBits][j&itlBlockMask] = x
	}
}

// itlCursor reads the runs of a merged itlSamples in order of gap, packed
// and wide runs of one gap (and a gap's several packed runs) as one.
type itlCursor struct {
	s    *itlSamples
	i    int
	wide []itlRun
}

// next returns the next gap and its count; ok is false after the last.
func (c *itlCursor) next() (gap sim.Time, n int64, ok bool) {
	s := c.s
	switch {
	case c.i < s.n && (len(c.wide) == 0 || *s.at(c.i)>>itlCountBits <= uint64(c.wide[0].gap)):
		g := *s.at(c.i) >> itlCountBits
		gap = sim.Time(g)
		for ; c.i < s.n && *s.at(c.i)>>itlCountBits == g; c.i++ {
			n += int64(*s.at(c.i) & itlMaxCount)
		}
	case len(c.wide) > 0:
		gap = c.wide[0].gap
	default:
		return 0, 0, false
	}
	for len(c.wide) > 0 && c.wide[0].gap == gap {
		n += c.wide[0].n
		c.wide = c.wide[1:]
	}
	return gap, n, true
}

// itlStats summarizes the ITL sample in milliseconds, its runs merged by
// sortMerge, without expanding it: the same percentiles, median, min and
// max as sampleStats on the expanded sample, and the mean and std summed
// over the distinct gaps in ascending order, each gap weighted by its
// count (so up to floating-point summation order). It reads the runs
// twice: for the count and sum, then for the squared deviations and the
// order statistics (orderStats), whose ranks the count fixes; a gap's
// milliseconds are computed in each pass, not kept.
func itlStats(s *itlSamples) Stats {
	if len(s.wide) == 0 {
		return packedStats(s)
	}
	var n int64
	var sum float64
	c := itlCursor{s: s, wide: s.wide}
	for gap, k, ok := c.next(); ok; gap, k, ok = c.next() {
		n += k
		sum += gap.Milliseconds() * float64(k)
	}
	if n == 0 {
		return Stats{}
	}
	st := Stats{N: n, Mean: sum / float64(n)}
	var q orderStats
	q.ask(st)
	j := 0 // the next rank in q.k to find
	var cum int64
	var ss float64
	c = itlCursor{s: s, wide: s.wide}
	for gap, k, ok := c.next(); ok; gap, k, ok = c.next() {
		v := gap.Milliseconds()
		ss += (v - st.Mean) * (v - st.Mean) * float64(k)
		cum += k // ranks below cum hold v
		for ; j < q.n && q.k[j] < cum; j++ {
			q.v[j] = v
		}
	}
	st.Std = math.Sqrt(ss / float64(n))
	return finish(st, q.at)
}

// packedStats is itlStats for a sample without wide runs: the same sums
// in the same order, the runs read a block at a time rather than through
// itlCursor (twice as fast).
func packedStats(s *itlSamples) Stats {
	if s.n == 0 {
		return Stats{}
	}
	var n int64
	var sum float64
	cur, k := *s.at(0)>>itlCountBits, int64(0) // the gap being read and its count so far
	for i, b := range s.b {
		for _, x := range b[:min(itlBlock, s.n-i<<itlBlockBits)] {
			if g := x >> itlCountBits; g != cur {
				n += k
				sum += sim.Time(cur).Milliseconds() * float64(k)
				cur, k = g, 0
			}
			k += int64(x & itlMaxCount)
		}
	}
	n += k
	sum += sim.Time(cur).Milliseconds() * float64(k)
	st := Stats{N: n, Mean: sum / float64(n)}
	var q orderStats
	q.ask(st)
	j := 0 // the next rank in q.k to find
	var cum int64
	var ss float64
	add := func(gap uint64, k int64) {
		v := sim.Time(gap).Milliseconds()
		ss += (v - st.Mean) * (v - st.Mean) * float64(k)
		cum += k // ranks below cum hold v
		for ; j < q.n && q.k[j] < cum; j++ {
			q.v[j] = v
		}
	}
	cur, k = *s.at(0)>>itlCountBits, 0
	for i, b := range s.b {
		for _, x := range b[:min(itlBlock, s.n-i<<itlBlockBits)] {
			if g := x >> itlCountBits; g != cur {
				add(cur, k)
				cur, k = g, 0
			}
			k += int64(x & itlMaxCount)
		}
	}
	add(cur, k)
	st.Std = math.Sqrt(ss / float64(n))
	return finish(st, q.at)
}
