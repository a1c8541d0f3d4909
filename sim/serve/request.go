package serve

import (
	"github.com/servesim/servesim/sim"
)

// Request states.
const (
	stateWaiting uint8 = iota
	statePrefill       // running, prompt (or recompute) tokens left
	stateDecode        // running, one token per decode iteration
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
	state    uint8
	newcomer bool // decoding, and its last token came after the last decode iteration

	computed  int // tokens with KV in the cache (prefill progress)
	target    int // tokens to have in the cache when the prefill ends
	generated int // output tokens so far (valid unless decoding)
	blocks    int // KV blocks held (valid unless decoding)

	// Decode bookkeeping: at decode counter value d0 the request had g0
	// tokens generated and k0 tokens of KV. finishAt is the counter value
	// after which it has all its output; hidx its position in the heap.
	d0       int64
	g0, k0   int
	finishAt int64
	hidx     int

	firstToken, lastToken sim.Time
	preemptions           int

	prev, next *request // running list, in admission order
	pidx       int      // index in Instance.prefilling
}

// finishHeap is a min-heap of decoding requests by (finishAt, id).
type finishHeap []*request

func (h finishHeap) less(i, j int) bool {
	if h[i].finishAt != h[j].finishAt {
		return h[i].finishAt < h[j].finishAt
	}
	return h[i].id < h[j].id
}

func (h finishHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx = i
	h[j].hidx = j
}

func (h *finishHeap) push(r *request) {
	r.hidx = len(*h)
	*h = append(*h, r)
	h.up(r.hidx)
}

func (h *finishHeap) remove(i int) *request {
	q := *h
	n := len(q) - 1
	r := q[i]
	if i != n {
		q.swap(i, n)
	}
	q[n] = nil
	*h = q[:n]
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
	r.hidx = -1
	return r
}

func (h finishHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h finishHeap) down(i0 int) bool {
	n := len(h)
	i := i0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(r, l) {
			j = r
		}
		if !h.less(j, i) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}

// queue is a FIFO of waiting requests on a ring buffer that also allows
// pushing at the front (a preempted request goes back first, as in vLLM) and
// removing from the middle.
type queue struct {
	buf  []*request
	head int
	n    int
}

func (q *queue) len() int { return q.n }

func (q *queue) at(i int) *request { return q.buf[(q.head+i)%len(q.buf)] }

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

func (q *queue) pushBack(r *request) {
	q.grow()
	q.buf[(q.head+q.n)%len(q.buf)] = r
	q.n++
}

func (q *queue) pushFront(r *request) {
	q.grow()
	q.head = (q.head - 1 + len(q.buf)) % len(q.buf)
	q.buf[q.head] = r
	q.n++
}

// removeAt removes and returns the i-th request: O(1) at the head (the FCFS
// case), O(n) in the middle.
func (q *queue) removeAt(i int) *request {
	r := q.at(i)
	if i == 0 {
		q.buf[q.head] = nil
		q.head = (q.head + 1) % len(q.buf)
		q.n--
		return r
	}
	for j := i; j < q.n-1; j++ {
		q.buf[(q.head+j)%len(q.buf)] = q.at(j + 1)
	}
	q.buf[(q.head+q.n-1)%len(q.buf)] = nil
	q.n--
	return r
}
