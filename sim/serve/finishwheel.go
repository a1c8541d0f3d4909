package serve

import "fmt"

// finishWheel holds an instance's decoding requests by the decode counter
// value at which each finishes (request.finishAt), in (finishAt, id) order:
// the order in which a binary heap on those keys popped them, so the
// records come out as before.
//
// It is a two-level timing wheel over the counter D. Counter values fall
// in blocks of wheelSlots; the requests finishing in D's block sit in its
// slots, one per value, each a short list sorted by id; those finishing
// in later blocks sit in coarse buckets, one per block (a ring of a power
// of two, grown when a request finishes farther ahead), unsorted. When D
// enters a block, that block's bucket is sorted into the slots. So a push
// is an append, the requests finishing at D are the head of D's slot, and
// each request is sorted once, among the few finishing at its value;
// entries carry their keys, so none of this touches a request. (A heap's
// push and pop moved O(log n) entries, writing each moved request's
// index; a ring of one slot per value reaching the longest output spread
// its pushes over a table too large to stay in cache.) Under speculation
// the instance keeps the finish heap instead (specheap.go).
type finishWheel struct {
	slots  [][]finishEntry // wheelSlots: D's block, by finishAt mod wheelSlots
	coarse [][]finishEntry // later blocks b, by b mod len
	block  int64           // the block in the slots: D >> wheelBits
	n      int             // requests held
}

type finishEntry struct {
	at, id int64 // the request's finishAt and id
	r      *request
}

const (
	wheelBits  = 8
	wheelSlots = 1 << wheelBits
	// slotCap is each slot's starting room (see insertSlot).
	slotCap = 4
	// minCoarse is the coarse ring's starting size: outputs of up to
	// 15 blocks (3,840 tokens) ahead fit without growing it.
	minCoarse = 16
)

func (w *finishWheel) len() int { return w.n }

// sync moves the wheel to decode counter value d, sorting each block it
// enters into the slots (whose earlier block's requests have finished).
func (w *finishWheel) sync(d int64) {
	if w.block < d>>wheelBits {
		w.advance(d)
	}
}

func (w *finishWheel) advance(d int64) {
	for w.block < d>>wheelBits {
		w.block++
		if len(w.coarse) == 0 {
			continue
		}
		c := &w.coarse[w.block&int64(len(w.coarse)-1)]
		for _, e := range *c {
			w.insertSlot(e)
		}
		clear(*c)
		*c = (*c)[:0]
	}
}

// insertSlot puts e in its slot, in id order (ids mostly come in order:
// an append).
func (w *finishWheel) insertSlot(e finishEntry) {
	if w.slots == nil {
		// The slots start in one array, slotCap entries each (a slot
		// holding more grows apart): one allocation, not one a slot, and
		// consecutive counter values' requests side by side in memory,
		// read in order as D advances.
		w.slots = make([][]finishEntry, wheelSlots)
		buf := make([]finishEntry, wheelSlots*slotCap)
		for i := range w.slots {
			w.slots[i] = buf[i*slotCap : i*slotCap : (i+1)*slotCap]
		}
	}
	s := &w.slots[e.at&(wheelSlots-1)]
	q := *s
	i := len(q)
	for i > 0 && q[i-1].id > e.id {
		i--
	}
	q = append(q, e)
	if i < len(q)-1 {
		copy(q[i+1:], q[i:])
		q[i] = e
	}
	*s = q
}

// push adds r, which must finish at or after decode counter value d, the
// current one.
func (w *finishWheel) push(r *request, d int64) {
	if r.inWheel || r.finishAt < d {
		panic(fmt.Sprintf("serve: request %d (held %v) pushed on the finish wheel at decode %d to finish at %d", r.id, r.inWheel, d, r.finishAt))
	}
	w.sync(d)
	e := finishEntry{at: r.finishAt, id: r.id, r: r}
	if b := e.at >> wheelBits; b == w.block {
		w.insertSlot(e)
	} else {
		if b-w.block >= int64(len(w.coarse)) {
			w.grow(b - w.block)
		}
		c := &w.coarse[b&int64(len(w.coarse)-1)]
		*c = append(*c, e)
	}
	r.inWheel = true
	w.n++
}

// remove takes r, which must be held, out of the wheel at decode counter
// value d. It scans r's slot or bucket: for the requests finishing now
// (their slot's head) and the rare preemptions and handoffs.
func (w *finishWheel) remove(r *request, d int64) {
	w.sync(d)
	if b := r.finishAt >> wheelBits; b == w.block {
		s := &w.slots[r.finishAt&(wheelSlots-1)]
		q := *s
		for i, e := range q {
			if e.r == r {
				if i < len(q)-1 {
					copy(q[i:], q[i+1:])
				}
				q[len(q)-1] = finishEntry{}
				*s = q[:len(q)-1]
				r.inWheel = false
				w.n--
				return
			}
		}
	} else if len(w.coarse) > 0 {
		c := &w.coarse[b&int64(len(w.coarse)-1)]
		for i, e := range *c {
			if e.r == r {
				last := len(*c) - 1
				(*c)[i] = (*c)[last]
				(*c)[last] = finishEntry{}
				*c = (*c)[:last]
				r.inWheel = false
				w.n--
				return
			}
		}
	}
	panic(fmt.Sprintf("serve: request %d (finishing at %d) is not on the finish wheel at decode %d", r.id, r.finishAt, d))
}

// first returns the request of lowest id finishing at decode counter value
// d, the current one, or nil if none does.
func (w *finishWheel) first(d int64) *request {
	if w.n == 0 {
		return nil
	}
	w.sync(d)
	if w.slots == nil {
		return nil // all in coarse buckets
	}
	s := w.slots[d&(wheelSlots-1)]
	if len(s) == 0 {
		return nil
	}
	if s[0].at != d {
		panic(fmt.Sprintf("serve: finish wheel slot of decode %d holds request %d finishing at %d", d, s[0].id, s[0].at))
	}
	return s[0].r
}

// grow resizes the coarse ring to hold a request ahead blocks past D's.
func (w *finishWheel) grow(ahead int64) {
	n := max(len(w.coarse), minCoarse)
	for int64(n) <= ahead {
		n *= 2
	}
	old := w.coarse
	w.coarse = make([][]finishEntry, n)
	for _, c := range old {
		for _, e := range c {
			b := &w.coarse[(e.at>>wheelBits)&int64(n-1)]
			*b = append(*b, e)
		}
	}
}

// check panics unless the wheel holds n requests, each in the slot or
// bucket of its finishAt (at or after d, the decode counter), with the
// keys of its request, slots in ascending id.
func (w *finishWheel) check(d int64) {
	w.sync(d)
	held := 0
	entry := func(e finishEntry) {
		held++
		if !e.r.inWheel || e.r.finishAt != e.at || e.r.id != e.id || e.at < d {
			panic(fmt.Sprintf("serve: finish wheel: entry %+v of request %d (finish %d, held %v) at decode %d", e, e.r.id, e.r.finishAt, e.r.inWheel, d))
		}
	}
	for i, s := range w.slots {
		for j, e := range s {
			entry(e)
			if e.at>>wheelBits != w.block || e.at&(wheelSlots-1) != int64(i) || (j > 0 && s[j-1].id >= e.id) {
				panic(fmt.Sprintf("serve: finish wheel: request %d finishing at %d in slot %d (block %d), position %d", e.id, e.at, i, w.block, j))
			}
		}
	}
	for i, c := range w.coarse {
		for _, e := range c {
			entry(e)
			if b := e.at >> wheelBits; b <= w.block || b-w.block >= int64(len(w.coarse)) || b&int64(len(w.coarse)-1) != int64(i) {
				panic(fmt.Sprintf("serve: finish wheel: request %d finishing at %d in bucket %d of %d (block %d)", e.id, e.at, i, len(w.coarse), w.block))
			}
		}
	}
	if held != w.n {
		panic(fmt.Sprintf("serve: finish wheel holds %d requests, counts %d", held, w.n))
	}
}
