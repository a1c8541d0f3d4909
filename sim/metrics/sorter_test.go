package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/servesim/servesim/sim"
)

// itlWith returns the ITL Stats and merged runs of a collector given runs
// under GOMAXPROCS procs (1: no block handed off, as before itlSorter),
// summarized after every k-th of the cut points (0: only at the end).
// handedOff counts the collectors of itlWith that handed blocks off.
var handedOff int

func itlWith(t *testing.T, procs int, runs []itlRun, cuts []int) ([]Stats, []itlRun) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	c := NewCollector(SLO{})
	var st []Stats
	i := 0
	for _, cut := range append(cuts, len(runs)) {
		for ; i < cut; i++ {
			c.AddITL(runs[i].gap, int(runs[i].n))
		}
		st = append(st, c.Summary().ITL)
	}
	if procs == 1 && c.sort != nil {
		t.Fatal("GOMAXPROCS 1: a block was handed off")
	}
	if c.sort != nil {
		handedOff++
	}
	s := c.itl
	if c.sort != nil {
		c.sort.own()
		if len(c.sort.lists[streamITL]) > 1 || c.itl.n != 0 {
			t.Fatalf("after Summary: %d lists and %d runs", len(c.sort.lists[streamITL]), c.itl.n)
		}
		if len(c.sort.lists[streamITL]) == 1 {
			s = c.sort.lists[streamITL][0].s
			s.wide = c.itl.wide
		}
	}
	var merged []itlRun
	cur := itlCursor{s: &s, wide: s.wide}
	for gap, n, ok := cur.next(); ok; gap, n, ok = cur.next() {
		merged = append(merged, itlRun{gap, n})
	}
	return st, merged
}

// TestITLSorterMatchesSortMerge checks the runs sorted while they are
// added (GOMAXPROCS 2 and 3) against sortMerge alone (GOMAXPROCS 1) on
// seeded random runs, bit for bit on every Stats and the merged runs:
// step-like gaps, few distinct ones (their merged counts pass a packed
// run's), equal ones, gaps of any size (wide ones too), with counts of a
// batch or near 2²⁴, at lengths about a block and of several, summarized
// once or also on the way (Summary merges the sorted lists; more runs
// follow).
func TestITLSorterMatchesSortMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 40))
	gaps := []struct {
		name string
		f    func() sim.Time
	}{
		{"step", func() sim.Time {
			if r.IntN(10) < 3 {
				return sim.Time(7e6 + r.Int64N(1e8))
			}
			return sim.Time(6e6 + r.Int64N(1e6))
		}},
		{"few", func() sim.Time { return sim.Time(r.IntN(5)) * sim.Millisecond }},
		{"equal", func() sim.Time { return 9 * sim.Millisecond }},
		{"any", func() sim.Time { return sim.Time(r.Int64N(math.MaxInt64>>r.IntN(40)) + int64(r.IntN(2))) }},
	}
	counts := []struct {
		name string
		f    func() int64
	}{
		{"batch", func() int64 { return 1 + r.Int64N(150) }},
		{"huge", func() int64 {
			if r.IntN(4) == 0 {
				return itlMaxCount - 3 + r.Int64N(7)
			}
			return 1 + r.Int64N(1<<(10*r.IntN(3)))
		}},
	}
	handedOff = 0
	for _, g := range gaps {
		for _, cn := range counts {
			for _, n := range []int{itlBlock - 1, itlBlock, itlBlock + 1, 3*itlBlock + 17, 9 * itlBlock} {
				runs := make([]itlRun, n)
				for i := range runs {
					runs[i] = itlRun{g.f(), cn.f()}
				}
				for _, cuts := range [][]int{nil, {n / 3, n / 2, 2*n/3 + 1}} {
					name := fmt.Sprintf("%s/%s/n=%d/cuts=%d", g.name, cn.name, n, len(cuts))
					want, wantRuns := itlWith(t, 1, runs, cuts)
					for _, procs := range []int{2, 3} {
						got, gotRuns := itlWith(t, procs, runs, cuts)
						if !slices.Equal(gotRuns, wantRuns) {
							t.Fatalf("%s GOMAXPROCS %d: merged runs differ (%d against %d)", name, procs, len(gotRuns), len(wantRuns))
						}
						for k := range want {
							if !sameStats(got[k], want[k]) {
								t.Fatalf("%s GOMAXPROCS %d, summary %d:\n got %+v\nwant %+v", name, procs, k, got[k], want[k])
							}
						}
					}
				}
			}
		}
	}
	if handedOff < 50 {
		t.Fatalf("only %d collectors sorted blocks while runs were added", handedOff)
	}
}

// TestITLSorterMerge checks merge on its own: sorted, merged lists of
// random lengths (across block boundaries) merge into the sorted runs of
// both, equal gaps' counts added up to a packed run's most, and every
// block read is released.
func TestITLSorterMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 41))
	list := func(n, gaps int) (itlSamples, map[uint64]uint64) {
		var s itlSamples
		for range n {
			s.add(sim.Time(r.IntN(gaps)), 1+r.Int64N(itlMaxCount/2))
		}
		want := map[uint64]uint64{}
		for i := range s.n {
			want[*s.at(i)>>itlCountBits] += *s.at(i) & itlMaxCount
		}
		s.sortMerge()
		return s, want
	}
	for trial := range 60 {
		p := newSorter()
		nx, ny := r.IntN(3*itlBlock), r.IntN(3*itlBlock)
		gaps := 1 + r.IntN(4*itlBlock)
		x, wx := list(nx, gaps)
		y, wy := list(ny, gaps)
		m := p.merge(streamITL, x, y)
		for g, k := range wy {
			wx[g] += k
		}
		got := map[uint64]uint64{}
		for i := range m.n {
			v := *m.at(i)
			if i > 0 && *m.at(i - 1)>>itlCountBits > v>>itlCountBits {
				t.Fatalf("trial %d: run %d out of order", trial, i)
			}
			if i > 0 && *m.at(i - 1)>>itlCountBits == v>>itlCountBits && *m.at(i - 1)&itlMaxCount+v&itlMaxCount <= itlMaxCount {
				t.Fatalf("trial %d: runs %d and %d of one gap not merged", trial, i-1, i)
			}
			got[v>>itlCountBits] += v & itlMaxCount
		}
		if len(got) != len(wx) {
			t.Fatalf("trial %d: %d gaps, want %d", trial, len(got), len(wx))
		}
		for g, k := range wx {
			if got[g] != k {
				t.Fatalf("trial %d: gap %d counts %d, want %d", trial, g, got[g], k)
			}
		}
		if len(m.b) != (m.n+itlBlockMask)>>itlBlockBits {
			t.Fatalf("trial %d: %d runs in %d blocks", trial, m.n, len(m.b))
		}
		for _, b := range slices.Concat(x.b, y.b) {
			if b != nil {
				t.Fatalf("trial %d: a block read was not released", trial)
			}
		}
	}
}

// TestSummaryIndependentOfGOMAXPROCS checks whole Summaries (their JSON,
// which writes each float64 exactly) of collectors given the same calls
// under GOMAXPROCS 1 (nothing handed off), 2 and 3, and 2 with SortInline
// (nothing handed off either), summarized also on the
// way: records of classes (whose collectors hand off too), disaggregated
// ones (all five phases), rejected ones, one-token ones (no TPOT), at
// lengths about a latency block's and of several, and ITL runs.
func TestSummaryIndependentOfGOMAXPROCS(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 42))
	for _, n := range []int{0, 1, 300, 7936, 7937, maxBlock + 7936, 3*maxBlock + 5, 60_000} {
		recs := make([]Record, n)
		var at sim.Time
		for i := range recs {
			at += sim.Time(r.Int64N(1e8))
			rec := Record{ID: int64(i), Arrival: at, PromptTokens: 1 + r.IntN(4000), OutputTokens: 1 + r.IntN(3)*r.IntN(300)}
			rec.Scheduled = at + sim.Time(r.Int64N(5e7))
			rec.FirstToken = rec.Scheduled + sim.Time(r.Int64N(int64(1+r.IntN(3))*4e8))
			rec.Finish = rec.FirstToken + sim.Time(r.Int64N(5e9))
			if r.IntN(3) == 0 {
				rec.TransferStart = rec.FirstToken + sim.Time(r.Int64N(1e6))
				rec.TransferEnd = rec.TransferStart + sim.Time(1+r.Int64N(1e7))
				rec.Finish = max(rec.Finish, rec.TransferEnd)
			}
			if r.IntN(4) == 0 {
				rec.Class = []string{"a", "b"}[r.IntN(2)]
			}
			if r.IntN(50) == 0 {
				rec.Rejected = "queue-full"
			}
			recs[i] = rec
		}
		runs := make([]itlRun, 4*n)
		for i := range runs {
			runs[i] = itlRun{sim.Time(6e6 + r.Int64N(1e6)<<r.IntN(8)), 1 + r.Int64N(100)}
		}
		summaries := func(procs int, inline bool) []string {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			c := NewCollector(SLO{TTFT: 200 * ms})
			if inline {
				c.SortInline()
			}
			var out []string
			for k := range 3 {
				for i := k * n / 3; i < (k+1)*n/3; i++ {
					c.Add(&recs[i])
				}
				for i := k * len(runs) / 3; i < (k+1)*len(runs)/3; i++ {
					c.AddITL(runs[i].gap, int(runs[i].n))
				}
				b, err := json.Marshal(c.Summary())
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, string(b))
			}
			if procs == 1 || inline {
				if c.sort != nil {
					t.Fatalf("GOMAXPROCS %d, inline %v: a block was handed off", procs, inline)
				}
				for name, cc := range c.classes {
					if cc.sort != nil {
						t.Fatalf("GOMAXPROCS %d, inline %v: class %s handed a block off", procs, inline, name)
					}
				}
			}
			return out
		}
		want := summaries(1, false)
		for _, tc := range []struct {
			procs  int
			inline bool
		}{{2, false}, {3, false}, {2, true}} {
			got := summaries(tc.procs, tc.inline)
			for k := range want {
				if got[k] != want[k] {
					t.Fatalf("n=%d, summary %d: GOMAXPROCS %d, SortInline %v\n%s\nGOMAXPROCS 1\n%s", n, k, tc.procs, tc.inline, got[k], want[k])
				}
			}
		}
	}
}

// BenchmarkSorterWork is the sorter's whole work for runLike's calls
// (720,000 ITL runs, 100,000 requests), done on one goroutine: sorting
// every full block handed off and merging all into one list a sample
// ("sorter"), against the sorts Summary does without a sorter ("whole").
func BenchmarkSorterWork(b *testing.B) {
	recs, runs := runLikeCalls(100_000, 720_000)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	c := collect(recs, runs) // nothing handed off: every block kept
	b.Run("sorter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			var jobs []sortJob
			for k := range c.itl.b[:c.itl.n>>itlBlockBits] {
				jobs = append(jobs, sortJob{streamITL, slices.Clone(c.itl.b[k])})
			}
			for i, bs := range c.keys {
				for _, blk := range bs {
					if len(blk) == maxBlock {
						jobs = append(jobs, sortJob{1 + i, slices.Clone(blk)})
					}
				}
			}
			p := newSorter()
			b.StartTimer()
			for _, j := range jobs {
				p.add(j)
			}
			for st := range p.lists {
				p.result(st, sortedList{})
			}
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		var scratch []uint64
		for b.Loop() {
			b.StopTimer()
			itl := c.itl.clone()
			b.StartTimer()
			itl.sortMerge()
			for _, bs := range c.keys {
				keys, s := keysIn(scratch, blocks[uint64](bs).len())
				k := 0
				for _, blk := range bs {
					k += copy(keys[k:], blk)
				}
				sortKeys(keys, s[len(keys):])
				scratch = s
			}
		}
	})
}
