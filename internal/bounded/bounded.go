// Package bounded reads input files that must fit in memory with a bound
// on their size, so that a file that never ends (/dev/zero, /dev/urandom,
// a pipe fed forever) or one far larger than its kind ever is fails at
// once with a clear error instead of filling memory.
package bounded

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Common bounds, each far above the largest real file of its kind.
const (
	// TOML is the bound on a scenario, experiment, models or GPUs file:
	// 4 MiB, 20× the largest TOML file in this repository (a built-in
	// kernel-time profile, hardware/calibrate/profiles/a100-pcie.toml,
	// 199 KB); a scenario or catalog file is a few KB.
	TOML = 4 << 20
	// Profile is the bound on a kernel-time profile file: 16 MiB, 80× the
	// largest built-in one (199 KB; a profile's residual trees grow with
	// the shapes fitted, so it leaves room).
	Profile = 16 << 20
)

// TooLargeError is the error of a read past its bound.
type TooLargeError struct{ Max int64 }

func (e *TooLargeError) Error() string {
	return "larger than " + Size(e.Max) + " (the most this reader takes; is it the right file?)"
}

// ReadAll reads r to its end, or fails with a *TooLargeError once it has
// read more than max bytes.
func ReadAll(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Max: max}
	}
	return data, nil
}

// ReadFile reads a file of at most max bytes. A regular file larger than
// that fails before it is read; a device or a pipe is read up to the bound.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > max {
		return nil, fmt.Errorf("%s: %w", path, &TooLargeError{Max: max})
	}
	data, err := ReadAll(f, max)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// IsTooLarge reports whether err is (or wraps) a *TooLargeError.
func IsTooLarge(err error) bool {
	var t *TooLargeError
	return errors.As(err, &t)
}

// Size formats a byte count in binary units (4 MiB, 2 GiB).
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// LineTooLongError is the error of a line past its bound (Lines).
type LineTooLongError struct {
	Line int // 1-based
	Max  int
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("line %d: longer than %s (not a text file of rows?)", e.Line, Size(int64(e.Max)))
}

// Lines returns a reader of r that fails with a *LineTooLongError as soon
// as a line (bytes between two '\n') grows past max bytes: for readers such
// as encoding/csv that grow a line's buffer without limit.
func Lines(r io.Reader, max int) io.Reader { return &lineLimit{r: r, max: max, line: 1} }

type lineLimit struct {
	r        io.Reader
	max, cur int
	line     int
	err      error
}

func (l *lineLimit) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	for i, b := range p[:n] {
		if b == '\n' {
			l.cur = 0
			l.line++
			continue
		}
		if l.cur++; l.cur > l.max {
			l.err = &LineTooLongError{Line: l.line, Max: l.max}
			return i, l.err
		}
	}
	return n, err
}
