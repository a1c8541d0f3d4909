package trace

import (
	"bytes"
	"encoding/json"
)

// jscan reads one flat JSON object from a line, by hand and without
// allocating on well-formed input: the object's keys in order, each value
// as a number, a string, an array of unsigned integers, or skipped. Offsets
// in errors are 1-based byte columns.
type jscan struct {
	b []byte
	i int
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *jscan) errHere(field, want string) rowErr {
	got := "the end of the line"
	if s.i < len(s.b) {
		got = quoteField(s.b[s.i : s.i+1])
	}
	return bad(s.i+1, field, "want %s, found %s", want, got)
}

// open reads the leading '{'.
func (s *jscan) open() rowErr {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return s.errHere("", "'{' (one JSON object per line)")
	}
	s.i++
	return rowErr{}
}

// key returns the next key and consumes the ':' after it; more is false at
// the closing '}' (which it consumes, and checks that only blanks follow).
// first tells whether this is the object's first key (no ',' before it).
func (s *jscan) key(first bool) (key []byte, keyCol int, more bool, e rowErr) {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		s.ws()
		if s.i < len(s.b) {
			return nil, 0, false, s.errHere("", "the end of the line after the object")
		}
		return nil, 0, false, rowErr{}
	}
	if !first {
		if s.i >= len(s.b) || s.b[s.i] != ',' {
			return nil, 0, false, s.errHere("", "',' or '}'")
		}
		s.i++
		s.ws()
	}
	keyCol = s.i + 1
	k, esc, e := s.str("")
	if e.failed() {
		return nil, 0, false, e
	}
	if esc {
		k = unescape(k)
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return nil, 0, false, s.errHere(string(k), "':' after the key")
	}
	s.i++
	s.ws()
	return k, keyCol, true, rowErr{}
}

// str reads a JSON string and returns its raw bytes between the quotes and
// whether it holds escapes.
func (s *jscan) str(field string) (raw []byte, escaped bool, e rowErr) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, s.errHere(field, "a string")
	}
	start := s.i
	s.i++
	begin := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[begin:s.i]
			s.i++
			if escaped && !json.Valid(s.b[start:s.i]) {
				return nil, false, bad(start+1, field, "bad escape in string")
			}
			return raw, escaped, rowErr{}
		case c == '\\':
			escaped = true
			s.i += 2
		case c < 0x20:
			return nil, false, bad(s.i+1, field, "control character in string")
		default:
			s.i++
		}
	}
	return nil, false, bad(start+1, field, "string not closed")
}

// unescape decodes a JSON string's raw text (known valid). It allocates:
// only strings with escapes take this path.
func unescape(raw []byte) []byte {
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var out string
	if json.Unmarshal(q, &out) != nil {
		return raw
	}
	return []byte(out)
}

// digitsEnd is the index past the run of ASCII digits in s.b from i.
func (s *jscan) digitsEnd(i int) int {
	for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
		i++
	}
	return i
}

// slotKey is key for an object whose known keys are keys: it also returns
// the key's slot, its index in keys (-1 for another key), marks the slot in
// seen and refuses a known key that appears twice.
func (s *jscan) slotKey(first bool, keys []string, seen []bool) (key []byte, keyCol, slot int, more bool, e rowErr) {
	key, keyCol, more, e = s.key(first)
	if e.failed() || !more {
		return key, keyCol, -1, more, e
	}
	slot = -1
	for i, k := range keys {
		if string(key) == k {
			slot = i
			break
		}
	}
	if slot >= 0 {
		if seen[slot] {
			return key, keyCol, slot, more, bad(keyCol, string(key), "key appears twice")
		}
		seen[slot] = true
	}
	return key, keyCol, slot, more, rowErr{}
}

// missingKey is the error for the first of keys not seen (seen[i] for
// keys[i]), at the end of line; the zero rowErr when every one was.
func missingKey(line []byte, keys []string, seen []bool) rowErr {
	for i, k := range keys {
		if !seen[i] {
			return bad(len(line)+1, k, "missing")
		}
	}
	return rowErr{}
}

// count reads the number at the cursor as a whole count in
// 0..2147483647 (parseCount); what names such a number in the error ("a
// whole number of tokens").
func (s *jscan) count(field, what string) (int, rowErr) {
	at := s.i + 1
	num, e := s.number(field)
	if e.failed() {
		return 0, e
	}
	v, ok := parseCount(num)
	if !ok {
		return 0, bad(at, field, "%s is not %s in 0..2147483647", quoteField(num), what)
	}
	return v, rowErr{}
}

// duration reads the number at the cursor as a number ≥ 0 of units of
// 10^-exp seconds (parseDuration; unit names them in the error), in ns.
func (s *jscan) duration(field string, exp int, unit string) (int64, rowErr) {
	at := s.i + 1
	num, e := s.number(field)
	if e.failed() {
		return 0, e
	}
	ns, ok := parseDuration(num, exp)
	if !ok {
		return 0, bad(at, field, "%s is not a number of %s ≥ 0", quoteField(num), unit)
	}
	return ns, rowErr{}
}

// number reads a JSON number's text (validated by JSON's grammar).
func (s *jscan) number(field string) ([]byte, rowErr) {
	start := s.i
	i := s.i
	if i < len(s.b) && s.b[i] == '-' {
		i++
	}
	switch {
	case i < len(s.b) && s.b[i] == '0':
		i++
	case i < len(s.b) && s.b[i] >= '1' && s.b[i] <= '9':
		i = s.digitsEnd(i)
	default:
		s.i = i
		return nil, s.errHere(field, "a number")
	}
	if i < len(s.b) && s.b[i] == '.' {
		d := i + 1
		if i = s.digitsEnd(d); i == d {
			s.i = i
			return nil, s.errHere(field, "digits after '.'")
		}
	}
	if i < len(s.b) && (s.b[i] == 'e' || s.b[i] == 'E') {
		i++
		if i < len(s.b) && (s.b[i] == '+' || s.b[i] == '-') {
			i++
		}
		d := i
		if i = s.digitsEnd(d); i == d {
			s.i = i
			return nil, s.errHere(field, "digits in the exponent")
		}
	}
	s.i = i
	return s.b[start:i], rowErr{}
}

// uintArray reads an array of unsigned integers into buf[:0].
func (s *jscan) uintArray(field string, buf []uint64) ([]uint64, rowErr) {
	buf = buf[:0]
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return buf, s.errHere(field, "an array of integers")
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return buf, rowErr{}
	}
	for {
		s.ws()
		at := s.i
		// Fast path: plain digits followed by ',' or ']' (every Mooncake hash).
		if v, j, ok := fastUint(s.b, s.i); ok {
			buf = append(buf, v)
			s.i = j
			if s.b[j] == ',' {
				s.i++
				continue
			}
			s.i++ // ']'
			return buf, rowErr{}
		}
		num, e := s.number(field)
		if e.failed() {
			return buf, e
		}
		v, ok := parseUint64(num)
		if !ok {
			return buf, bad(at+1, field, "%s is not an unsigned 64-bit integer", quoteField(num))
		}
		buf = append(buf, v)
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
			continue
		}
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return buf, rowErr{}
		}
		return buf, s.errHere(field, "',' or ']' in the array")
	}
}

// skip passes over any JSON value.
func (s *jscan) skip(field string, depth int) rowErr {
	if depth > 64 {
		return bad(s.i+1, field, "JSON nested too deeply")
	}
	s.ws()
	if s.i >= len(s.b) {
		return s.errHere(field, "a value")
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, _, e := s.str(field)
		return e
	case c == '-' || (c >= '0' && c <= '9'):
		_, e := s.number(field)
		return e
	case c == '[' || c == '{':
		closer := byte(']')
		if c == '{' {
			closer = '}'
		}
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == closer {
			s.i++
			return rowErr{}
		}
		for {
			if c == '{' {
				s.ws()
				if _, _, e := s.str(field); e.failed() {
					return e
				}
				s.ws()
				if s.i >= len(s.b) || s.b[s.i] != ':' {
					return s.errHere(field, "':'")
				}
				s.i++
			}
			if e := s.skip(field, depth+1); e.failed() {
				return e
			}
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == ',' {
				s.i++
				continue
			}
			if s.i < len(s.b) && s.b[s.i] == closer {
				s.i++
				return rowErr{}
			}
			return s.errHere(field, "',' or '"+string(closer)+"'")
		}
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
				s.i += len(lit)
				return rowErr{}
			}
		}
		return s.errHere(field, "a JSON value")
	}
}

// isNull reports (and consumes) a literal null.
func (s *jscan) isNull() bool {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// fastUint reads decimal digits from b[i:] that end at ',' or ']' (no
// blanks, no leading zero unless alone) into a uint64. ok is false for
// anything else (the caller takes the general path).
func fastUint(b []byte, i int) (v uint64, j int, ok bool) {
	j = i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		d := uint64(b[j] - '0')
		if v > (1<<64-1-d)/10 {
			return 0, 0, false
		}
		v = v*10 + d
		j++
	}
	if j == i || j == len(b) || (b[j] != ',' && b[j] != ']') || (b[i] == '0' && j-i > 1) {
		return 0, 0, false
	}
	return v, j, true
}
