package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestOrderTimePrioritySeq(t *testing.T) {
	var e Engine
	var got []string
	add := func(at Time, prio int, name string) *Event {
		return e.Schedule(at, prio, HandlerFunc(func(Time) { got = append(got, name) }))
	}
	add(10, 0, "t10p0a")
	add(5, 1, "t5p1")
	add(10, -1, "t10p-1")
	add(5, 0, "t5p0")
	add(10, 0, "t10p0b")
	c := add(7, 0, "cancelled")
	if !e.Cancel(c) || e.Cancel(c) {
		t.Fatal("Cancel: want true once, then false")
	}
	e.Run()
	want := []string{"t5p0", "t5p1", "t10p-1", "t10p0a", "t10p0b"}
	if !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	if e.Now() != 10 || e.Fired() != 5 {
		t.Fatalf("Now=%v Fired=%d, want 10, 5", e.Now(), e.Fired())
	}
}

func TestRescheduleMovesPendingEvent(t *testing.T) {
	var e Engine
	var got []Time
	ev := NewEvent(0, HandlerFunc(func(now Time) { got = append(got, now) }))
	e.ScheduleEvent(ev, 100)
	e.ScheduleEvent(ev, 50) // moved, not duplicated
	if e.Len() != 1 {
		t.Fatalf("Len = %d, want 1", e.Len())
	}
	e.Run()
	e.ScheduleEvent(ev, 70) // reused after firing
	e.Run()
	if !slices.Equal(got, []Time{50, 70}) {
		t.Fatalf("fired at %v, want [50 70]", got)
	}
}

func TestScheduleInPastPanics(t *testing.T) {
	var e Engine
	e.Schedule(10, 0, HandlerFunc(func(Time) {}))
	e.Run()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic scheduling before now")
		}
	}()
	e.Schedule(9, 0, HandlerFunc(func(Time) {}))
}

func TestRunUntil(t *testing.T) {
	var e Engine
	n := 0
	for _, at := range []Time{1, 5, 9} {
		e.Schedule(at, 0, HandlerFunc(func(Time) { n++ }))
	}
	e.RunUntil(5)
	if n != 2 || e.Now() != 5 || e.Peek() != 9 {
		t.Fatalf("n=%d now=%v peek=%v, want 2, 5, 9", n, e.Now(), e.Peek())
	}
	e.RunUntil(20)
	if n != 3 || e.Now() != 20 || e.Peek() != Forever {
		t.Fatalf("n=%d now=%v peek=%v, want 3, 20, Forever", n, e.Now(), e.Peek())
	}
}

// TestRandomAgainstSort checks the heap against a naive reference: random
// schedules and cancels, then the firing order must equal a stable sort of
// the surviving events by (time, priority, scheduling order), and the clock
// must never go backwards.
func TestRandomAgainstSort(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		var e Engine
		type item struct {
			at   Time
			prio int
			id   int
		}
		var want []item
		var fired []int
		evs := map[int]*Event{}
		for id := range 300 {
			it := item{Time(r.IntN(50)), r.IntN(3) - 1, id}
			want = append(want, it)
			evs[id] = e.Schedule(it.at, it.prio, HandlerFunc(func(Time) { fired = append(fired, id) }))
		}
		cancelled := map[int]bool{}
		for range 60 {
			id := r.IntN(300)
			if e.Cancel(evs[id]) {
				cancelled[id] = true
			}
		}
		want = slices.DeleteFunc(want, func(it item) bool { return cancelled[it.id] })
		slices.SortStableFunc(want, func(a, b item) int {
			if a.at != b.at {
				return int(a.at - b.at)
			}
			return a.prio - b.prio
		})
		last := Time(0)
		for e.Step() {
			if e.Now() < last {
				t.Fatalf("seed %d: time went back from %v to %v", seed, last, e.Now())
			}
			last = e.Now()
		}
		if len(fired) != len(want) {
			t.Fatalf("seed %d: fired %d events, want %d", seed, len(fired), len(want))
		}
		for i := range want {
			if fired[i] != want[i].id {
				t.Fatalf("seed %d (replay: go test ./sim -run TestRandomAgainstSort): position %d fired %d, want %d", seed, i, fired[i], want[i].id)
			}
		}
	}
}

func TestFromSeconds(t *testing.T) {
	cases := []struct {
		s    float64
		want Time
	}{
		{0, 0},
		{1, Second},
		{1.5e-9, 2}, // rounds half away from zero
		{0.0123456789, 12345679},
	}
	for _, c := range cases {
		if got := FromSeconds(c.s); got != c.want {
			t.Errorf("FromSeconds(%g) = %d, want %d", c.s, got, c.want)
		}
	}
}

func TestRescheduleAllocatesNothing(t *testing.T) {
	var e Engine
	ev := NewEvent(0, HandlerFunc(func(Time) {}))
	allocs := testing.AllocsPerRun(1000, func() {
		e.ScheduleEvent(ev, e.Now()+1)
		e.Step()
	})
	if allocs != 0 {
		t.Fatalf("allocs per schedule+step = %v, want 0", allocs)
	}
}

// BenchmarkEngine measures one schedule and one fire with 1,000 events pending.
func BenchmarkEngine(b *testing.B) {
	var e Engine
	r := rand.New(rand.NewPCG(1, 2))
	evs := make([]*Event, 1000)
	var last *Event
	for i := range evs {
		evs[i] = NewEvent(0, HandlerFunc(func(Time) { last = evs[i] }))
		e.ScheduleEvent(evs[i], Time(r.IntN(1_000_000)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Step()
		e.ScheduleEvent(last, e.Now()+Time(r.IntN(1_000_000)))
	}
}

// TestInterleavedAgainstReference drives the engine and a naive reference
// (a list searched for its least (time, priority, sequence)) with the same
// random operations, most of them from inside handlers as a simulation
// does: schedules at now or later, moves of pending events, cancels. The
// events must fire in the reference's order, and Len and Peek agree
// throughout (the front slot and the heap together are the queue).
func TestInterleavedAgainstReference(t *testing.T) {
	type ref struct {
		at   Time
		prio int
		seq  int
	}
	for seed := uint64(0); seed < 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 9))
		var e Engine
		const n = 40
		evs := make([]*Event, n)
		pending := map[int]ref{} // by event
		seq := 0
		var fired []int
		var want []int
		next := func() int { // the reference's least pending event
			best := -1
			for id, x := range pending {
				if best < 0 {
					best = id
					continue
				}
				b := pending[best]
				if x.at < b.at || x.at == b.at && (x.prio < b.prio || x.prio == b.prio && x.seq < b.seq) {
					best = id
				}
			}
			return best
		}
		schedule := func(id int, at Time) {
			// Half the time through ScheduleFront first: when it takes
			// the event, the event must be the least pending one; when
			// not, nothing may have changed.
			if r.IntN(2) == 0 {
				n, was := e.Len(), evs[id].Pending()
				if e.ScheduleFront(evs[id], at) {
					pending[id] = ref{at, int(evs[id].prio), seq}
					seq++
					if next() != id || was {
						t.Fatalf("seed %d: ScheduleFront took event %d (pending before: %v) at %v, the reference's first is %d", seed, id, was, at, next())
					}
					return
				}
				if e.Len() != n || evs[id].Pending() != was {
					t.Fatalf("seed %d: ScheduleFront refused event %d but changed the queue", seed, id)
				}
			}
			e.ScheduleEvent(evs[id], at)
			pending[id] = ref{at, int(evs[id].prio), seq}
			seq++
		}
		ops := 0
		act := func() {
			for range r.IntN(3) {
				id := r.IntN(n)
				switch op := r.IntN(10); {
				case op < 7:
					schedule(id, e.Now()+Time(r.IntN(4))) // new, or a pending one moved
				default:
					_, was := pending[id]
					if e.Cancel(evs[id]) != was {
						t.Fatalf("seed %d: Cancel of %d reports %v, pending %v", seed, id, !was, was)
					}
					delete(pending, id)
				}
				ops++
			}
		}
		for id := range evs {
			evs[id] = NewEvent(r.IntN(3)-1, HandlerFunc(func(Time) {
				fired = append(fired, id)
				if ops < 3000 {
					act()
				}
			}))
		}
		for id := range 10 {
			schedule(id, Time(r.IntN(5)))
		}
		for {
			if e.Len() != len(pending) {
				t.Fatalf("seed %d: Len %d, reference %d", seed, e.Len(), len(pending))
			}
			id := next()
			if id < 0 {
				if e.Step() {
					t.Fatalf("seed %d: fired with nothing pending", seed)
				}
				break
			}
			if e.Peek() != pending[id].at {
				t.Fatalf("seed %d: Peek %v, reference %v", seed, e.Peek(), pending[id].at)
			}
			want = append(want, id)
			delete(pending, id)
			if !e.Step() {
				t.Fatalf("seed %d: nothing fired, %d pending", seed, len(pending)+1)
			}
			if got := fired[len(want)-1]; got != id {
				t.Fatalf("seed %d (replay: go test ./sim -run TestInterleavedAgainstReference): event %d fired at position %d, want %d", seed, got, len(want)-1, id)
			}
		}
	}
}

// TestStepsMatchesStep runs the same random schedule (handlers that
// schedule, move and cancel events) twice, once by Step and once by
// Steps in random runs of events, and compares what fired and when; then
// a handler's Stop ends Steps after its own event, for good.
func TestStepsMatchesStep(t *testing.T) {
	type firing struct {
		id int
		at Time
	}
	run := func(seed uint64, steps bool, stopAt int) ([]firing, int) {
		r := rand.New(rand.NewPCG(seed, 10))
		var e Engine
		const n = 30
		evs := make([]*Event, n)
		var fired []firing
		for id := range evs {
			evs[id] = NewEvent(r.IntN(3)-1, HandlerFunc(func(now Time) {
				fired = append(fired, firing{id, now})
				if len(fired) == stopAt {
					e.Stop()
				}
				if len(fired) > 2000 {
					return
				}
				for range 1 + r.IntN(3) {
					if x := evs[r.IntN(n)]; r.IntN(5) > 0 {
						e.ScheduleEvent(x, now+Time(r.IntN(4)))
					} else {
						e.Cancel(x)
					}
				}
			}))
		}
		for id := range 8 {
			e.ScheduleEvent(evs[id], Time(r.IntN(5)))
		}
		calls := 0
		if !steps {
			for e.Step() {
			}
			return fired, calls
		}
		k := rand.New(rand.NewPCG(seed, 11))
		for {
			want := 1 + k.IntN(50)
			calls++
			got := e.Steps(want)
			if got > want {
				t.Fatalf("seed %d: Steps(%d) fired %d", seed, want, got)
			}
			if got < want {
				if e.Len() > 0 && !e.stop {
					t.Fatalf("seed %d: Steps(%d) fired %d with %d pending", seed, want, got, e.Len())
				}
				break
			}
		}
		return fired, calls
	}
	for seed := uint64(0); seed < 30; seed++ {
		ref, _ := run(seed, false, -1)
		got, calls := run(seed, true, -1)
		if !slices.Equal(got, ref) || len(ref) < 1000 || calls < 2 {
			t.Fatalf("seed %d: Steps fired %d events (%d calls), Step %d; first difference at %d", seed, len(got), calls, len(ref), firstDiff(got, ref))
		}
		stopAt := 1 + int(seed)%(len(ref)-1)
		stopped, _ := run(seed, true, stopAt)
		if !slices.Equal(stopped, ref[:stopAt]) {
			t.Fatalf("seed %d: stopped at event %d, fired %d", seed, stopAt, len(stopped))
		}
	}
}

func firstDiff[T comparable](a, b []T) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
