package sim

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestFromSecondsChecked(t *testing.T) {
	cases := []struct {
		s       float64
		want    Time
		wantErr string // "" = no error
	}{
		{0, 0, ""},
		{2.5, 2500 * Millisecond, ""},
		{1e9, 1e9 * Second, ""},                // 1e18 ns < 2^63 ≈ 9.22e18
		{9.2e9, 9_200_000_000 * Second, ""},    // 9.2e18 ns, still below 2^63
		{9.3e9, 0, "out of the clock's range"}, // 9.3e18 ns > 2^63
		{MaxSeconds, 0, "out of the clock's range"},
		{1e10, 0, "out of the clock's range"}, // --slo-ttft 1e13 ms = 1e10 s = 1e19 ns > 2^63
		{math.Inf(1), 0, "out of the clock's range"},
		{1e308, 0, "out of the clock's range"},
		{-1, 0, "not a duration ≥ 0"},
		{math.NaN(), 0, "not a duration ≥ 0"},
		{math.Inf(-1), 0, "not a duration ≥ 0"},
	}
	for _, c := range cases {
		got, err := FromSecondsChecked(c.s)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("FromSecondsChecked(%g): %v", c.s, err)
		case c.wantErr == "" && got != c.want:
			t.Errorf("FromSecondsChecked(%g) = %d, want %d", c.s, got, c.want)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("FromSecondsChecked(%g) = %d, %v; want an error with %q", c.s, got, err, c.wantErr)
		}
	}
}

func TestAddSeconds(t *testing.T) {
	cases := []struct {
		t    Time
		s    float64
		want Time
		ok   bool
	}{
		{0, 1, Second, true},
		{Second, 0.5, 1500 * Millisecond, true},
		{Forever - Second, 0.5, Forever - 500*Millisecond, true},
		{Forever - Second, 1, 0, false}, // would reach Forever exactly
		{Forever - Second, 2, 0, false}, // would wrap past the clock's end
		{1e18, 9e9, 0, false},           // 1e18 + 9e18 ns > 2^63 − 1
		{0, math.NaN(), 0, false},
		{0, -1e-3, 0, false},
		{0, math.Inf(1), 0, false},
	}
	for _, c := range cases {
		got, ok := c.t.AddSeconds(c.s)
		if ok != c.ok || got != c.want {
			t.Errorf("(%d).AddSeconds(%g) = %d, %v; want %d, %v", c.t, c.s, got, ok, c.want, c.ok)
		}
	}
}

// FromSeconds keeps its contract at the edge: the largest value below 2^63
// ns converts; anything from 2^63 ns up panics instead of wrapping.
func TestFromSecondsEdge(t *testing.T) {
	if got := FromSeconds(9.2e9); got <= 0 {
		t.Fatalf("FromSeconds(9.2e9) = %d, want > 0", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("FromSeconds(MaxSeconds) did not panic")
		}
	}()
	FromSeconds(MaxSeconds)
}

// refFromSeconds is fromSeconds as it was, through math.Round: roundNs
// must give the same Time and verdict for every float64.
func refFromSeconds(s float64) (Time, bool) {
	ns := math.Round(s * 1e9)
	if !(s >= 0 && ns < 0x1p63) {
		return 0, false
	}
	return Time(ns), true
}

// checkRound compares fromSeconds and AddSeconds with the math.Round
// reference at s.
func checkRound(t *testing.T, s float64) {
	t.Helper()
	want, wok := refFromSeconds(s)
	if got, ok := fromSeconds(s); got != want || ok != wok {
		t.Fatalf("fromSeconds(%b = %g) = %d, %v; math.Round gives %d, %v", s, s, got, ok, want, wok)
	}
	for _, at := range []Time{0, 12345, Forever / 2, Forever - 1} {
		wantT, wantOK := Time(0), wok && want < Forever-at
		if wantOK {
			wantT = at + want
		}
		if got, ok := at.AddSeconds(s); got != wantT || ok != wantOK {
			t.Fatalf("(%d).AddSeconds(%g) = %d, %v; math.Round gives %d, %v", at, s, got, ok, wantT, wantOK)
		}
	}
}

// roundNs rounds as math.Round does: at halves, next to halves, at the
// edges of exact integers (2^52, 2^53) and of the clock (2^63), and on
// random seconds, nanoseconds and bit patterns.
func TestRoundNsMatchesMathRound(t *testing.T) {
	var edges []float64
	for _, ns := range []float64{0, 0.5, 1, 1.5, 2.5, 1e9, 0x1p52, 0x1p53, 0x1p62, 0x1p63, 0x1p64} {
		for _, x := range []float64{ns, math.Nextafter(ns, 0), math.Nextafter(ns, math.Inf(1)),
			ns - 0.5, ns + 0.5, math.Nextafter(ns-0.5, 0), math.Nextafter(ns+0.5, math.Inf(1))} {
			edges = append(edges, x/1e9, math.Nextafter(x/1e9, 0), math.Nextafter(x/1e9, math.Inf(1)))
		}
	}
	edges = append(edges, math.Copysign(0, -1), -1e-12, math.NaN(), math.Inf(1), math.Inf(-1), MaxSeconds,
		math.Nextafter(MaxSeconds, 0), math.SmallestNonzeroFloat64, math.MaxFloat64)
	for _, s := range edges {
		checkRound(t, s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		checkRound(t, r.Float64()*0.1)                            // step times
		checkRound(t, float64(r.Int64N(1<<40))/1e9+0.5e-9)        // halves of a nanosecond
		checkRound(t, math.Float64frombits(r.Uint64()&^(1<<63)))  // any positive float
		checkRound(t, math.Ldexp(r.Float64(), r.IntN(80)-20)/1e9) // every scale up to the clock's
	}
}

func FuzzRoundNs(f *testing.F) {
	f.Add(0.0125)
	f.Add(0.5e-9)
	f.Add(4503599.6274969)
	f.Fuzz(func(t *testing.T, s float64) { checkRound(t, s) })
}
