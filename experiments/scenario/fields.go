package scenario

import (
	"fmt"
	"maps"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/servesim/servesim/sim"
)

// Where a scenario's fields came from. Zero values mean "default" in a
// Scenario, so a zero the user wrote (max_num_seqs = 0, --tp 0) would
// silently become the default. Parse records every key a scenario file
// defines, with its line, and SetByFlag every field set on the command
// line, so that Resolve can refuse an explicit zero where zero is not a
// legal value, and name the file and line (or the flag) of a bad value.
//
// Keys are dotted TOML keys; the elements of an array of tables are
// indexed: "workload.classes[1].ttft_ms".

// Origins of an explicitly set key besides a line number (≥ 1).
const (
	byFlag      = 0  // set on the command line
	LineUnknown = -1 // in the scenario file, at a line the scan did not find
)

// SetByFlag records that key (a dotted TOML key such as
// "batch.max_num_seqs") was set on the command line: Resolve then treats
// its value, zero included, as the user's choice.
func (s *Scenario) SetByFlag(key string) {
	s.set = maps.Clone(s.set) // copies of a scenario share the map
	if s.set == nil {
		s.set = map[string]int{}
	}
	s.set[key] = byFlag
}

// Dir is the directory relative paths in the scenario are read from (the
// scenario file's directory; empty: the working directory).
func (s Scenario) Dir() string { return s.dir }

// SetDir sets the directory relative paths are read from (a sweep's
// points: the sweep file's directory).
func (s *Scenario) SetDir(dir string) { s.dir = dir }

// ExplicitKeys returns the keys given explicitly and where (a line,
// LineUnknown or byFlag); the map is the scenario's own.
func (s Scenario) ExplicitKeys() map[string]int { return s.set }

// SetOrigins names the file the scenario came from in errors and the keys
// it gives explicitly (a sweep point: the base's and the axes' keys).
func (s *Scenario) SetOrigins(file string, set map[string]int) { s.file, s.set = file, set }

// Origin returns where key was set: a line, lineUnknown or byFlag, and
// false when it was not set. An element of an inline array of tables
// ("workload.classes[1].ttft_ms" in classes = [{…}, {…}]) takes the origin
// its key has without the index: the toml package does not tell the
// elements apart.
func (s *Scenario) Origin(key string) (int, bool) {
	if o, ok := s.set[key]; ok {
		return o, true
	}
	if i := strings.IndexByte(key, '['); i >= 0 {
		if j := strings.IndexByte(key[i:], ']'); j >= 0 {
			return s.Origin(key[:i] + key[i+j+1:])
		}
	}
	return 0, false
}

// Explicit reports whether key was given in the scenario file or on the
// command line, rather than left to its default.
func (s *Scenario) Explicit(key string) bool {
	_, ok := s.Origin(key)
	return ok
}

// fieldError names a scenario field the way the user gave it: by the file
// and line when it came from a scenario file ("s.toml line 4: field
// \"batch.max_num_seqs\": …"), otherwise by the field and the flag that sets
// it (flag "" when none does).
func (s *Scenario) fieldError(field, flag, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if o, ok := s.Origin(field); ok && o != byFlag && s.file != "" {
		if o == LineUnknown {
			return fmt.Errorf("scenario: %s: field %q: %s", s.file, field, msg)
		}
		return fmt.Errorf("scenario: %s line %d: field %q: %s", s.file, o, field, msg)
	}
	if flag == "" {
		return fmt.Errorf("scenario: field %q: %s", field, msg)
	}
	return fmt.Errorf("scenario: field %q (flag --%s): %s", field, flag, msg)
}

// orDefault fills *v with def when it is zero and was not set explicitly.
// An explicit zero where zero is not a legal value is an error saying the
// rule ("≥ 1") and the default (defDesc, e.g. "256").
func orDefault[T int | float64](s *Scenario, v *T, def T, field, flag, rule, defDesc string) error {
	if *v != 0 {
		return nil
	}
	if o, ok := s.Origin(field); ok {
		what := "the field"
		if o == byFlag {
			what = "the flag"
		}
		return s.fieldError(field, flag, "0 must be %s; omit %s for the default (%s)", rule, what, defDesc)
	}
	*v = def
	return nil
}

// MaxDurationS is the longest duration a scenario field may give, in
// seconds: 1e6 s, 11.6 days. It is far above any SLO, latency, batching
// delay or synthetic workload span one simulates, and far below the clock's
// range (sim.MaxSeconds, about 292 years), so that a time in a run plus a
// few such durations cannot overflow the clock.
const MaxDurationS = 1e6

// duration checks field's value v, in units of unit seconds (1e-3 for
// milliseconds, named by unitName), and converts it: v must be a number
// ≥ 0 and at most MaxDurationS.
func (s *Scenario) duration(field, flag string, v, unit float64, unitName string) (sim.Time, error) {
	if !(v >= 0) {
		return 0, s.fieldError(field, flag, "%g %s is not a number of %s ≥ 0", v, unitName, unitWord(unitName))
	}
	if !(v*unit <= MaxDurationS) {
		limit := fmt.Sprintf("%g %s", MaxDurationS/unit, unitName)
		if unit != 1 {
			limit += fmt.Sprintf(", %g s", MaxDurationS)
		}
		return 0, s.fieldError(field, flag, "%g %s is out of range (at most %s)", v, unitName, limit)
	}
	t, err := sim.FromSecondsChecked(v * unit)
	if err != nil { // not reached below MaxDurationS
		return 0, s.fieldError(field, flag, "%v", err)
	}
	return t, nil
}

func unitWord(unit string) string {
	switch unit {
	case "ms":
		return "milliseconds"
	case "µs":
		return "microseconds"
	}
	return "seconds"
}

// RecordKeys fills s.set from the keys a TOML document defines, with the
// line of each (see keyLines).
func (s *Scenario) RecordKeys(md toml.MetaData, data []byte) {
	lines := keyLines(data)
	s.set = map[string]int{}
	arrays := map[string]int{} // array of tables → elements seen
	for _, k := range md.Keys() {
		name := k.String()
		// Index the keys of an array of tables by the element they follow
		// (the longest array that encloses the key).
		in := ""
		for a := range arrays {
			if strings.HasPrefix(name, a+".") && len(a) > len(in) {
				in = a
			}
		}
		if in != "" {
			name = fmt.Sprintf("%s[%d]%s", in, arrays[in]-1, name[len(in):])
		}
		if md.Type(k...) == "ArrayHash" {
			arrays[name]++
			name = fmt.Sprintf("%s[%d]", name, arrays[name]-1)
		}
		line, ok := lines[name]
		for p := parentKey(name); !ok && p != ""; p = parentKey(p) {
			line, ok = lines[p]
		}
		if !ok {
			line = LineUnknown
		}
		s.set[name] = line
	}
}

// keyLines maps the keys a TOML document assigns to their lines, by a
// plain scan (the toml package does not expose key positions): table
// headers, and each key = value line inside the current table, the i-th
// [[array]] table's keys named "array[i].key". Keys inside inline tables
// and multi-line values are not listed; look up the enclosing key.
func keyLines(data []byte) map[string]int {
	lines := map[string]int{}
	arrays := map[string]int{}
	cur := ""
	var sc valueScanner
	for i, line := range strings.Split(string(data), "\n") {
		if sc.open() { // a multi-line value continues
			sc.scan(line)
			continue
		}
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			head, _, _ := strings.Cut(t, "#")
			head = strings.TrimSpace(head)
			if strings.HasPrefix(head, "[[") && strings.HasSuffix(head, "]]") {
				name := normKey(head[2 : len(head)-2])
				arrays[name]++
				cur = fmt.Sprintf("%s[%d]", name, arrays[name]-1)
			} else if strings.HasSuffix(head, "]") {
				cur = normKey(head[1 : len(head)-1])
			}
			if _, seen := lines[cur]; !seen {
				lines[cur] = i + 1
			}
			continue
		}
		key, value, ok := strings.Cut(t, "=")
		if !ok || strings.HasPrefix(t, "#") {
			continue
		}
		name := normKey(key)
		if cur != "" {
			name = cur + "." + name
		}
		if _, seen := lines[name]; !seen {
			lines[name] = i + 1
		}
		sc.scan(value)
	}
	return lines
}

// normKey normalizes a dotted key as written: parts trimmed and unquoted.
func normKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// valueScanner follows TOML values across lines: the depth of open arrays
// and inline tables, and an open multi-line string.
type valueScanner struct {
	depth int
	ml    string // the delimiter of an open multi-line string
}

func (v *valueScanner) open() bool { return v.depth > 0 || v.ml != "" }

func (v *valueScanner) scan(s string) {
	for i := 0; i < len(s); i++ {
		if v.ml != "" {
			if strings.HasPrefix(s[i:], v.ml) {
				i += len(v.ml) - 1
				v.ml = ""
			}
			continue
		}
		switch c := s[i]; c {
		case '#':
			return
		case '[', '{':
			v.depth++
		case ']', '}':
			v.depth--
		case '"', '\'':
			if d := strings.Repeat(string(c), 3); strings.HasPrefix(s[i:], d) {
				if j := strings.Index(s[i+3:], d); j >= 0 {
					i += 3 + j + 2
				} else {
					v.ml = d
					return
				}
				continue
			}
			for i++; i < len(s) && s[i] != c; i++ {
				if c == '"' && s[i] == '\\' {
					i++
				}
			}
		}
	}
}

// parentKey strips the last part of a dotted key, or its last index:
// "a.b[1].c" → "a.b[1]" → "a.b" → "a" → "".
func parentKey(k string) string {
	if strings.HasSuffix(k, "]") {
		if i := strings.LastIndexByte(k, '['); i > 0 {
			return k[:i]
		}
	}
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[:i]
	}
	return ""
}

// fieldError names a field (and the flag that sets it) where no scenario
// is at hand to say which file and line set it; methods of Scenario use
// s.fieldError.
func fieldError(field, flag, format string, args ...any) error {
	if flag == "" {
		return fmt.Errorf("scenario: field %q: %s", field, fmt.Sprintf(format, args...))
	}
	return fmt.Errorf("scenario: field %q (flag --%s): %s", field, flag, fmt.Sprintf(format, args...))
}
