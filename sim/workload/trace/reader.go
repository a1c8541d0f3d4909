package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

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
