package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/servesim/servesim/sim"
)

// TestSortFloatsMatchesSlicesSort checks the radix sort against slices.Sort
// on seeded random samples: latencies (positive, many ties after rounding
// to a nanosecond), signed values, and samples holding −0 or NaN (which take
// the fallback). Equal results are compared bit for bit.
func TestSortFloatsMatchesSlicesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 1))
	gen := map[string]func() float64{
		"latency": func() float64 { return math.Round(r.ExpFloat64()*1e9) / 1e9 },
		"signed":  func() float64 { return r.NormFloat64() * 1e3 },
		"ties":    func() float64 { return float64(r.IntN(7)) },
		"huge":    func() float64 { return math.Ldexp(r.Float64(), r.IntN(2000)-1000) },
	}
	for name, g := range gen {
		for _, n := range []int{0, 1, 255, 256, 1000, 100_000} {
			for _, special := range []float64{1, math.Copysign(0, -1), math.NaN()} {
				v := make([]float64, n)
				for i := range v {
					v[i] = g()
				}
				if n > 0 {
					v[r.IntN(n)] = special
				}
				want := slices.Clone(v)
				slices.Sort(want)
				sortFloats(v, nil)
				for i := range v {
					if math.Float64bits(v[i]) != math.Float64bits(want[i]) && !(v[i] != v[i] && want[i] != want[i]) {
						t.Fatalf("%s n=%d special=%v: [%d] = %v, slices.Sort %v", name, n, special, i, v[i], want[i])
					}
				}
			}
		}
	}
}

// TestSortTimesMatchesSlicesSort checks the radix sort of nanosecond
// samples against slices.Sort on seeded random samples whose keys span
// from no bits (all equal) to all 64 (the int64 extremes), so that every
// digit width and pass count from one to six is taken.
func TestSortTimesMatchesSlicesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 6))
	for _, span := range []int{0, 1, 7, 11, 12, 22, 23, 34, 37, 50, 62} {
		for _, n := range []int{255, 256, 1000, 100_000} {
			v := make([]sim.Time, n)
			for i := range v {
				v[i] = sim.Time(1e9 + r.Int64N(1<<span))
			}
			if span == 62 { // and the extremes: all 64 bits
				v[0], v[n-1] = math.MinInt64, math.MaxInt64
			}
			want := slices.Clone(v)
			slices.Sort(want)
			if sortTimes(v, nil); !slices.Equal(v, want) {
				t.Fatalf("span %d bits, n=%d: radix sort differs from slices.Sort", span, n)
			}
		}
	}
}

// TestRadixTopCrowded checks radixTop where many keys share a bucket of its
// top bits: 100,000 keys below 2²⁰ and one at 2⁴⁰ (one bucket holds all
// but one: the insertion sort gives up and the keys are sorted again),
// and the same with every 50th key crowded (the insertion sort finishes).
func TestRadixTopCrowded(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 8))
	for _, every := range []int{1, 50} {
		v := make([]uint64, 100_000)
		for i := range v {
			v[i] = 1<<30 + r.Uint64N(1<<40)
			if i%every == 0 {
				v[i] = r.Uint64N(1 << 20)
			}
		}
		v[len(v)/2] = 1 << 40
		want := slices.Clone(v)
		slices.Sort(want)
		if got := radixTop(v, make([]uint64, len(v)), 0, nil); !slices.Equal(got, want) {
			t.Fatalf("one key in %d crowded: radixTop differs from slices.Sort", every)
		}
	}
}
