package metrics

import (
	"runtime"
	"sync"
)

// Samples are sorted while the run goes on: each full block of a sample
// (itlBlock values: packed ITL runs, or the keys of a latency) is handed
// to a sorter, which sorts it on a goroutine of its own and merges it
// into the lists of the same sample sorted before, so that Summary only
// sorts the values of the blocks not handed off (the last, partial one;
// the smaller first ones of a latency) and merges a few sorted lists. A
// sample's lists are merged like a binary counter's digits (a list is
// merged into the one before while that one holds no more blocks' worth),
// so each value is merged about log₂(blocks) times; ITL runs of equal gaps
// merge as they meet (a 100k-request run's 720,000 runs hold 230,000
// distinct gaps), and the blocks each merge frees are reused for the
// samples still to come. The sorted keys are unique and the merged ITL
// runs are those of sortMerge (sorted by gap, one gap's runs consecutive,
// which itlCursor reads as one), so no result depends on when or on which
// goroutine a block is sorted.
//
// With GOMAXPROCS 1 nothing is handed off: the collector's goroutine would
// do the same work, and the merges too, so Summary sorts the blocks kept
// as it always did.

// stream numbers a sorter's samples: the ITL runs, then Collector.keys.
const streamITL = 0

// sorter sorts and merges the full blocks of samples it is given. One
// goroutine at a time works on it (busy); mu guards queue, free and busy.
type sorter struct {
	mu    sync.Mutex
	idle  sync.Cond // signalled when busy turns false
	busy  bool
	queue []sortJob  // in the order given
	free  [][]uint64 // blocks for reuse (itlBlock long)

	// Touched only by the goroutine that set busy, or that owns the
	// sorter (own).
	lists  [1 + nKeys][]sortedList // a stream's lists; weights decrease
	tmp    []uint64                // the radix sort's other buffer: a block
	counts []int                   // and its counts
}

// sortJob is a full block of stream's values, unsorted.
type sortJob struct {
	stream int
	b      []uint64
}

// sortedList holds a stream's sorted values (the n values of b, as in
// itlSamples: every block itlBlock long but the last, which may be
// shorter) and how many values it was merged from, which the merges
// compare.
type sortedList struct {
	s      itlSamples
	weight int
}

// newSorter returns an empty sorter.
func newSorter() *sorter {
	p := &sorter{}
	p.idle.L = &p.mu
	return p
}

// handOff gives p the full block b of stream's values. A goroutine is
// started to sort it unless one is at work.
func (p *sorter) handOff(stream int, b []uint64) {
	p.mu.Lock()
	p.queue = append(p.queue, sortJob{stream, b})
	start := !p.busy
	p.busy = true
	p.mu.Unlock()
	if start {
		go p.work()
	}
}

// work sorts the queued blocks until none is left.
func (p *sorter) work() {
	p.mu.Lock()
	for len(p.queue) > 0 {
		j := p.queue[0]
		p.queue[0] = sortJob{}
		p.queue = p.queue[1:]
		p.mu.Unlock()
		p.add(j)
		p.mu.Lock()
	}
	p.queue = p.queue[:0:0]
	p.busy = false
	p.idle.Broadcast()
	p.mu.Unlock()
}

// own waits until no goroutine works on p and sorts the blocks still
// queued on the caller's; p is the caller's until it hands off again.
func (p *sorter) own() {
	p.mu.Lock()
	for p.busy {
		p.idle.Wait()
	}
	q := p.queue
	p.queue = nil
	p.mu.Unlock()
	for _, j := range q {
		p.add(j)
	}
}

// add sorts the block of j (and merges its runs of equal gaps, for ITL)
// and adds it to the stream's lists.
func (p *sorter) add(j sortJob) {
	if p.tmp == nil {
		p.tmp = make([]uint64, itlBlock)
	}
	skip := 0 // keys: by value
	if j.stream == streamITL {
		skip = itlCountBits // runs: by gap (a block's fit in the L2 cache: radix passes beat gapSorter's sweeps)
	}
	s := itlSamples{b: [][]uint64{j.b}, n: len(j.b)}
	if out := radixTop(j.b, p.tmp[:len(j.b)], skip, &p.counts); &out[0] != &j.b[0] {
		s.b[0], p.tmp = out, j.b[:cap(j.b)] // j.b is the other buffer now
	}
	if j.stream == streamITL {
		s.compact()
	}
	p.push(j.stream, sortedList{s, len(j.b)})
}

// push adds l to the stream's lists and merges the last two while the one
// before holds no more values than the last was merged from.
func (p *sorter) push(stream int, l sortedList) {
	ls := append(p.lists[stream], l)
	for k := len(ls) - 1; k > 0 && ls[k-1].weight <= ls[k].weight; k-- {
		ls[k-1] = sortedList{p.merge(stream, ls[k-1].s, ls[k].s), ls[k-1].weight + ls[k].weight}
		ls[k] = sortedList{}
		ls = ls[:k]
	}
	p.lists[stream] = ls
}

// result merges the stream's sorted values tail (its blocks p's from then
// on) and lists into one list, kept as the stream's only list, and returns
// it. The caller owns p (own).
func (p *sorter) result(stream int, tail sortedList) itlSamples {
	ls := p.lists[stream]
	s, w := tail.s, tail.weight
	for k := len(ls) - 1; k >= 0; k-- { // smallest first
		if s.n == 0 {
			s = ls[k].s
		} else if ls[k].s.n > 0 {
			s = p.merge(stream, ls[k].s, s)
		}
		w += ls[k].weight
		ls[k] = sortedList{}
	}
	ls = ls[:0]
	if s.n > 0 {
		ls = append(ls, sortedList{s, w})
	}
	p.lists[stream] = ls
	return s
}

// block returns a free block, or a new one.
func (p *sorter) block() []uint64 {
	p.mu.Lock()
	b := p.takeLocked()
	p.mu.Unlock()
	if b == nil {
		b = make([]uint64, itlBlock)
	}
	return b
}

func (p *sorter) takeLocked() []uint64 {
	k := len(p.free) - 1
	if k < 0 {
		return nil
	}
	b := p.free[k]
	p.free[k] = nil
	p.free = p.free[:k]
	return b
}

// release gives b back for reuse if it is a block's length.
func (p *sorter) release(b []uint64) {
	if cap(b) != itlBlock {
		return
	}
	p.mu.Lock()
	p.free = append(p.free, b[:itlBlock])
	p.mu.Unlock()
}

// merge merges the sorted lists x and y of stream into one and returns it:
// ITL runs by gap, runs of equal gaps made one while the count fits; keys
// by value. Each block of x and y is released once read; the result's
// blocks come from block. The loops choose without branches (the next
// value is x's or y's about at random), which halves their time.
func (p *sorter) merge(stream int, x, y itlSamples) itlSamples {
	itl := stream == streamITL
	xr, yr := sortedReader{p: p, s: x}, sortedReader{p: p, s: y}
	xs, ys := xr.next(), yr.next()
	var out itlSamples
	var ob []uint64 // out's last block
	k := itlBlock   // the next place in ob
	// An ITL run is written when the next one is not of its gap (pending);
	// a key at once.
	var last uint64
	pending := false
	if itl {
		if len(xs) > 0 && (len(ys) == 0 || xs[0]>>itlCountBits <= ys[0]>>itlCountBits) {
			last, xs = xs[0], xs[1:]
		} else if len(ys) > 0 {
			last, ys = ys[0], ys[1:]
		}
		pending = x.n+y.n > 0
	}
	for {
		if len(xs) == 0 {
			xs = xr.next()
		}
		if len(ys) == 0 {
			ys = yr.next()
		}
		if len(xs) == 0 && len(ys) == 0 {
			break
		}
		if k == itlBlock {
			ob, k = p.block(), 0
			out.b = append(out.b, ob)
		}
		var i, j, n int
		switch {
		case itl && len(xs) == 0:
			j, _, n, last = mergeRuns(ob[k:], ys, nil, last)
		case itl:
			i, j, n, last = mergeRuns(ob[k:], xs, ys, last)
		case len(xs) == 0:
			n = copy(ob[k:], ys)
			j = n
		case len(ys) == 0:
			n = copy(ob[k:], xs)
			i = n
		default:
			i, j, n = mergeKeys(ob[k:], xs, ys)
		}
		xs, ys, k, out.n = xs[i:], ys[j:], k+n, out.n+n
	}
	if pending {
		if k == itlBlock {
			ob, k = p.block(), 0
			out.b = append(out.b, ob)
		}
		ob[k] = last
		out.n++
	}
	return out
}

// mergeKeys merges the sorted keys x and y into out until one of the
// three ends; it returns how many of x and y it read and of out it wrote.
func mergeKeys(out, x, y []uint64) (i, j, k int) {
	for i < len(x) && j < len(y) && k < len(out) {
		a, b := x[i], y[j]
		v, d := b, 0
		if a <= b {
			v, d = a, 1
		}
		out[k] = v
		k++
		i += d
		j += 1 - d
	}
	return i, j, k
}

// mergeRuns merges the sorted runs x and y after the run last, not yet
// written, into out until one of the three ends: a run of last's gap is
// added to it while the count fits, else last is written and the run is
// the last. It returns how many runs of x and y it read and of out it
// wrote, and the last run. y may be empty once x is the only input left.
func mergeRuns(out, x, y []uint64, last uint64) (i, j, k int, _ uint64) {
	for k < len(out) && i < len(x) && (j < len(y) || len(y) == 0) {
		v := x[i]
		d := 1
		if j < len(y) {
			if b := y[j]; v>>itlCountBits > b>>itlCountBits {
				v, d = b, 0
			}
		}
		i += d
		j += 1 - d
		out[k] = last // written again while runs of its gap follow
		// Same gap, and the counts' sum fits (it is below 2²⁵).
		same := ((last^v)>>itlCountBits | (last&itlMaxCount+v&itlMaxCount)>>itlCountBits) == 0
		next, w := v, 1
		if same {
			next, w = last+v&itlMaxCount, 0
		}
		last = next
		k += w
	}
	if len(y) == 0 {
		j = 0
	}
	return i, j, k, last
}

// sortedReader reads the values of s a block at a time, releasing each
// block read.
type sortedReader struct {
	p *sorter
	s itlSamples
	k int // the next block
}

// next releases the block read before and returns the values of the
// next, none after the last.
func (r *sortedReader) next() []uint64 {
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

// sorting returns the collector's sorter, nil when blocks are not handed
// off (GOMAXPROCS 1, or SortInline).
func (c *Collector) sorting() *sorter {
	if c.sort == nil && !c.inline && runtime.GOMAXPROCS(0) > 1 {
		c.sort = newSorter()
	}
	return c.sort
}

// handOffITL gives the full block of the collector's packed ITL runs to
// its sorter, if it has one.
func (c *Collector) handOffITL() {
	p := c.sorting()
	if p == nil {
		return
	}
	s := &c.itl
	b := s.b[0]
	s.b[0] = nil
	s.b, s.n = s.b[:0], 0
	p.handOff(streamITL, b)
	s.spare = p.block()
}

// handOffKeys gives the full last block of keys[i] to the collector's
// sorter, if it has one.
func (c *Collector) handOffKeys(i int) {
	p := c.sorting()
	if p == nil {
		return
	}
	bs := c.keys[i]
	n := len(bs) - 1
	b := bs[n]
	bs[n] = nil
	c.keys[i] = bs[:n]
	p.handOff(1+i, b)
}

// itlSummary sorts and merges the ITL runs and summarizes them.
func (c *Collector) itlSummary() Stats {
	c.itl.sortMerge()
	p := c.sort
	if p == nil {
		return itlStats(&c.itl)
	}
	s := p.result(streamITL, sortedList{itlSamples{b: c.itl.b, n: c.itl.n}, c.itl.n})
	c.itl.b, c.itl.n = nil, 0
	s.wide = c.itl.wide
	return itlStats(&s)
}

// The sorter's blocks are the latencies' largest blocks too.
var _ [maxBlock - itlBlock]struct{}
var _ [itlBlock - maxBlock]struct{}

// SortInline has c hand no block off: every sample is sorted on the
// caller's goroutine at Summary, as with GOMAXPROCS 1. For a run among
// others that keep every core busy (a sweep's points on as many workers as
// cores), where a sorter's goroutine takes a core from another run and its
// merges are work a sort at the end does not do. Measured on a sweep of
// experiments/batching.toml (30 paired runs, two cores, docs/performance.md):
// on two workers, without a sorter, wall time −1.8 %, CPU −0.7 %; on one
// worker the sorter's spare core is worth 9 % of wall time, so it stays.
// The Summary is the same either way. Call it before the first Add.
func (c *Collector) SortInline() { c.inline = true }
