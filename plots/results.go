package plots

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Results is a sweep's results.csv (experiments.WriteCSV): one column per
// sweep axis (the axis field path, e.g. "workload.rate"), then "seed", then
// one column per metric.
type Results struct {
	File    string   // the name errors and captions use
	Axes    []string // axis columns, in file order
	Metrics []string // metric columns, in file order
	Rows    []Row
}

// Row is one point of a sweep run with one seed.
type Row struct {
	Line    int               // line of the file the row starts on (the header is line 1)
	Axis    map[string]string // axis name → value as written
	Seed    uint64            //
	Metrics map[string]float64
}

// ReadResultsFile reads a results.csv file; errors name the file by its
// base name.
func ReadResultsFile(path string) (*Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	defer f.Close()
	return ReadResults(f, filepath.Base(path))
}

// ReadResults reads a sweep's results CSV. Every row must have as many
// fields as the header; the seed must be an unsigned integer and every
// metric a number (NaN and ±Inf are accepted as written by strconv and kept;
// the plots skip such points with a note). Column names must be distinct and
// non-empty. An error names the file, the line and the column (its 1-based
// field number and name).
func ReadResults(r io.Reader, name string) (*Results, error) {
	cr := newCSVReader(r)
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("plots: %s: empty file (want a header line)", name)
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	header = slices.Clone(header)
	if err := checkHeader(name, header); err != nil {
		return nil, err
	}
	seedCol := slices.Index(header, "seed")
	if seedCol < 0 {
		return nil, fmt.Errorf("plots: %s line 1: no \"seed\" column (a results.csv has the axis columns, then seed, then the metrics)", name)
	}
	res := &Results{File: name, Axes: header[:seedCol], Metrics: header[seedCol+1:]}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			return nil, fmt.Errorf("plots: %s line %d: %d fields, want %d as in the header", name, line, len(rec), len(header))
		}
		row := Row{Line: line, Axis: make(map[string]string, seedCol), Metrics: make(map[string]float64, len(res.Metrics))}
		for i, a := range res.Axes {
			row.Axis[a] = rec[i]
		}
		row.Seed, err = strconv.ParseUint(rec[seedCol], 10, 64)
		if err != nil {
			return nil, fieldError(name, line, seedCol, "seed", "invalid seed %q (want an unsigned integer)", rec[seedCol])
		}
		for j, m := range res.Metrics {
			col := seedCol + 1 + j
			v, err := parseNumber(rec[col])
			if err != nil {
				return nil, fieldError(name, line, col, m, "invalid number %q", rec[col])
			}
			row.Metrics[m] = v
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// SLOColumns are the results columns holding the objectives each point was
// judged against (experiments.Columns), in ms, 0 = not set.
var SLOColumns = [3]string{"slo_ttft_ms", "slo_tpot_ms", "slo_e2e_ms"}

// SLO returns the objectives the sweep's points were judged against, from
// the slo_*_ms columns: an objective every row gives the same value is
// set; one the rows disagree on (an axis sweeps it) is left unset and named
// in differ. A file without the columns (written before they were added)
// gives no SLO. An objective that is not a finite number ≥ 0 is an error
// naming the row's line.
func (r *Results) SLO() (s SLO, differ []string, err error) {
	dst := [3]*float64{&s.TTFTms, &s.TPOTms, &s.E2Ems}
	for i, col := range SLOColumns {
		if !slices.Contains(r.Metrics, col) || len(r.Rows) == 0 {
			continue
		}
		v := r.Rows[0].Metrics[col]
		same := true
		for _, row := range r.Rows {
			x := row.Metrics[col]
			if !(x >= 0) || math.IsInf(x, 0) {
				return SLO{}, nil, fmt.Errorf("plots: %s line %d: %s %v: want a finite number >= 0", r.File, row.Line, col, x)
			}
			same = same && x == v
		}
		if same {
			*dst[i] = v
		} else {
			differ = append(differ, col)
		}
	}
	return s, differ, nil
}

func newCSVReader(r io.Reader) *csv.Reader {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked here, with a clearer message
	cr.ReuseRecord = true
	return cr
}

func checkHeader(name string, header []string) error {
	seen := map[string]int{}
	for i, h := range header {
		if strings.TrimSpace(h) == "" {
			return fmt.Errorf("plots: %s line 1, column %d: empty column name", name, i+1)
		}
		if j, ok := seen[h]; ok {
			return fmt.Errorf("plots: %s line 1, column %d: column %q repeats column %d", name, i+1, h, j+1)
		}
		seen[h] = i
	}
	return nil
}

// csvError turns an encoding/csv error into one naming the file.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("plots: %s line %d, column %d (byte): %v", name, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("plots: %s: %v", name, err)
}

// fieldError names the file, line and column (1-based field number, name).
func fieldError(file string, line, col int, colName, format string, args ...any) error {
	return fmt.Errorf("plots: %s line %d, column %d (%s): %s", file, line, col+1, colName, fmt.Sprintf(format, args...))
}

// parseNumber parses a float; an empty field is an error.
func parseNumber(s string) (float64, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	return strconv.ParseFloat(s, 64)
}

// Config is one configuration of a sweep: a combination of axis values with
// its metrics averaged over the replicate seeds that ran it.
type Config struct {
	Axis    map[string]string
	Seeds   int                // rows averaged
	Line    int                // line of its first row
	Metrics map[string]float64 // arithmetic mean over seeds; NaN if any seed's value is NaN
}

// Configs averages the rows of each distinct combination of axis values
// over their seeds, in order of first appearance. A percentile column
// becomes the mean of the seeds' percentiles (not the percentile of the
// pooled samples, which results.csv does not hold).
func (r *Results) Configs() []Config {
	index := map[string]int{}
	var out []Config
	for _, row := range r.Rows {
		key := r.key(row.Axis, r.Axes)
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, Config{Axis: row.Axis, Line: row.Line, Metrics: make(map[string]float64, len(r.Metrics))})
		}
		c := &out[i]
		c.Seeds++
		for _, m := range r.Metrics {
			c.Metrics[m] += row.Metrics[m] // NaN propagates
		}
	}
	for i := range out {
		for _, m := range r.Metrics {
			out[i].Metrics[m] /= float64(out[i].Seeds)
		}
	}
	return out
}

func (r *Results) key(axis map[string]string, names []string) string {
	var b strings.Builder
	for _, a := range names {
		b.WriteString(axis[a])
		b.WriteByte(0)
	}
	return b.String()
}

// need reports an error naming the first of the metrics the file lacks.
func (r *Results) need(metrics ...string) error {
	for _, m := range metrics {
		if !slices.Contains(r.Metrics, m) {
			return fmt.Errorf("plots: %s: no metric column %q", r.File, m)
		}
	}
	return nil
}

// Layout names a sweep's x axis and the axes whose values tell curves apart.
type Layout struct {
	X     string   // the axis along the x of a curve
	Group []string // the other axes that vary, the named group axis first
}

// knownX are axes that are an x parameter when present, in order of
// preference (after the plot's own preference).
var knownX = []string{"batch.max_num_seqs", "workload.rate", "batch.max_num_batched_tokens", "tp", "replicas", "workload.requests", "workload.burstiness"}

// Layout chooses the x axis and the curve axes of the sweep.
//
// x, when given, must be an axis. Otherwise the first that exists of
// prefer, then batch.max_num_seqs, workload.rate,
// batch.max_num_batched_tokens, tp, replicas, workload.requests,
// workload.burstiness; otherwise the only axis (one axis), or the only axis
// whose values are all numbers; otherwise an error asks for one.
//
// The curves are told apart by every other axis that takes more than one
// value: group, when given (it must be an axis other than x), comes first
// and the rest follow in file order. Replicate seeds of one configuration
// are averaged, never drawn as separate curves.
func (r *Results) Layout(x, group, prefer string) (Layout, error) {
	if x != "" && !slices.Contains(r.Axes, x) {
		return Layout{}, fmt.Errorf("plots: %s: no axis %q (axes: %s)", r.File, x, axesList(r.Axes))
	}
	if group != "" && !slices.Contains(r.Axes, group) {
		return Layout{}, fmt.Errorf("plots: %s: no axis %q (axes: %s)", r.File, group, axesList(r.Axes))
	}
	if x == "" {
		x = r.autoX(prefer, group)
	}
	if x == "" {
		return Layout{}, fmt.Errorf("plots: %s: cannot tell which axis is x among %s; name it (--x)", r.File, axesList(r.Axes))
	}
	if group == x {
		return Layout{}, fmt.Errorf("plots: %s: axis %q cannot be both x and group", r.File, x)
	}
	l := Layout{X: x}
	if group != "" {
		l.Group = append(l.Group, group)
	}
	for _, a := range r.Axes {
		if a != x && a != group && r.distinct(a) > 1 {
			l.Group = append(l.Group, a)
		}
	}
	return l, nil
}

func (r *Results) autoX(prefer, group string) string {
	for _, a := range append([]string{prefer}, knownX...) {
		if a != "" && a != group && slices.Contains(r.Axes, a) {
			return a
		}
	}
	var cands []string
	for _, a := range r.Axes {
		if a != group {
			cands = append(cands, a)
		}
	}
	if len(cands) == 1 {
		return cands[0]
	}
	var numeric []string
	for _, a := range cands {
		if r.numeric(a) {
			numeric = append(numeric, a)
		}
	}
	if len(numeric) == 1 {
		return numeric[0]
	}
	return ""
}

func (r *Results) distinct(axis string) int {
	seen := map[string]bool{}
	for _, row := range r.Rows {
		seen[row.Axis[axis]] = true
	}
	return len(seen)
}

func (r *Results) numeric(axis string) bool {
	for _, row := range r.Rows {
		if _, err := strconv.ParseFloat(row.Axis[axis], 64); err != nil {
			return false
		}
	}
	return len(r.Rows) > 0
}

func axesList(axes []string) string {
	if len(axes) == 0 {
		return "none"
	}
	q := make([]string, len(axes))
	for i, a := range axes {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, ", ")
}

// Curve is the configurations that share the group axes' values, in
// increasing x.
type Curve struct {
	Label  string // the group values ("" when no axis groups)
	X      []float64
	Points []Config
}

// Curves groups the configurations into curves along a numeric x axis, in
// order of first appearance of each group; within a curve, points are in
// increasing x. An x value that is not a number is an error naming its line.
func (r *Results) Curves(l Layout) ([]Curve, error) {
	index := map[string]int{}
	var out []Curve
	for _, c := range r.Configs() {
		xs := c.Axis[l.X]
		x, err := strconv.ParseFloat(xs, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("plots: %s line %d, column %d (%s): x value %q is not a finite number; choose a numeric x axis (--x)",
				r.File, c.Line, slices.Index(r.Axes, l.X)+1, l.X, xs)
		}
		label := groupLabel(c.Axis, l.Group)
		i, ok := index[label]
		if !ok {
			i = len(out)
			index[label] = i
			out = append(out, Curve{Label: label})
		}
		out[i].X = append(out[i].X, x)
		out[i].Points = append(out[i].Points, c)
	}
	for i := range out {
		sortCurve(&out[i])
	}
	return out, nil
}

func sortCurve(c *Curve) {
	idx := make([]int, len(c.X))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return c.X[idx[a]] < c.X[idx[b]] })
	xs := make([]float64, len(idx))
	ps := make([]Config, len(idx))
	for i, j := range idx {
		xs[i], ps[i] = c.X[j], c.Points[j]
	}
	c.X, c.Points = xs, ps
}

// groupLabel is the legend label of a curve: the value alone for one group
// axis, "name=value, …" (short names) for several, "" for none.
func groupLabel(axis map[string]string, group []string) string {
	switch len(group) {
	case 0:
		return ""
	case 1:
		return axis[group[0]]
	}
	parts := make([]string, len(group))
	for i, g := range group {
		parts[i] = shortName(g) + "=" + axis[g]
	}
	return strings.Join(parts, ", ")
}

// shortName is the last component of an axis path ("workload.rate" → "rate").
func shortName(axis string) string {
	if i := strings.LastIndexByte(axis, '.'); i >= 0 {
		return axis[i+1:]
	}
	return axis
}
