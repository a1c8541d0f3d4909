package metrics

import (
	"runtime"
	"sync"
)

// The ITL runs are sorted while the run goes on: each full block of
// packed runs (itlBlock of them) is handed to itlSorter, which sorts and
// merges it (sortGaps, compact) on a goroutine of its own and merges it
// into the runs sorted before, so that Summary only sorts the last,
// partial block and merges a few sorted lists. The sorted lists are kept
// as a binary counter: a list merged from 2^k blocks is merged with the
// next one of 2^k blocks, so each run is merged about log₂(blocks) times,
// and equal gaps merge as they meet (a 100k-request run's 720,000 runs
// hold 230,000 distinct gaps), so the blocks the merges free are reused
// for the runs still to come. The merged runs are those of sortMerge:
// sorted by gap, one gap's runs consecutive; itlCursor reads them alike.
// No result depends on when or where a block is sorted.
//
// With GOMAXPROCS 1 no block is handed off: the collector's goroutine
// would do the same work, and more (the merges), so Summary sorts the
// blocks kept as it always did.

// itlSorter sorts and merges the full blocks of packed runs it is given.
// One goroutine at a time works on it (busy); mu guards the queue, the
// free blocks and busy.
type itlSorter struct {
	mu    sync.Mutex
	idle  sync.Cond // signalled when busy turns false
	busy  bool
	queue [][]uint64 // full blocks of unsorted runs, in the order given
	free  [][]uint64 // blocks for reuse (itlBlock long)

	// Touched only by the goroutine that set busy.
	lists []itlList // sorted, merged; weights strictly decrease
	gaps  gapSorter
}

// itlList is a list of sorted, merged runs (the n packed runs of b, as in
// itlSamples) and the number of blocks it was merged from.
type itlList struct {
	s      itlSamples
	weight int
}

// newITLSorter returns an empty itlSorter.
func newITLSorter() *itlSorter {
	p := &itlSorter{}
	p.idle.L = &p.mu
	return p
}

// handOff gives p the full block b of unsorted runs and returns a block
// for the runs to come (nil when none is free). A goroutine is started to
// sort it unless one is at work.
func (p *itlSorter) handOff(b []uint64) []uint64 {
	p.mu.Lock()
	p.queue = append(p.queue, b)
	start := !p.busy
	p.busy = true
	spare := p.takeLocked()
	p.mu.Unlock()
	if start {
		go p.work()
	}
	return spare
}

// work sorts the queued blocks until none is left.
func (p *itlSorter) work() {
	p.mu.Lock()
	for len(p.queue) > 0 {
		b := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		p.mu.Unlock()
		p.add(b)
		p.mu.Lock()
	}
	p.queue = p.queue[:0:0]
	p.busy = false
	p.idle.Broadcast()
	p.mu.Unlock()
}

// own waits until no goroutine works on p and sorts the blocks still
// queued on the caller's; p is the caller's until it hands off again.
func (p *itlSorter) own() {
	p.mu.Lock()
	for p.busy {
		p.idle.Wait()
	}
	q := p.queue
	p.queue = nil
	p.mu.Unlock()
	for _, b := range q {
		p.add(b)
	}
}

// add sorts and merges the full block b of runs and merges it into the
// lists while the last two were merged from as many blocks.
func (p *itlSorter) add(b []uint64) {
	s := itlSamples{b: [][]uint64{b}, n: itlBlock}
	p.gaps.sort(s.b, 0, itlBlock, 0)
	insertionGaps(s.b, 0, itlBlock)
	s.compact()
	p.lists = append(p.lists, itlList{s, 1})
	for k := len(p.lists) - 1; k > 0 && p.lists[k-1].weight == p.lists[k].weight; k-- {
		p.lists[k-1] = itlList{p.merge(p.lists[k-1].s, p.lists[k].s), 2 * p.lists[k].weight}
		p.lists[k] = itlList{}
		p.lists = p.lists[:k]
	}
}

// result merges the sorted, merged packed runs of tail (its blocks are p's
// from then on) and the lists into one list, kept as p's only list, and
// returns it. The caller owns p (own).
func (p *itlSorter) result(tail itlSamples) itlSamples {
	s := itlSamples{}
	if tail.n > 0 {
		s = tail
	}
	w := 0
	for k := len(p.lists) - 1; k >= 0; k-- { // smallest first
		if s.n == 0 {
			s = p.lists[k].s
		} else {
			s = p.merge(p.lists[k].s, s)
		}
		w += p.lists[k].weight
		p.lists[k] = itlList{}
	}
	p.lists = p.lists[:0]
	if s.n > 0 {
		p.lists = append(p.lists, itlList{s, max(w, 1)})
	}
	return s
}

// block returns a free block, or a new one.
func (p *itlSorter) block() []uint64 {
	p.mu.Lock()
	b := p.takeLocked()
	p.mu.Unlock()
	if b == nil {
		b = make([]uint64, itlBlock)
	}
	return b
}

func (p *itlSorter) takeLocked() []uint64 {
	k := len(p.free) - 1
	if k < 0 {
		return nil
	}
	b := p.free[k]
	p.free[k] = nil
	p.free = p.free[:k]
	return b
}

// release gives b back for reuse.
func (p *itlSorter) release(b []uint64) {
	p.mu.Lock()
	p.free = append(p.free, b)
	p.mu.Unlock()
}

// merge merges the sorted, merged runs x and y into one such list and
// returns it: runs of equal gaps become one while the count fits. Each
// block of x and y is released once read; the result's blocks come from
// block.
func (p *itlSorter) merge(x, y itlSamples) itlSamples {
	var w itlWriter
	w.p = p
	xr, yr := itlReader{p: p, s: x}, itlReader{p: p, s: y}
	xs, ys := xr.next(), yr.next()
	for len(xs) > 0 && len(ys) > 0 {
		if xs[0]>>itlCountBits <= ys[0]>>itlCountBits {
			w.put(xs[0])
			if xs = xs[1:]; len(xs) == 0 {
				xs = xr.next()
			}
		} else {
			w.put(ys[0])
			if ys = ys[1:]; len(ys) == 0 {
				ys = yr.next()
			}
		}
	}
	for ; len(xs) > 0; xs = xr.next() {
		for _, v := range xs {
			w.put(v)
		}
	}
	for ; len(ys) > 0; ys = yr.next() {
		for _, v := range ys {
			w.put(v)
		}
	}
	return w.s
}

// itlReader reads the runs of s a block at a time, releasing each block
// read.
type itlReader struct {
	p *itlSorter
	s itlSamples
	k int // the next block
}

// next releases the block read before and returns the runs of the next,
// none after the last.
func (r *itlReader) next() []uint64 {
	if r.k > 0 {
		r.p.release(r.s.b[r.k-1])
		r.s.b[r.k-1] = nil
	}
	k := r.k
	if k<<itlBlockBits >= r.s.n {
		return nil
	}
	r.k++
	return r.s.b[k][:min(itlBlock, r.s.n-k<<itlBlockBits)]
}

// itlWriter writes sorted runs into blocks, a run of the last gap written
// merged into the last run while the count fits.
type itlWriter struct {
	p   *itlSorter
	s   itlSamples
	cur []uint64 // the block of run s.n−1
}

func (w *itlWriter) put(v uint64) {
	i := w.s.n & itlBlockMask
	if w.s.n > 0 {
		l := &w.cur[(w.s.n-1)&itlBlockMask]
		if (*l^v)>>itlCountBits == 0 && *l&itlMaxCount+v&itlMaxCount <= itlMaxCount {
			*l += v & itlMaxCount
			return
		}
	}
	if i == 0 {
		w.cur = w.p.block()
		w.s.b = append(w.s.b, w.cur)
	}
	w.cur[i] = v
	w.s.n++
}

// handOffITL gives the full block of the collector's packed ITL runs to
// its sorter, unless GOMAXPROCS is 1.
func (c *Collector) handOffITL() {
	if runtime.GOMAXPROCS(0) == 1 {
		return
	}
	if c.itlSort == nil {
		c.itlSort = newITLSorter()
	}
	s := &c.itl
	b := s.b[0]
	s.b[0] = nil
	s.b, s.n = s.b[:0], 0
	s.spare = c.itlSort.handOff(b)
}

// itlSummary sorts and merges the ITL runs and summarizes them.
func (c *Collector) itlSummary() Stats {
	c.itl.sortMerge()
	p := c.itlSort
	if p == nil {
		return itlStats(&c.itl)
	}
	p.own()
	s := p.result(itlSamples{b: c.itl.b, n: c.itl.n})
	c.itl.b, c.itl.n = nil, 0
	s.wide = c.itl.wide
	return itlStats(&s)
}
