package calibrate

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/servesim/servesim/internal/bounded"
)

// csvTable is a CSV file read with its header: column index by name.
type csvTable struct {
	file       string
	r          *csv.Reader
	col        map[string]int
	rec        []string
	headerLine int
}

// newCSVTable reads the header of a CSV file; comment, if not 0, starts
// comment lines.
// maxCSVLine bounds a line of a kernel-timing CSV: 1 MiB, where a row of
// Vidur's mlp.csv or attention.csv, or of a native trace, is under 1 KB (a
// file without line breaks, /dev/zero, fails at once instead of filling
// memory).
const maxCSVLine = 1 << 20

func newCSVTable(r io.Reader, file string, comment rune) (*csvTable, error) {
	cr := csv.NewReader(bounded.Lines(r, maxCSVLine))
	cr.ReuseRecord = true
	cr.Comment = comment
	head, err := cr.Read()
	if err != nil {
		if err == io.EOF {
			return nil, &LineError{File: file, Msg: "empty file: no header"}
		}
		return nil, csvErr(file, err)
	}
	t := &csvTable{file: file, r: cr, col: make(map[string]int, len(head))}
	t.headerLine, _ = cr.FieldPos(0)
	for i, h := range head {
		h = strings.TrimSpace(h)
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		if _, dup := t.col[h]; dup && h != "" {
			return nil, &LineError{File: file, Line: t.headerLine, Column: h, Msg: "duplicate column"}
		}
		t.col[h] = i
	}
	return t, nil
}

// next reads a record; it returns io.EOF at the end.
func (t *csvTable) next() (line int, err error) {
	rec, err := t.r.Read()
	if err != nil {
		if err == io.EOF {
			return 0, err
		}
		return 0, csvErr(t.file, err)
	}
	t.rec = rec
	line, _ = t.r.FieldPos(0)
	return line, nil
}

// readRows parses every remaining record of t with parse and requires at
// least one: the row loop of the table readers that take a file whole.
func readRows[T any](t *csvTable, parse func(line int) (T, error)) ([]T, error) {
	return readRowsOr(t, "no rows", parse)
}

// readRowsOr is readRows whose error for a table without rows says empty
// (the Vidur and native readers say "no data rows").
func readRowsOr[T any](t *csvTable, empty string, parse func(line int) (T, error)) ([]T, error) {
	var out []T
	for {
		line, err := t.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		row, err := parse(line)
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	if len(out) == 0 {
		return nil, &LineError{File: t.file, Msg: empty}
	}
	return out, nil
}

func csvErr(file string, err error) error {
	if le := (*bounded.LineTooLongError)(nil); errors.As(err, &le) {
		return &LineError{File: file, Line: le.Line, Msg: "longer than " + bounded.Size(int64(le.Max)) + ": not a CSV of kernel timings"}
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &LineError{File: file, Line: pe.Line, Msg: pe.Err.Error()}
	}
	return &LineError{File: file, Msg: err.Error()}
}

func (t *csvTable) require(cols ...string) error {
	for _, c := range cols {
		if _, ok := t.col[c]; !ok {
			return &LineError{File: t.file, Line: t.headerLine, Column: c, Msg: "missing column"}
		}
	}
	return nil
}

// str returns the current record's cell of column c, trimmed ("" if the
// file has no such column).
func (t *csvTable) str(c string) string {
	i, ok := t.col[c]
	if !ok {
		return ""
	}
	return strings.TrimSpace(t.rec[i])
}

func (t *csvTable) int(line int, c string, lo, hi int) (int, error) {
	s := t.str(c)
	v, err := strconv.Atoi(s)
	if err != nil {
		// Some writers print integers as floats ("4096.0").
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, &LineError{File: t.file, Line: line, Column: c, Msg: fmt.Sprintf("not an integer: %q", s)}
		}
		v = int(f)
	}
	if v < lo || v > hi {
		return 0, &LineError{File: t.file, Line: line, Column: c, Msg: fmt.Sprintf("%d is outside [%d, %d]", v, lo, hi)}
	}
	return v, nil
}

// positive parses a finite number > 0.
func (t *csvTable) positive(line int, c string) (float64, error) {
	s := t.str(c)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, &LineError{File: t.file, Line: line, Column: c, Msg: fmt.Sprintf("not a number: %q", s)}
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, &LineError{File: t.file, Line: line, Column: c, Msg: fmt.Sprintf("must be finite and > 0, got %v", v)}
	}
	return v, nil
}

func (t *csvTable) bool(line int, c string) (bool, error) {
	switch s := t.str(c); strings.ToLower(s) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	default:
		return false, &LineError{File: t.file, Line: line, Column: c, Msg: fmt.Sprintf("not a boolean: %q", s)}
	}
}
