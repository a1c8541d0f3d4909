package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/servesim/servesim/sim"
)

// fixedRef is appendFixed's contract written the slow way: the integer
// part and the remainder, zero-padded to the digits, from integer
// nanoseconds (9 decimals: seconds; 6: milliseconds).
func fixedRef(t sim.Time, digits int) string {
	unit := int64(1e9)
	if digits == 6 {
		unit = 1e6
	}
	sign, u := "", uint64(t)
	if t < 0 {
		sign, u = "-", -u
	}
	return fmt.Sprintf("%s%d.%0*d", sign, u/uint64(unit), digits, u%uint64(unit))
}

// TestAppendFixed checks appendFixed against fixedRef on edge cases
// (0, one nanosecond, a whole second, the int64 extremes) and seeded
// random times.
func TestAppendFixed(t *testing.T) {
	ts := []sim.Time{0, 1, -1, 999_999, 1_000_000, 999_999_999, 1_000_000_000, 1_234_567_890_123, math.MaxInt64, math.MinInt64}
	r := rand.New(rand.NewPCG(25, 3))
	for range 10_000 {
		ts = append(ts, sim.Time(r.Int64()>>r.IntN(63)))
	}
	for _, tm := range ts {
		for _, d := range []int{9, 6} {
			if got, want := string(appendFixed(nil, tm, d)), fixedRef(tm, d); got != want {
				t.Fatalf("appendFixed(%d, %d) = %q, want %q", tm, d, got, want)
			}
		}
	}
}
