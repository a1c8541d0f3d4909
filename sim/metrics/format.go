package metrics

import (
	"math"
	"math/bits"
	"strconv"

	"github.com/servesim/servesim/sim"
)

// The CSV writers format a few million numbers a run (613k steps of 11
// fields for the 100k-request default workload). The functions here write
// the same bytes as strconv, straight into the row, two digits at a time.

// digitPairs holds "00", "01", ..., "99".
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"404142434445464748495051525354555657585960616263646566676869" +
	"707172737475767778798081828384858687888990919293949596979899"

// pow10 holds 10⁰ … 10¹⁹, every power of ten a uint64 holds.
var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
	1e17, 1e18, 1e19}

// decLen returns the number of decimal digits of u (1 for 0).
// bits.Len64·1233>>12 is ⌊log₁₀ 2^len⌋ (1233/4096 ≈ log₁₀ 2), one less than
// or equal to the digit count; a comparison with 10^that settles it.
func decLen(u uint64) int {
	u |= 1
	n := bits.Len64(u) * 1233 >> 12
	if u >= pow10[n] {
		n++
	}
	return n
}

// putDigits writes u's last len(d) decimal digits into d, zero-padded.
func putDigits(d []byte, u uint64) {
	i := len(d)
	for i >= 2 {
		q := u / 100
		r := u - q*100
		u = q
		i -= 2
		d[i], d[i+1] = digitPairs[2*r], digitPairs[2*r+1]
	}
	if i == 1 {
		d[0] = byte('0' + u%10)
	}
}

// grow extends b by n bytes and returns it and the new bytes.
func grow(b []byte, n int) ([]byte, []byte) {
	l := len(b)
	if cap(b)-l < n {
		b = append(b, make([]byte, n)...)
	} else {
		b = b[:l+n]
	}
	return b, b[l:]
}

// appendUint is strconv.AppendUint(b, u, 10).
func appendUint(b []byte, u uint64) []byte {
	if u < 10 { // most counts of a step (prefills, preempted, often decodes)
		return append(b, byte('0'+u))
	}
	b, d := grow(b, decLen(u))
	putDigits(d, u)
	return b
}

// appendInt is strconv.AppendInt(b, v, 10).
func appendInt(b []byte, v int64) []byte {
	u := uint64(v)
	if v < 0 {
		b = append(b, '-')
		u = -u // two's complement: right for MinInt64 too
	}
	return appendUint(b, u)
}

// appendFixed appends t in seconds (digits 9) or milliseconds (digits 6)
// with exactly that many decimals, from integer nanoseconds, so no float
// rounding is involved.
func appendFixed(b []byte, t sim.Time, digits int) []byte {
	u := uint64(t)
	if t < 0 {
		b = append(b, '-')
		u = -u // two's complement: right for MinInt64 too
	}
	unit := uint64(1e9)
	if digits == 6 {
		unit = 1e6
	}
	whole, frac := u/unit, u%unit
	n := decLen(whole)
	b, d := grow(b, n+1+digits)
	putDigits(d[:n], whole)
	d[n] = '.'
	putDigits(d[n+1:], frac)
	return b
}

// appendShortest is strconv.AppendFloat(b, f, 'g', -1, 64): the shortest
// decimal that reads back as f, in %e form from 10⁶ up. An integer f in
// [1, 2⁵³) (the FLOPs and bytes of a step are) takes a fast path: the
// floats around it are at most 1 apart, so no other integer, and hence no
// decimal with fewer significant digits than f's own (which would be a
// multiple of a larger power of ten, another integer), rounds to f: its
// digits without trailing zeros are the shortest form. Other values go to
// strconv.
func appendShortest(b []byte, f float64) []byte {
	if !(f >= 1 && f < 1<<53) || f != math.Trunc(f) {
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	u := uint64(f)
	n := decLen(u)
	if n <= 6 { // exponent below 6: %f, no decimals (strconv's eprec 6)
		b, d := grow(b, n)
		putDigits(d, u)
		return b
	}
	nd := n // significant digits: strip the trailing zeros
	for u%10 == 0 {
		u /= 10
		nd--
	}
	exp := n - 1 // 6 ≤ exp ≤ 15
	// d.ddd…e+XX: one digit, a point when more follow, the rest, e+, two
	// exponent digits.
	size := nd + 4
	if nd > 1 {
		size++
	}
	b, d := grow(b, size)
	if nd > 1 {
		putDigits(d[1:nd+1], u) // the digits after the first, then the first over the point
		d[0], d[1] = d[1], '.'
		i := nd + 1
		d[i], d[i+1], d[i+2], d[i+3] = 'e', '+', digitPairs[2*exp], digitPairs[2*exp+1]
		return b
	}
	d[0], d[1], d[2], d[3], d[4] = byte('0'+u), 'e', '+', digitPairs[2*exp], digitPairs[2*exp+1]
	return b
}

// appendMs6 is strconv.AppendFloat(b, x, 'f', 6, 64) (tpot_ms): x rounded
// to 6 decimals from its exact binary value, a tie to even, as strconv
// rounds (ms6Units). Other values go to strconv.
func appendMs6(b []byte, x float64) []byte {
	q, ok := ms6Units(x)
	if !ok {
		return strconv.AppendFloat(b, x, 'f', 6, 64)
	}
	return appendFixed(b, sim.Time(q), 6)
}

// ms6Units returns x·10⁶ rounded to an integer as strconv's 'f', 6 rounds
// (from x's exact binary value, a tie to even), for 0 ≤ x < 2⁴⁰ and not −0
// (which prints as "-0.000000"); ok is false for other values. x = m·2^e
// exactly, so x·10⁶ = m·10⁶·2^e is the 128-bit product m·10⁶ shifted right
// by −e: the quotient is the digits, the bits shifted out decide the
// rounding.
func ms6Units(x float64) (q uint64, ok bool) {
	if !(x >= 0 && x < 1<<40) || math.Signbit(x) {
		return 0, false
	}
	fb := math.Float64bits(x)
	m, be := fb&(1<<52-1), int(fb>>52)
	if be == 0 { // zero or subnormal: m·2^(1−1075)
		be = 1
	} else {
		m |= 1 << 52
	}
	sh := uint(1075 - be) // x = m·2^−sh; sh ≥ 1075−1063 = 12 since x < 2⁴⁰
	hi, lo := bits.Mul64(m, 1e6)
	var up bool
	switch {
	case sh < 64:
		q = hi<<(64-sh) | lo>>sh
		rem, half := lo&(1<<sh-1), uint64(1)<<(sh-1)
		up = rem > half || (rem == half && q&1 == 1)
	case sh < 128:
		q = hi >> (sh - 64)
		remHi := hi & (1<<(sh-64) - 1)
		if sh == 64 { // half is 2⁶³ in the low word
			up = lo > 1<<63 || (lo == 1<<63 && q&1 == 1)
		} else {
			halfHi := uint64(1) << (sh - 65)
			up = remHi > halfHi || (remHi == halfHi && (lo > 0 || q&1 == 1))
		}
	default: // m·10⁶ < 2⁷³ ≤ 2^(sh−1): below half of one unit
	}
	if up {
		q++
	}
	return q, true
}
