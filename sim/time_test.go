package sim

import (
	"math"
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
