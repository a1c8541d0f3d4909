//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servesim/servesim/experiments/scenario"
)

// Tests that need a named pipe, flock(2) or SIGPIPE: unix only.

// SIGTERM stops a run in its reading phase within a second, leaving
// nothing behind: the run reads its scenario (or models file) from a named
// pipe fed an endless stream of zero bytes, as from /dev/zero, but slowly
// (512 bytes every 10 ms, so the 4 MiB bound on a TOML file is 80 s away):
// a read that neither ends nor fails. The signal handler is in before the
// read starts (the ready file), so the signal finds the run reading; the
// read does not observe the signal, and the process exits 130 after
// interruptGrace (0.5 s) all the same.
func TestInterruptStopsReading(t *testing.T) {
	skipSubprocesses(t)
	for _, c := range []struct{ name, args string }{
		{"config", "run -q --config {fifo} -o {dir}"},
		{"models-file", "run -q --models-file {fifo} -o {dir}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, tmp := filepath.Join(t.TempDir(), "out"), t.TempDir()
			fifo := filepath.Join(tmp, "zeros")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			stopFeed := make(chan struct{})
			fed := make(chan struct{})
			go func() { // the writer end: zeros, slowly, until the test ends
				defer close(fed)
				w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
				if err != nil {
					return
				}
				defer w.Close()
				zeros := make([]byte, 512)
				for {
					select {
					case <-stopFeed:
						return
					case <-time.After(10 * time.Millisecond):
					}
					if _, err := w.Write(zeros); err != nil {
						return // the reader is gone
					}
				}
			}()
			defer func() { close(stopFeed); <-fed }()
			r := strings.NewReplacer("{fifo}", fifo, "{dir}", dir)
			took := interruptWhenReady(t, r.Replace(c.args), syscall.SIGTERM)
			if took > time.Second {
				t.Errorf("exited %v after SIGTERM, want within 1 s", took)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the output directory %s exists after an interrupted read (%v), want nothing written", dir, err)
			}
		})
	}
}

// A run that finds another live run writing into its -o says so on stderr
// (the other run is stood in for by its set directory, flocked as a live
// run holds it: experiments/runset.go).
func TestRunSaysSharedDirectory(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, scenario.TempPrefix+"run-other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := os.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := syscall.Flock(int(h.Fd()), syscall.LOCK_SH); err != nil {
		t.Skipf("flock: %v", err)
	}
	var stdout, stderr bytes.Buffer
	if err := dispatch([]string{"run", "-q", "-n", "50", "-o", dir}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if want := "1 other run(s) wrote into " + dir + " while this one ran (" + other + ")"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
}

// A run whose stdout's reader is gone (`servesim run -q ... | head -0`)
// writes every file before it prints, then stops at its first write with
// exit 141 (128 + SIGPIPE) and nothing on stderr: requests.csv, steps.csv,
// summary.json and the --save-result file are all there, whole, and no
// temporary is left. Killed by SIGPIPE at the summary (Go's default for a
// write to a broken stdout), it would leave the result file unwritten.
func TestClosedStdoutLeavesWholeFiles(t *testing.T) {
	skipSubprocesses(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SERVESIM_RUN_MAIN=1", "SERVESIM_ARGS=run -q -n 300 -o "+dir+" --save-result --result-dir "+dir+" --result-filename r.json")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first byte
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 141 || stderr.Len() != 0 {
		t.Errorf("exit %v, stderr %q; want exit 141 and nothing said", err, stderr.String())
	}
	for _, f := range append(scenario.RunFiles(), "r.json") {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v, want it written whole", f, err)
		}
	}
	if left := temps(t, dir); len(left) != 0 {
		t.Errorf("temporaries left: %v", left)
	}
}
