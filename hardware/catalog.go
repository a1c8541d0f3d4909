package hardware

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/servesim/servesim/internal/bounded"
)

// Catalog is a set of GPUs by name. The zero value is an empty catalog ready
// to use. A Catalog is not safe for concurrent mutation; concurrent Get and
// All are fine.
type Catalog struct {
	gpus  map[string]*GPU   // by Name
	alias map[string]string // alias → Name
}

//go:embed gpus.toml
var builtinTOML string

var (
	builtinOnce sync.Once
	builtinCat  *Catalog
)

// Builtin returns a new catalog holding the built-in GPUs (a100, h100, h200,
// b200, and the PCIe rtx-pro-6000, rtx-4090 and l40s) of the embedded
// gpus.toml, as the loader users use reads it: from its generated Go form
// (static_gpus.go, which TestStaticGPUs holds equal to what Load reads
// from the file), or parsed in a build with the toml_builtins tag. Each
// call returns an independent copy: changing it changes no other catalog.
// It panics if the embedded file is broken, which tests rule out.
func Builtin() *Catalog {
	builtinOnce.Do(func() {
		builtinCat = new(Catalog)
		if staticGPUs != nil {
			for _, g := range staticGPUs {
				if err := builtinCat.put(&g, true); err != nil {
					panic("hardware: generated gpus.toml: " + err.Error())
				}
			}
			return
		}
		if err := builtinCat.Load(strings.NewReader(builtinTOML), "gpus.toml"); err != nil {
			panic("hardware: embedded gpus.toml: " + err.Error())
		}
	})
	c := new(Catalog)
	for _, g := range builtinCat.All() {
		cp := *g
		cp.Aliases = append([]string(nil), g.Aliases...)
		cp.Sources = append([]string(nil), g.Sources...)
		if err := c.Add(&cp); err != nil {
			panic("hardware: copying built-in catalog: " + err.Error())
		}
	}
	return c
}

// Get returns the GPU called name or one of its aliases. Matching ignores
// case and surrounding space and treats ' ' and '_' as '-' ("H100 SXM" finds
// h100). The error lists the known names.
func (c *Catalog) Get(name string) (*GPU, error) {
	n := normalize(name)
	if g, ok := c.gpus[n]; ok {
		return g, nil
	}
	if a, ok := c.alias[n]; ok {
		return c.gpus[a], nil
	}
	if d := deviceName(n); d != "" && d != n { // nvidia-smi's "NVIDIA H100 80GB HBM3"
		if g, err := c.Get(d); err == nil {
			return g, nil
		}
	}
	return nil, fmt.Errorf("hardware: unknown GPU %q%s (known: %s)", name, c.suggest(n), strings.Join(c.Names(), ", "))
}

// Names returns the catalog names, sorted.
func (c *Catalog) Names() []string {
	names := make([]string, 0, len(c.gpus))
	for n := range c.gpus {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// All returns the GPUs sorted by name. The pointers are the catalog's own.
func (c *Catalog) All() []*GPU {
	out := make([]*GPU, 0, len(c.gpus))
	for _, n := range c.Names() {
		out = append(out, c.gpus[n])
	}
	return out
}

// Add validates g and adds it. It is an error if g's name or an alias is
// already taken by a GPU of the catalog.
func (c *Catalog) Add(g *GPU) error {
	return c.put(g, false)
}

// put adds g; with replace, a GPU of the same name is replaced (its aliases
// go with it).
func (c *Catalog) put(g *GPU, replace bool) error {
	if g == nil {
		return errors.New("hardware: nil GPU")
	}
	if err := g.Validate(); err != nil {
		return err
	}
	if c.gpus == nil {
		c.gpus = make(map[string]*GPU)
		c.alias = make(map[string]string)
	}
	if _, dup := c.gpus[g.Name]; dup && !replace {
		return fmt.Errorf("hardware: gpu %q: already in the catalog", g.Name)
	}
	if owner, ok := c.alias[g.Name]; ok && owner != g.Name {
		return fmt.Errorf("hardware: gpu %q: name is an alias of gpu %q", g.Name, owner)
	}
	seen := map[string]bool{g.Name: true}
	for _, a := range g.Aliases {
		if seen[a] {
			return fmt.Errorf("hardware: gpu %q: alias %q given twice", g.Name, a)
		}
		seen[a] = true
		if _, ok := c.gpus[a]; ok && a != g.Name {
			return fmt.Errorf("hardware: gpu %q: alias %q is the name of another GPU", g.Name, a)
		}
		if owner, ok := c.alias[a]; ok && owner != g.Name {
			return fmt.Errorf("hardware: gpu %q: alias %q already belongs to gpu %q", g.Name, a, owner)
		}
	}
	for a, owner := range c.alias {
		if owner == g.Name {
			delete(c.alias, a)
		}
	}
	c.gpus[g.Name] = g
	for _, a := range g.Aliases {
		c.alias[a] = g.Name
	}
	return nil
}

// LoadFile loads the GPUs of a TOML file (see Load); errors name the file.
func (c *Catalog) LoadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("hardware: %w", err)
	}
	defer f.Close()
	return c.Load(f, filepath.Base(path))
}

// Load reads GPUs from TOML, one [[gpu]] table each, with the keys of GPU's
// toml tags (the numbers here are illustrative, not a checked spec):
//
//	[[gpu]]
//	name = "l40s"                 # required; lower case, no spaces
//	aliases = ["l40s-48gb"]       # optional
//	full_name = "NVIDIA L40S 48GB"
//	bf16_flops = 362e12           # required, FLOP/s dense
//	fp8_flops = 733e12            # 0 or absent: unsupported
//	mem_bytes = 48e9              # required
//	device_bytes = 51e9           # optional: what the driver reports (absent: mem_bytes)
//	mem_bw = 864e9                # required, bytes/s
//	link_bw = 32e9                # required, bytes/s per direction (PCIe here)
//	link_latency = 35.5e-6        # absent: DefaultLinkLatency
//	host_bw = 32e9                # required, bytes/s per direction
//	tdp = 350                     # optional, W
//	price_per_hour = 1.0          # optional, $/GPU-hour
//	sources = ["bf16_flops: ..."] # optional
//
// Decoding is strict: an unknown key, a value of the wrong type or a value
// that GPU.Validate rejects is an error naming name (the file), the line and
// the field, e.g. `hardware: gpus.toml line 7: gpu "h100": field "mem_bw":
// must be > 0, got -3.35e+12`. A GPU whose name is already in the catalog
// replaces it (so a file can redefine a built-in GPU, e.g. to set its price);
// a name given twice in one file is an error. On error the catalog is left
// unchanged.
func (c *Catalog) Load(r io.Reader, name string) error {
	data, err := bounded.ReadAll(r, bounded.TOML) // /dev/zero fails at 4 MiB, not never
	if err != nil {
		return fmt.Errorf("hardware: %s: %w", name, err)
	}
	src := string(data)
	var doc struct {
		GPU []map[string]any `toml:"gpu"`
	}
	md, err := toml.Decode(src, &doc)
	if err != nil {
		return tomlError(name, err)
	}
	idx := indexLines(src)
	// Keys inside [[gpu]] tables decode into maps and are checked by
	// decodeGPU; anything else left undecoded is an unknown top-level key.
	for _, k := range md.Undecoded() {
		if k[0] != "gpu" {
			return fmt.Errorf("hardware: %s line %d: unknown key %q (want [[gpu]] tables)", name, idx.topLine(k[0]), k[0])
		}
	}
	gpus := make([]*GPU, 0, len(doc.GPU))
	inFile := make(map[string]int) // name → line of its table
	for i, raw := range doc.GPU {
		g, err := decodeGPU(raw, i, idx)
		if err != nil {
			return fmt.Errorf("hardware: %s %w", name, err)
		}
		if prev, dup := inFile[g.Name]; dup {
			return fmt.Errorf("hardware: %s line %d: field \"name\": gpu %q already defined at line %d",
				name, idx.keyLine(i, "name"), g.Name, prev)
		}
		inFile[g.Name] = idx.keyLine(i, "name")
		gpus = append(gpus, g)
	}
	// Apply to a scratch copy so that a failure leaves c unchanged.
	next := c.clone()
	for i, g := range gpus {
		if err := next.put(g, true); err != nil {
			return fmt.Errorf("hardware: %s line %d: %s", name, idx.keyLine(i, "name"),
				strings.TrimPrefix(err.Error(), "hardware: "))
		}
	}
	*c = *next
	return nil
}

func (c *Catalog) clone() *Catalog {
	n := &Catalog{gpus: make(map[string]*GPU, len(c.gpus)), alias: make(map[string]string, len(c.alias))}
	for k, v := range c.gpus {
		n.gpus[k] = v
	}
	for k, v := range c.alias {
		n.alias[k] = v
	}
	return n
}

// tomlError rewrites a decoder error as "hardware: FILE line N: message".
func tomlError(name string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		if pe.Position.Line < 1 { // the decoder gives no line for some errors at the end of the input
			return fmt.Errorf("hardware: %s: %s", name, pe.Message)
		}
		return fmt.Errorf("hardware: %s line %d: %s", name, pe.Position.Line, pe.Message)
	}
	msg := strings.TrimPrefix(err.Error(), "toml: ")
	if strings.HasPrefix(msg, "line ") {
		return fmt.Errorf("hardware: %s %s", name, msg)
	}
	return fmt.Errorf("hardware: %s: %s", name, msg)
}

// gpuField is one TOML key of GPU, found through the struct tags.
type gpuField struct {
	key   string
	index int
	kind  reflect.Kind // Float64, Int, String or Slice (of string)
}

var gpuFields = func() map[string]gpuField {
	t := reflect.TypeOf(GPU{})
	m := make(map[string]gpuField, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key := f.Tag.Get("toml")
		if key == "" || key == "-" {
			continue
		}
		m[key] = gpuField{key: key, index: i, kind: f.Type.Kind()}
	}
	return m
}()

// decodeGPU turns the i-th [[gpu]] table into a validated GPU. Its errors
// read "line N: ..." for the caller to prefix with the file name.
func decodeGPU(raw map[string]any, i int, idx *lineIndex) (*GPU, error) {
	// Visit keys in file order so the first error reported is the first
	// in the file, whatever the map order.
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		la, lb := idx.keyLine(i, keys[a]), idx.keyLine(i, keys[b])
		if la != lb {
			return la < lb
		}
		return keys[a] < keys[b]
	})
	g := &GPU{LinkLatency: DefaultLinkLatency}
	v := reflect.ValueOf(g).Elem()
	label := func() string {
		if s, ok := raw["name"].(string); ok && s != "" {
			return fmt.Sprintf("gpu %q: ", s)
		}
		return fmt.Sprintf("gpu #%d: ", i+1)
	}
	for _, k := range keys {
		f, ok := gpuFields[k]
		if !ok {
			return nil, fmt.Errorf("line %d: %sunknown field %q", idx.keyLine(i, k), label(), k)
		}
		if err := setField(v.Field(f.index), f.kind, raw[k]); err != nil {
			return nil, fmt.Errorf("line %d: %sfield %q: %s", idx.keyLine(i, k), label(), k, err)
		}
	}
	if _, ok := raw["name"]; !ok {
		return nil, fmt.Errorf("line %d: %sfield \"name\": missing", idx.header(i), label())
	}
	if err := g.validate(); err != nil {
		line := idx.header(i)
		if f := errorField(err); f != "" {
			if _, given := raw[f]; given {
				line = idx.keyLine(i, f)
			} else {
				err = fmt.Errorf("%w (missing)", err)
			}
		}
		return nil, fmt.Errorf("line %d: %s%w", line, label(), err)
	}
	return g, nil
}

// setField stores a decoded TOML value in a GPU field, checking its type.
func setField(dst reflect.Value, kind reflect.Kind, val any) error {
	switch kind {
	case reflect.Float64:
		switch x := val.(type) {
		case float64:
			dst.SetFloat(x)
		case int64:
			dst.SetFloat(float64(x))
		default:
			return fmt.Errorf("want a number, got %s", tomlType(val))
		}
	case reflect.Int:
		x, ok := val.(int64)
		if !ok {
			return fmt.Errorf("want an integer, got %s", tomlType(val))
		}
		if x < math.MinInt32 || x > math.MaxInt32 {
			return fmt.Errorf("%d is out of range", x)
		}
		dst.SetInt(x)
	case reflect.String:
		s, ok := val.(string)
		if !ok {
			return fmt.Errorf("want a string, got %s", tomlType(val))
		}
		dst.SetString(s)
	case reflect.Slice:
		arr, ok := val.([]any)
		if !ok {
			return fmt.Errorf("want an array of strings, got %s", tomlType(val))
		}
		out := make([]string, len(arr))
		for j, e := range arr {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("element %d: want a string, got %s", j+1, tomlType(e))
			}
			out[j] = s
		}
		dst.Set(reflect.ValueOf(out))
	default:
		panic("hardware: GPU field of unsupported kind " + kind.String())
	}
	return nil
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	default:
		return "a date/time"
	}
}

// lineIndex finds, in raw TOML text, the line of each [[gpu]] table header
// and of each key inside it, so that errors found after decoding (unknown
// keys, bad types, failed validation) can name a line. The TOML decoder's
// own metadata cannot: it keys positions by dotted name, which all [[gpu]]
// tables share. The scan understands comments, strings and multi-line arrays,
// which is all a GPU file uses; on anything stranger it falls back to the
// table's header line.
type lineIndex struct {
	headers []int            // line of the i-th [[gpu]] header
	keys    []map[string]int // per table: key → line
	top     map[string]int   // top-level keys and table names → line
}

func indexLines(src string) *lineIndex {
	idx := &lineIndex{top: make(map[string]int)}
	depth := 0       // bracket depth of a multi-line value
	inMulti := ""    // delimiter of an open multi-line string
	inTopTable := "" // name of a non-gpu table being read ("" = top level or gpu)
	for n, line := range strings.Split(src, "\n") {
		ln := n + 1
		if inMulti != "" {
			if strings.Contains(line, inMulti) {
				inMulti = ""
			}
			continue
		}
		if depth > 0 {
			depth += bracketDelta(line)
			continue
		}
		t := strings.TrimSpace(line)
		switch {
		case t == "" || t[0] == '#':
			continue
		case strings.HasPrefix(t, "[["):
			nm := tableName(t[2:], "]]")
			if nm == "gpu" {
				idx.headers = append(idx.headers, ln)
				idx.keys = append(idx.keys, make(map[string]int))
				inTopTable = ""
			} else {
				inTopTable = nm
				setOnce(idx.top, strings.SplitN(nm, ".", 2)[0], ln)
			}
			continue
		case t[0] == '[':
			nm := tableName(t[1:], "]")
			first, rest, _ := strings.Cut(nm, ".")
			if first == "gpu" && len(idx.keys) > 0 && rest != "" {
				sub, _, _ := strings.Cut(rest, ".")
				setOnce(idx.keys[len(idx.keys)-1], sub, ln)
				inTopTable = ""
			} else {
				inTopTable = nm
				setOnce(idx.top, first, ln)
			}
			continue
		}
		key, after, ok := splitKey(t)
		if !ok {
			continue
		}
		switch {
		case inTopTable != "":
			// keys of a non-gpu table: reported through the table name
		case len(idx.keys) == 0:
			setOnce(idx.top, key, ln)
		default:
			setOnce(idx.keys[len(idx.keys)-1], key, ln)
		}
		v := strings.TrimSpace(after)
		for _, d := range []string{`"""`, `'''`} {
			if strings.HasPrefix(v, d) && !strings.Contains(v[3:], d) {
				inMulti = d
			}
		}
		if inMulti == "" {
			depth = bracketDelta(v)
			if depth < 0 {
				depth = 0
			}
		}
	}
	return idx
}

func setOnce(m map[string]int, k string, ln int) {
	if _, ok := m[k]; !ok {
		m[k] = ln
	}
}

// tableName returns the name of a table header whose opening brackets were
// cut, without quotes and spaces around the dots.
func tableName(s, closing string) string {
	s, _, _ = strings.Cut(s, closing)
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

// splitKey splits `key = value` (key possibly quoted or dotted; the first
// dotted part is returned).
func splitKey(t string) (key, value string, ok bool) {
	if t[0] == '"' || t[0] == '\'' {
		end := strings.IndexByte(t[1:], t[0])
		if end < 0 {
			return "", "", false
		}
		key = t[1 : end+1]
		rest := strings.TrimSpace(t[end+2:])
		if i := strings.IndexByte(rest, '='); i >= 0 {
			return key, rest[i+1:], true
		}
		return "", "", false
	}
	i := strings.IndexByte(t, '=')
	if i < 0 {
		return "", "", false
	}
	key = strings.TrimSpace(t[:i])
	key, _, _ = strings.Cut(key, ".")
	return strings.TrimSpace(key), t[i+1:], true
}

// bracketDelta counts '[' minus ']' outside strings and comments.
func bracketDelta(s string) int {
	d := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0:
			if ch == '\\' && quote == '"' {
				i++
			} else if ch == quote {
				quote = 0
			}
		case ch == '"' || ch == '\'':
			quote = ch
		case ch == '#':
			return d
		case ch == '[':
			d++
		case ch == ']':
			d--
		}
	}
	return d
}

// header returns the line of the i-th [[gpu]] header, or, for tables not
// written as [[gpu]] headers (gpu = [{...}]), the line of the gpu key.
func (x *lineIndex) header(i int) int {
	if i < len(x.headers) {
		return x.headers[i]
	}
	return x.topLine("gpu")
}

// keyLine returns the line of key in the i-th [[gpu]] table, or the table's
// header line.
func (x *lineIndex) keyLine(i int, key string) int {
	if i < len(x.keys) {
		if ln, ok := x.keys[i][key]; ok {
			return ln
		}
	}
	return x.header(i)
}

// topLine returns the line of a top-level key or table (1 if not found).
func (x *lineIndex) topLine(key string) int {
	if ln, ok := x.top[key]; ok {
		return ln
	}
	return 1
}
