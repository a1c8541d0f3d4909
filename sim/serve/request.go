package serve

import (
	"math/rand/v2"

	"github.com/servesim/servesim/sim"
)

// Request states.
const (
	stateWaiting uint8 = iota
	statePrefill       // running, prompt (or recompute) tokens left
	stateDecode        // running, one token per decode iteration
	stateSwapped       // preempted by swap: KV in host memory
	stateHandoff       // prefilled on a prefill instance; its KV waits for or crosses the link
	stateLoading       // admitted, loading its prefix from an offload tier (kvtier_engine.go)
	stateDone
)

// request is the engine's state of one request. While decoding, its token
// count and KV length are not stored but derived from the instance's decode
// counter (see Instance), so a decode iteration touches no request.
type request struct {
	id       int64
	arrival  sim.Time
	prompt   int
	output   int
	class    string
	ttftSLO  sim.Time
	tpotSLO  sim.Time
	deadline sim.Time // arrival + TTFT SLO, 0 if none
	predOut  int      // predicted output length (SJF by prediction)
	key      int64    // queue order key (policies.Scheduler)
	inst     *Instance
	state    uint8
	newcomer bool // decoding, and its last token came after the last decode iteration

	computed  int // tokens with KV in the cache (prefill progress)
	target    int // tokens to have in the cache when the prefill ends
	generated int // output tokens so far (valid unless decoding)
	blocks    int // private KV blocks held (valid unless decoding)

	// Prefix caching: the prompt's chained block hashes (a copy), the tokens
	// per hash block, and the cached units this request references.
	hashes   []uint64
	unitToks int
	units    []*unit // shared prefix units, then nSelf self units
	nSelf    int
	// A recompute-preempted request's own full blocks [selfLo, selfHi),
	// left in the cache as self units, and the KV tokens it dropped.
	selfLo, selfHi int
	dropped        int
	// Loading from an offload tier: the tokens loaded (> 0: the load is
	// done or under way; −1: its loaded KV was dropped, it looks in no
	// tier again until a preemption), the prefix units after its GPU hits
	// and the own blocks after those, and when the load ends. ownStored
	// is the end (a block index) of its own blocks stored in the tiers.
	loadToks, loadUnits, loadOwn int
	loadEnd                      sim.Time
	ownStored                    int

	// Decode bookkeeping: at decode counter value d0 the request had g0
	// tokens generated and k0 tokens of KV. finishAt is the counter value
	// after which it has all its output; inWheel says it is on the
	// instance's finish wheel, hidx its position in the finish heap
	// (speculation: specheap.go), −1 when not.
	d0       int64
	g0, k0   int
	finishAt int64
	inWheel  bool
	hidx     int

	firstToken, lastToken sim.Time
	scheduled             sim.Time // first admission to a batch
	wasScheduled          bool
	xferStart, xferEnd    sim.Time  // KV transfer (disaggregated serving)
	src, dst              *Instance // prefill and decode instances of a handoff
	dstBlocks             int       // blocks reserved on dst
	preemptions           int
	deferrals             int

	prev, next *request // running list, in admission order
	pidx       int      // index in Instance.prefilling

	// Speculative decoding: the request's own acceptance stream and its
	// verifications so far (specdec.go).
	spec      rand.PCG
	specSteps int

	ingressEv *sim.Event // crossing the front end (kept across reuse)
	visibleAt int64      // held: the step count at whose end the batcher sees it
}

// reset clears r for reuse, keeping its slices' storage. It clears in
// place and then sets what it keeps: assigning a composite literal built
// the 472-byte value aside and copied it over (2–4× slower, measured).
func (r *request) reset() {
	h, u, ev := r.hashes[:0], r.units[:0], r.ingressEv
	*r = request{}
	r.hashes, r.units, r.ingressEv, r.hidx = h, u, ev, -1
}

// less orders queued requests: key, then arrival, then ID.
func (r *request) less(o *request) bool {
	if r.key != o.key {
		return r.key < o.key
	}
	if r.arrival != o.arrival {
		return r.arrival < o.arrival
	}
	return r.id < o.id
}

// queue holds requests sorted by request.less on a ring buffer: O(1) to add
// at the back (arrivals in key order, the FCFS case) and to remove at the
// front, O(min(i, n − i)) to insert at position i, O(n) to remove in the
// middle.
//
// The buffer's length is a power of two (16, doubled as it grows), so a
// position wraps with a mask, not a division.
type queue struct {
	buf  []*request
	head int
	n    int
}

func (q *queue) len() int { return q.n }

func (q *queue) at(i int) *request { return q.buf[(q.head+i)&(len(q.buf)-1)] }

func (q *queue) set(i int, r *request) { q.buf[(q.head+i)&(len(q.buf)-1)] = r }

func (q *queue) grow() {
	if q.n < len(q.buf) {
		return
	}
	nb := make([]*request, max(16, 2*len(q.buf)))
	for i := 0; i < q.n; i++ {
		nb[i] = q.at(i)
	}
	q.buf, q.head = nb, 0
}

// insertBack appends r, ignoring keys (a FIFO use of the queue).
func (q *queue) insertBack(r *request) {
	q.grow()
	q.set(q.n, r)
	q.n++
}

// insert adds r in order.
func (q *queue) insert(r *request) {
	q.grow()
	if q.n == 0 || !r.less(q.at(q.n-1)) {
		q.set(q.n, r)
		q.n++
		return
	}
	if r.less(q.at(0)) {
		q.head = (q.head - 1) & (len(q.buf) - 1)
		q.buf[q.head] = r
		q.n++
		return
	}
	lo, hi := 0, q.n-1 // r goes before hi, after lo
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if r.less(q.at(mid)) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if hi < q.n/2 {
		// Nearer the front (a readmitted or loaded request, older than
		// most of the queue): shift the front part one place back.
		q.head = (q.head - 1) & (len(q.buf) - 1)
		for j := 0; j < hi; j++ {
			q.set(j, q.at(j+1))
		}
		q.set(hi, r)
		q.n++
		return
	}
	for j := q.n; j > hi; j-- {
		q.set(j, q.at(j-1))
	}
	q.set(hi, r)
	q.n++
}

// removeAt removes and returns the i-th request: O(1) at the head, O(n) in
// the middle.
func (q *queue) removeAt(i int) *request {
	r := q.at(i)
	if i == 0 {
		q.buf[q.head] = nil
		q.head = (q.head + 1) & (len(q.buf) - 1)
		q.n--
		return r
	}
	for j := i; j < q.n-1; j++ {
		q.set(j, q.at(j+1))
	}
	q.set(q.n-1, nil)
	q.n--
	return r
}

// remove removes r, found by a scan from the head (admissions are usually
// at the head). It panics if r is not queued.
func (q *queue) remove(r *request) {
	for i := 0; i < q.n; i++ {
		if q.at(i) == r {
			q.removeAt(i)
			return
		}
	}
	panic("serve: removing a request that is not queued")
}
