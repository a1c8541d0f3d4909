package sim

import (
	"fmt"
	"math"
	"strconv"
)

// Time is simulated time in integer nanoseconds since the start of a run.
// Integer time makes equal times compare exactly on every platform; float
// durations from the kernel-time model are converted once, by FromSeconds.
type Time int64

// Units of Time.
const (
	Nanosecond  Time = 1
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
)

// Forever is later than any event a run can schedule.
const Forever Time = math.MaxInt64

// MaxSeconds is the clock's range in seconds: 2^63 ns ≈ 9.22e9 s, about
// 292 years. Durations and times in seconds must stay below it.
const MaxSeconds = 0x1p63 / 1e9

// FromSeconds converts a duration in seconds to Time, rounding to the
// nearest nanosecond. It panics on NaN, negative or overflowing input
// (MaxSeconds or more): the caller (a kernel-time model) has broken its
// contract. Values from outside the program go through FromSecondsChecked.
func FromSeconds(s float64) Time {
	t, ok := fromSeconds(s)
	if !ok {
		panic("sim: FromSeconds of invalid duration " + strconv.FormatFloat(s, 'g', -1, 64))
	}
	return t
}

// fromSeconds is FromSeconds reporting failure instead of panicking.
func fromSeconds(s float64) (Time, bool) {
	ns := s * 1e9
	if !(s >= 0 && ns < 0x1p63) { // false for NaN
		return 0, false
	}
	return roundNs(ns), true
}

// roundNs returns math.Round(ns) as a Time, for 0 ≤ ns < 2^63 (or -0):
// the conversion truncates, and the fraction it drops, ns − trunc(ns), is
// exact (below 2^52 the integer part and the fraction share ns's bits;
// from 2^52 up ns is an integer), so it rounds half away from zero as
// math.Round does, without math.Round's moves between the float and
// integer registers. math.Round(ns) < 2^63 exactly when ns < 2^63 (from
// 2^52 up both are ns), so the callers' range checks are unchanged.
func roundNs(ns float64) Time {
	t := Time(ns)
	if ns-float64(t) >= 0.5 {
		t++
	}
	return t
}

// FromSecondsChecked is FromSeconds for durations from outside the program
// (a scenario, a file): it returns an error saying what is wrong instead of
// panicking. The caller adds where the value came from.
func FromSecondsChecked(s float64) (Time, error) {
	if t, ok := fromSeconds(s); ok {
		return t, nil
	}
	if !(s >= 0) {
		return 0, fmt.Errorf("sim: %g s is not a duration ≥ 0", s)
	}
	return 0, fmt.Errorf("sim: %g s is out of the clock's range (less than %.4g s, about 292 years)", s, MaxSeconds)
}

// AddSeconds returns t plus a duration of s seconds, and false instead when
// s is not a duration ≥ 0 or the sum would reach Forever (the clock's end).
// It is cheap enough for every step of a run: one conversion and a compare.
// t must be ≥ 0, as every simulated time is.
func (t Time) AddSeconds(s float64) (Time, bool) {
	// fromSeconds written out: one call per step, as FromSeconds was.
	ns := s * 1e9
	if !(s >= 0 && ns < 0x1p63) {
		return 0, false
	}
	if d := roundNs(ns); d < Forever-t {
		return t + d, true
	}
	return 0, false
}

// Seconds returns t in seconds.
func (t Time) Seconds() float64 { return float64(t) / 1e9 }

// Milliseconds returns t in milliseconds as a float.
func (t Time) Milliseconds() float64 { return float64(t) / 1e6 }

// String formats t in seconds with nanosecond precision, e.g. "1.500000000s".
func (t Time) String() string {
	return strconv.FormatFloat(t.Seconds(), 'f', 9, 64) + "s"
}
