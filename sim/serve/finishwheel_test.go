package serve

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFinishWheelOrder drives the wheel and a reference (every request
// held, sorted by (finishAt, id)) with the same pushes, removals and
// decode steps, and checks that each step's finishing requests come out
// in the reference's order: ids in and out of order, spans that make the
// ring grow, and requests moved to an earlier finish (as speculation does).
func TestFinishWheelOrder(t *testing.T) {
	cases := []struct {
		name        string
		maxSpan     int64
		shuffleIDs  bool
		removeEvery int // remove a random held request every this many pushes (0: never)
		moveEvery   int // move a random held request earlier every this many pushes
	}{
		{"in order, short", 50, false, 0, 0},
		{"shuffled ids", 20, true, 0, 0},
		{"grows", 5000, true, 0, 0},
		{"removals", 300, true, 3, 0},
		{"moves", 300, true, 0, 2},
		{"all", 3000, true, 4, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var w finishWheel
			var held []*request
			ids := rng.Perm(20000)
			next, pushes := 0, 0
			var d int64
			for step := 0; step < 4000; step++ {
				for range rng.IntN(6) {
					id := int64(next)
					if c.shuffleIDs {
						id = int64(ids[next])
					}
					next++
					r := &request{id: id, finishAt: d + 1 + rng.Int64N(c.maxSpan)}
					w.push(r, d)
					held = append(held, r)
					pushes++
					if c.removeEvery > 0 && pushes%c.removeEvery == 0 {
						i := rng.IntN(len(held))
						w.remove(held[i], d)
						held = slices.Delete(held, i, i+1)
					}
					if c.moveEvery > 0 && pushes%c.moveEvery == 0 {
						x := held[rng.IntN(len(held))]
						w.remove(x, d)
						x.finishAt -= rng.Int64N(x.finishAt - d) // stays ≥ d + 1
						w.push(x, d)
					}
				}
				d++
				slices.SortFunc(held, func(a, b *request) int {
					if a.finishAt != b.finishAt {
						return int(a.finishAt - b.finishAt)
					}
					return int(a.id - b.id)
				})
				n := 0
				for r := w.first(d); r != nil; r = w.first(d) {
					if n >= len(held) || held[n] != r {
						t.Fatalf("step %d: got request %d (finish %d), want the reference's %d-th", step, r.id, r.finishAt, n)
					}
					w.remove(r, d)
					n++
				}
				if n < len(held) && held[n].finishAt == d {
					t.Fatalf("step %d: request %d finishing now left in the wheel", step, held[n].id)
				}
				held = held[n:]
				w.check(d)
				if w.len() != len(held) {
					t.Fatalf("step %d: wheel holds %d, reference %d", step, w.len(), len(held))
				}
			}
		})
	}
}

// TestFinishWheelRefuses checks the wheel's guards: a request pushed twice,
// or finishing before the counter.
func TestFinishWheelRefuses(t *testing.T) {
	cases := []struct {
		name string
		f    func(w *finishWheel)
	}{
		{"twice", func(w *finishWheel) {
			r := &request{id: 1, finishAt: 5}
			w.push(r, 0)
			w.push(r, 0)
		}},
		{"past", func(w *finishWheel) { w.push(&request{id: 1, finishAt: 3}, 4) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			c.f(&finishWheel{})
		})
	}
}
