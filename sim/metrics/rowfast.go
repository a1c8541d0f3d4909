package metrics

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

// The CSV rows are formatted eight digits at a time: digits8 turns a
// number below 10⁸ into its eight decimal digits, one a byte, with three
// multiplications and no loop or table, and put8 stores them with one
// 8-byte write, where appendStep and appendRecord take two digits at a
// time, a division each, and a call a field. A row is a call for each
// run of fields of one kind (putCounts, putSecs, putMss, putShortests;
// appendStepFast has them in line), written into spare capacity past the slice's end (rowSlack
// bytes, so every 8-byte store lands inside it); the slice is then
// extended by what the row took, and bytes stored past the row's end are
// overwritten by the next row or never part of the slice. On the r17
// run's rows this is 18 % faster for requests.csv and 5–10 % for
// steps.csv, whose short counts were already cheap.
//
// A row takes this path when every field is within its bounds (counts and
// ids in [0, 2²⁶), times non-negative with an integer part below 10⁸,
// FLOPs and bytes integers in [1, 2⁵³) or 0 — what a simulation writes);
// any other row is formatted by appendStep or appendRecord, field by field.
// The bytes are the same either way (TestFastRows, FuzzFastStepRow,
// FuzzFastRecordRow).

// rowSlack is the spare capacity a fast row needs: a step row within the
// bounds is at most 145 bytes and a record row before its rejected reason
// 150, and the last 8-byte store may reach 7 bytes past the row.
const rowSlack = 256

// ascii0 adds '0' to each of eight digit bytes.
const ascii0 = 0x3030303030303030

// Bounds of the fast path: powers of two, so that one comparison of the
// fields' bitwise or checks them all (an int below 0 is a uint64 above
// every bound).
const (
	fastUint = 1 << 26 // integers, below 10⁸: one block of eight digits
	fastSec  = 1 << 56 // nanoseconds printed as seconds: an integer part below 10⁸
	fastMs   = 1 << 46 // nanoseconds (or TPOT units) printed as milliseconds: the same
)

// digits8 returns the eight decimal digits of x < 10⁸, zero-padded, as the
// values 0–9 in the bytes of a uint64, the first digit in the lowest byte
// (the first in memory when stored little-endian). It splits x into two
// halves below 10⁴ in 32-bit lanes, each into two below 100 in 16-bit
// lanes, each into two digits in bytes, every lane at once: y/100 is
// y·10486>>20 for y < 10⁴ and z/10 is z·103>>10 for z < 100 (exact,
// TestDigits8), and no lane's product reaches the next lane.
func digits8(x uint64) uint64 {
	hi := x / 10000
	v := hi | (x-hi*10000)<<32
	q := v * 10486 >> 20 & 0x0000007f_0000007f
	v = q | (v-q*100)<<16
	q = v * 103 >> 10 & 0x000f000f_000f000f
	return q | (v-q*10)<<8
}

// digits4 is digits8 for x < 10⁴ without its first step: the four digits
// of x in the low four bytes, the first lowest, and zeros above.
func digits4(x uint64) uint64 {
	q := x * 10486 >> 20
	v := q | (x-q*100)<<16
	q = v * 103 >> 10 & 0x000f000f
	return q | (v-q*10)<<8
}

// put8 stores the eight bytes of v at d[p:].
func put8(d []byte, p int, v uint64) { binary.LittleEndian.PutUint64(d[p:], v) }

// putVar stores the digits v (from digits8) at d[p:] without their leading
// zeros, one digit at least, and returns the position after them.
func putVar(d []byte, p int, v uint64) int {
	lz := bits.TrailingZeros64(v|1<<56) >> 3 // leading zero digits, at most 7
	put8(d, p, (v+ascii0)>>(lz*8))
	return p + 8 - lz
}

// The helpers below store runs of fields of one kind at d[p:], each
// followed by a comma, and return the position after the last comma: a
// row is a few calls, one a run, with no switch on a field's kind (a call
// a field, or a switch, costs more than formatting most of a step's
// fields).

// putCounts stores integers below 10⁸. Counts below 10⁴ (most of a step's
// and of a request's) take a branch on their length, which is predicted
// more often than not, rather than digits8 and its longer dependency
// chain into the next field's position.
func putCounts(d []byte, p int, us []uint64) int {
	for _, u := range us {
		if u < 10 {
			d[p] = byte('0' + u)
			p++
		} else if u < 100 {
			d[p], d[p+1] = digitPairs[2*u], digitPairs[2*u+1]
			p += 2
		} else if u < 10000 { // digits8's last two steps: the four digits in the low bytes
			x := digits4(u)
			lz := bits.TrailingZeros64(x) >> 3 // 0 or 1
			put8(d, p, (x+ascii0)>>(lz*8))
			p += 4 - lz
		} else {
			p = putVar(d, p, digits8(u))
		}
		d[p] = ','
		p++
	}
	return p
}

// putSecs stores nanoseconds below fastSec as seconds with 9 decimals.
func putSecs(d []byte, p int, us []uint64) int {
	for _, u := range us {
		w := u / 1e9
		frac := u - w*1e9
		if w < 10 { // a step's duration; the first seconds of a run
			d[p] = byte('0' + w)
			p++
		} else {
			p = putVar(d, p, digits8(w))
		}
		f1 := frac / 1e8
		d[p], d[p+1] = '.', byte('0'+f1)
		put8(d, p+2, digits8(frac-f1*1e8)+ascii0)
		d[p+10] = ','
		p += 11
	}
	return p
}

// putMss stores millionths below fastMs as numbers with 6 decimals.
func putMss(d []byte, p int, us []uint64) int {
	for _, u := range us {
		w := u / 1e6
		p = putVar(d, p, digits8(w))
		put8(d, p+1, (digits8(u-w*1e6)+ascii0)>>16) // the last six of eight digits
		d[p] = '.'
		d[p+7] = ','
		p += 8
	}
	return p
}

// putShortests stores fastShortest floats as appendShortest prints them.
func putShortests(d []byte, p int, fs []float64) int {
	for _, f := range fs {
		if u := uint64(f); u >= 1e6 {
			p = putExp(d, p, u)
		} else if u < 10 {
			d[p], d[p+1] = byte('0'+u), ','
			p += 2
		} else {
			p = putVar(d, p, digits8(u))
			d[p] = ','
			p++
		}
	}
	return p
}

// fastShortest reports whether f takes the fast path of appendShortest's
// form: 0 or an integer in [1, 2⁵³).
func fastShortest(f float64) bool {
	return (f >= 1 && f < 1<<53 && f == math.Trunc(f)) || math.Float64bits(f) == 0
}

// putExp stores the integer 10⁶ ≤ u < 2⁵³ as appendShortest prints it,
// d.ddde+XX (the digits without their trailing zeros; see appendShortest
// for why that is the shortest form), and a comma at d[p:] and returns
// the position after the comma. The first digit is stored before the
// point and the rest after it; the point and the rest are overwritten
// when the rest is all zeros.
func putExp(d []byte, p int, u uint64) int {
	hi := u / 1e8
	lo := digits8(u - hi*1e8)
	var n, nd int // digits, significant digits
	if hi == 0 {
		lz := bits.TrailingZeros64(lo) >> 3 // 0 or 1: u ≥ 10⁶
		n = 8 - lz
		v := (lo + ascii0) >> (lz * 8)
		d[p], d[p+1] = byte(v), '.'
		put8(d, p+2, v>>8)
		nd = n - bits.LeadingZeros64(lo)>>3
	} else {
		h := digits8(hi)
		lz := bits.TrailingZeros64(h) >> 3
		n = 16 - lz
		v := (h + ascii0) >> (lz * 8)
		d[p], d[p+1] = byte(v), '.'
		put8(d, p+2, v>>8) // the other 7−lz digits of hi, then zeros
		put8(d, p+9-lz, lo+ascii0)
		if lo != 0 {
			nd = n - bits.LeadingZeros64(lo)>>3
		} else {
			nd = n - 8 - bits.LeadingZeros64(h)>>3
		}
	}
	e := p + 1 + nd // after the point and the rest
	if nd == 1 {
		e = p + 1 // after the first digit
	}
	put8(d, e, expTail[n-1])
	return e + 5
}

// expTail holds "e+XX," for the exponents 0 … 15 as put8 stores it (the
// first byte lowest, three bytes of zeros past the comma).
var expTail = func() (t [16]uint64) {
	for x := range t {
		t[x] = 'e' | '+'<<8 | uint64(digitPairs[2*x])<<16 | uint64(digitPairs[2*x+1])<<24 | ','<<32
	}
	return t
}()

// appendStepFast is appendStep, through the fast path when s is within its
// bounds. It is the helpers' loops written out in line, each field after
// a comma but the first: the calls cost a step row (three times as many
// as records in a run) 4–7 % on BenchmarkStepRows.
func appendStepFast(b []byte, s *Step) []byte {
	if !fastStep(s) {
		return appendStep(b, s)
	}
	b = slices.Grow(b, rowSlack)
	l := len(b)
	d := b[l : l+rowSlack]
	p := 0
	if u := uint64(s.Instance); u < 10 {
		d[0] = byte('0' + u)
		p = 1
	} else {
		p = putVar(d, 0, digits8(u))
	}
	for _, u := range [...]uint64{uint64(s.Start), uint64(s.Duration)} {
		d[p] = ','
		p++
		w := u / 1e9
		frac := u - w*1e9
		if w < 10 {
			d[p] = byte('0' + w)
			p++
		} else {
			p = putVar(d, p, digits8(w))
		}
		f1 := frac / 1e8
		d[p], d[p+1] = '.', byte('0'+f1)
		put8(d, p+2, digits8(frac-f1*1e8)+ascii0)
		p += 10
	}
	for _, u := range [...]uint64{uint64(s.Prefills), uint64(s.PrefillTokens), uint64(s.Decodes),
		uint64(s.KVBlocksUsed), uint64(s.KVBlocksTotal), uint64(s.Preempted)} {
		d[p] = ','
		p++
		if u < 10 {
			d[p] = byte('0' + u)
			p++
		} else if u < 100 {
			d[p], d[p+1] = digitPairs[2*u], digitPairs[2*u+1]
			p += 2
		} else if u < 10000 {
			x := digits4(u)
			lz := bits.TrailingZeros64(x) >> 3 // 0 or 1
			put8(d, p, (x+ascii0)>>(lz*8))
			p += 4 - lz
		} else {
			p = putVar(d, p, digits8(u))
		}
	}
	d[p] = ','
	p++
	for _, f := range [...]float64{s.FLOPs, s.Bytes} {
		if u := uint64(f); u >= 1e6 {
			p = putExp(d, p, u)
		} else if u < 10 {
			d[p], d[p+1] = byte('0'+u), ','
			p += 2
		} else {
			p = putVar(d, p, digits8(u))
			d[p] = ','
			p++
		}
	}
	d[p-1] = '\n' // over the last comma
	return b[:l+p]
}

// fastStep reports whether every field of s is within the fast path's
// bounds.
func fastStep(s *Step) bool {
	return uint64(s.Instance|s.Prefills|s.PrefillTokens|s.Decodes|s.KVBlocksUsed|s.KVBlocksTotal|s.Preempted) < fastUint &&
		uint64(s.Start|s.Duration) < fastSec && fastShortest(s.FLOPs) && fastShortest(s.Bytes)
}

// appendRecordFast is appendRecord, through the fast path when r is within
// its bounds.
func appendRecordFast(b []byte, r *Record) []byte {
	served := r.Rejected == ""
	ms, tpot := r.TPOT()
	tpot = tpot && served
	var tq uint64 // TPOT in millionths of a millisecond, if tpot
	if tpot {
		q, exact := ms6Units(ms)
		if !exact || q >= fastMs {
			return appendRecord(b, r)
		}
		tq = q
	}
	if uint64(r.ID|int64(r.Instance|r.PromptTokens|r.OutputTokens|r.Preemptions)) >= fastUint || uint64(r.Arrival) >= fastSec ||
		served && (uint64(r.FirstToken|r.Finish) >= fastSec || uint64(r.TTFT()|r.E2E()) >= fastMs) {
		return appendRecord(b, r)
	}
	b = slices.Grow(b, rowSlack)
	l := len(b)
	d := b[l : l+rowSlack]
	p := putCounts(d, 0, []uint64{uint64(r.ID), uint64(r.Instance)})
	if served {
		p = putSecs(d, p, []uint64{uint64(r.Arrival), uint64(r.FirstToken), uint64(r.Finish)})
	} else {
		p = putSecs(d, p, []uint64{uint64(r.Arrival)})
		d[p], d[p+1] = ',', ','
		p += 2
	}
	p = putCounts(d, p, []uint64{uint64(r.PromptTokens), uint64(r.OutputTokens)})
	switch {
	case tpot:
		p = putMss(d, p, []uint64{uint64(r.TTFT()), tq, uint64(r.E2E())})
	case served: // one output token: no TPOT
		p = putMss(d, p, []uint64{uint64(r.TTFT())})
		d[p] = ','
		p = putMss(d, p+1, []uint64{uint64(r.E2E())})
	default:
		d[p], d[p+1], d[p+2] = ',', ',', ','
		p += 3
	}
	p = putCounts(d, p, []uint64{uint64(r.Preemptions)})
	b = b[:l+p]
	if !served {
		b = appendCSVField(b, r.Rejected)
	}
	return append(b, '\n')
}
