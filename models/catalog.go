package models

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/servesim/servesim/internal/bounded"
)

// builtinTOML is the built-in catalog, parsed by the same loader as users'
// files.
//
//go:embed builtin.toml
var builtinTOML []byte

// Catalog is a set of models keyed by name. The zero value is an empty
// catalog ready to use. A Catalog is not safe for concurrent mutation;
// concurrent Get and All are safe once loading is done.
type Catalog struct {
	models map[string]*Model
}

// Builtin returns a fresh catalog holding the built-in models (builtin.toml,
// each citing its published config.json). Callers may add to it.
//
// The embedded file is parsed once per process (every scenario a sweep
// resolves asks for the catalog; parsing it was about a fifth of a small
// run's fixed cost, BenchmarkRunSetup); each call gets its own map and its
// own copies of the models, so no caller sees another's changes.
func Builtin() *Catalog {
	parsed := builtinParsed()
	c := &Catalog{models: make(map[string]*Model, len(parsed.models))}
	for n, m := range parsed.models {
		cp := *m
		cp.HFAliases = slices.Clone(m.HFAliases)
		cp.Inferred.Notes = slices.Clone(m.Inferred.Notes)
		c.models[n] = &cp
	}
	return c
}

// builtinParsed is the built-in catalog as read once; never modified:
// from its generated Go form (static_models.go, which TestStaticModels
// holds equal to what Load reads from builtin.toml), or parsed in a build
// with the toml_builtins tag.
var builtinParsed = sync.OnceValue(func() *Catalog {
	c := &Catalog{}
	if staticModels != nil {
		for _, m := range staticModels {
			c.put(&m)
		}
		return c
	}
	if err := c.Load(bytes.NewReader(builtinTOML), "builtin.toml"); err != nil {
		// The embedded file is part of the program; TestBuiltin loads it.
		panic(err)
	}
	return c
})

// Get returns a copy of the named model, matching the name without regard to
// case. A name with a '/' is a HuggingFace repository id
// ("meta-llama/Llama-3.1-8B-Instruct") and is looked up with ByHFName. The
// error lists the known names.
func (c *Catalog) Get(name string) (*Model, error) {
	if strings.Contains(name, "/") {
		return c.ByHFName(name)
	}
	m, ok := c.models[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		known := "none"
		if len(c.models) > 0 {
			known = strings.Join(c.names(), ", ")
		}
		return nil, fmt.Errorf("models: unknown model %q (known: %s)", name, known)
	}
	cp := *m
	return &cp, nil
}

// ByHFName returns a copy of the model whose HFName, or one of whose
// HFAliases, is hf (ignoring case), e.g. "meta-llama/Llama-2-7b-hf": the
// directory names of Vidur's profiling data. A model's HFName wins over
// another's alias; among equals the first by name is returned. The error
// lists the HuggingFace ids the catalog knows.
func (c *Catalog) ByHFName(hf string) (*Model, error) {
	hf = strings.TrimSpace(hf)
	if hf == "" {
		return nil, fmt.Errorf("models: empty hf_name")
	}
	for _, aliases := range []bool{false, true} {
		for _, n := range c.names() {
			m := c.models[n]
			match := strings.EqualFold(m.HFName, hf)
			if aliases {
				match = false
				for _, a := range m.HFAliases {
					match = match || strings.EqualFold(a, hf)
				}
			}
			if match {
				cp := *m
				cp.HFAliases = append([]string(nil), m.HFAliases...)
				return &cp, nil
			}
		}
	}
	var known []string
	for _, n := range c.names() {
		if m := c.models[n]; m.HFName != "" {
			known = append(known, m.HFName)
		}
		known = append(known, c.models[n].HFAliases...)
	}
	if len(known) == 0 {
		known = []string{"none"}
	}
	return nil, fmt.Errorf("models: no model with hf_name %q (known: %s; for another model pass its config.json with --model-config)", hf, strings.Join(known, ", "))
}

// All returns copies of every model, sorted by name.
func (c *Catalog) All() []*Model {
	out := make([]*Model, 0, len(c.models))
	for _, n := range c.names() {
		cp := *c.models[n]
		out = append(out, &cp)
	}
	return out
}

// Len returns the number of models.
func (c *Catalog) Len() int { return len(c.models) }

func (c *Catalog) names() []string {
	ns := make([]string, 0, len(c.models))
	for n := range c.models {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Add validates a copy of m (filling its defaults) and adds it. A name
// already in the catalog is an error.
func (c *Catalog) Add(m *Model) error {
	cp := *m
	if err := cp.Validate(); err != nil {
		return err
	}
	if _, dup := c.models[cp.Name]; dup {
		return &FieldError{Model: cp.Name, Field: "name", Msg: "duplicate: the catalog already has this model"}
	}
	c.put(&cp)
	return nil
}

func (c *Catalog) put(m *Model) {
	if c.models == nil {
		c.models = make(map[string]*Model)
	}
	c.models[m.Name] = m
}

// LoadFile adds the models of a TOML file; see Load.
func (c *Catalog) LoadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	defer f.Close()
	return c.Load(f, path)
}

// requiredKeys must be present in every [[model]] table. Other keys default
// to their zero value, which Validate either fills (kv_heads, head_dim,
// norm) or checks against the model kind (ffn for dense models; experts,
// top_k and expert_ffn for MoE models).
var requiredKeys = []string{"name", "layers", "hidden", "heads", "vocab", "max_context", "gated_mlp"}

// modelKeys maps each TOML key of Model to its field index.
var modelKeys = func() map[string]int {
	t := reflect.TypeFor[Model]()
	keys := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("toml"); tag != "" {
			keys[tag] = i
		}
	}
	return keys
}()

// knownKeys lists Model's TOML keys in field order, for error messages.
func knownKeys() string {
	t := reflect.TypeFor[Model]()
	ks := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if tag := t.Field(i).Tag.Get("toml"); tag != "" {
			ks = append(ks, tag)
		}
	}
	return strings.Join(ks, ", ")
}

// Load adds the models of a TOML document read from r; name (usually the
// file path) prefixes error messages. The document holds [[model]] tables
// whose keys are Model's TOML tags:
//
//	[[model]]
//	name = "llama-3.1-8b"
//	layers = 32
//	...
//
// Decoding is strict: an unknown key, a value of the wrong type, a missing
// required key (name, layers, hidden, heads, vocab, max_context, gated_mlp),
// an invalid value (Model.Validate) or a duplicate name is an error naming
// the file, the line where it can be found and the field: a *FieldError.
// Loading is all or nothing: on error the catalog is unchanged.
func (c *Catalog) Load(r io.Reader, name string) error {
	data, err := bounded.ReadAll(r, bounded.TOML) // /dev/urandom fails at 4 MiB, not never
	if err != nil {
		return &FieldError{File: name, Msg: "read: " + err.Error()}
	}
	ms, err := decodeModels(data, name)
	if err != nil {
		return err
	}
	for _, e := range ms {
		if _, dup := c.models[e.m.Name]; dup {
			return &FieldError{File: name, Line: e.line("name"), Model: e.m.Name, Field: "name",
				Msg: "duplicate: the catalog already has this model"}
		}
	}
	for _, e := range ms {
		c.put(e.m)
	}
	return nil
}

// decoded is one [[model]] table and where its keys are in the file.
type decoded struct {
	m      *Model
	header int            // line of the table, 0 if unknown
	lines  map[string]int // key → line, nil if unknown
}

func (d *decoded) line(key string) int {
	if l, ok := d.lines[key]; ok {
		return l
	}
	return d.header
}

func decodeModels(data []byte, file string) ([]*decoded, error) {
	// Decoding into a generic map never fails on types, so that every type
	// and key check below can name its field and line.
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &FieldError{File: file, Line: pe.Position.Line, Msg: pe.Message}
		}
		return nil, &FieldError{File: file, Msg: err.Error()}
	}
	idx := scanLines(data)
	for _, k := range sortedKeys(raw, idx.top) {
		if k != "model" {
			return nil, &FieldError{File: file, Line: idx.top[k], Field: k,
				Msg: "unknown key: a models file holds [[model]] tables only"}
		}
	}
	v, ok := raw["model"]
	if !ok {
		return nil, &FieldError{File: file, Msg: "no [[model]] tables"}
	}
	tables, ok := asTables(v)
	if !ok {
		return nil, &FieldError{File: file, Line: idx.top["model"], Field: "model",
			Msg: fmt.Sprintf("want an array of tables ([[model]]), got %s", tomlType(v))}
	}
	// Trust the line scan only when it found one header per table.
	useLines := len(idx.headers) == len(tables)
	out := make([]*decoded, 0, len(tables))
	seen := make(map[string]*decoded, len(tables))
	for i, tbl := range tables {
		d := &decoded{m: &Model{}, header: idx.top["model"]}
		if useLines {
			d.header, d.lines = idx.headers[i], idx.keys[i]
		}
		if err := d.fill(tbl); err != nil {
			err.File = file
			return nil, err
		}
		if err := d.m.Validate(); err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				fe = &FieldError{Model: d.m.Name, Msg: err.Error()}
			}
			fe.File, fe.Line = file, d.line(fe.Field)
			return nil, fe
		}
		if prev, dup := seen[d.m.Name]; dup {
			return nil, &FieldError{File: file, Line: d.line("name"), Model: d.m.Name, Field: "name",
				Msg: fmt.Sprintf("duplicate of the model at line %d", prev.line("name"))}
		}
		seen[d.m.Name] = d
		out = append(out, d)
	}
	return out, nil
}

// asTables returns v as an array of tables: [[model]] headers decode to
// []map[string]any, an inline array of inline tables to []any.
func asTables(v any) ([]map[string]any, bool) {
	switch v := v.(type) {
	case []map[string]any:
		return v, true
	case []any:
		out := make([]map[string]any, len(v))
		for i, e := range v {
			t, ok := e.(map[string]any)
			if !ok {
				return nil, false
			}
			out[i] = t
		}
		return out, true
	}
	return nil, false
}

// fill sets the fields of d.m from one TOML table, in file order.
func (d *decoded) fill(tbl map[string]any) *FieldError {
	if s, ok := tbl["name"].(string); ok {
		d.m.Name = s
	}
	rv := reflect.ValueOf(d.m).Elem()
	for _, k := range sortedKeys(tbl, d.lines) {
		fe := &FieldError{Line: d.line(k), Model: d.m.Name, Field: k}
		i, ok := modelKeys[k]
		if !ok {
			fe.Msg = "unknown key (known: " + knownKeys() + ")"
			return fe
		}
		f := rv.Field(i)
		v := tbl[k]
		switch f.Kind() {
		case reflect.Int:
			n, ok := v.(int64)
			if !ok {
				fe.Msg = "want an integer, got " + tomlType(v)
				return fe
			}
			if int64(int(n)) != n {
				fe.Msg = strconv.FormatInt(n, 10) + " is out of range"
				return fe
			}
			f.SetInt(n)
		case reflect.String:
			s, ok := v.(string)
			if !ok {
				fe.Msg = "want a string, got " + tomlType(v)
				return fe
			}
			f.SetString(s)
		case reflect.Bool:
			b, ok := v.(bool)
			if !ok {
				fe.Msg = "want a boolean (true or false), got " + tomlType(v)
				return fe
			}
			f.SetBool(b)
		case reflect.Slice: // []string
			arr, ok := v.([]any)
			if !ok {
				fe.Msg = "want an array of strings, got " + tomlType(v)
				return fe
			}
			ss := make([]string, len(arr))
			for j, e := range arr {
				if ss[j], ok = e.(string); !ok {
					fe.Msg = fmt.Sprintf("element %d: want a string, got %s", j, tomlType(e))
					return fe
				}
			}
			f.Set(reflect.ValueOf(ss))
		default:
			panic("models: Model field " + k + " has an unsupported kind") // TestModelKeys guards this
		}
	}
	for _, k := range requiredKeys {
		if _, ok := tbl[k]; !ok {
			return &FieldError{Line: d.header, Model: d.m.Name, Field: k, Msg: "missing"}
		}
	}
	return nil
}

// sortedKeys returns the keys of m in file order (by line, then by name; a
// key with no known line sorts first), so that the first error reported is
// the first in the file and errors are deterministic.
func sortedKeys[V any](m map[string]V, lines map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		li, lj := lines[ks[i]], lines[ks[j]]
		if li != lj {
			return li < lj
		}
		return ks[i] < ks[j]
	})
	return ks
}

// tomlType names the TOML type of a decoded value.
func tomlType(v any) string {
	switch v.(type) {
	case int64:
		return "integer"
	case float64:
		return "float"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []map[string]any:
		return "array of tables"
	case []any:
		return "array"
	case map[string]any:
		return "table"
	}
	return "datetime"
}

// lineIndex locates keys in a TOML document. The toml package reports
// positions only for syntax errors, so the loader finds the lines of
// [[model]] headers and of the keys under them with a line scan. The scan
// understands headers, bare and quoted keys and multi-line strings; it does
// not follow inline tables, whose keys then take the line of their table.
type lineIndex struct {
	top     map[string]int   // top-level key → line
	headers []int            // line of each [[model]] header, in order
	keys    []map[string]int // per [[model]] table: key → line
}

func scanLines(data []byte) lineIndex {
	idx := lineIndex{top: map[string]int{}}
	cur := map[string]int(nil) // keys of the current table; nil inside other tables
	top := true
	inML := "" // delimiter of the multi-line string we are in, if any
	for n, line := range strings.Split(string(data), "\n") {
		lineNo := n + 1
		s := strings.TrimSpace(line)
		if inML != "" {
			if strings.Count(s, inML)%2 == 1 {
				inML = ""
			}
			continue
		}
		switch {
		case strings.HasPrefix(s, "[["):
			top = false
			end := strings.Index(s, "]]")
			name := strings.TrimSpace(s[2:max(end, 2)])
			if k, ok := leadingKey(name + " ="); ok {
				if _, seen := idx.top[k]; !seen {
					idx.top[k] = lineNo // the header of a table array locates its top-level key
				}
			}
			if strings.Trim(name, `"'`) == "model" {
				cur = map[string]int{}
				idx.headers = append(idx.headers, lineNo)
				idx.keys = append(idx.keys, cur)
			} else {
				cur = nil
			}
			continue
		case strings.HasPrefix(s, "["):
			// A sub-table [model.x] of the current [[model]] locates key x;
			// any other table locates its top-level key.
			end := strings.IndexByte(s, ']')
			name := strings.TrimSpace(s[1:max(end, 1)])
			if k, ok := leadingKey(name + " ="); ok && k != "model" {
				if _, seen := idx.top[k]; !seen {
					idx.top[k] = lineNo
				}
			}
			if cur != nil && strings.HasPrefix(name, "model.") {
				if k, ok := leadingKey(strings.TrimPrefix(name, "model.") + " ="); ok {
					if _, seen := cur[k]; !seen {
						cur[k] = lineNo
					}
				}
			}
			top, cur = false, nil
			continue
		}
		if k, ok := leadingKey(s); ok {
			switch {
			case top:
				if _, seen := idx.top[k]; !seen {
					idx.top[k] = lineNo
				}
			case cur != nil:
				if _, seen := cur[k]; !seen {
					cur[k] = lineNo
				}
			}
		}
		for _, delim := range []string{`"""`, `'''`} {
			if strings.Count(s, delim)%2 == 1 {
				inML = delim
				break
			}
		}
	}
	return idx
}

// leadingKey returns the first key of a "key = value" (or "a.b = value")
// line: bare, "double-quoted" or 'single-quoted'.
func leadingKey(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	var key, rest string
	switch s[0] {
	case '"', '\'':
		end := strings.IndexByte(s[1:], s[0])
		if end < 0 {
			return "", false
		}
		key, rest = s[1:1+end], s[2+end:]
	default:
		end := strings.IndexFunc(s, func(r rune) bool {
			return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		})
		if end <= 0 {
			return "", false
		}
		key, rest = s[:end], s[end:]
	}
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, ".") {
		return key, true
	}
	return "", false
}
