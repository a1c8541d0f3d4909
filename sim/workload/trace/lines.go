package trace

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxLine is the longest line a reader accepts (16 MiB). A Mooncake row
// with hash_ids for a 200k-token prompt is about 3 KB.
const maxLine = 16 << 20

// lineReader yields the lines of r one at a time without copying them: a
// line is a slice into the bufio buffer (or, for a line longer than the
// buffer, into a grown scratch buffer), valid until the next call. The
// trailing "\n", "\r\n" or (on the last line) "\r" is removed. Line numbers start at 1.
type lineReader struct {
	br   *bufio.Reader
	long []byte
	line int
	err  error // sticky: io.EOF at the end, or a read error
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 1<<16)}
}

var errLineTooLong = errors.New("line longer than 16 MiB")

// next returns the next line, or ok false at the end or on an error (then
// lr.err is io.EOF or the error).
func (lr *lineReader) next() (line []byte, ok bool) {
	if lr.err != nil {
		return nil, false
	}
	b, err := lr.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		lr.long = append(lr.long[:0], b...)
		for err == bufio.ErrBufferFull {
			b, err = lr.br.ReadSlice('\n')
			lr.long = append(lr.long, b...)
			if len(lr.long) > maxLine {
				lr.line++
				lr.err = errLineTooLong
				return nil, false
			}
		}
		b = lr.long
	}
	if err != nil && err != io.EOF {
		lr.err = err
		return nil, false
	}
	if len(b) == 0 { // io.EOF with nothing pending
		lr.err = io.EOF
		return nil, false
	}
	if err == io.EOF {
		lr.err = io.EOF // the last line had no newline; report it now, end next time
	}
	lr.line++
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, true
}

// failed reports a read error (not the normal end).
func (lr *lineReader) failed() error {
	if lr.err == io.EOF {
		return nil
	}
	return lr.err
}

// blank reports whether a line holds only spaces and tabs.
func blank(b []byte) bool {
	return len(bytes.Trim(b, " \t")) == 0
}
