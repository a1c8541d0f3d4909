package metrics

import (
	"fmt"
	"math"
	"slices"

	"github.com/servesim/servesim/sim"
)

// Collector aggregates records and steps into a Summary. Per request it
// keeps the sort keys of its latencies (see kTTFT) and, for Saturation,
// its arrival (a key too), finish and output length, never the Record; per
// AddITL call at most one (gap, count) run, packed into 8 bytes
// (itlSamples); per step a few running sums. Full blocks of samples are
// sorted on another goroutine while the run goes on (sorter.go).
// It is not safe for concurrent use: one run is single-threaded.
type Collector struct {
	slo SLO

	// Samples are kept in blocks, never copied as they grow: the
	// latencies' keys (keys[kTTFT] …, see the constants) and the ITL runs
	// (720,000 of 8 bytes for the 100k-request run at 12 req/s). Full
	// blocks go to sort, which sorts them while the run goes on (nil: none
	// yet, or GOMAXPROCS 1).
	keys    [nKeys]blocks[uint64]
	itl     itlSamples
	sort    *sorter
	inline  bool // SortInline: no sorter
	classes map[string]*Collector
	// sat keeps each served request's arrival, finish and output tokens, in
	// blocks, and rejArr each
	// rejected one's arrival, for Saturation (24 and 8 bytes a request); a
	// class's collector keeps none (noSat).
	sat    blocks[served]
	rejArr []sim.Time
	noSat  bool
	busyBy []sim.Time

	completed, rejected, good int
	rejectedBy                map[string]int
	inTok, outTok             int64
	preemptions               int
	firstArrival, lastFinish  sim.Time
	seen                      bool // firstArrival is set

	steps              int
	busy               sim.Time
	batch              int64
	kvUseTime, kvTime  float64 // Σ fraction·seconds, Σ seconds (steps with a KV cache)
	peakKV             float64
	flops, bytes       float64
	peaks              []peak
	flopsPk, bytesPk   float64 // FLOPs, bytes on instances with known peaks
	flopsCap, bytesCap float64 // Σ duration·peak on those instances
}

// The latencies, indexes of Collector.keys: TTFT and E2E (timeKey of
// nanoseconds, which sort in fewer radix passes than milliseconds as
// floats and give the same sorted milliseconds: t ↦ float64(t)/1e6 is
// monotone), TPOT (floatKey of milliseconds: a TPOT is a quotient of
// integers, Finish − FirstToken ≥ 0 and OutputTokens − 1 ≥ 1, so never NaN
// or −0, whose keys would not sort as slices.Sort does), and the phases: queueing
// (arrival → scheduled) and prefill (scheduled → first token) for every
// served request; transfer wait, transfer and decode for disaggregated
// ones (timeKey). Then, for Saturation, the arrivals of served requests
// (timeKey; a class's collector keeps none).
const (
	kTTFT = iota
	kTPOT
	kE2E
	kQueue
	kPrefill
	kXferWait
	kXfer
	kDecode
	kArrival
	nKeys
	nLatencies = kArrival
)

type peak struct {
	flops, bytes float64 // per second, per GPU; 0 = unknown
}

// NewCollector returns an empty Collector that judges requests against slo.
// It panics if slo fails Validate: validate user input first.
func NewCollector(slo SLO) *Collector {
	if err := slo.Validate(); err != nil {
		panic(err)
	}
	return &Collector{slo: slo, rejectedBy: map[string]int{}}
}

// SetPeak records the peak FLOP/s and HBM bytes/s of one GPU of instance
// (for the precision it runs), so the Summary can report MFU and MBU. A
// cluster may mix GPU types; instances without a peak are left out of MFU
// and MBU. Call it before the steps of that instance are added.
func (c *Collector) SetPeak(instance int, flopsPerSec, bytesPerSec float64) {
	if instance < 0 || !(flopsPerSec >= 0) || !(bytesPerSec >= 0) {
		panic(fmt.Sprintf("metrics: SetPeak(%d, %v, %v)", instance, flopsPerSec, bytesPerSec))
	}
	if instance >= len(c.peaks) {
		c.peaks = append(c.peaks, make([]peak, instance+1-len(c.peaks))...)
	}
	c.peaks[instance] = peak{flopsPerSec, bytesPerSec}
}

// Add accounts for one finished or rejected request. It panics if a served
// record is inconsistent (first token before arrival, finish before first
// token, no output token). Rejected records count their reason and arrival
// and nothing else; their times are ignored.
func (c *Collector) Add(r *Record) {
	r.check()
	if !c.seen || r.Arrival < c.firstArrival {
		c.firstArrival, c.seen = r.Arrival, true
	}
	c.preemptions += r.Preemptions
	if r.Class != "" {
		cc := c.classes[r.Class]
		if cc == nil {
			if c.classes == nil {
				c.classes = map[string]*Collector{}
			}
			cc = NewCollector(c.slo)
			cc.noSat, cc.inline = true, c.inline
			c.classes[r.Class] = cc
		}
		rc := *r
		rc.Class = ""
		cc.Add(&rc)
	}
	if r.Rejected != "" {
		c.rejected++
		c.rejectedBy[r.Rejected]++
		if !c.noSat {
			c.rejArr = append(c.rejArr, r.Arrival)
		}
		return
	}
	c.completed++
	if !c.noSat {
		c.addKey(kArrival, timeKey(r.Arrival))
		c.sat.add(served{r.Finish, int64(r.OutputTokens)})
	}
	if r.Scheduled >= r.Arrival && (r.Scheduled > 0 || r.Arrival == 0) {
		c.addKey(kQueue, timeKey(r.Scheduled-r.Arrival))
		c.addKey(kPrefill, timeKey(r.FirstToken-r.Scheduled))
	}
	if r.TransferEnd > 0 {
		c.addKey(kXferWait, timeKey(r.TransferStart-r.FirstToken))
		c.addKey(kXfer, timeKey(r.TransferEnd-r.TransferStart))
		c.addKey(kDecode, timeKey(r.Finish-r.TransferEnd))
	}
	c.inTok += int64(r.PromptTokens)
	c.outTok += int64(r.OutputTokens)
	c.lastFinish = max(c.lastFinish, r.Finish)
	c.addKey(kTTFT, timeKey(r.TTFT()))
	c.addKey(kE2E, timeKey(r.E2E()))
	if ms, ok := r.TPOT(); ok { // never NaN or −0 (see keys): its key's order is slices.Sort's
		c.addKey(kTPOT, floatKey(ms))
	}
	if c.slo.Override(r.SLO).Met(r) {
		c.good++
	}
}

// addKey adds k to keys[i] and hands the block off when k fills it.
func (c *Collector) addKey(i int, k uint64) {
	bs := c.keys[i]
	n := len(bs) - 1
	if n < 0 || len(bs[n]) == cap(bs[n]) {
		size := 256
		if n >= 0 {
			size = min(maxBlock, 2*cap(bs[n]))
		}
		var b []uint64
		if size == maxBlock && c.sort != nil {
			b = c.sort.block()[:0]
		} else {
			b = make([]uint64, 0, size)
		}
		bs = append(bs, b)
		c.keys[i] = bs
		n++
	}
	bs[n] = append(bs[n], k)
	if len(bs[n]) == maxBlock {
		c.handOffKeys(i)
	}
}

// AddITL accounts for n inter-token gaps all equal to gap: a decode step
// that yields one token for each of n requests adds n gaps of the time since
// each one's previous token. Consecutive calls with the same gap merge. It
// panics on a negative gap or n.
func (c *Collector) AddITL(gap sim.Time, n int) {
	if gap < 0 || n < 0 {
		panic(fmt.Sprintf("metrics: AddITL(%d, %d)", gap, n))
	}
	if n == 0 {
		return
	}
	c.itl.add(gap, int64(n))
	if c.itl.n == itlBlock {
		c.handOffITL()
	}
}

// AddStep accounts for one model step. It panics if the step is
// inconsistent (negative fields, more KV blocks used than there are).
func (c *Collector) AddStep(s *Step) {
	s.check()
	c.steps++
	c.busy += s.Duration
	if s.Instance >= 0 {
		if s.Instance >= len(c.busyBy) {
			c.busyBy = append(c.busyBy, make([]sim.Time, s.Instance+1-len(c.busyBy))...)
		}
		c.busyBy[s.Instance] += s.Duration
	}
	c.batch += int64(s.Prefills + s.Decodes)
	sec := s.Duration.Seconds()
	if s.KVBlocksTotal > 0 {
		f := float64(s.KVBlocksUsed) / float64(s.KVBlocksTotal)
		c.kvUseTime += f * sec
		c.kvTime += sec
		c.peakKV = max(c.peakKV, f)
	}
	c.flops += s.FLOPs
	c.bytes += s.Bytes
	if s.Instance >= 0 && s.Instance < len(c.peaks) {
		p := c.peaks[s.Instance]
		if p.flops > 0 {
			c.flopsPk += s.FLOPs
			c.flopsCap += p.flops * sec
		}
		if p.bytes > 0 {
			c.bytesPk += s.Bytes
			c.bytesCap += p.bytes * sec
		}
	}
}

// Summary computes the summary of everything added so far. It sorts copies
// of the samples (the ITL runs it merges in place, which changes no
// result), so it may be called again, also after more Adds. Results do not
// depend on the order in which records and gaps were added.
func (c *Collector) Summary() Summary {
	s := Summary{
		Completed:    c.completed,
		Rejected:     c.rejected,
		RejectedBy:   make(map[string]int, len(c.rejectedBy)),
		InputTokens:  c.inTok,
		OutputTokens: c.outTok,
		SLO:          c.slo,
		Preemptions:  c.preemptions,
		Steps:        c.steps,
		BusyTime:     c.busy.Seconds(),
		PeakKVUse:    c.peakKV,
	}
	for k, v := range c.rejectedBy {
		s.RejectedBy[k] = v
	}
	if c.completed > 0 {
		s.Duration = (c.lastFinish - c.firstArrival).Seconds()
	}
	if s.Duration > 0 {
		s.RequestThroughput = float64(c.completed) / s.Duration
		s.OutputThroughput = float64(c.outTok) / s.Duration
		s.TotalThroughput = float64(c.inTok+c.outTok) / s.Duration
		s.Goodput = float64(c.good) / s.Duration
	}
	if total := c.completed + c.rejected; total > 0 {
		s.Attainment = float64(c.good) / float64(total)
	}

	// The ITL runs and some latencies are summarized by a goroutine while
	// the other latencies are summarized and saturation judged here; each
	// writes only its own fields of s. With a sorter (see sorter.go) most
	// of the sorting is done already; without, the ITL runs are about half
	// the work.
	if c.sort != nil {
		c.sort.own()
	}
	lat := [nLatencies]*Stats{&s.TTFT, &s.TPOT, &s.E2E, &s.Phases.Queue, &s.Phases.Prefill,
		&s.Phases.TransferWait, &s.Phases.Transfer, &s.Phases.Decode}
	var there []int // the latencies the goroutine summarizes
	if c.sort != nil {
		there = []int{kE2E, kTPOT}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ITL = c.itlSummary()
		var scratch []uint64
		for _, i := range there {
			var l itlSamples
			l, scratch = c.sortedKeys(i, scratch)
			*lat[i] = listStats(l, i != kTPOT)
		}
	}()
	var scratch []uint64
	if n := c.sat.len(); !c.noSat {
		// The sorts' keys and other buffer, then saturation's; with a
		// sorter the sorts take only what was not handed off.
		if c.sort == nil {
			n *= 3
		}
		scratch = make([]uint64, n)
	}
	for i := range nLatencies {
		if !slices.Contains(there, i) {
			var l itlSamples
			l, scratch = c.sortedKeys(i, scratch)
			*lat[i] = listStats(l, i != kTPOT)
		}
	}
	if !c.noSat {
		arr, fin := c.sortedKeys(kArrival, scratch)
		if c.sort == nil {
			fin = fin[2*arr.n:] // the arrivals sorted lie in the first 2n
		}
		s.Saturation = saturation(arr, c.sat, c.rejArr, fin)
	}
	<-done
	if c.steps > 0 {
		s.MeanBatch = float64(c.batch) / float64(c.steps)
	}
	if c.kvTime > 0 {
		s.MeanKVUse = c.kvUseTime / c.kvTime
	}
	if s.BusyTime > 0 {
		s.AchievedFLOPS = c.flops / s.BusyTime
		s.AchievedBandwidth = c.bytes / s.BusyTime
	}
	if c.flopsCap > 0 {
		s.MFU = c.flopsPk / c.flopsCap
	}
	if c.bytesCap > 0 {
		s.MBU = c.bytesPk / c.bytesCap
	}
	for _, b := range c.busyBy {
		s.BusyByInstance = append(s.BusyByInstance, b.Seconds())
	}
	if len(c.classes) > 0 {
		s.ByClass = map[string]ClassSummary{}
		for name, cc := range c.classes {
			cs := cc.Summary()
			s.ByClass[name] = ClassSummary{Completed: cs.Completed, Rejected: cs.Rejected, TTFT: cs.TTFT, TPOT: cs.TPOT,
				E2E: cs.E2E, Attainment: cs.Attainment}
		}
	}
	return s
}

// sortedKeys returns the keys of keys[i] sorted, as a list like
// itlSamples's, and scratch (grown when short) for reuse. Without a sorter
// it sorts a copy of the keys in scratch, which holds the list; with one
// it sorts the keys not handed off and merges them with the sorted lists,
// where they stay, in the sorter's blocks.
func (c *Collector) sortedKeys(i int, scratch []uint64) (itlSamples, []uint64) {
	bs := c.keys[i]
	keys, scratch := keysIn(scratch, blocks[uint64](bs).len())
	k := 0
	for _, b := range bs {
		k += copy(keys[k:], b)
	}
	sorted := sortKeys(keys, scratch[len(keys):])
	p := c.sort
	if p == nil {
		return sortedChunks(sorted), scratch
	}
	var tail itlSamples
	for len(sorted) > 0 {
		b := p.block()
		tail.b = append(tail.b, b)
		n := copy(b, sorted)
		sorted = sorted[n:]
		tail.n += n
	}
	for k, b := range bs {
		p.release(b)
		bs[k] = nil
	}
	c.keys[i] = nil
	return p.result(1+i, sortedList{tail, tail.n}), scratch
}

// sortedChunks returns the sorted values v as a list: itlBlock values a
// block, the last one shorter. Its blocks are v's, never to be released.
func sortedChunks(v []uint64) itlSamples {
	s := itlSamples{n: len(v)}
	for ; len(v) > itlBlock; v = v[itlBlock:] {
		s.b = append(s.b, v[:itlBlock])
	}
	if len(v) > 0 {
		s.b = append(s.b, v)
	}
	return s
}

// listStats summarizes the sorted keys of s (timeKey of nanoseconds when
// time, else floatKey of milliseconds) in milliseconds, as sampleStats
// summarizes them sorted (the same additions in the same order).
func listStats(s itlSamples, time bool) Stats {
	if s.n == 0 {
		return Stats{}
	}
	var sum float64
	for k, b := range s.b {
		b = b[:min(itlBlock, s.n-k<<itlBlockBits)]
		if time {
			for _, x := range b {
				sum += timeOfKey(x).Milliseconds()
			}
		} else {
			for _, x := range b {
				sum += floatOfKey(x)
			}
		}
	}
	n := int64(s.n)
	mean := sum / float64(n)
	var ss float64
	for k, b := range s.b {
		b = b[:min(itlBlock, s.n-k<<itlBlockBits)]
		if time {
			for _, x := range b {
				v := timeOfKey(x).Milliseconds()
				ss += (v - mean) * (v - mean)
			}
		} else {
			for _, x := range b {
				v := floatOfKey(x)
				ss += (v - mean) * (v - mean)
			}
		}
	}
	return finish(Stats{N: n, Mean: mean, Std: math.Sqrt(ss / float64(n))}, func(k int64) float64 {
		if time {
			return timeOfKey(*s.at(int(k))).Milliseconds()
		}
		return floatOfKey(*s.at(int(k)))
	})
}
