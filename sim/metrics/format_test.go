package metrics

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// intCases are edge cases of the integer formatters: 0, each power of ten
// and its neighbours (where the digit count changes), the int64 and uint64
// extremes.
func intCases() []uint64 {
	us := []uint64{0, math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64}
	for _, p := range pow10 {
		us = append(us, p-1, p, p+1)
	}
	r := rand.New(rand.NewPCG(25, 4))
	for range 20_000 {
		us = append(us, r.Uint64()>>r.IntN(64))
	}
	return us
}

// TestAppendUintInt checks appendUint and appendInt against strconv, and
// that they append to what b holds.
func TestAppendUintInt(t *testing.T) {
	for _, u := range intCases() {
		if got, want := string(appendUint([]byte("x,"), u)), "x,"+strconv.FormatUint(u, 10); got != want {
			t.Fatalf("appendUint(%d) = %q, want %q", u, got, want)
		}
		v := int64(u)
		if got, want := string(appendInt([]byte("x,"), v)), "x,"+strconv.FormatInt(v, 10); got != want {
			t.Fatalf("appendInt(%d) = %q, want %q", v, got, want)
		}
	}
}

// shortestCases are floats for appendShortest: both sides of every bound of
// its fast path (1, 10⁶ where %e starts, 2⁵³), integers with and without
// trailing zeros, non-integers next to integers, zeros, NaN, infinities,
// subnormals, and seeded random integers and bit patterns.
func shortestCases() []float64 {
	fs := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1 - 0x1p-53, 1 + 0x1p-52, 9, 10, 999_999, 1e6, 1e6 + 1,
		1_000_001.5, 1e7, 1.5e7, 123_456_789_012, 1.2794538868736e13, 2.5195883008e10, 1e15, 1e16,
		1<<53 - 1, 1 << 53, 1<<53 + 2, 1 << 60, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(),
		math.Inf(1), math.Inf(-1), -123456789}
	for _, p := range pow10 {
		f := float64(p)
		fs = append(fs, f, f-1, f+1, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)))
	}
	r := rand.New(rand.NewPCG(25, 5))
	for range 50_000 {
		fs = append(fs, float64(r.Uint64()>>r.IntN(64)), math.Float64frombits(r.Uint64()),
			float64(r.IntN(1e6))*math.Pow(10, float64(r.IntN(12))))
	}
	return fs
}

// TestAppendShortest checks appendShortest against strconv's 'g', -1.
func TestAppendShortest(t *testing.T) {
	for _, f := range shortestCases() {
		if got, want := string(appendShortest([]byte("x,"), f)), "x,"+strconv.FormatFloat(f, 'g', -1, 64); got != want {
			t.Fatalf("appendShortest(%v [%#x]) = %q, want %q", f, math.Float64bits(f), got, want)
		}
	}
}

// FuzzAppendShortest compares appendShortest with strconv on any bit
// pattern, and on the integer the bits make below 2⁵³ (the fast path).
func FuzzAppendShortest(f *testing.F) {
	for _, v := range shortestCases()[:200] {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		for _, v := range []float64{math.Float64frombits(bits), float64(bits >> 11)} {
			if got, want := string(appendShortest(nil, v)), strconv.FormatFloat(v, 'g', -1, 64); got != want {
				t.Fatalf("appendShortest(%v) = %q, want %q", v, got, want)
			}
		}
	})
}

// sizeWriter records the length of every Write.
type sizeWriter struct{ sizes []int }

func (w *sizeWriter) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return len(p), nil
}

// TestWriterChunks checks that the CSV writers hand their io.Writer one
// write a chunk of chunkRows rows, in order, the header in the first, and
// the rest at Flush: 5,000 rows of 59 bytes are writes of 2,048, 2,048
// and 904 rows.
func TestWriterChunks(t *testing.T) {
	var w sizeWriter
	var buf bytes.Buffer
	s := Step{Start: 1500 * ms, Duration: 12345678, Decodes: 30, KVBlocksUsed: 700, KVBlocksTotal: 1000, FLOPs: 1.25e13, Bytes: 3e10}
	for _, out := range []io.Writer{&w, &buf} {
		sw := NewStepWriter(out)
		for i := range 5000 {
			s.Instance = i % 10
			if err := sw.Write(&s); err != nil {
				t.Fatal(err)
			}
		}
		if err := sw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	row := len("0,1.500000000,0.012345678,0,0,30,700,1000,0,1.25e+13,3e+10\n")
	want := []int{len(StepHeader) + 1 + 2048*row, 2048 * row, 904 * row}
	if !slices.Equal(w.sizes, want) {
		t.Errorf("writes of %v bytes, want %v", w.sizes, want)
	}
	// The bytes are those of formatting in line, rows in order.
	var inline []byte
	inline = append(inline, StepHeader+"\n"...)
	for i := range 5000 {
		s.Instance = i % 10
		inline = appendStep(inline, &s)
	}
	if !bytes.Equal(buf.Bytes(), inline) {
		t.Error("rows written by the chunk goroutines differ from rows formatted in line")
	}
}

// TestWriterAsyncError checks that a failed write of a chunk, made while
// rows go on, is returned by the Write that hands over the next chunk
// once the pipe has found it (row 2 × 2,048 when the test waits for the
// pipe after the first), by every Write after, and by Flush; and that a
// failure the rows outran is still returned by Flush.
func TestWriterAsyncError(t *testing.T) {
	sw := NewStepWriter(failWriter{})
	s := Step{FLOPs: 1.25e13, Bytes: 3e10}
	for range chunkRows {
		if err := sw.Write(&s); err != nil {
			t.Fatalf("error before the pipe wrote: %v", err)
		}
	}
	sw.q.p.idle.Wait() // the first chunk's write has failed
	var err error
	rows := chunkRows
	for ; rows < 20_000 && err == nil; rows++ {
		err = sw.Write(&s)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "metrics: writing steps") {
		t.Fatalf("after %d rows: %v", rows, err)
	}
	if rows != 2*chunkRows {
		t.Errorf("error seen at row %d, want %d", rows, 2*chunkRows)
	}
	if err := sw.Write(&s); err == nil {
		t.Error("a Write after the error returned nil")
	}
	if err := sw.Flush(); err == nil {
		t.Error("Flush after a failed write returned nil")
	}

	sw = NewStepWriter(failWriter{})
	for range 10 * chunkRows {
		_ = sw.Write(&s)
	}
	if err := sw.Flush(); err == nil || !strings.HasPrefix(err.Error(), "metrics: writing steps") {
		t.Errorf("Flush after unsynchronised writes: %v", err)
	}
}

// ms6Cases are values for appendMs6: exact ties at the 6th decimal (dyadic
// values such as 2⁻⁷ = 0.0078125, which round to even), their neighbours,
// zero, subnormals, both sides of 2⁴⁰, non-finite values, and seeded
// quotients made the way a TPOT is: nanoseconds / 1e6 / (tokens − 1).
func ms6Cases() []float64 {
	fs := []float64{0, math.Copysign(0, -1), math.SmallestNonzeroFloat64, 0x1p-1022, 5e-7, 4.9999999e-7, 1e-6,
		0.0078125, 0.0234375, 123.0078125, 1.0000005, 1 << 40, math.Nextafter(1<<40, 0), 1e15, math.MaxFloat64,
		math.NaN(), math.Inf(1), -1.5, 0.5, 0.9999995, 9.9999995}
	for k := -30; k <= 39; k++ {
		for _, j := range []float64{1, 3, 5, 7, 15625, 46875} {
			f := math.Ldexp(j, k)
			fs = append(fs, f, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)))
		}
	}
	r := rand.New(rand.NewPCG(25, 7))
	for range 100_000 {
		ns := r.Int64N(1 << r.IntN(45))
		fs = append(fs, float64(ns)/1e6/float64(1+r.IntN(2000)), math.Float64frombits(r.Uint64()>>1)) // the second: any non-negative bits
	}
	return fs
}

// TestAppendMs6 checks appendMs6 against strconv's 'f', 6.
func TestAppendMs6(t *testing.T) {
	for _, f := range ms6Cases() {
		if got, want := string(appendMs6([]byte("x,"), f)), "x,"+strconv.FormatFloat(f, 'f', 6, 64); got != want {
			t.Fatalf("appendMs6(%v [%#x]) = %q, want %q", f, math.Float64bits(f), got, want)
		}
	}
}

// FuzzAppendMs6 compares appendMs6 with strconv on any bit pattern, and on
// the value the bits make below 2⁴⁰ (the exact path).
func FuzzAppendMs6(f *testing.F) {
	for _, v := range ms6Cases()[:300] {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		for _, v := range []float64{math.Float64frombits(bits), math.Ldexp(float64(bits>>11), -int(bits%64))} {
			if got, want := string(appendMs6(nil, v)), strconv.FormatFloat(v, 'f', 6, 64); got != want {
				t.Fatalf("appendMs6(%v) = %q, want %q", v, got, want)
			}
		}
	})
}
