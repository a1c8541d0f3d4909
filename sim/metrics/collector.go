package metrics

import (
	"fmt"
	"slices"

	"github.com/servesim/servesim/sim"
)

// Collector aggregates records and steps into a Summary. Per request it
// keeps its TTFT and E2E (integer nanoseconds, which sort in fewer radix
// passes than milliseconds as floats and give the same sorted milliseconds:
// t ↦ float64(t)/1e6 is monotone), its TPOT (a float64, ms) and, for
// Saturation, its arrival, finish and output length, never the Record; per
// AddITL call at most one (gap, count) run, packed into 8 bytes
// (itlSamples); per step a few running sums.
// It is not safe for concurrent use: one run is single-threaded.
type Collector struct {
	slo SLO

	// Samples are kept in blocks, never copied as they grow.
	ttft, e2e blocks[sim.Time]
	tpot      blocks[float64] // ms
	itl       itlSamples      // 720,000 runs of 8 bytes for the 100k-request run at 12 req/s
	itlSort   *itlSorter      // the full blocks of itl, sorted while the run goes on (nil: none)
	// Phases: queueing (arrival → scheduled) and prefill (scheduled →
	// first token) for every served request; transfer wait, transfer and
	// decode for disaggregated ones.
	queue, prefill, xferWait, xfer, decode blocks[sim.Time]
	classes                                map[string]*Collector
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
			cc.noSat = true
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
		c.sat.add(served{r.Arrival, r.Finish, int64(r.OutputTokens)})
	}
	if r.Scheduled >= r.Arrival && (r.Scheduled > 0 || r.Arrival == 0) {
		c.queue.add(r.Scheduled - r.Arrival)
		c.prefill.add(r.FirstToken - r.Scheduled)
	}
	if r.TransferEnd > 0 {
		c.xferWait.add(r.TransferStart - r.FirstToken)
		c.xfer.add(r.TransferEnd - r.TransferStart)
		c.decode.add(r.Finish - r.TransferEnd)
	}
	c.inTok += int64(r.PromptTokens)
	c.outTok += int64(r.OutputTokens)
	c.lastFinish = max(c.lastFinish, r.Finish)
	c.ttft.add(r.TTFT())
	c.e2e.add(r.E2E())
	if ms, ok := r.TPOT(); ok {
		c.tpot.add(ms)
	}
	if c.slo.Override(r.SLO).Met(r) {
		c.good++
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

	// The ITL runs (about half the work for a 100k-request run) are
	// computed by a goroutine while the samples are sorted and saturation
	// judged here; each writes only its own fields of s.
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ITL = c.itlSummary()
	}()
	var scratch []uint64
	if !c.noSat {
		scratch = make([]uint64, 3*c.sat.len()) // the sorts' keys and other buffer, then saturation's
	}
	var ms []float64
	scratch, ms = timeStats(c.ttft, scratch, ms, &s.TTFT)
	scratch, ms = floatStats(c.tpot, scratch, ms, &s.TPOT)
	scratch, ms = timeStats(c.e2e, scratch, ms, &s.E2E)
	for _, ph := range []struct {
		v   blocks[sim.Time]
		dst *Stats
	}{{c.queue, &s.Phases.Queue}, {c.prefill, &s.Phases.Prefill}, {c.xferWait, &s.Phases.TransferWait},
		{c.xfer, &s.Phases.Transfer}, {c.decode, &s.Phases.Decode}} {
		scratch, ms = timeStats(ph.v, scratch, ms, ph.dst)
	}
	if !c.noSat {
		s.Saturation = saturation(c.sat, c.rejArr, scratch)
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

// timeStats sets *dst to the stats of the sample v in milliseconds, sorted
// into ms; it returns the scratch slices for reuse.
func timeStats(v blocks[sim.Time], scratch []uint64, ms []float64, dst *Stats) ([]uint64, []float64) {
	var sorted []uint64
	sorted, scratch = sortedTimeKeys(v, scratch)
	ms = slices.Grow(ms[:0], len(sorted))[:len(sorted)]
	var sum float64
	for i, k := range sorted {
		x := timeOfKey(k).Milliseconds()
		ms[i] = x
		sum += x // in sampleStats's order: one pass fewer
	}
	*dst = sampleStatsSum(ms, sum)
	return scratch, ms
}

// floatStats sets *dst to the stats of the sample v, sorted into ms; it
// returns the scratch slices for reuse.
func floatStats(v blocks[float64], scratch []uint64, ms []float64, dst *Stats) ([]uint64, []float64) {
	sorted, scratch, ok := sortedFloatKeys(v, scratch)
	ms = slices.Grow(ms[:0], len(sorted))[:len(sorted)]
	if ok {
		for i, k := range sorted {
			ms[i] = floatOfKey(k)
		}
	} else { // NaN or −0: slices.Sort's order (see radix.go)
		ms = append(ms[:0], slices.Concat(v...)...)
		slices.Sort(ms)
	}
	*dst = sampleStats(ms)
	return scratch, ms
}
