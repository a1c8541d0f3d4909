package workload

import (
	"fmt"

	"github.com/servesim/servesim/sim"
)

// Limit returns src as a client with n slots, vLLM bench's
// --max-concurrency (vllm/benchmarks/serve.py, benchmark()): requests still
// arrive on src's schedule, but each then waits at the client for a free
// slot, holds it until it finishes (or is rejected), and slots go to the
// waiting requests first come, first served (asyncio.Semaphore). A slot
// freed at time t is free again at t + think (a user's think time; vLLM has
// none). At most n requests are ever in flight; with src at rate inf (every
// request at time 0) the client is closed-loop: n users, each sending its
// next request when its previous one finishes.
//
// The request the serving world sees arrives when it is sent, the time it
// takes its slot: vLLM bench starts a request's clock (start_time, from
// which it measures TTFT and E2E latency) inside the request function,
// after the semaphore is acquired, and records the wait before it apart
// (client_queue_time). So TTFT here is counted from the send, as there.
//
// The returned Source is a Feedback; it forwards Finished to src when src
// is one too, and Err to src's. It panics if n < 1 or think < 0.
func Limit(src Source, n int, think sim.Time) *Limited {
	if n < 1 || think < 0 {
		panic(fmt.Sprintf("workload: Limit(%d slots, think %v): want n ≥ 1 and think ≥ 0", n, think))
	}
	l := &Limited{src: src, think: think, free: make([]sim.Time, n)}
	l.nfree = n // all free at time 0
	l.fb, _ = src.(Feedback)
	return l
}

// Limited is a Source limited to a number of requests in flight (Limit).
type Limited struct {
	src   Source
	fb    Feedback // src, when it is a Feedback
	think sim.Time
	// free holds the times the free slots became free, oldest first, as a
	// ring: a slot released later is free no earlier (times come in order).
	free        []sim.Time
	head, nfree int
	held        Request // the next request of src, waiting for a slot
	holding     bool
	last        sim.Time // the last send
	blocked     bool
	inflight    int
	maxInflight int
}

// Next yields the next request, its Arrival set to when it is sent.
func (l *Limited) Next(r *Request) bool {
	l.blocked = false
	if !l.holding {
		if !l.src.Next(&l.held) {
			l.blocked = l.fb != nil && l.fb.Blocked()
			return false
		}
		l.holding = true
	}
	if l.nfree == 0 {
		l.blocked = true
		return false
	}
	at := max(l.held.Arrival, l.free[l.head], l.last)
	l.head = (l.head + 1) % len(l.free)
	l.nfree--
	l.holding = false
	*r = l.held
	r.Arrival, l.last = at, at
	l.inflight++
	l.maxInflight = max(l.maxInflight, l.inflight)
	return true
}

// Finished frees the request's slot (at now + think).
func (l *Limited) Finished(id int64, now sim.Time) {
	l.free[(l.head+l.nfree)%len(l.free)] = now + l.think
	l.nfree++
	l.inflight--
	if l.fb != nil {
		l.fb.Finished(id, now)
	}
}

// Blocked reports whether the stream waits for a slot (or src for a drain).
func (l *Limited) Blocked() bool { return l.blocked }

// Err returns src's error.
func (l *Limited) Err() error { return SourceErr(l.src) }

// Unwrap returns the limited Source.
func (l *Limited) Unwrap() Source { return l.src }

// MaxInflight returns the most requests that were in flight at once.
func (l *Limited) MaxInflight() int { return l.maxInflight }

var (
	_ Feedback  = (*Limited)(nil)
	_ ErrSource = (*Limited)(nil)
)
