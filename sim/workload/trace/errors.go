package trace

import (
	"fmt"
	"strconv"
)

// RowError is a malformed row: the file (as named to the reader), the
// 1-based line, the 1-based byte column where the offending field starts,
// the field's name when one applies, and what is wrong. Its text reads
//
//	trace: code.csv:17:30: field "ContextTokens": "12x" is not a whole number
type RowError struct {
	File  string
	Line  int
	Col   int
	Field string // "" when the problem is not one field's (a short row, bad JSON)
	Msg   string
}

func (e *RowError) Error() string {
	s := "trace: " + e.File + ":" + strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Col) + ": "
	if e.Field != "" {
		s += "field " + strconv.Quote(e.Field) + ": "
	}
	return s + e.Msg
}

// rowErr is a parse failure before the reader knows the line: a column
// (1-based byte offset in the line), a field name and a message. The zero
// value (col 0) means no error, so parsing a good row builds nothing.
type rowErr struct {
	col   int
	field string
	msg   string
}

func (e rowErr) failed() bool { return e.col != 0 }

func bad(col int, field, format string, args ...any) rowErr {
	if col < 1 {
		col = 1
	}
	return rowErr{col: col, field: field, msg: fmt.Sprintf(format, args...)}
}

// quoteField renders a field's text for an error message, shortened if long.
func quoteField(b []byte) string {
	const max = 40
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "…"
	}
	return strconv.Quote(string(b))
}
