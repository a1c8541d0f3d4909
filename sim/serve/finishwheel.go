package serve

import "fmt"

// finishWheel holds an instance's decoding requests by the decode counter
// value at which each finishes (request.finishAt), in (finishAt, id) order:
// the order in which a binary heap on those keys popped them, so the
// records come out as before.
//
// It is a timing wheel: a ring of slots, a power of two of them, slot
// finishAt mod len holding that value's requests as a list sorted by id.
// Every request held finishes in [D, D + len) for the instance's decode
// counter D (a request enters decode with finishAt > D and leaves when D
// reaches it), so a slot holds one finishAt value at a time and the
// requests finishing at D are the list in slot D mod len. A push beyond
// that window doubles the ring first. Push, remove and the finishing
// requests cost O(1) (plus a walk of the slot's list when ids do not come
// in order, rare: a slot holds the few requests finishing at one step),
// where the heap's push and pop cost O(log n) moves and compares, each
// move writing a request's heap index (BenchmarkSimulate100k pushes and
// pops 100,000).
type finishWheel struct {
	slots []wheelSlot
	n     int // requests held
}

type wheelSlot struct{ head, tail *request }

// minWheelSlots is the ring's starting size: most outputs finish within
// it, so it rarely grows.
const minWheelSlots = 1024

func (w *finishWheel) len() int { return w.n }

// push adds r, which must finish at or after decode counter value d.
func (w *finishWheel) push(r *request, d int64) {
	if r.inWheel {
		panic(fmt.Sprintf("serve: request %d pushed on the finish wheel twice", r.id))
	}
	if span := r.finishAt - d; span < 0 || span >= int64(len(w.slots)) {
		if span < 0 {
			panic(fmt.Sprintf("serve: request %d finishes at decode %d, before the counter %d", r.id, r.finishAt, d))
		}
		w.grow(span)
	}
	s := &w.slots[r.finishAt&int64(len(w.slots)-1)]
	r.inWheel = true
	w.n++
	switch {
	case s.tail == nil:
		r.wprev, r.wnext = nil, nil
		s.head, s.tail = r, r
	case s.tail.id < r.id: // ids mostly arrive in order: append
		r.wprev, r.wnext = s.tail, nil
		s.tail.wnext = r
		s.tail = r
	default:
		x := s.head
		for x.id < r.id {
			x = x.wnext
		}
		// Insert before x.
		r.wprev, r.wnext = x.wprev, x
		if x.wprev != nil {
			x.wprev.wnext = r
		} else {
			s.head = r
		}
		x.wprev = r
	}
}

// remove takes r, which must be held, out of the wheel.
func (w *finishWheel) remove(r *request) {
	s := &w.slots[r.finishAt&int64(len(w.slots)-1)]
	if r.wprev != nil {
		r.wprev.wnext = r.wnext
	} else {
		s.head = r.wnext
	}
	if r.wnext != nil {
		r.wnext.wprev = r.wprev
	} else {
		s.tail = r.wprev
	}
	r.wprev, r.wnext, r.inWheel = nil, nil, false
	w.n--
}

// first returns the request of lowest id finishing at decode counter value
// d, the current one, or nil if none does.
func (w *finishWheel) first(d int64) *request {
	if w.n == 0 {
		return nil
	}
	r := w.slots[d&int64(len(w.slots)-1)].head
	if r != nil && r.finishAt != d {
		panic(fmt.Sprintf("serve: finish wheel slot of decode %d holds request %d finishing at %d", d, r.id, r.finishAt))
	}
	return r
}

// grow resizes the ring to hold a request span decodes ahead. Each slot's
// list moves whole: the slots in use hold distinct finishAt values within
// a window narrower than both rings.
func (w *finishWheel) grow(span int64) {
	n := max(len(w.slots), minWheelSlots)
	for int64(n) <= span {
		n *= 2
	}
	if n == len(w.slots) {
		return
	}
	old := w.slots
	w.slots = make([]wheelSlot, n)
	for _, s := range old {
		if s.head != nil {
			w.slots[s.head.finishAt&int64(n-1)] = s
		}
	}
}

// check panics unless the wheel holds n requests, each in the slot of its
// finishAt, lists in ascending id, every finishAt in [d, d + slots).
func (w *finishWheel) check(d int64) {
	held := 0
	for i := range w.slots {
		s := &w.slots[i]
		var prev *request
		for r := s.head; r != nil; prev, r = r, r.wnext {
			held++
			switch {
			case !r.inWheel || r.wprev != prev:
				panic(fmt.Sprintf("serve: finish wheel: request %d badly linked", r.id))
			case r.finishAt&int64(len(w.slots)-1) != int64(i) || r.finishAt < d || r.finishAt-d >= int64(len(w.slots)):
				panic(fmt.Sprintf("serve: finish wheel: request %d finishing at %d in slot %d of %d at decode %d", r.id, r.finishAt, i, len(w.slots), d))
			case prev != nil && (prev.id >= r.id || prev.finishAt != r.finishAt):
				panic(fmt.Sprintf("serve: finish wheel: request %d after %d in one slot", r.id, prev.id))
			}
		}
		if s.tail != prev {
			panic(fmt.Sprintf("serve: finish wheel: slot %d's tail is not its last request", i))
		}
	}
	if held != w.n {
		panic(fmt.Sprintf("serve: finish wheel holds %d requests, counts %d", held, w.n))
	}
}
