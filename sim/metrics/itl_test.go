package metrics

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/servesim/servesim/sim"
)

// itlPair holds an ITL sample twice: in itlSamples and as the reference
// implementation kept it (runs in blocks, consecutive equal gaps merged).
type itlPair struct {
	s   itlSamples
	ref blocks[itlRun]
}

func (p *itlPair) add(gap sim.Time, n int64) {
	p.s.add(gap, n)
	if l := p.ref.last(); l != nil && l.gap == gap {
		l.n += n
		return
	}
	p.ref.add(itlRun{gap, n})
}

// check sorts and merges both samples and compares the merged runs and
// the Stats, bit for bit.
func (p *itlPair) check(t *testing.T, name string) {
	t.Helper()
	var ref [][]itlRun
	ref, _ = refSortMergeITL(p.ref, nil)
	p.ref = ref
	want, _ := refWeightedStats(ref, nil)
	p.s.sortMerge()
	for k, b := range p.s.b {
		if len(b) != itlBlock {
			t.Fatalf("%s: block %d holds %d runs", name, k, len(b))
		}
	}
	if len(p.s.b) != (p.s.n+itlBlockMask)/itlBlock {
		t.Fatalf("%s: %d runs in %d blocks", name, p.s.n, len(p.s.b))
	}
	var got []itlRun
	c := itlCursor{s: &p.s, wide: p.s.wide}
	for gap, n, ok := c.next(); ok; gap, n, ok = c.next() {
		got = append(got, itlRun{gap, n})
	}
	if flat := slices.Concat(ref...); !slices.Equal(got, flat) {
		t.Fatalf("%s: merged runs differ (%d against %d)", name, len(got), len(flat))
	}
	if st := itlStats(&p.s); !sameStats(st, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", name, st, want)
	}
}

// sameStats compares Stats bit for bit.
func sameStats(a, b Stats) bool {
	fa := []float64{a.Mean, a.Std, a.Min, a.Median, a.P90, a.P95, a.P99, a.Max}
	fb := []float64{b.Mean, b.Std, b.Min, b.Median, b.P90, b.P95, b.P99, b.Max}
	return a.N == b.N && slices.EqualFunc(fa, fb, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// TestITLMatchesReference checks itlSamples against the implementation it
// replaced on seeded random samples, bit for bit on the merged runs and
// the Stats: step-like gaps (crowded within a millisecond, a tail to
// 100 ms), few distinct gaps, all gaps equal, gaps of any size up to
// MaxInt64 (wide beyond 2⁴⁰ ns), and counts up to and beyond 2²⁴ (which
// merge past a packed run's count, or are wide), at lengths about the
// insertion sort's, the old sort's radixMin and a block. Each sample is
// checked, given more runs (equal to earlier gaps and new), and checked
// again.
func TestITLMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 30))
	gaps := map[string]func() sim.Time{
		"step": func() sim.Time {
			if r.IntN(10) < 3 {
				return sim.Time(7e6 + r.Int64N(1e8))
			}
			return sim.Time(6e6 + r.Int64N(1e6))
		},
		"few":   func() sim.Time { return sim.Time(r.IntN(5)) * sim.Millisecond },
		"equal": func() sim.Time { return 9 * sim.Millisecond },
		"any":   func() sim.Time { return sim.Time(r.Int64N(math.MaxInt64>>r.IntN(40)) + int64(r.IntN(2))) },
		"edge":  func() sim.Time { return sim.Time(itlMaxGap - 2 + r.IntN(5)) },
	}
	counts := map[string]func() int64{
		"batch": func() int64 { return 1 + r.Int64N(150) },
		"one":   func() int64 { return 1 },
		"huge": func() int64 {
			if r.IntN(4) == 0 {
				return itlMaxCount - 3 + r.Int64N(7)
			}
			return 1 + r.Int64N(1<<(10*r.IntN(5)))
		},
	}
	for _, gn := range slices.Sorted(maps.Keys(gaps)) { // in a fixed order: one stream of draws
		gap := gaps[gn]
		for _, cn := range slices.Sorted(maps.Keys(counts)) {
			count := counts[cn]
			for _, n := range []int{0, 1, 2, 23, 24, 25, 100, 255, 256, 1000, itlBlock + 1, 50_000} {
				var p itlPair
				for range n {
					p.add(gap(), count())
				}
				name := fmt.Sprintf("%s/%s/n=%d", gn, cn, n)
				p.check(t, name)
				for range n/3 + 1 {
					p.add(gap(), count())
				}
				p.check(t, name+" again")
			}
		}
	}
}

// TestITLEqualsExpanded: itlStats on runs must equal sampleStats on the
// sample with each gap repeated count times: identical order statistics,
// mean and std to summation rounding.
func TestITLEqualsExpanded(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for trial := range 400 {
		k := 1 + r.IntN(12)
		if trial%4 == 0 {
			k = 1 + r.IntN(3000)
		}
		var s itlSamples
		var x []float64
		for range k {
			gap, n := sim.Time(r.IntN(50))*500*sim.Microsecond, r.IntN(6)
			if n > 0 {
				s.add(gap, int64(n))
			}
			for range n {
				x = append(x, gap.Milliseconds())
			}
		}
		slices.Sort(x)
		s.sortMerge()
		got, want := itlStats(&s), sampleStats(x)
		if !near(got.Mean, want.Mean, 1e-12) || math.Abs(got.Std-want.Std) > 1e-12*math.Max(1, want.Std) {
			t.Fatalf("trial %d: mean/std %v %v, expanded %v %v", trial, got.Mean, got.Std, want.Mean, want.Std)
		}
		got.Mean, got.Std, want.Mean, want.Std = 0, 0, 0, 0
		if got != want {
			t.Fatalf("trial %d:\nruns     %+v\nexpanded %+v", trial, got, want)
		}
	}
}

// FuzzITL checks the packing, sort and merge against the reference on
// runs read from the input, 12 bytes a run: a gap (its 8 bytes shifted
// right by the first byte's low 6 bits, so that small and crowded gaps
// are common) and a count (4 bytes, 0 skipped). The gap sort alone is
// checked too: the gaps it leaves are ascending and the same multiset.
func FuzzITL(f *testing.F) {
	f.Add([]byte("\x20\x01\x02\x03\x04\x05\x06\x07\x01\x00\x00\x00\x20\x01\x02\x03\x04\x05\x06\x08\x01\x00\x00\x00"))
	f.Add(slices.Repeat([]byte("\x3f\xff\xff\xff\xff\xff\xff\x7f\xff\xff\xff\x00"), 40))
	f.Add(slices.Repeat([]byte("\x10\x00\x00\x00\x00\x01\x00\x00\xff\xff\xff\x0f"), 300))
	f.Fuzz(func(t *testing.T, in []byte) {
		var p itlPair
		var gaps []uint64
		for ; len(in) >= 12; in = in[12:] {
			gap := sim.Time(binary.LittleEndian.Uint64(in) >> 1 >> (in[0] & 63))
			n := int64(binary.LittleEndian.Uint32(in[8:]))
			if n == 0 {
				continue
			}
			p.add(gap, n)
		}
		s := p.s.clone()
		for i := range s.n {
			gaps = append(gaps, *s.at(i)>>itlCountBits)
		}
		sortGaps(s.b, s.n)
		sorted := make([]uint64, 0, s.n)
		for i := range s.n {
			sorted = append(sorted, *s.at(i)>>itlCountBits)
		}
		slices.Sort(gaps)
		if !slices.Equal(sorted, gaps) {
			t.Fatalf("gap sort of %d runs: not the sorted gaps", s.n)
		}
		p.check(t, "fuzz")
	})
}

// TestGapSortCrowded sorts many runs of few gaps and one far gap (one
// top digit holds all but one run), reversed runs and sorted ones.
func TestGapSortCrowded(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 31))
	for _, shape := range []string{"crowded", "reversed", "sorted"} {
		var s itlSamples
		for i := range 3 * itlBlock {
			gap := sim.Time(r.IntN(3))
			switch shape {
			case "reversed":
				gap = sim.Time(3*itlBlock - i)
			case "sorted":
				gap = sim.Time(i / 2)
			}
			s.add(gap, 1+int64(i%2))
		}
		*s.at(s.n / 2) = 1<<39<<itlCountBits | 1
		want := make([]uint64, 0, s.n)
		for i := range s.n {
			want = append(want, *s.at(i)>>itlCountBits)
		}
		slices.Sort(want)
		sortGaps(s.b, s.n)
		for i := range s.n {
			if got := *s.at(i) >> itlCountBits; got != want[i] {
				t.Fatalf("%s: run %d has gap %d, want %d", shape, i, got, want[i])
			}
		}
	}
}

// BenchmarkITL is the sort, merge and Stats of the ITL runs of a
// 100k-request run at 12 req/s (copied before each): 720,000 runs of
// 230,000 step-like gaps (6.5 ms and a log-normal above, median 2 ms).
func BenchmarkITL(b *testing.B) {
	r := rand.New(rand.NewPCG(25, 32))
	pool := make([]sim.Time, 230_000)
	for i := range pool {
		pool[i] = sim.Time(6.5e6 + math.Exp(14.5+r.NormFloat64()))
	}
	var s itlSamples
	var ref blocks[itlRun]
	for range 720_000 {
		run := itlRun{pool[r.IntN(len(pool))], 1 + r.Int64N(150)}
		s.add(run.gap, run.n)
		ref.add(run)
	}
	b.Run("ref", func(b *testing.B) { // the implementation itlSamples replaced
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			c := blocks[itlRun]{}
			for _, blk := range ref {
				c = append(c, slices.Clone(blk))
			}
			b.StartTimer()
			runs, _ := refSortMergeITL(c, nil)
			refWeightedStats(runs, nil)
		}
	})
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			c := s.clone()
			b.StartTimer()
			c.sortMerge()
			itlStats(&c)
		}
	})
}

// BenchmarkITLStats is itlStats alone on BenchmarkITL's runs, sorted and
// merged: read a block at a time ("packed") and, with one wide run added,
// through itlCursor ("cursor").
func BenchmarkITLStats(b *testing.B) {
	r := rand.New(rand.NewPCG(25, 32))
	var s itlSamples
	for range 720_000 {
		s.add(sim.Time(6.5e6+math.Exp(14.5+r.NormFloat64())), 1+r.Int64N(150))
	}
	s.sortMerge()
	b.Run("packed", func(b *testing.B) {
		for b.Loop() {
			itlStats(&s)
		}
	})
	w := s
	w.wide = []itlRun{{itlMaxGap + 1, 1}}
	b.Run("cursor", func(b *testing.B) {
		for b.Loop() {
			itlStats(&w)
		}
	})
}
