package sweep

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/servesim/servesim/experiments/scenario"
)

// CheckName checks that name is safe as one file or directory name: it is
// joined to an output directory (sweeps/NAME, placements/NAME.csv), so a
// path separator or ".." would write outside it. Letters, digits, '.', '_'
// and '-' are allowed; the name must not start with '.'.
func CheckName(name string) error {
	if name == "" {
		return errors.New("is empty")
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return fmt.Errorf("%q has %q: a name is one file name of letters, digits, '.', '_' and '-' (no path separators)", name, r)
		}
	}
	if name[0] == '.' {
		return fmt.Errorf("%q starts with '.': a name is one file name, not a path", name)
	}
	return nil
}

// axisLine is the line of the i-th [[axis]]'s values (or of its header) in
// the experiment file, 0 when not found.
func (sw *Sweep) axisLine(i int) int {
	n, header := -1, 0
	for l, line := range strings.Split(string(sw.src), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			if strings.HasPrefix(t, "[[") && strings.TrimSpace(strings.Trim(t, "[]")) == "axis" {
				n++
				if n == i {
					header = l + 1
				}
			} else if n >= i {
				break
			}
			continue
		}
		if n == i {
			if key, _, ok := strings.Cut(t, "="); ok && strings.TrimSpace(key) == "values" {
				return l + 1
			}
		}
	}
	return header
}

// at is the experiment file, with a line when known: "FILE line N".
func (sw *Sweep) at(line int) string {
	if line > 0 {
		return fmt.Sprintf("%s line %d", sw.file, line)
	}
	return sw.file
}

// axisOf returns the index of the axis that sets the scenario field key
// (dotted) in a point with values vals, or -1 when the base sets it.
func (sw *Sweep) axisOf(key string, vals []any) int {
	for i, a := range sw.Axes {
		switch {
		case a.Field == key:
			return i
		case a.Field == ".":
			if tbl, ok := vals[i].(map[string]any); ok && tableHas(tbl, strings.Split(key, ".")) {
				return i
			}
		case strings.HasPrefix(key, a.Field+"."):
			if tbl, ok := vals[i].(map[string]any); ok && tableHas(tbl, strings.Split(strings.TrimPrefix(key, a.Field+"."), ".")) {
				return i
			}
		}
	}
	return -1
}

// tableHas reports whether the nested table t has the key path k, or a
// prefix of it (a table value that sets a whole sub-table).
func tableHas(t map[string]any, k []string) bool {
	v, ok := t[k[0]]
	if !ok {
		return false
	}
	if sub, isTbl := v.(map[string]any); isTbl && len(k) > 1 {
		return tableHas(sub, k[1:])
	}
	return true
}

// pointError turns an error about a scenario field of one point into one
// about the user's experiment file: the line of the axis that set the field
// (with the value), or of the base's key.
func (sw *Sweep) pointError(key string, vals []any, msg string) error {
	msg = strings.TrimPrefix(msg, "sweep: ")
	point := describe(sw.Axes, vals)
	if i := sw.axisOf(key, vals); i >= 0 {
		a := sw.Axes[i]
		return fmt.Errorf("sweep: %s: axis %q value %s (point %s): %s", sw.at(sw.axisLine(i)), a.Field, formatValue(vals[i]), point, msg)
	}
	line := 0
	if key != "" {
		line = scenario.KeyLine(sw.src, append(toml.Key{"base"}, strings.Split(key, ".")...))
	}
	if key == "" && point != "" {
		// Not about a named field: about the point's values together.
		return fmt.Errorf("sweep: %s: point %s: %s", sw.file, point, msg)
	}
	if point == "" {
		return fmt.Errorf("sweep: %s: [base]: %s", sw.at(line), msg)
	}
	return fmt.Errorf("sweep: %s: [base] at point %s: %s", sw.at(line), point, msg)
}

var (
	fieldRe   = regexp.MustCompile(`field "([^"]+)"`)
	lastKeyRe = regexp.MustCompile(`\(last key "([^"]+)"\): (.*)$`)
)

// resolveError maps a Resolve error of one point to the experiment file.
func (sw *Sweep) resolveError(vals []any, err error) error {
	key := ""
	if m := fieldRe.FindStringSubmatch(err.Error()); m != nil {
		key = m[1]
	}
	return sw.pointError(key, vals, err.Error())
}

// decodePoint decodes a point's scenario document (base and axis values
// merged) strictly, with errors about the experiment file, not the
// generated document.
func (sw *Sweep) decodePoint(doc string, vals []any) (scenario.Scenario, error) {
	var s scenario.Scenario
	md, err := toml.Decode(doc, &s)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := pe.Message
			if pe.LastKey != "" {
				msg = fmt.Sprintf("field %q: %s", pe.LastKey, pe.Message)
			}
			return s, sw.pointError(pe.LastKey, vals, msg)
		}
		// A type mismatch is a plain error: "toml: line N (last key "K"): ...",
		// its line in the generated document.
		if m := lastKeyRe.FindStringSubmatch(err.Error()); m != nil {
			return s, sw.pointError(m[1], vals, fmt.Sprintf("field %q: %s", m[1], m[2]))
		}
		return s, sw.pointError("", vals, err.Error())
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0].String()
		return s, sw.pointError(k, vals, fmt.Sprintf("unknown field %q (the fields are listed in docs/scenario.md and `servesim run --help`)", k))
	}
	return s, nil
}

// checkGrid rejects axes and seeds that would repeat a row: a value (or
// label) given twice on one axis, a seed given twice.
func (sw *Sweep) checkGrid() error {
	for i, a := range sw.Axes {
		seen := map[string]int{}
		for j, v := range a.Values {
			f := formatValue(v)
			if k, dup := seen[f]; dup {
				return fmt.Errorf("sweep: %s: axis %q: value %s is given twice (values %d and %d): each point would run twice", sw.at(sw.axisLine(i)), a.Field, f, k+1, j+1)
			}
			seen[f] = j
		}
		labels := map[string]int{}
		for j, l := range a.Labels {
			if k, dup := labels[l]; dup {
				return fmt.Errorf("sweep: %s: axis %q: label %q is given twice (labels %d and %d): results could not tell the values apart", sw.at(sw.axisLine(i)), a.Field, l, k+1, j+1)
			}
			labels[l] = j
		}
	}
	seen := map[uint64]int{}
	for j, s := range sw.Seeds {
		if k, dup := seen[s]; dup {
			return fmt.Errorf("sweep: %s: seeds: seed %d is given twice (seeds %d and %d): each point would run twice", sw.at(scenario.KeyLine(sw.src, toml.Key{"seeds"})), s, k+1, j+1)
		}
		seen[s] = j
	}
	return nil
}

// resolveGuarded resolves one point's scenario. Resolve returns an error
// for every value it rejects; should a value it does not range-check reach
// a conversion that panics (a duration of 1e300 ms), the panic becomes an
// error here, so that one bad value in a grid stops the sweep, before any
// point runs, with the file and line of the axis instead of a stack trace.
func resolveGuarded(s scenario.Scenario) (p *scenario.Plan, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("sweep: a value out of range: %v", r)
		}
	}()
	return s.Resolve()
}

// checkKeys rejects two points that resolve to the same scenario (values
// that differ only in spelling, or a value equal to the default another
// value leaves in place): their rows would be one run under two names.
func (sw *Sweep) checkKeys(pts []Point) error {
	seen := map[string]int{}
	for i, p := range pts {
		k := p.Key()
		if j, dup := seen[k]; dup {
			return fmt.Errorf("sweep: %s: points %s and %s (seed %d) resolve to the same scenario: their rows would be one run under two names; drop one of the values",
				sw.file, describe(sw.Axes, pts[j].Values), describe(sw.Axes, p.Values), p.Seed)
		}
		seen[k] = i
	}
	return nil
}

// CheckColumns checks the names of a results table's columns against
// Columns, so that a typo in --table fails before any point runs.
func CheckColumns(cols []string) error {
	known := map[string]bool{}
	names := make([]string, 0, len(Columns))
	for _, c := range Columns {
		known[c.Name] = true
		names = append(names, c.Name)
	}
	for _, c := range cols {
		if !known[c] {
			sort.Strings(names)
			return fmt.Errorf("sweep: unknown column %q (known: %s)", c, strings.Join(names, ", "))
		}
	}
	return nil
}
