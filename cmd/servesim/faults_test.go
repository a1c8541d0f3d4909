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

// An interrupted run (SIGINT or SIGTERM) stops, removes its temporary
// files, writes no result file and exits 130 saying "interrupted". The real
// main runs in a subprocess on a run of a million requests (≈ 6 s at the
// benchmark's ≈ 160,000 requests/s, so it is still running when the
// signal comes); the signal is sent once the run's temporary set directory exists.
func TestInterruptRemovesTemporaries(t *testing.T) {
	skipSubprocesses(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			interruptMain(t, "run -q --requests 1000000 --rate 17 -o "+dir, nil, sig, "its temporaries appeared",
				func() bool { return len(temps(t, dir)) >= 1 }) // its set directory (runset.go)
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("output directory holds %v after the interrupt, want nothing", names)
			}
		})
	}
}

// skipSubprocesses skips a test that runs the real main in subprocesses
// (seconds each) under -short.
func skipSubprocesses(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("subprocesses")
	}
}

// interruptWhenReady is interruptMain sending sig once the subprocess's
// signal handler is in: TestMain has it create a ready file then
// (SERVESIM_READY_FILE), so the signal is always caught. It returns the
// time from the signal to the exit.
func interruptWhenReady(t *testing.T, args string, sig syscall.Signal) time.Duration {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	return interruptMain(t, args, []string{"SERVESIM_READY_FILE=" + ready}, sig, "its signal handler was in",
		func() bool { _, err := os.Stat(ready); return err == nil })
}

// interruptMain runs the real main in a subprocess with args (and extra
// environment), waits until ready says it is where the signal must find it
// (for at most 20 s; readyWhat names that point in failures), sends sig and
// checks it then exits 130 saying "interrupted" within 20 s. It returns
// the time from the signal to the exit.
func interruptMain(t *testing.T, args string, env []string, sig syscall.Signal, readyWhat string, ready func() bool) time.Duration {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "SERVESIM_RUN_MAIN=1", "SERVESIM_ARGS="+args), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for !ready() {
		select {
		case err := <-exited:
			t.Fatalf("servesim exited (%v) before %s:\n%s", err, readyWhat, out.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("servesim: not %s after 20 s", readyWhat)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	var err error
	select {
	case err = <-exited:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("servesim still running 20 s after %v", sig)
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 || !strings.Contains(out.String(), "interrupted") {
		t.Errorf("after %v: %v, output %q; want exit 130 saying interrupted", sig, err, out.String())
	}
	return time.Since(sent)
}

// temps lists servesim's temporary files in dir.
func temps(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if scenario.IsTempName(e.Name()) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// calibrate -o writes the profile mode 0644 and removes the temporaries an
// earlier, killed servesim left beside it (old enough; not a user's file).
func TestCalibrateProfileModeAndStaleTemps(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, scenario.TempPrefix+"h100.toml-42")
	user := filepath.Join(dir, ".h100.toml.bak")
	old := time.Now().Add(-time.Hour)
	for _, f := range []string{stale, user} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "h100.toml")
	var out bytes.Buffer
	if err := dispatch([]string{"calibrate", "--builtin", "h100", "-o", path}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("profile: %v, %v; want mode 0644", st, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary %s still there (%v)", stale, err)
	}
	if _, err := os.Stat(user); err != nil {
		t.Errorf("the user's %s was removed: %v", user, err)
	}
}
