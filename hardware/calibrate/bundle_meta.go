package calibrate

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ParseBundleMeta reads a bundle's meta.yaml; name labels errors. It reads
// the YAML subset the profiler writes: block mappings by indentation
// (spaces only), `key: scalar` lines, block lists of scalars (`- item`, at
// the key's indentation or deeper), plain, 'single-' or "double-quoted"
// scalars and # comments. Anything else (flow collections, anchors,
// multi-line scalars, lists of mappings) is an error naming the line and
// column.
func ParseBundleMeta(data []byte, name string) (*BundleMeta, error) {
	vals, lines, err := parseYAMLSubset(data, name)
	if err != nil {
		return nil, err
	}
	m := &BundleMeta{Values: vals}
	lineOf := func(k string) int { return lines[k] }
	m.lines = lines
	for _, f := range []struct {
		key string
		dst *string
	}{{"gpu", &m.GPU}, {"model", &m.Model}, {"hardware", &m.Hardware}, {"architecture", &m.Architecture}, {"variant", &m.Variant}, {"vllm_version", &m.VLLMVersion}} {
		*f.dst = vals[f.key]
	}
	for _, k := range []string{"gpu", "model"} {
		if vals[k] == "" {
			return nil, &LineError{File: name, Msg: fmt.Sprintf("no %q: a bundle's meta.yaml names its gpu and model", k)}
		}
	}
	num := func(k string, lo, hi int, dst *int) error {
		s, ok := vals[k]
		if !ok {
			return nil
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < lo || v > hi {
			return &LineError{File: name, Line: lineOf(k), Column: k, Msg: fmt.Sprintf("want an integer in [%d, %d], got %q", lo, hi, truncate(s, 40))}
		}
		*dst = v
		return nil
	}
	for i := 0; ; i++ {
		k := fmt.Sprintf("tp_degrees.%d", i)
		if _, ok := vals[k]; !ok {
			break
		}
		var tp int
		if err := num(k, 1, 1024, &tp); err != nil {
			return nil, err
		}
		for _, seen := range m.TPDegrees {
			if seen == tp {
				return nil, &LineError{File: name, Line: lineOf(k), Column: "tp_degrees", Msg: fmt.Sprintf("%d listed twice", tp)}
			}
		}
		m.TPDegrees = append(m.TPDegrees, tp)
	}
	if len(m.TPDegrees) == 0 {
		return nil, &LineError{File: name, Line: lineOf("tp_degrees"), Msg: "no tp_degrees list: a bundle needs at least one TP degree (`tp_degrees:` then `- 1`)"}
	}
	if len(m.TPDegrees) > 16 {
		return nil, &LineError{File: name, Line: lineOf("tp_degrees"), Msg: fmt.Sprintf("%d tp_degrees, at most 16", len(m.TPDegrees))}
	}
	for _, f := range []struct {
		key string
		dst *int
	}{
		{"measurement_iterations", &m.Iterations},
		{"engine_effective.max_num_batched_tokens", &m.MaxBatchedTokens},
		{"engine_effective.max_num_seqs", &m.MaxSeqs},
		{"layer_mix.full_attention_layers", &m.FullAttentionLayers},
	} {
		if err := num(f.key, 0, maxBundleCount, f.dst); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// line returns the line of a key in meta.yaml (0: unknown).
func (m *BundleMeta) line(k string) int { return m.lines[k] }

// yamlFrame is an open block: a mapping or a list, at an indentation.
type yamlFrame struct {
	indent int
	prefix string // dotted path of the block ("" at the root)
	list   bool
	n      int // items so far (lists)
}

func parseYAMLSubset(data []byte, name string) (map[string]string, map[string]int, error) {
	vals := map[string]string{}
	lines := map[string]int{}
	stack := []yamlFrame{{indent: 0}}
	var pending string // path of a `key:` with no value, awaiting its block
	pendingIndent, pendingLine := -1, 0
	at := func(line, col int, format string, a ...any) error {
		return &LineError{File: name, Line: line, Msg: fmt.Sprintf("column %d: ", col) + fmt.Sprintf(format, a...)}
	}
	set := func(path, v string, line int) {
		vals[path] = v
		lines[path] = line
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	ln := 0
	for sc.Scan() {
		ln++
		raw := strings.TrimSuffix(sc.Text(), "\r")
		if ln == 1 {
			raw = strings.TrimPrefix(raw, "\ufeff")
		}
		indent := 0
		for indent < len(raw) && raw[indent] == ' ' {
			indent++
		}
		rest := raw[indent:]
		if strings.HasPrefix(rest, "\t") {
			return nil, nil, at(ln, indent+1, "tab in indentation: indent with spaces")
		}
		content := strings.TrimRight(rest, " \t")
		if content == "" || content[0] == '#' {
			continue
		}
		if content == "---" && ln == 1 {
			continue
		}
		item := content == "-" || strings.HasPrefix(content, "- ")
		if pending != "" {
			switch {
			case item && indent >= pendingIndent:
				stack = append(stack, yamlFrame{indent: indent, prefix: pending, list: true})
			case !item && indent > pendingIndent:
				stack = append(stack, yamlFrame{indent: indent, prefix: pending})
			default:
				set(pending, "", pendingLine)
			}
			pending = ""
		}
		for len(stack) > 1 {
			top := stack[len(stack)-1]
			if top.indent > indent || top.list && top.indent == indent && !item {
				stack = stack[:len(stack)-1]
				continue
			}
			break
		}
		top := &stack[len(stack)-1]
		if top.indent != indent {
			return nil, nil, at(ln, indent+1, "indentation %d does not match its block's (%d)", indent, top.indent)
		}
		if item {
			if !top.list {
				return nil, nil, at(ln, indent+1, "a list item where a `key: value` line belongs")
			}
			v := strings.TrimSpace(strings.TrimPrefix(content, "-"))
			if v == "" || strings.HasSuffix(v, ":") || strings.Contains(v, ": ") {
				return nil, nil, at(ln, indent+3, "only lists of scalars are supported")
			}
			s, err := yamlScalar(v)
			if err != nil {
				return nil, nil, at(ln, indent+3, "%v", err)
			}
			path := fmt.Sprintf("%s.%d", top.prefix, top.n)
			top.n++
			set(path, s, ln)
			continue
		}
		if top.list {
			return nil, nil, at(ln, indent+1, "a `key: value` line inside a list")
		}
		colon := strings.Index(content, ":")
		for colon >= 0 && colon+1 < len(content) && content[colon+1] != ' ' {
			next := strings.Index(content[colon+1:], ":")
			if next < 0 {
				colon = -1
				break
			}
			colon += 1 + next
		}
		if colon <= 0 {
			return nil, nil, at(ln, indent+1, "want `key: value`, got %q", truncate(content, 40))
		}
		key := strings.TrimSpace(content[:colon])
		if strings.ContainsAny(key, "'\"{}[]&*!|>%@`#") || strings.Contains(key, ".") {
			return nil, nil, at(ln, indent+1, "unsupported key %q (plain keys without dots only)", truncate(key, 40))
		}
		path := key
		if top.prefix != "" {
			path = top.prefix + "." + key
		}
		if _, dup := lines[path]; dup {
			return nil, nil, at(ln, indent+1, "key %q defined twice (first on line %d)", path, lines[path])
		}
		v := strings.TrimSpace(content[colon+1:])
		if v == "" || v[0] == '#' {
			pending, pendingIndent, pendingLine = path, indent, ln
			lines[path] = ln
			continue
		}
		if v[0] == '[' {
			items, err := yamlFlowList(v)
			if err != nil {
				return nil, nil, at(ln, indent+colon+3, "key %q: %v", path, err)
			}
			lines[path] = ln
			for i, it := range items {
				set(fmt.Sprintf("%s.%d", path, i), it, ln)
			}
			continue
		}
		s, err := yamlScalar(v)
		if err != nil {
			return nil, nil, at(ln, indent+colon+3, "key %q: %v", path, err)
		}
		set(path, s, ln)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, &LineError{File: name, Line: ln + 1, Msg: err.Error()}
	}
	if pending != "" {
		set(pending, "", pendingLine)
	}
	return vals, lines, nil
}

// yamlFlowList decodes a one-line flow list of plain scalars, "[1, 2]".
func yamlFlowList(v string) ([]string, error) {
	if i := strings.Index(v, "]"); i < 0 || strings.TrimSpace(v[i+1:]) != "" && strings.TrimSpace(v[i+1:])[0] != '#' {
		return nil, fmt.Errorf("a flow list must be [a, b, ...] on one line")
	} else {
		v = v[1:i]
	}
	if strings.ContainsAny(v, "[]{}'\"") {
		return nil, fmt.Errorf("only flow lists of plain scalars are supported")
	}
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("empty item in a flow list")
		}
		out = append(out, p)
	}
	return out, nil
}

// yamlScalar decodes a one-line scalar: quoted, or plain with an optional
// trailing # comment.
func yamlScalar(v string) (string, error) {
	switch v[0] {
	case '\'':
		end := -1
		for i := 1; i < len(v); i++ {
			if v[i] == '\'' {
				if i+1 < len(v) && v[i+1] == '\'' {
					i++
					continue
				}
				end = i
				break
			}
		}
		if end < 0 {
			return "", fmt.Errorf("unterminated single-quoted scalar")
		}
		if tail := strings.TrimSpace(v[end+1:]); tail != "" && tail[0] != '#' {
			return "", fmt.Errorf("text after a quoted scalar: %q", truncate(tail, 20))
		}
		return strings.ReplaceAll(v[1:end], "''", "'"), nil
	case '"':
		s, err := strconv.QuotedPrefix(v)
		if err != nil {
			return "", fmt.Errorf("bad double-quoted scalar")
		}
		if tail := strings.TrimSpace(v[len(s):]); tail != "" && tail[0] != '#' {
			return "", fmt.Errorf("text after a quoted scalar: %q", truncate(tail, 20))
		}
		u, err := strconv.Unquote(s)
		if err != nil {
			return "", fmt.Errorf("bad double-quoted scalar")
		}
		return u, nil
	case '[', '{', '&', '*', '!', '|', '>', '%', '@', '`':
		return "", fmt.Errorf("unsupported YAML (%q): flow collections, anchors, tags and block scalars are not read", v[:1])
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v, nil
}
