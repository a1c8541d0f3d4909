package metrics

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/servesim/servesim/sim"
)

// digitsRef is digits8's contract the slow way.
func digitsRef(x uint64) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v |= (x % 10) << (8 * i)
		x /= 10
	}
	return v
}

// TestDigits8 checks digits4 on every value below 10⁴, and digits8
// against digitsRef on every half below 10⁴ in each lane (the other lane 0 and 9,999: the lane arithmetic's extremes)
// and on seeded random values below 10⁸.
func TestDigits8(t *testing.T) {
	for y := range uint64(10_000) {
		if got, want := digits4(y), digitsRef(y)>>32; got != want {
			t.Fatalf("digits4(%d) = %#x, want %#x", y, got, want)
		}
		for _, x := range []uint64{y, y * 10_000, y*10_000 + 9_999, 9_999*10_000 + y} {
			if got, want := digits8(x), digitsRef(x); got != want {
				t.Fatalf("digits8(%d) = %#x, want %#x", x, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(25, 11))
	for range 100_000 {
		x := r.Uint64N(1e8)
		if got, want := digits8(x), digitsRef(x); got != want {
			t.Fatalf("digits8(%d) = %#x, want %#x", x, got, want)
		}
	}
}

// fastBound are values on both sides of every bound that changes a
// field's layout or path: digit counts, one and two blocks, the fast
// bounds, negatives and the int64 extremes.
func fastBound() []int64 {
	vs := []int64{0, 1, -1, 9, 10, 99, 100, math.MaxInt64, math.MinInt64, fastUint, fastSec, fastMs}
	for _, p := range pow10 {
		if p <= math.MaxInt64 {
			vs = append(vs, int64(p)-1, int64(p), int64(p)+1)
		}
	}
	for _, b := range []int64{fastUint, fastSec, fastMs, 1e8, 1e17, 1e14} {
		vs = append(vs, b-1, b+1)
	}
	return vs
}

// randomField draws a row field: a fast path bound or its neighbour, a
// small count, or a value of any magnitude.
func randomField(r *rand.Rand) func() int64 {
	bound := fastBound()
	return func() int64 {
		switch r.IntN(4) {
		case 0:
			return bound[r.IntN(len(bound))]
		case 1:
			return r.Int64N(100)
		}
		return r.Int64() >> r.IntN(64)
	}
}

// randomSteps are steps with fields drawn from fastBound and seeded random
// values of every magnitude, and floats from shortestCases.
func randomSteps(r *rand.Rand, n int) []Step {
	fs := shortestCases()
	field := randomField(r)
	float := func() float64 {
		if r.IntN(2) == 0 {
			return float64(r.Int64N(1<<53) >> r.IntN(53))
		}
		return fs[r.IntN(len(fs))]
	}
	ss := make([]Step, n)
	for i := range ss {
		ss[i] = Step{int(field()), sim.Time(field()), sim.Time(field()), int(field()), int(field()), int(field()),
			int(field()), int(field()), int(field()), float(), float()}
	}
	return ss
}

// randomRecords are records with fields drawn as randomSteps draws them,
// times increasing more often than not, some rejected (with reasons to
// quote) and some with one output token.
func randomRecords(r *rand.Rand, n int) []Record {
	field := randomField(r)
	reasons := []string{"", "", "", "too-long", `queue "full", retry`, " lead"}
	rs := make([]Record, n)
	for i := range rs {
		a := field()
		f := a + r.Int64N(1<<r.IntN(40))
		if r.IntN(8) == 0 {
			f = field()
		}
		e := f + r.Int64N(1<<r.IntN(45))
		rs[i] = Record{ID: field(), Instance: int(field()), Arrival: sim.Time(a), FirstToken: sim.Time(f),
			Finish: sim.Time(e), PromptTokens: int(field()), OutputTokens: int(field()), Preemptions: int(field()),
			Rejected: reasons[r.IntN(len(reasons))]}
		if r.IntN(4) == 0 {
			rs[i].OutputTokens = 1 + r.IntN(3)
		}
	}
	return rs
}

// TestFastRows checks that the fast row formatters give appendStep's and
// appendRecord's bytes, rows appended one after another to a buffer that
// grows (so stores past a row's end are overwritten by the next).
func TestFastRows(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 12))
	var got, want []byte
	for _, s := range randomSteps(r, 50_000) {
		l := len(got)
		got, want = appendStepFast(got, &s), appendStep(want, &s)
		if !bytes.Equal(got[l:], want[l:]) {
			t.Fatalf("step %+v:\n got %q\nwant %q", s, got[l:], want[l:])
		}
	}
	if !bytes.Equal(got, want) { // the rows before intact
		t.Fatal("step rows differ")
	}
	got, want = got[:0], want[:0]
	for _, rec := range randomRecords(r, 50_000) {
		l := len(got)
		got, want = appendRecordFast(got, &rec), appendRecord(want, &rec)
		if !bytes.Equal(got[l:], want[l:]) {
			t.Fatalf("record %+v:\n got %q\nwant %q", rec, got[l:], want[l:])
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("record rows differ")
	}
}

// TestFastShortest checks appendStepFast's flops_per_gpu and
// bytes_per_gpu against strconv's 'g', -1 on the fast path's floats among
// shortestCases.
func TestFastShortest(t *testing.T) {
	for _, f := range shortestCases() {
		if !fastShortest(f) {
			continue
		}
		s := Step{FLOPs: f, Bytes: f}
		g := strconv.FormatFloat(f, 'g', -1, 64)
		if got, want := string(appendStepFast(nil, &s)), "0,0.000000000,0.000000000,0,0,0,0,0,0,"+g+","+g+"\n"; got != want {
			t.Fatalf("appendStepFast(%v) = %q, want %q", f, got, want)
		}
	}
}

// FuzzFastStepRow compares appendStepFast with appendStep on any step.
func FuzzFastStepRow(f *testing.F) {
	for _, s := range randomSteps(rand.New(rand.NewPCG(25, 13)), 100) {
		f.Add(int64(s.Instance), int64(s.Start), int64(s.Duration), int64(s.Prefills), int64(s.PrefillTokens),
			int64(s.Decodes), int64(s.KVBlocksUsed), int64(s.KVBlocksTotal), int64(s.Preempted),
			math.Float64bits(s.FLOPs), math.Float64bits(s.Bytes))
	}
	f.Fuzz(func(t *testing.T, in, start, dur, pf, pt, dec, used, total, pre int64, fl, by uint64) {
		s := Step{int(in), sim.Time(start), sim.Time(dur), int(pf), int(pt), int(dec), int(used), int(total), int(pre),
			math.Float64frombits(fl), math.Float64frombits(by)}
		prefix := []byte("x\n")
		if got, want := appendStepFast(prefix, &s), appendStep(prefix, &s); !bytes.Equal(got, want) {
			t.Fatalf("step %+v: got %q, want %q", s, got, want)
		}
		s.FLOPs, s.Bytes = float64(fl>>11), float64(by>>11) // integers: the fast path
		if got, want := appendStepFast(prefix, &s), appendStep(prefix, &s); !bytes.Equal(got, want) {
			t.Fatalf("step %+v: got %q, want %q", s, got, want)
		}
	})
}

// FuzzFastRecordRow compares appendRecordFast with appendRecord on any
// record.
func FuzzFastRecordRow(f *testing.F) {
	for _, r := range randomRecords(rand.New(rand.NewPCG(25, 14)), 100) {
		f.Add(r.ID, int64(r.Instance), int64(r.Arrival), int64(r.FirstToken), int64(r.Finish), int64(r.PromptTokens),
			int64(r.OutputTokens), int64(r.Preemptions), r.Rejected)
	}
	f.Fuzz(func(t *testing.T, id, in, arr, first, fin, prompt, out, pre int64, rej string) {
		r := Record{ID: id, Instance: int(in), Arrival: sim.Time(arr), FirstToken: sim.Time(first), Finish: sim.Time(fin),
			PromptTokens: int(prompt), OutputTokens: int(out), Preemptions: int(pre), Rejected: rej}
		if got, want := appendRecordFast(nil, &r), appendRecord(nil, &r); !bytes.Equal(got, want) {
			t.Fatalf("record %+v: got %q, want %q", r, got, want)
		}
	})
}

// BenchmarkStepRows formats rows like a simulation's (a few prefills,
// tens of decodes, FLOPs and bytes integers of 11 to 14 digits).
func BenchmarkStepRows(b *testing.B) {
	r := rand.New(rand.NewPCG(25, 15))
	ss := make([]Step, 4096)
	for i := range ss {
		ss[i] = Step{Start: sim.Time(r.Int64N(6000e9)), Duration: sim.Time(5e6 + r.Int64N(40e6)), Prefills: r.IntN(2),
			PrefillTokens: r.IntN(2000), Decodes: r.IntN(120), KVBlocksUsed: r.IntN(27121), KVBlocksTotal: 27121,
			FLOPs: float64(r.Int64N(1<<44) &^ 0xff), Bytes: float64(r.Int64N(1<<35) &^ 0xfff)}
	}
	benchRows(b, ss, appendStepFast, appendStep)
}

// benchRows formats rows by the fast path and field by field, each as a
// sub-benchmark over the same rows.
func benchRows[T any](b *testing.B, rows []T, fast, fields func([]byte, *T) []byte) {
	for _, f := range []struct {
		name string
		fn   func([]byte, *T) []byte
	}{{"fast", fast}, {"fields", fields}} {
		b.Run(f.name, func(b *testing.B) {
			buf := make([]byte, 0, 1<<20)
			for b.Loop() {
				buf = buf[:0]
				for i := range rows {
					buf = f.fn(buf, &rows[i])
				}
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}

// BenchmarkRecordRows formats rows like a simulation's served requests.
func BenchmarkRecordRows(b *testing.B) {
	r := rand.New(rand.NewPCG(25, 16))
	rs := make([]Record, 4096)
	for i := range rs {
		a := sim.Time(r.Int64N(6000e9))
		f := a + sim.Time(2e7+r.Int64N(8e8))
		rs[i] = Record{ID: int64(i), Arrival: a, FirstToken: f, Finish: f + sim.Time(r.Int64N(1e11)),
			PromptTokens: r.IntN(3000), OutputTokens: 1 + r.IntN(800)}
	}
	benchRows(b, rs, appendRecordFast, appendRecord)
}
