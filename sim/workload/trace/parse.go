package trace

import (
	"math"
	"strconv"
)

// maxTokens is the largest length a trace may give (2³¹−1, workload.MaxTokens).
const maxTokens = math.MaxInt32

// parseCount reads a token count: decimal digits, optionally followed by a
// fraction of zeros ("512.0", as pandas writes integer columns that held a
// NaN). It returns ok false for anything else, or a value above 2³¹−1.
func parseCount(b []byte) (n int, ok bool) {
	if len(b) == 0 {
		return 0, false
	}
	i := 0
	var v int64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		v = v*10 + int64(b[i]-'0')
		if v > maxTokens {
			return 0, false
		}
	}
	if i == 0 {
		return 0, false
	}
	if i < len(b) {
		if b[i] != '.' || i+1 == len(b) {
			return 0, false
		}
		for i++; i < len(b); i++ {
			if b[i] != '0' {
				return 0, false
			}
		}
	}
	return int(v), true
}

// parseUint64 reads decimal digits into a uint64, ok false on anything else
// or overflow.
func parseUint64(b []byte) (v uint64, ok bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// parseDuration reads a non-negative decimal number of units and returns it
// in nanoseconds, where one unit is 10^unitExp ns (9 for seconds, 6 for
// milliseconds). Plain decimals ("12", "12.5", ".5") are parsed exactly,
// truncated below 1 ns; a number with an exponent goes through
// strconv.ParseFloat and is rounded to the nearest nanosecond. ok is false
// for a negative number, anything that is not a number, or a time past what
// sim.Time holds (about 292 years).
func parseDuration(b []byte, unitExp int) (ns int64, ok bool) {
	if len(b) == 0 {
		return 0, false
	}
	unit := pow10[unitExp]
	var ip int64 // integer part, in units
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		ip = ip*10 + int64(b[i]-'0')
		if ip > math.MaxInt64/unit { // more than sim.Time can hold
			return 0, false
		}
	}
	digits := i
	var frac int64 // fraction, in ns
	if i < len(b) && b[i] == '.' {
		i++
		scale := unit
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			digits++
			if scale >= 10 {
				scale /= 10
				frac += int64(b[i]-'0') * scale
			}
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(b) {
		if b[i] != 'e' && b[i] != 'E' {
			return 0, false
		}
		return parseDurationFloat(b, unitExp)
	}
	if ip > (math.MaxInt64-frac)/unit {
		return 0, false
	}
	return ip*unit + frac, true
}

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// parseDurationFloat is parseDuration's slow path for exponents ("1.5e3").
func parseDurationFloat(b []byte, unitExp int) (int64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || !(f >= 0) {
		return 0, false
	}
	ns := f * float64(pow10[unitExp])
	if !(ns < math.MaxInt64) { // also false for +Inf
		return 0, false
	}
	return int64(math.Round(ns)), true
}

// wallTime is a wall-clock instant: seconds since 1970-01-01 UTC and
// nanoseconds within the second.
type wallTime struct {
	sec  int64
	nsec int64
}

// sub returns t − u in nanoseconds, ok false if it overflows int64.
func (t wallTime) sub(u wallTime) (int64, bool) {
	ds := t.sec - u.sec
	const lim = math.MaxInt64/1_000_000_000 - 1
	if ds > lim || ds < -lim {
		return 0, false
	}
	return ds*1e9 + (t.nsec - u.nsec), true
}

// parseWallTime reads "YYYY-MM-DD HH:MM:SS[.fraction][zone]" by hand: a
// space or 'T' between date and time, 0 to 9 fraction digits, and an
// optional zone "Z" or "±HH:MM" (the Azure 2024 trace writes
// "2024-05-10 00:00:00.009930+00:00"; the 2023 one
// "2023-11-16 18:17:03.9799600" with no zone, read as UTC). On failure it
// returns the 0-based offset of the offending byte and what was expected.
func parseWallTime(b []byte) (t wallTime, badAt int, want string) {
	num := func(at, n int) (int, bool) {
		if at+n > len(b) {
			return 0, false
		}
		v := 0
		for _, c := range b[at : at+n] {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	sep := func(at int, c byte) bool { return at < len(b) && b[at] == c }
	year, ok := num(0, 4)
	if !ok {
		return t, 0, "a 4-digit year"
	}
	if !sep(4, '-') {
		return t, 4, "'-' after the year"
	}
	month, ok := num(5, 2)
	if !ok || month < 1 || month > 12 {
		return t, 5, "a month 01-12"
	}
	if !sep(7, '-') {
		return t, 7, "'-' after the month"
	}
	day, ok := num(8, 2)
	if !ok || day < 1 || day > daysIn(year, month) {
		return t, 8, "a day of that month"
	}
	if !sep(10, ' ') && !sep(10, 'T') {
		return t, 10, "a space or 'T' after the date"
	}
	hour, ok := num(11, 2)
	if !ok || hour > 23 {
		return t, 11, "an hour 00-23"
	}
	if !sep(13, ':') {
		return t, 13, "':' after the hour"
	}
	minute, ok := num(14, 2)
	if !ok || minute > 59 {
		return t, 14, "minutes 00-59"
	}
	if !sep(16, ':') {
		return t, 16, "':' after the minutes"
	}
	second, ok := num(17, 2)
	if !ok || second > 59 {
		return t, 17, "seconds 00-59"
	}
	i := 19
	var nsec int64
	if sep(i, '.') {
		i++
		start := i
		scale := int64(1e9)
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if i-start == 9 {
				return t, i, "at most 9 fraction digits"
			}
			scale /= 10
			nsec += int64(b[i]-'0') * scale
		}
		if i == start {
			return t, i, "digits after '.'"
		}
	}
	var offset int64 // zone offset in seconds east of UTC
	if i < len(b) {
		switch b[i] {
		case 'Z':
			i++
		case '+', '-':
			hh, ok1 := num(i+1, 2)
			mm, ok2 := num(i+4, 2)
			if !ok1 || !sep(i+3, ':') || !ok2 || hh > 23 || mm > 59 {
				return t, i, "a zone ±HH:MM"
			}
			offset = int64(hh*3600 + mm*60)
			if b[i] == '-' {
				offset = -offset
			}
			i += 6
		}
		if i < len(b) {
			return t, i, "the end of the timestamp"
		}
	}
	t.sec = daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+second) - offset
	t.nsec = nsec
	return t, -1, ""
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days from 1970-01-01 to the given proleptic
// Gregorian date, by Howard Hinnant's days_from_civil
// (https://howardhinnant.github.io/date_algorithms.html).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400 // y ≥ -1 here, and era 0 covers years 0..399
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
