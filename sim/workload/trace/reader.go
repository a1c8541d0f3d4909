package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// Format names a trace file format.
type Format string

// Trace formats. Auto ("") detects the format from the file's first line.
const (
	Auto     Format = ""
	Azure    Format = "azure"    // Azure LLM inference 2023/2024: TIMESTAMP,ContextTokens,GeneratedTokens
	Mooncake Format = "mooncake" // Mooncake JSONL: timestamp (ms), input_length, output_length, hash_ids
	BurstGPT Format = "burstgpt" // BurstGPT CSV: Timestamp (s), Model, Request tokens, Response tokens, Total tokens, Log Type
	Lengths  Format = "lengths"  // Vidur/Sarathi CSV: num_prefill_tokens, num_decode_tokens[, arrived_at (s)]
	Servesim Format = "servesim" // servesim's own CSV or JSONL (see doc.go)
)

// Formats lists the formats in the order detection tries them.
var Formats = []Format{Azure, Mooncake, BurstGPT, Lengths, Servesim}

// ParseFormat checks a format name ("" or "auto" is Auto).
func ParseFormat(s string) (Format, error) {
	f := Format(strings.ToLower(strings.TrimSpace(s)))
	if f == "auto" {
		return Auto, nil
	}
	if f == Auto {
		return Auto, nil
	}
	for _, k := range Formats {
		if f == k {
			return f, nil
		}
	}
	return Auto, fmt.Errorf("trace: unknown format %q (known: auto, azure, mooncake, burstgpt, lengths, servesim)", s)
}

// How rows with zero output tokens are treated (ReaderOptions.Failed).
const (
	FailedDrop = "drop" // leave the row out, counted in Counts.Failed (the default)
	FailedOne  = "one"  // replay it with one output token, counted in Counts.Failed
)

// ReaderOptions configure a Reader. The zero value auto-detects the format,
// stops at the first bad row and drops failed rows.
type ReaderOptions struct {
	Format Format
	// SkipBadRows skips malformed rows instead of stopping; each is counted
	// in Counts.Bad and the first few are kept (Reader.BadRows).
	SkipBadRows bool
	// Model and LogType keep only BurstGPT rows whose Model / Log Type equal
	// them (case-insensitively); "" keeps all. Rows left out count in
	// Counts.Filtered. Other formats must leave them empty.
	Model, LogType string
	// Failed says what becomes of a row with zero output tokens (BurstGPT's
	// failed requests, or any format's): FailedDrop ("" too) or FailedOne.
	Failed string
}

// Counts says what a reader did with the rows it read. Rows = Bad +
// Filtered + (dropped failures) + Yielded, at any point.
type Counts struct {
	Rows     int64 `json:"rows"`     // data rows read (the header and blank lines are not rows)
	Bad      int64 `json:"bad"`      // malformed rows skipped (SkipBadRows)
	Filtered int64 `json:"filtered"` // rows left out by the BurstGPT model / log-type filter
	Failed   int64 `json:"failed"`   // rows with zero output tokens: dropped, or replayed with one output token
	Yielded  int64 `json:"yielded"`  // requests produced
}

func (c *Counts) add(d Counts) {
	c.Rows += d.Rows
	c.Bad += d.Bad
	c.Filtered += d.Filtered
	c.Failed += d.Failed
	c.Yielded += d.Yielded
}

// maxBadKept is how many skipped-row errors a Reader keeps for reports.
const maxBadKept = 5

// maxClasses bounds the distinct class names a servesim trace may use: the
// names are interned so that a request's Class costs no allocation.
const maxClasses = 1024

// Reader streams a trace file's rows as requests. It is a workload.ErrSource:
// Next reads and parses one line at a time (no allocation per row on
// well-formed input), so memory does not grow with the file.
//
// Arrival times are relative to the first row's timestamp (Azure's wall
// clock, BurstGPT's seconds, Mooncake's milliseconds, Vidur's arrived_at),
// except in the servesim format, whose arrival_s is used as written. A
// length-only trace (Timed false) yields every request at time 0: wrap it
// with Arrivals. Arrival times must not decrease: a row that goes back in
// time is a bad row.
//
// IDs are 0, 1, 2, ... over the yielded requests. Request.Prefix (Mooncake
// hash_ids, servesim prefix) is a buffer reused by the next call.
type Reader struct {
	name   string
	opt    ReaderOptions
	format Format
	lr     *lineReader
	timed  bool

	pending    []byte // the first JSONL line, read while detecting
	hasPending bool

	// CSV state: header width and the column of each field we read (−1 = absent).
	ncols   int
	col     columns
	fields  [][]byte
	offs    []int
	scratch []byte

	prefix  []uint64
	classes map[string]string

	started bool
	base    wallTime // Azure: the first row's time
	baseNs  int64    // other timed formats: the first row's time in ns
	prev    sim.Time

	counts Counts
	badErr []error
	err    error
	done   bool
}

// columns holds the index of each CSV column a format uses, −1 if absent.
type columns struct {
	time, prompt, output      int // every format (time −1 for length-only)
	model, logType            int // BurstGPT
	class, ttft, tpot, prefix int // servesim
	prefixBlock               int
	names                     []string // header names, for errors
	timeUnitExp               int      // 9: seconds
}

var _ workload.ErrSource = (*Reader)(nil)

// NewReader reads the header (or, for JSONL, the first object) of a trace
// and returns a Reader positioned at the first row. name labels errors
// (usually the file path). It fails when the format cannot be detected or
// the header lacks a column the format needs.
func NewReader(r io.Reader, name string, o ReaderOptions) (*Reader, error) {
	switch o.Failed {
	case "", FailedDrop:
		o.Failed = FailedDrop
	case FailedOne:
	default:
		return nil, fmt.Errorf("trace: %s: failed rows %q: want %q or %q", name, o.Failed, FailedDrop, FailedOne)
	}
	if _, err := ParseFormat(string(o.Format)); err != nil {
		return nil, err
	}
	rd := &Reader{name: name, opt: o, lr: newLineReader(r)}
	var first []byte
	for {
		line, ok := rd.lr.next()
		if !ok {
			if err := rd.lr.failed(); err != nil {
				return nil, fmt.Errorf("trace: %s: %w", name, rd.readErr(err))
			}
			return nil, fmt.Errorf("trace: %s: empty file (no header)", name)
		}
		if !blank(line) {
			first = line
			break
		}
	}
	trimmed := bytes.TrimLeft(first, " \t\ufeff")
	trimmed = bytes.TrimPrefix(trimmed, []byte("\xef\xbb\xbf")) // UTF-8 byte-order mark
	if len(trimmed) > 0 && trimmed[0] == '{' {
		if err := rd.detectJSON(trimmed); err != nil {
			return nil, err
		}
		rd.pending = append([]byte(nil), first...)
		rd.hasPending = true
	} else if err := rd.detectCSV(trimmed); err != nil {
		return nil, err
	}
	if (o.Model != "" || o.LogType != "") && rd.format != BurstGPT {
		return nil, fmt.Errorf("trace: %s: a model or log-type filter applies to BurstGPT traces only (this is %s)", name, rd.format)
	}
	if rd.format == Servesim {
		rd.classes = make(map[string]string)
	}
	return rd, nil
}

func (rd *Reader) readErr(err error) error {
	if errors.Is(err, errLineTooLong) {
		return fmt.Errorf("line %d: %w", rd.lr.line, err)
	}
	return err
}

// detectJSON picks Mooncake or servesim from the first object's keys.
func (rd *Reader) detectJSON(line []byte) error {
	s := jscan{b: line}
	var mooncake, native bool
	if e := s.open(); !e.failed() {
		for first := true; ; first = false {
			k, _, more, e := s.key(first)
			if e.failed() || !more {
				break
			}
			switch string(k) {
			case "input_length", "output_length", "hash_ids", "timestamp":
				mooncake = true
			case "arrival_s", "prompt_tokens", "output_tokens":
				native = true
			}
			if e := s.skip(string(k), 0); e.failed() {
				break
			}
		}
	}
	want := rd.opt.Format
	switch {
	case want == Mooncake || want == Servesim:
		rd.format = want
	case want != Auto:
		return fmt.Errorf("trace: %s:1: format %s is CSV but the file holds JSON objects", rd.name, want)
	case mooncake && !native:
		rd.format = Mooncake
	case native && !mooncake:
		rd.format = Servesim
	default:
		return fmt.Errorf("trace: %s:1: cannot tell the format from the first JSON object: Mooncake has input_length, output_length, timestamp; servesim has arrival_s, prompt_tokens, output_tokens (name one with --format)", rd.name)
	}
	rd.timed = true
	return nil
}

// detectCSV reads the header and maps the columns.
func (rd *Reader) detectCSV(header []byte) error {
	fields, _, e := splitCSV(header, nil, nil, make([]byte, 0, len(header)))
	if e.failed() {
		return fmt.Errorf("trace: %s:1:%d: header: %s", rd.name, e.col, e.msg)
	}
	names := make([]string, len(fields))
	idx := make(map[string]int, len(fields))
	for i, f := range fields {
		n := strings.ToLower(strings.TrimSpace(string(f)))
		names[i] = string(f)
		if _, dup := idx[n]; dup && n != "" {
			return fmt.Errorf("trace: %s:1: header: column %q appears twice", rd.name, string(f))
		}
		idx[n] = i
	}
	has := func(cols ...string) bool {
		for _, c := range cols {
			if _, ok := idx[c]; !ok {
				return false
			}
		}
		return true
	}
	need := map[Format][]string{
		Azure:    {"timestamp", "contexttokens", "generatedtokens"},
		BurstGPT: {"timestamp", "model", "request tokens", "response tokens", "log type"},
		Lengths:  {"num_prefill_tokens", "num_decode_tokens"},
		Servesim: {"arrival_s", "prompt_tokens", "output_tokens"},
	}
	f := rd.opt.Format
	if f == Mooncake {
		return fmt.Errorf("trace: %s:1: format mooncake is JSONL but the first line is not a JSON object", rd.name)
	}
	if f == Auto {
		for _, k := range []Format{Azure, BurstGPT, Lengths, Servesim} {
			if has(need[k]...) {
				f = k
				break
			}
		}
		if f == Auto {
			return fmt.Errorf("trace: %s:1: cannot tell the format from the header %q: Azure has TIMESTAMP,ContextTokens,GeneratedTokens; BurstGPT Timestamp,Model,Request tokens,Response tokens,Log Type; length-only num_prefill_tokens,num_decode_tokens; servesim arrival_s,prompt_tokens,output_tokens (Mooncake and servesim JSONL start with '{')", rd.name, string(header))
		}
	} else {
		for _, c := range need[f] {
			if _, ok := idx[c]; !ok {
				return fmt.Errorf("trace: %s:1: header has no column %q, which format %s needs (header: %q)", rd.name, c, f, string(header))
			}
		}
	}
	rd.format = f
	col := func(name string) int {
		if i, ok := idx[name]; ok {
			return i
		}
		return -1
	}
	c := columns{time: -1, model: -1, logType: -1, class: -1, ttft: -1, tpot: -1, prefix: -1, prefixBlock: -1, names: names, timeUnitExp: 9}
	switch f {
	case Azure:
		c.time, c.prompt, c.output = col("timestamp"), col("contexttokens"), col("generatedtokens")
	case BurstGPT:
		c.time, c.prompt, c.output = col("timestamp"), col("request tokens"), col("response tokens")
		c.model, c.logType = col("model"), col("log type")
	case Lengths:
		c.time, c.prompt, c.output = col("arrived_at"), col("num_prefill_tokens"), col("num_decode_tokens")
	case Servesim:
		known := map[string]*int{
			"arrival_s": &c.time, "prompt_tokens": &c.prompt, "output_tokens": &c.output,
			"class": &c.class, "ttft_slo_ms": &c.ttft, "tpot_slo_ms": &c.tpot,
			"prefix": &c.prefix, "prefix_block_tokens": &c.prefixBlock,
		}
		for i, n := range names {
			p, ok := known[strings.ToLower(strings.TrimSpace(n))]
			if !ok {
				return fmt.Errorf("trace: %s:1: header: unknown column %q for format servesim (known: arrival_s, prompt_tokens, output_tokens, class, ttft_slo_ms, tpot_slo_ms, prefix, prefix_block_tokens)", rd.name, n)
			}
			*p = i
		}
		if (c.prefix >= 0) != (c.prefixBlock >= 0) {
			return fmt.Errorf("trace: %s:1: header: columns prefix and prefix_block_tokens go together", rd.name)
		}
	}
	rd.col = c
	rd.ncols = len(fields)
	rd.timed = c.time >= 0
	return nil
}

// Format returns the trace's format (detected or given).
func (rd *Reader) Format() Format { return rd.format }

// Timed reports whether rows carry arrival times (false for length-only traces).
func (rd *Reader) Timed() bool { return rd.timed }

// Name returns the name errors use.
func (rd *Reader) Name() string { return rd.name }

// Counts returns what the reader did so far.
func (rd *Reader) Counts() Counts { return rd.counts }

// BadRows returns the first few errors of the rows skipped with SkipBadRows
// (Counts.Bad says how many there were in all).
func (rd *Reader) BadRows() []error { return rd.badErr }

// Err returns the error that ended the stream, or nil at a normal end.
func (rd *Reader) Err() error { return rd.err }

// Next fills r with the next request. See Reader.
func (rd *Reader) Next(r *workload.Request) bool {
	if rd.done {
		return false
	}
	for {
		var line []byte
		if rd.hasPending {
			line, rd.hasPending = rd.pending, false
		} else {
			var ok bool
			if line, ok = rd.lr.next(); !ok {
				rd.done = true
				if err := rd.lr.failed(); err != nil {
					rd.err = fmt.Errorf("trace: %s: %w", rd.name, rd.readErr(err))
				}
				return false
			}
		}
		if blank(line) {
			continue
		}
		rd.counts.Rows++
		*r = workload.Request{}
		var t int64 // trace time, ns: absolute here, relative after checkTime
		var keep bool
		var e rowErr
		switch rd.format {
		case Mooncake:
			t, e = rd.parseMooncake(line, r)
			keep = true
		case Servesim:
			if rd.ncols == 0 {
				t, e = rd.parseNativeJSON(line, r)
				keep = true
			} else {
				t, keep, e = rd.parseCSV(line, r)
			}
		default:
			t, keep, e = rd.parseCSV(line, r)
		}
		if !e.failed() && r.PromptTokens < 1 {
			e = bad(rd.colPos(rd.col.prompt), rd.colName(rd.col.prompt, "input_length", "prompt_tokens"), "a request needs at least 1 prompt token")
		}
		if b := r.PrefixBlockTokens; !e.failed() && b > 0 && len(r.Prefix) > (r.PromptTokens+b-1)/b {
			e = bad(1, rd.prefixName(), "%d prefix blocks of %d tokens are more than a %d-token prompt holds", len(r.Prefix), b, r.PromptTokens)
		}
		if !e.failed() && rd.timed {
			e = rd.checkTime(t, r)
		}
		if e.failed() {
			err := &RowError{File: rd.name, Line: rd.lr.line, Col: e.col, Field: e.field, Msg: e.msg}
			if !rd.opt.SkipBadRows {
				rd.err, rd.done = err, true
				return false
			}
			rd.counts.Bad++
			if len(rd.badErr) < maxBadKept {
				rd.badErr = append(rd.badErr, err)
			}
			continue
		}
		if !keep {
			rd.counts.Filtered++
			continue
		}
		if r.OutputTokens == 0 {
			rd.counts.Failed++
			if rd.opt.Failed == FailedDrop {
				continue
			}
			r.OutputTokens = 1
		}
		r.ID = rd.counts.Yielded
		rd.counts.Yielded++
		return true
	}
}

// checkTime makes t relative to the first row and checks it does not go
// back; it sets r.Arrival.
func (rd *Reader) checkTime(t int64, r *workload.Request) rowErr {
	if !rd.started {
		rd.started = true
		rd.baseNs = t
		if rd.format == Servesim {
			rd.baseNs = 0
		}
	}
	rel := t - rd.baseNs // Azure's t is already relative, and its first is 0
	if rel < 0 || sim.Time(rel) < rd.prev {
		return bad(rd.colPos(rd.col.time), rd.colName(rd.col.time, "timestamp", "arrival_s"), "time goes backwards: %v after %v (rows must be in arrival order)",
			sim.Time(rel), rd.prev)
	}
	rd.prev = sim.Time(rel)
	r.Arrival = sim.Time(rel)
	return rowErr{}
}

// Column positions and names for errors found after a row was split: the
// 1-based byte position of CSV column i (1 for JSON lines), and its name in
// the header, or in the JSON format (Mooncake's or servesim's).
func (rd *Reader) colPos(i int) int {
	if rd.ncols > 0 && i >= 0 && i < len(rd.offs) {
		return rd.offs[i] + 1
	}
	return 1
}

func (rd *Reader) colName(i int, mooncake, servesim string) string {
	switch {
	case rd.format == Mooncake:
		return mooncake
	case rd.ncols == 0:
		return servesim
	}
	return rd.col.names[i]
}

func (rd *Reader) prefixName() string {
	if rd.format == Mooncake {
		return "hash_ids"
	}
	return "prefix"
}

// parseCSV splits a CSV row and reads the format's columns. It returns the
// row's time in ns (absolute; Azure's already relative to the first row)
// and whether the BurstGPT filter keeps it.
func (rd *Reader) parseCSV(line []byte, r *workload.Request) (t int64, keep bool, e rowErr) {
	if cap(rd.scratch) < len(line) {
		rd.scratch = make([]byte, 0, 2*len(line))
	}
	rd.fields, rd.offs, e = splitCSV(line, rd.fields, rd.offs, rd.scratch)
	if e.failed() {
		return 0, false, e
	}
	if len(rd.fields) != rd.ncols {
		return 0, false, bad(len(line)+1, "", "%d fields, the header has %d", len(rd.fields), rd.ncols)
	}
	c := &rd.col
	f, off := rd.fields, rd.offs
	count := func(i int, dst *int) rowErr {
		v, ok := parseCount(f[i])
		if !ok {
			return bad(off[i]+1, c.names[i], "%s is not a whole number of tokens in 0..2147483647", quoteField(f[i]))
		}
		*dst = v
		return rowErr{}
	}
	if e = count(c.prompt, &r.PromptTokens); e.failed() {
		return 0, false, e
	}
	if e = count(c.output, &r.OutputTokens); e.failed() {
		return 0, false, e
	}
	keep = true
	switch rd.format {
	case Azure:
		wt, at, want := parseWallTime(f[c.time])
		if at >= 0 {
			return 0, false, bad(off[c.time]+at+1, c.names[c.time], "%s: want %s (timestamps look like 2023-11-16 18:17:03.9799600)", quoteField(f[c.time]), want)
		}
		if !rd.started {
			rd.base = wt
		}
		d, ok := wt.sub(rd.base)
		if !ok {
			return 0, false, bad(off[c.time]+1, c.names[c.time], "%s is centuries from the first row", quoteField(f[c.time]))
		}
		if d < 0 { // before the first row: report as going backwards
			return 0, false, bad(off[c.time]+1, c.names[c.time], "time goes backwards: %s is before the first row", quoteField(f[c.time]))
		}
		t = d
	case BurstGPT:
		if t, e = rd.seconds(c.time); e.failed() {
			return 0, false, e
		}
		keep = (rd.opt.Model == "" || strings.EqualFold(string(f[c.model]), rd.opt.Model)) &&
			(rd.opt.LogType == "" || strings.EqualFold(string(f[c.logType]), rd.opt.LogType))
	case Lengths:
		if c.time >= 0 {
			if t, e = rd.seconds(c.time); e.failed() {
				return 0, false, e
			}
		}
	case Servesim:
		if t, e = rd.seconds(c.time); e.failed() {
			return 0, false, e
		}
		if c.class >= 0 {
			if e = rd.intern(f[c.class], off[c.class]+1, r); e.failed() {
				return 0, false, e
			}
		}
		for _, s := range [...]struct {
			i   int
			dst *sim.Time
		}{{c.ttft, &r.TTFTSLO}, {c.tpot, &r.TPOTSLO}} {
			if s.i < 0 || len(f[s.i]) == 0 {
				continue
			}
			ns, ok := parseDuration(f[s.i], 6)
			if !ok {
				return 0, false, bad(off[s.i]+1, c.names[s.i], "%s is not a number of milliseconds ≥ 0", quoteField(f[s.i]))
			}
			*s.dst = sim.Time(ns)
		}
		if c.prefix >= 0 && len(f[c.prefix]) > 0 {
			rd.prefix = rd.prefix[:0]
			p := f[c.prefix]
			for i := 0; i < len(p); {
				for i < len(p) && p[i] == ' ' {
					i++
				}
				j := i
				for j < len(p) && p[j] != ' ' {
					j++
				}
				if j > i {
					v, ok := parseUint64(p[i:j])
					if !ok {
						return 0, false, bad(off[c.prefix]+i+1, c.names[c.prefix], "%s is not an unsigned 64-bit integer (prefix hashes are separated by spaces)", quoteField(p[i:j]))
					}
					rd.prefix = append(rd.prefix, v)
				}
				i = j
			}
			bt, ok := parseCount(f[c.prefixBlock])
			if !ok || bt < 1 {
				return 0, false, bad(off[c.prefixBlock]+1, c.names[c.prefixBlock], "%s: a row with a prefix needs a block size ≥ 1 token", quoteField(f[c.prefixBlock]))
			}
			r.Prefix, r.PrefixBlockTokens = rd.prefix, bt
		}
	}
	return t, keep, rowErr{}
}

// seconds reads column i as non-negative decimal seconds, in ns.
func (rd *Reader) seconds(i int) (int64, rowErr) {
	ns, ok := parseDuration(rd.fields[i], rd.col.timeUnitExp)
	if !ok {
		return 0, bad(rd.offs[i]+1, rd.col.names[i], "%s is not a number of seconds ≥ 0", quoteField(rd.fields[i]))
	}
	return ns, rowErr{}
}

// intern sets r.Class to the interned copy of name.
func (rd *Reader) intern(name []byte, col int, r *workload.Request) rowErr {
	if len(name) == 0 {
		return rowErr{}
	}
	if s, ok := rd.classes[string(name)]; ok {
		r.Class = s
		return rowErr{}
	}
	if !utf8.Valid(name) {
		return bad(col, "class", "%s is not valid UTF-8", quoteField(name))
	}
	if len(rd.classes) >= maxClasses {
		return bad(col, "class", "more than %d distinct classes", maxClasses)
	}
	s := string(name)
	rd.classes[s] = s
	r.Class = s
	return rowErr{}
}

// parseMooncake reads {"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]}.
// Other keys are ignored; the four must each appear once.
func (rd *Reader) parseMooncake(line []byte, r *workload.Request) (t int64, e rowErr) {
	s := jscan{b: line}
	if e = s.open(); e.failed() {
		return 0, e
	}
	var seen [4]bool
	for first := true; ; first = false {
		k, kc, more, e := s.key(first)
		if e.failed() {
			return 0, e
		}
		if !more {
			break
		}
		slot := -1
		switch string(k) {
		case "timestamp":
			slot = 0
		case "input_length":
			slot = 1
		case "output_length":
			slot = 2
		case "hash_ids":
			slot = 3
		}
		if slot < 0 {
			if e := s.skip(string(k), 0); e.failed() {
				return 0, e
			}
			continue
		}
		if seen[slot] {
			return 0, bad(kc, string(k), "key appears twice")
		}
		seen[slot] = true
		at := s.i + 1
		switch slot {
		case 0:
			num, e := s.number("timestamp")
			if e.failed() {
				return 0, e
			}
			var ok bool
			if t, ok = parseDuration(num, 6); !ok {
				return 0, bad(at, "timestamp", "%s is not a number of milliseconds ≥ 0", quoteField(num))
			}
		case 1, 2:
			name := "input_length"
			dst := &r.PromptTokens
			if slot == 2 {
				name, dst = "output_length", &r.OutputTokens
			}
			num, e := s.number(name)
			if e.failed() {
				return 0, e
			}
			v, ok := parseCount(num)
			if !ok {
				return 0, bad(at, name, "%s is not a whole number of tokens in 0..2147483647", quoteField(num))
			}
			*dst = v
		case 3:
			if rd.prefix, e = s.uintArray("hash_ids", rd.prefix); e.failed() {
				return 0, e
			}
		}
	}
	for i, name := range [...]string{"timestamp", "input_length", "output_length", "hash_ids"} {
		if !seen[i] {
			return 0, bad(len(line)+1, name, "missing")
		}
	}
	r.Prefix, r.PrefixBlockTokens = rd.prefix, MooncakeBlockTokens
	if len(rd.prefix) == 0 {
		r.Prefix = nil
	}
	return t, rowErr{}
}

// MooncakeBlockTokens is the block size of Mooncake's hash_ids: "block = 512
// tokens" (FAST25-release/README.md of kvcache-ai/Mooncake; verified on the
// shared traces: len(hash_ids) = ceil(input_length/512) on every row).
const MooncakeBlockTokens = 512

// parseNativeJSON reads a servesim JSONL row; unknown keys are errors.
func (rd *Reader) parseNativeJSON(line []byte, r *workload.Request) (t int64, e rowErr) {
	s := jscan{b: line}
	if e = s.open(); e.failed() {
		return 0, e
	}
	const (
		kArrival = iota
		kPrompt
		kOutput
		kClass
		kTTFT
		kTPOT
		kPrefix
		kBlock
		nKeys
	)
	var seen [nKeys]bool
	block := 0
	for first := true; ; first = false {
		k, kc, more, e := s.key(first)
		if e.failed() {
			return 0, e
		}
		if !more {
			break
		}
		slot := -1
		switch string(k) {
		case "arrival_s":
			slot = kArrival
		case "prompt_tokens":
			slot = kPrompt
		case "output_tokens":
			slot = kOutput
		case "class":
			slot = kClass
		case "ttft_slo_ms":
			slot = kTTFT
		case "tpot_slo_ms":
			slot = kTPOT
		case "prefix":
			slot = kPrefix
		case "prefix_block_tokens":
			slot = kBlock
		default:
			return 0, bad(kc, string(k), "unknown key (known: arrival_s, prompt_tokens, output_tokens, class, ttft_slo_ms, tpot_slo_ms, prefix, prefix_block_tokens)")
		}
		if seen[slot] {
			return 0, bad(kc, string(k), "key appears twice")
		}
		seen[slot] = true
		at := s.i + 1
		name := string(k)
		if slot != kArrival && slot != kPrompt && slot != kOutput && s.isNull() {
			continue // optional keys may be null
		}
		switch slot {
		case kArrival, kTTFT, kTPOT:
			num, e := s.number(name)
			if e.failed() {
				return 0, e
			}
			exp, unit := 9, "seconds"
			if slot != kArrival {
				exp, unit = 6, "milliseconds"
			}
			ns, ok := parseDuration(num, exp)
			if !ok {
				return 0, bad(at, name, "%s is not a number of %s ≥ 0", quoteField(num), unit)
			}
			switch slot {
			case kArrival:
				t = ns
			case kTTFT:
				r.TTFTSLO = sim.Time(ns)
			default:
				r.TPOTSLO = sim.Time(ns)
			}
		case kPrompt, kOutput, kBlock:
			num, e := s.number(name)
			if e.failed() {
				return 0, e
			}
			v, ok := parseCount(num)
			if !ok {
				return 0, bad(at, name, "%s is not a whole number in 0..2147483647", quoteField(num))
			}
			switch slot {
			case kPrompt:
				r.PromptTokens = v
			case kOutput:
				r.OutputTokens = v
			default:
				block = v
			}
		case kClass:
			raw, esc, e := s.str(name)
			if e.failed() {
				return 0, e
			}
			if esc {
				raw = unescape(raw)
			}
			if e := rd.intern(raw, at, r); e.failed() {
				return 0, e
			}
		case kPrefix:
			if rd.prefix, e = s.uintArray(name, rd.prefix); e.failed() {
				return 0, e
			}
			r.Prefix = rd.prefix
		}
	}
	for i, name := range [...]string{"arrival_s", "prompt_tokens", "output_tokens"} {
		if !seen[i] {
			return 0, bad(len(line)+1, name, "missing")
		}
	}
	if len(r.Prefix) > 0 {
		if block < 1 {
			return 0, bad(len(line)+1, "prefix_block_tokens", "a row with a prefix needs prefix_block_tokens ≥ 1")
		}
		r.PrefixBlockTokens = block
	} else {
		r.Prefix = nil
	}
	return t, rowErr{}
}
