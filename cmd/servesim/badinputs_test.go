package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// The bad-input catalogue: testdata/bad-inputs/*.txt, one case a file, run
// in-process through dispatch and exitCode (the same path as main). A case
// file has a header and optional files:
//
//	# what the case checks (comment lines start with #)
//	args: run --config {dir}/s.toml -o {out}
//	exit: 1
//	want: s.toml line 3
//	want: max_num_seqs
//	-- s.toml --
//	model = "llama-3.1-8b"
//
// args are split on spaces; {dir} is a temporary directory holding the
// case's files, {out} an empty temporary directory, {shared} the path of
// ../shared/data (the case is skipped when it is absent). exit is the
// expected exit status; every want line must appear in the output (stdout
// and stderr together); a "reject:" line must not appear. A panic fails the
// case whatever it expects.
func TestBadInputCatalogue(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad-inputs", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no cases in testdata/bad-inputs")
	}
	for _, f := range files {
		c, err := parseBadInput(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { c.run(t) })
	}
}

type badInput struct {
	file   string
	args   string
	exit   int
	want   []string
	reject []string
	files  map[string]string
	order  []string
}

func parseBadInput(path string) (*badInput, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &badInput{file: path, exit: -1, files: map[string]string{}}
	cur := ""
	var body strings.Builder
	flush := func() {
		if cur != "" {
			c.files[cur] = body.String()
			c.order = append(c.order, cur)
		}
		body.Reset()
	}
	for i, line := range strings.SplitAfter(string(data), "\n") {
		t := strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			flush()
			cur = strings.TrimSpace(t[3 : len(t)-3])
			continue
		}
		if cur != "" {
			body.WriteString(line)
			continue
		}
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case strings.HasPrefix(t, "args:"):
			c.args = strings.TrimSpace(strings.TrimPrefix(t, "args:"))
		case strings.HasPrefix(t, "exit:"):
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(t, "exit:")))
			if err != nil {
				return nil, fmt.Errorf("%s line %d: exit: %v", path, i+1, err)
			}
			c.exit = n
		case strings.HasPrefix(t, "want:"):
			c.want = append(c.want, strings.TrimSpace(strings.TrimPrefix(t, "want:")))
		case strings.HasPrefix(t, "reject:"):
			c.reject = append(c.reject, strings.TrimSpace(strings.TrimPrefix(t, "reject:")))
		default:
			return nil, fmt.Errorf("%s line %d: unknown header line %q (want args:, exit:, want:, reject: or # comment)", path, i+1, t)
		}
	}
	flush()
	if c.args == "" || c.exit < 0 {
		return nil, fmt.Errorf("%s: a case needs args: and exit:", path)
	}
	return c, nil
}

// sharedData is ../shared/data seen from this package's directory.
var sharedData = filepath.Join("..", "..", "..", "shared", "data")

func (c *badInput) run(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	for _, name := range c.order {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c.files[name]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(c.args, "{shared}") {
		if _, err := os.Stat(sharedData); err != nil {
			t.Skipf("needs ../shared/data: %v", err)
		}
	}
	shared, _ := filepath.Abs(sharedData)
	r := strings.NewReplacer("{dir}", dir, "{out}", out, "{shared}", shared)
	args := strings.Fields(r.Replace(c.args))
	var buf bytes.Buffer
	code, panicked := dispatchRecovered(args, &buf)
	text := buf.String()
	if panicked != nil {
		t.Fatalf("%s: servesim %s panicked: %v", c.file, c.args, panicked)
	}
	if code != c.exit {
		t.Errorf("%s: servesim %s: exit %d, want %d; output:\n%s", c.file, c.args, code, c.exit, tail(text))
	}
	for _, w := range c.want {
		if !strings.Contains(text, r.Replace(w)) {
			t.Errorf("%s: servesim %s: output lacks %q:\n%s", c.file, c.args, w, tail(text))
		}
	}
	for _, w := range c.reject {
		if strings.Contains(text, r.Replace(w)) {
			t.Errorf("%s: servesim %s: output has %q:\n%s", c.file, c.args, w, tail(text))
		}
	}
}

// tail is the last 2,000 bytes of s.
func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}

// dispatchRecovered runs dispatch(args) and exitCode into out, the path
// main takes, and returns the exit status; a panic is returned instead
// (its value and stack), so that a case can fail on it by name.
func dispatchRecovered(args []string, out *bytes.Buffer) (code int, panicked any) {
	defer func() {
		if p := recover(); p != nil {
			panicked = fmt.Sprintf("%v\n%s", p, debug.Stack())
		}
	}()
	return exitCode(dispatch(args, out, out), out), nil
}
