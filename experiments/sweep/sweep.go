package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/servesim/servesim/experiments/internal/parallel"
	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/internal/bounded"
	"github.com/servesim/servesim/sim/metrics"
)

// Sweep is an experiment file: a base scenario and axes of values for any
// scenario field (by its TOML path, e.g. "workload.rate"); the points are
// the grid of all combinations, each run once per seed.
type Sweep struct {
	Name  string            `toml:"name"`
	Base  scenario.Scenario `toml:"base"`
	Axes  []Axis            `toml:"axis"`
	Seeds []uint64          `toml:"seeds"` // replicate seeds (default: the base's seed)

	dir  string
	file string // the experiment file, for errors
	src  []byte // its text, to find the lines errors are about
	// Where the base's keys and the axes are in the sweep file, so that a
	// point's explicit fields are the ones the file gives (see fields.go).
	baseSet   map[string]int
	axisLines []int
}

// Axis is one swept field and its values. A value that is a table (an
// inline TOML table) merges into the field's table, so one axis can set
// several fields at once: field = "batch", values = [{policy = "chunked",
// max_num_batched_tokens = 512}, {policy = "static"}].
type Axis struct {
	Field  string   `toml:"field" json:"field"` // "." is the scenario's top level (with table values)
	Values []any    `toml:"values" json:"values"`
	Labels []string `toml:"labels" json:"labels,omitempty"` // optional names of the values, for results and plots
	Name   string   `toml:"name" json:"name,omitempty"`     // optional column name in results (default: Field)
}

// Column returns the axis's column name in results.
func (a Axis) Column() string {
	if a.Name != "" {
		return a.Name
	}
	return a.Field
}

// Point is one scenario of a sweep, with the axis values that made it.
type Point struct {
	Index  int
	Values []any    // one per axis
	Labels []string // one per axis: the value's label, or the value formatted
	Seed   uint64
	Plan   *scenario.Plan
	key    string // Key, computed once by Points (a TOML encoding of the plan's scenario)
}

// LoadSweep reads an experiment file strictly.
func LoadSweep(path string) (*Sweep, error) {
	data, err := bounded.ReadFile(path, bounded.TOML)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return ParseSweep(data, path, name, filepath.Dir(path))
}

// ParseSweep decodes an experiment file's text strictly; file names it in
// errors, name is the default sweep name, and dir resolves relative paths.
func ParseSweep(data []byte, file, name, dir string) (*Sweep, error) {
	var sw Sweep
	md, err := toml.Decode(string(data), &sw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("sweep: %s line %d: %s", file, pe.Position.Line, pe.Message)
		}
		return nil, fmt.Errorf("sweep: %s: %v", file, err)
	}
	if !md.IsDefined("base") {
		hint := ""
		if md.IsDefined("model") || md.IsDefined("workload") || md.IsDefined("gpu") {
			hint = " (this looks like a scenario: run it with 'servesim run --config FILE')"
		}
		return nil, fmt.Errorf("sweep: %s: not an experiment file: an experiment needs a [base] scenario and [[axis]] tables (field = a scenario field, values = [...])%s", file, hint)
	}
	if len(sw.Axes) == 0 && len(sw.Seeds) == 0 {
		return nil, fmt.Errorf("sweep: %s: no [[axis]] and no seeds: an experiment needs a [base] scenario and [[axis]] tables (field = a scenario field, values = [...])", file)
	}
	for _, k := range md.Undecoded() {
		if len(k) >= 2 && k[0] == "axis" && k[1] == "values" {
			continue // keys of table values, checked when applied to the scenario
		}
		where := file
		if line := scenario.KeyLine(data, k); line > 0 {
			where = fmt.Sprintf("%s line %d", file, line)
		}
		return nil, fmt.Errorf("sweep: %s: unknown field %q", where, k.String())
	}
	sw.dir, sw.file, sw.src = dir, file, data
	sw.Base.SetDir(dir)
	if sw.Name == "" {
		sw.Name = name
		if err := CheckName(name); err != nil {
			return nil, fmt.Errorf("sweep: %s: the sweep's name (from the file name) %v; set name = \"...\"", file, err)
		}
	} else if err := CheckName(sw.Name); err != nil {
		return nil, fmt.Errorf("sweep: %s: name %v", sw.at(scenario.KeyLine(data, toml.Key{"name"})), err)
	}
	var all scenario.Scenario // the whole file's keys and lines
	all.RecordKeys(md, data)
	sw.file, sw.baseSet = file, map[string]int{}
	for k, line := range all.ExplicitKeys() {
		if rest, ok := strings.CutPrefix(k, "base."); ok {
			sw.baseSet[rest] = line
		}
	}
	for i := range sw.Axes {
		line, _ := all.Origin(fmt.Sprintf("axis[%d].values", i))
		sw.axisLines = append(sw.axisLines, line)
	}
	// Seeds are uint64 and the toml package wraps a negative one (-1
	// becomes 2^64 − 1); read them signed.
	var raw struct {
		Base struct {
			Seed int64 `toml:"seed"`
		} `toml:"base"`
		Seeds []int64 `toml:"seeds"`
	}
	if _, err := toml.Decode(string(data), &raw); err == nil {
		for _, v := range append([]int64{raw.Base.Seed}, raw.Seeds...) {
			if v < 0 {
				key := "seeds"
				if v == raw.Base.Seed && all.Explicit("base.seed") {
					key = "base.seed"
				}
				line, _ := all.Origin(key)
				return nil, fmt.Errorf("sweep: %s line %d: field %q: seed %d must be ≥ 0", file, line, key, v)
			}
		}
	}
	return &sw, nil
}

// Points expands the grid and resolves every point, so that a bad value in
// any point is an error before anything runs. It resolves on all cores;
// PointsJ on a given number of workers.
func (sw *Sweep) Points() ([]Point, error) { return sw.PointsJ(0) }

// PointsJ is Points resolving on workers goroutines (≤ 0: all cores): the
// points, their keys and the error reported do not depend on workers.
func (sw *Sweep) PointsJ(workers int) ([]Point, error) {
	for i, a := range sw.Axes {
		at := sw.at(sw.axisLine(i))
		if a.Field == "" {
			return nil, fmt.Errorf("sweep: %s: axis %d has no field", at, i+1)
		}
		if len(a.Values) == 0 {
			return nil, fmt.Errorf("sweep: %s: axis %q has no values", at, a.Field)
		}
		if len(a.Labels) > 0 && len(a.Labels) != len(a.Values) {
			return nil, fmt.Errorf("sweep: %s: axis %q has %d labels for %d values", at, a.Field, len(a.Labels), len(a.Values))
		}
		for j := range i {
			if sw.Axes[j].Field == a.Field {
				return nil, fmt.Errorf("sweep: %s: field %q appears on two axes (axes %d and %d)", at, a.Field, j+1, i+1)
			}
		}
	}
	if err := sw.checkGrid(); err != nil {
		return nil, err
	}
	// Conflicting settings: a table value setting a field another axis sweeps.
	for ai, a := range sw.Axes {
		for _, v := range a.Values {
			tbl, ok := v.(map[string]any)
			if !ok {
				continue
			}
			for k := range tbl {
				full := a.Field + "." + k
				if a.Field == "." {
					full = k
				}
				for _, b := range sw.Axes {
					if b.Field == full {
						return nil, fmt.Errorf("sweep: %s: conflicting settings: axis %q sets %q, which axis %q also sweeps", sw.at(sw.axisLine(ai)), a.Field, k, b.Field)
					}
				}
			}
		}
	}
	seeds := sw.Seeds
	if len(seeds) == 0 {
		seeds = []uint64{sw.Base.Seed}
	}
	n := len(seeds)
	for _, a := range sw.Axes {
		n *= len(a.Values)
	}
	// The grid is expanded in point order; each point's scenario is then
	// built and resolved on the workers (each writes only its own slot), and
	// the first error in point order is the one reported, whatever -j.
	pts := make([]Point, 0, n)
	idx := make([]int, len(sw.Axes))
	for {
		for _, seed := range seeds {
			vals := make([]any, len(sw.Axes))
			labels := make([]string, len(sw.Axes))
			for k, a := range sw.Axes {
				vals[k] = a.Values[idx[k]]
				labels[k] = formatValue(vals[k])
				if len(a.Labels) > 0 {
					labels[k] = a.Labels[idx[k]]
				}
			}
			pts = append(pts, Point{Index: len(pts), Values: vals, Labels: labels, Seed: seed})
		}
		k := len(idx) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < len(sw.Axes[k].Values) {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			break
		}
	}
	base, err := sw.baseTOML()
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(pts))
	parallel.Run(len(pts), workers, func(i int) {
		p := &pts[i]
		s, err := sw.scenario(base, p.Values, p.Seed)
		if err != nil {
			errs[i] = err
			return
		}
		if p.Plan, err = resolveGuarded(s); err != nil {
			errs[i] = sw.resolveError(p.Values, err)
			return
		}
		p.key = p.computeKey()
	}, nil)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return pts, sw.checkKeys(pts)
}

// baseTOML is the base scenario as TOML values (its TOML form decoded),
// which every point's scenario starts from: made once per sweep.
func (sw *Sweep) baseTOML() (map[string]any, error) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(sw.Base); err != nil {
		return nil, fmt.Errorf("sweep: sweep %s: %v", sw.Name, err)
	}
	m := map[string]any{}
	if _, err := toml.Decode(buf.String(), &m); err != nil {
		return nil, fmt.Errorf("sweep: sweep %s: %v", sw.Name, err)
	}
	return m, nil
}

// cloneTOML copies a decoded TOML value deeply: its tables and arrays (what
// a point's axis values change); the rest (strings, numbers, booleans,
// times) are values already.
func cloneTOML(v any) any {
	switch v := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(v))
		for k, x := range v {
			c[k] = cloneTOML(x)
		}
		return c
	case []map[string]any:
		c := make([]map[string]any, len(v))
		for i, x := range v {
			c[i] = cloneTOML(x).(map[string]any)
		}
		return c
	case []any:
		c := make([]any, len(v))
		for i, x := range v {
			c[i] = cloneTOML(x)
		}
		return c
	}
	return v
}

// scenario applies axis values to the base through its TOML form, so that
// any field can be swept and a misspelt field or a wrong type is the same
// strict error as in a scenario file.
func (sw *Sweep) scenario(base map[string]any, vals []any, seed uint64) (scenario.Scenario, error) {
	var buf bytes.Buffer
	m := cloneTOML(base).(map[string]any)
	for k, a := range sw.Axes {
		cur, leaf := m, a.Field
		if a.Field != "." {
			parts := strings.Split(a.Field, ".")
			for _, p := range parts[:len(parts)-1] {
				next, ok := cur[p].(map[string]any)
				if !ok {
					next = map[string]any{}
					cur[p] = next
				}
				cur = next
			}
			leaf = parts[len(parts)-1]
		}
		if tbl, ok := vals[k].(map[string]any); ok {
			// A table value merges (deeply) into the field's table, so one
			// axis can vary several fields together ({policy = "chunked",
			// max_num_batched_tokens = 512}).
			dst := cur
			if a.Field != "." {
				d, ok := cur[leaf].(map[string]any)
				if !ok {
					d = map[string]any{}
					cur[leaf] = d
				}
				dst = d
			}
			mergeInto(dst, tbl)
			continue
		}
		if a.Field == "." {
			return scenario.Scenario{}, fmt.Errorf("sweep: %s: axis \".\" (the top level) takes table values, not %v", sw.at(sw.axisLine(k)), vals[k])
		}
		cur[leaf] = vals[k]
	}
	m["seed"] = int64(seed)
	buf.Reset()
	if err := toml.NewEncoder(&buf).Encode(m); err != nil {
		return scenario.Scenario{}, fmt.Errorf("sweep: sweep %s: %v", sw.Name, err)
	}
	s, err := sw.decodePoint(buf.String(), vals)
	if err != nil {
		return s, err
	}
	s.SetDir(sw.dir)
	// The point's TOML spells out every field of the base, zeros included:
	// its explicit fields are those the sweep file gives, in the base or
	// on an axis.
	set := maps.Clone(sw.baseSet)
	if set == nil {
		set = map[string]int{}
	}
	for k, a := range sw.Axes {
		line := scenario.LineUnknown
		if k < len(sw.axisLines) && sw.axisLines[k] > 0 {
			line = sw.axisLines[k]
		}
		markSet(set, a.Field, vals[k], line)
	}
	s.SetOrigins(sw.file, set)
	return s, nil
}

// markSet records field (a table value: each of its fields) as set at line.
func markSet(set map[string]int, field string, v any, line int) {
	tbl, ok := v.(map[string]any)
	if !ok {
		set[field] = line
		return
	}
	for k, sub := range tbl {
		if field != "." {
			k = field + "." + k
		}
		markSet(set, k, sub, line)
	}
}

// mergeInto copies src into dst, merging nested tables.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sub, ok := v.(map[string]any); ok {
			if d, ok := dst[k].(map[string]any); ok {
				mergeInto(d, sub)
				continue
			}
		}
		dst[k] = v
	}
}

func describe(axes []Axis, vals []any) string {
	parts := make([]string, len(axes))
	for i, a := range axes {
		parts[i] = fmt.Sprintf("%s=%s", a.Field, formatValue(vals[i]))
	}
	return strings.Join(parts, ",")
}

// formatValue prints an axis value compactly and deterministically: a table
// as its sorted key=value pairs joined by spaces.
func formatValue(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Sprint(v)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		if sub, ok := m[k].(map[string]any); ok {
			parts[i] = fmt.Sprintf("%s={%s}", k, formatValue(sub))
			continue
		}
		parts[i] = fmt.Sprintf("%s=%v", k, m[k])
	}
	return strings.Join(parts, " ")
}

// PointResult is one finished point.
type PointResult struct {
	Point  Point
	Report *scenario.Report
}

// RunSweep runs the points on workers goroutines (≤ 0: all cores). Results
// come back in point order whatever the number of workers: each point is a
// pure function of its plan.
func RunSweep(pts []Point, workers int) ([]PointResult, error) {
	out := make([]PointResult, len(pts))
	errs := make([]error, len(pts))
	parallel.Run(len(pts), workers, func(i int) {
		rep, err := scenario.Run(pts[i].Plan, "")
		out[i], errs[i] = PointResult{Point: pts[i], Report: rep}, err
	}, nil)
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("sweep: point %d: %w", i, err)
		}
	}
	return out, nil
}

// Column is one metric column of a sweep's results.
type Column struct {
	Name string
	Get  func(r *scenario.Report) float64
}

func statCols(prefix string, get func(r *scenario.Report) metrics.Stats) []Column {
	return []Column{
		{prefix + "_mean_ms", func(r *scenario.Report) float64 { return get(r).Mean }},
		{prefix + "_p50_ms", func(r *scenario.Report) float64 { return get(r).Median }},
		{prefix + "_p90_ms", func(r *scenario.Report) float64 { return get(r).P90 }},
		{prefix + "_p95_ms", func(r *scenario.Report) float64 { return get(r).P95 }},
		{prefix + "_p99_ms", func(r *scenario.Report) float64 { return get(r).P99 }},
	}
}

// Columns are the metrics a sweep reports per point: every summary metric.
var Columns = slices.Concat(
	[]Column{
		{"completed", func(r *scenario.Report) float64 { return float64(r.Summary.Completed) }},
		{"rejected", func(r *scenario.Report) float64 { return float64(r.Summary.Rejected) }},
		{"duration_s", func(r *scenario.Report) float64 { return r.Summary.Duration }},
		{"request_throughput", func(r *scenario.Report) float64 { return r.Summary.RequestThroughput }},
		{"output_tok_per_s", func(r *scenario.Report) float64 { return r.Summary.OutputThroughput }},
		{"total_tok_per_s", func(r *scenario.Report) float64 { return r.Summary.TotalThroughput }},
	},
	statCols("ttft", func(r *scenario.Report) metrics.Stats { return r.Summary.TTFT }),
	statCols("tpot", func(r *scenario.Report) metrics.Stats { return r.Summary.TPOT }),
	statCols("itl", func(r *scenario.Report) metrics.Stats { return r.Summary.ITL }),
	statCols("e2e", func(r *scenario.Report) metrics.Stats { return r.Summary.E2E }),
	[]Column{
		// The objectives the attainment was judged against travel with the
		// results, so that `plot` reads a sweep against its own SLOs.
		{"slo_ttft_ms", func(r *scenario.Report) float64 { return r.Summary.SLO.TTFT.Milliseconds() }},
		{"slo_tpot_ms", func(r *scenario.Report) float64 { return r.Summary.SLO.TPOT.Milliseconds() }},
		{"slo_e2e_ms", func(r *scenario.Report) float64 { return r.Summary.SLO.E2E.Milliseconds() }},
		{"slo_attainment", func(r *scenario.Report) float64 { return r.Summary.Attainment }},
		{"goodput_req_per_s", func(r *scenario.Report) float64 { return r.Summary.Goodput }},
		{"mean_batch", func(r *scenario.Report) float64 { return r.Summary.MeanBatch }},
		{"mean_kv_use", func(r *scenario.Report) float64 { return r.Summary.MeanKVUse }},
		{"peak_kv_use", func(r *scenario.Report) float64 { return r.Summary.PeakKVUse }},
		{"mfu", func(r *scenario.Report) float64 { return r.Summary.MFU }},
		{"mbu", func(r *scenario.Report) float64 { return r.Summary.MBU }},
		{"preemptions", func(r *scenario.Report) float64 { return float64(r.Result.Preemptions) }},
		{"prefix_hit_rate", func(r *scenario.Report) float64 { return r.Counts().PrefixHitRate }},
		{"gpus", func(r *scenario.Report) float64 { return float64(r.GPUs()) }},
		{"tokens_per_gpu_s", func(r *scenario.Report) float64 { return r.Summary.TotalThroughput / float64(r.GPUs()) }},
		{"cost_per_hour", func(r *scenario.Report) float64 { return r.CostPerHour() }},
		{"cost_per_m_output_tokens", func(r *scenario.Report) float64 {
			return scenario.PerMillion(r.CostPerHour(), r.SteadyOutputThroughput())
		}},
		{"cost_per_m_tokens", func(r *scenario.Report) float64 {
			return scenario.PerMillion(r.CostPerHour(), r.SteadyTotalThroughput())
		}},
		{"saturated", func(r *scenario.Report) float64 { return b2f(r.Summary.Saturation.Saturated) }},
		{"offered_req_per_s", func(r *scenario.Report) float64 { return r.Summary.Saturation.OfferedRate }},
		{"offered_output_tok_per_s", func(r *scenario.Report) float64 { return r.Summary.Saturation.OfferedOutputRate }},
		{"capacity_req_per_s", func(r *scenario.Report) float64 { return r.Summary.Saturation.CapacityRate }},
		{"steady_output_tok_per_s", func(r *scenario.Report) float64 { return r.SteadyOutputThroughput() }},
		{"kv_tier_hit_rate", func(r *scenario.Report) float64 { return r.TierHitRate() }},
		{"kv_tier_load_gb", func(r *scenario.Report) float64 { return r.HostLinkLoadGB() }},
	},
)

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// IntColumns are the columns that count (requests, preemptions, GPUs):
// results.csv writes them as integers.
var IntColumns = map[string]bool{"completed": true, "rejected": true, "preemptions": true, "gpus": true, "saturated": true}

// formatMetric writes a column's value: a count as an integer (when it is
// one: a NaN or a fraction keeps 4 decimals), anything else with 4 decimals.
func formatMetric(name string, v float64) string {
	if IntColumns[name] && v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// WriteCSV writes one row per point: the axis values, the seed and every
// column.
func WriteCSV(w io.Writer, axes []Axis, pts []PointFile) error {
	var b strings.Builder
	for _, a := range axes {
		b.WriteString(scenario.CSVField(a.Column()) + ",")
	}
	b.WriteString("seed")
	for _, c := range Columns {
		b.WriteString("," + c.Name)
	}
	b.WriteByte('\n')
	for _, p := range pts {
		for _, v := range p.Axes {
			b.WriteString(scenario.CSVField(v) + ",")
		}
		b.WriteString(strconv.FormatUint(p.Seed, 10))
		for _, c := range Columns {
			b.WriteString("," + formatMetric(c.Name, p.Metrics[c.Name]))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteTable writes the results as a Markdown table with the named columns.
func WriteTable(w io.Writer, axes []Axis, pts []PointFile, cols []string) error {
	known := map[string]bool{}
	for _, c := range Columns {
		known[c.Name] = true
	}
	var b strings.Builder
	b.WriteString("|")
	for _, a := range axes {
		b.WriteString(" " + a.Column() + " |")
	}
	seeds := hasSeeds(pts)
	if seeds {
		b.WriteString(" seed |")
	}
	for _, c := range cols {
		if !known[c] {
			names := make([]string, 0, len(Columns))
			for _, k := range Columns {
				names = append(names, k.Name)
			}
			sort.Strings(names)
			return fmt.Errorf("sweep: unknown column %q (known: %s)", c, strings.Join(names, ", "))
		}
		b.WriteString(" " + c + " |")
	}
	n := len(axes) + len(cols)
	if seeds {
		n++
	}
	b.WriteString("\n|" + strings.Repeat("---|", n) + "\n")
	for _, p := range pts {
		b.WriteString("|")
		for _, v := range p.Axes {
			fmt.Fprintf(&b, " %s |", v)
		}
		if seeds {
			fmt.Fprintf(&b, " %d |", p.Seed)
		}
		for _, c := range cols {
			fmt.Fprintf(&b, " %.2f |", p.Metrics[c])
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func hasSeeds(pts []PointFile) bool {
	for _, p := range pts {
		if p.Seed != pts[0].Seed {
			return true
		}
	}
	return false
}
