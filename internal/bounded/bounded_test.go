package bounded

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadAll takes up to max bytes and fails past them, however the reader
// delivers them; an endless reader (zeros) fails at max + 1.
func TestReadAll(t *testing.T) {
	for _, c := range []struct {
		name string
		r    io.Reader
		max  int64
		want int // bytes returned, or -1 for a *TooLargeError
	}{
		{"empty", strings.NewReader(""), 4, 0},
		{"under", strings.NewReader("abc"), 4, 3},
		{"at the bound", strings.NewReader("abcd"), 4, 4},
		{"one past", strings.NewReader("abcde"), 4, -1},
		{"endless zeros", zeros{}, 1 << 20, -1}, // 1 MiB + 1 read, then the error
	} {
		got, err := ReadAll(c.r, c.max)
		switch {
		case c.want < 0 && !IsTooLarge(err):
			t.Errorf("%s: %d bytes, %v; want a TooLargeError", c.name, len(got), err)
		case c.want >= 0 && (err != nil || len(got) != c.want):
			t.Errorf("%s: %d bytes, %v; want %d", c.name, len(got), err, c.want)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// ReadFile refuses a regular file larger than the bound before reading it
// (a sparse file of 1 GiB + 1 byte and a bound of 1 GiB: the refusal
// cannot have read the gigabyte), and says which file.
func TestReadFileRefusesLargeFileUnread(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1<<30 + 1); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	f.Close()
	_, err = ReadFile(p, 1<<30)
	if !IsTooLarge(err) || !strings.HasPrefix(err.Error(), p+": larger than 1 GiB") {
		t.Fatalf("error %v, want %s: larger than 1 GiB", err, p)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "none"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// Lines passes lines of up to max bytes (the '\n' not counted) and fails
// on the first byte past them, naming the line.
func TestLines(t *testing.T) {
	for _, c := range []struct {
		name, in string
		line     int // the line that fails, 0 for none
	}{
		{"short lines", "ab\ncd\n", 0},
		{"at the bound", "abcd\nefgh", 0},
		{"second line too long", "ab\nabcde\n", 2},
		{"no line break", strings.Repeat("x", 100), 1},
	} {
		got, err := io.ReadAll(Lines(strings.NewReader(c.in), 4))
		var le *LineTooLongError
		switch {
		case c.line == 0 && (err != nil || !bytes.Equal(got, []byte(c.in))):
			t.Errorf("%s: %q, %v; want it all", c.name, got, err)
		case c.line > 0 && (!errors.As(err, &le) || le.Line != c.line):
			t.Errorf("%s: %v, want a LineTooLongError at line %d", c.name, err, c.line)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{4 << 20: "4 MiB", 2 << 30: "2 GiB", 1 << 10: "1 KiB", 1000: "1000 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
