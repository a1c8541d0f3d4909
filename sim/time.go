package sim

import (
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

// FromSeconds converts a duration in seconds to Time, rounding to the
// nearest nanosecond. It panics on NaN, negative or overflowing input: the
// caller (a kernel-time model) has broken its contract.
func FromSeconds(s float64) Time {
	if math.IsNaN(s) || s < 0 || s > float64(math.MaxInt64)/1e9 {
		panic("sim: FromSeconds of invalid duration " + strconv.FormatFloat(s, 'g', -1, 64))
	}
	return Time(math.Round(s * 1e9))
}

// Seconds returns t in seconds.
func (t Time) Seconds() float64 { return float64(t) / 1e9 }

// Milliseconds returns t in milliseconds as a float.
func (t Time) Milliseconds() float64 { return float64(t) / 1e6 }

// String formats t in seconds with nanosecond precision, e.g. "1.500000000s".
func (t Time) String() string {
	return strconv.FormatFloat(t.Seconds(), 'f', 9, 64) + "s"
}
