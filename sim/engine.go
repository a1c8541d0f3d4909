package sim

import "fmt"

// A Handler acts when its event fires. now is the event's time, which the
// engine's clock already shows.
type Handler interface {
	Fire(now Time)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(now Time)

// Fire calls f(now).
func (f HandlerFunc) Fire(now Time) { f(now) }

// Event is one scheduled action. Events are ordered by (time, priority,
// sequence number): lower priority values fire first among events at the same
// time, and the sequence number, given at scheduling, breaks the remaining ties
// in scheduling order, so no tie is left to chance.
//
// An Event may be kept and scheduled again after it fired or was cancelled;
// hot paths do this to avoid allocating one event per action.
type Event struct {
	at      Time
	prio    int32
	seq     uint64
	index   int // position in the heap, inFront in the engine's front slot, -1 when not pending
	handler Handler
}

// NewEvent returns an unscheduled event that calls h with priority prio.
func NewEvent(prio int, h Handler) *Event {
	return &Event{prio: int32(prio), index: -1, handler: h}
}

// Time returns the time the event is (or was last) scheduled for.
func (ev *Event) Time() Time { return ev.at }

// Pending reports whether the event is scheduled and has not fired.
func (ev *Event) Pending() bool { return ev.index != -1 }

// inFront is the index of the event in the engine's front slot.
const inFront = -2

// Engine is a discrete-event engine: a clock and a queue of events. It knows
// nothing of what the events mean. The zero value is ready to use, at time 0.
//
// The queue is a binary heap and a front slot: an event scheduled before
// every pending one waits in the slot, outside the heap, and fires from
// there (a simulation's next step end mostly is the earliest event: no
// push and pop for it). The slot's event, when there is one, is before
// every event in the heap, so Step always fires the least pending event in
// the order of before, as a heap alone did.
type Engine struct {
	now   Time
	seq   uint64
	fired uint64
	front *Event // nil, or before every event in queue
	queue []*Event
	stop  bool // Stop was called: Steps fires nothing more
}

// Now returns the current simulated time.
func (e *Engine) Now() Time { return e.now }

// Fired returns how many events have fired.
func (e *Engine) Fired() uint64 { return e.fired }

// Len returns the number of pending events.
func (e *Engine) Len() int {
	if e.front != nil {
		return len(e.queue) + 1
	}
	return len(e.queue)
}

// Schedule creates an event calling h at time at with priority prio.
// It panics if at is before Now: time never goes backwards.
func (e *Engine) Schedule(at Time, prio int, h Handler) *Event {
	ev := NewEvent(prio, h)
	e.ScheduleEvent(ev, at)
	return ev
}

// After is Schedule at Now()+d.
func (e *Engine) After(d Time, prio int, h Handler) *Event {
	return e.Schedule(e.now+d, prio, h)
}

// ScheduleEvent schedules ev at time at. A pending ev is moved to the new
// time and given a new sequence number, as if cancelled and scheduled again.
// It panics if at is before Now.
func (e *Engine) ScheduleEvent(ev *Event, at Time) {
	if at < e.now {
		panic(fmt.Sprintf("sim: event scheduled at %v, before now %v", at, e.now))
	}
	if ev.index != -1 {
		e.Cancel(ev) // moved: taken out, scheduled anew
	}
	ev.at = at
	ev.seq = e.seq
	e.seq++
	switch {
	case e.front == nil && (len(e.queue) == 0 || before(ev, e.queue[0])):
		e.front, ev.index = ev, inFront
	case e.front != nil && before(ev, e.front):
		e.push(e.front)
		e.front, ev.index = ev, inFront
	default:
		e.push(ev)
	}
}

// ScheduleFront schedules ev at time at, as ScheduleEvent does, if ev is
// not pending and goes before every pending event (strictly earlier than
// the heap's first) with the front slot empty, and reports whether it
// did; else it does nothing. It inlines: a caller whose event mostly goes
// first (a simulation's next step end) calls ScheduleEvent only when it
// returns false.
func (e *Engine) ScheduleFront(ev *Event, at Time) bool {
	if e.front != nil || ev.index != -1 || at < e.now || len(e.queue) > 0 && at >= e.queue[0].at {
		return false
	}
	ev.at, ev.seq, ev.index = at, e.seq, inFront
	e.seq++
	e.front = ev
	return true
}

// push adds ev to the heap.
func (e *Engine) push(ev *Event) {
	e.queue = append(e.queue, ev)
	e.up(ev, len(e.queue)-1)
}

// Cancel removes a pending event and reports whether it was pending.
func (e *Engine) Cancel(ev *Event) bool {
	i := ev.index
	if i == inFront {
		e.front, ev.index = nil, -1
		return true
	}
	if i < 0 {
		return false
	}
	last := len(e.queue) - 1
	x := e.queue[last]
	e.queue[last] = nil
	e.queue = e.queue[:last]
	ev.index = -1
	if i != last {
		// The last event fills the hole: down, or else up, from there.
		if !e.down(x, i) {
			e.up(x, i)
		}
	}
	return true
}

// Peek returns the time of the next event, or Forever if none is pending.
func (e *Engine) Peek() Time {
	if e.front != nil {
		return e.front.at
	}
	if len(e.queue) == 0 {
		return Forever
	}
	return e.queue[0].at
}

// Step fires the next event and reports whether there was one.
func (e *Engine) Step() bool {
	ev := e.front
	if ev != nil {
		e.front = nil
	} else {
		n := len(e.queue)
		if n == 0 {
			return false
		}
		ev = e.queue[0]
		x := e.queue[n-1]
		e.queue[n-1] = nil
		e.queue = e.queue[:n-1]
		if n > 1 {
			e.down(x, 0)
		}
	}
	ev.index = -1
	e.now = ev.at
	e.fired++
	ev.handler.Fire(ev.at)
	return true
}

// Steps fires up to n events, fewer when none is left or a handler
// calls Stop, and returns how many it fired. It is Step in a loop with
// the call and its return written out: the loop of a run's events.
func (e *Engine) Steps(n int) int {
	fired := 0
	for ; fired < n && !e.stop; fired++ {
		ev := e.front
		if ev != nil {
			e.front = nil
		} else {
			q := len(e.queue)
			if q == 0 {
				break
			}
			ev = e.queue[0]
			x := e.queue[q-1]
			e.queue[q-1] = nil
			e.queue = e.queue[:q-1]
			if q > 1 {
				e.down(x, 0)
			}
		}
		ev.index = -1
		e.now = ev.at
		e.fired++
		ev.handler.Fire(ev.at)
	}
	return fired
}

// Stop has Steps return after the event firing now (or at once), and
// fire nothing in later calls. Step, Run and RunUntil do not look at it.
func (e *Engine) Stop() { e.stop = true }

// Run fires events until none is pending.
func (e *Engine) Run() {
	for e.Step() {
	}
}

// RunUntil fires every event scheduled at or before t, then sets the clock
// to t if it is later than the last event fired.
func (e *Engine) RunUntil(t Time) {
	for e.Len() > 0 && e.Peek() <= t {
		e.Step()
	}
	if t > e.now {
		e.now = t
	}
}

// before reports whether a fires before b: (time, priority, sequence).
func before(a, b *Event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	return a.seq < b.seq
}

// The heap sifts move a hole rather than swapping: the event being placed
// is held aside and written once, where it lands, and each event moved
// past it has its index set. The heap is binary; the order of firing is
// the total order of before, however the heap is laid out.

// up places ev, to go at position j (a hole), towards the root.
func (e *Engine) up(ev *Event, j int) {
	q := e.queue
	for j > 0 {
		i := (j - 1) / 2
		p := q[i]
		if !before(ev, p) {
			break
		}
		q[j] = p
		p.index = j
		j = i
	}
	q[j] = ev
	ev.index = j
}

// down places ev, to go at position i0 (a hole), towards the leaves, and
// reports whether it moved.
func (e *Engine) down(ev *Event, i0 int) bool {
	q := e.queue
	n := len(q)
	i := i0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j, c := l, q[l]
		if r := l + 1; r < n && before(q[r], c) {
			j, c = r, q[r]
		}
		if !before(c, ev) {
			break
		}
		q[i] = c
		c.index = i
		i = j
	}
	q[i] = ev
	ev.index = i
	return i > i0
}
