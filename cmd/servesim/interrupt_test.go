package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servesim/servesim/experiments"
)

// examples, plan and place stop on SIGINT or SIGTERM like run and sweep:
// exit 130 saying "interrupted", no temporary file left, and nothing
// written after the signal (plan's and place's CSV and chart are written
// only at the end, so their output directory stays empty). The real main
// runs in a subprocess that creates a ready file once its signal handler
// is in (TestMain), and the signal is sent then, so it is always caught;
// each command has seconds of work left at that point (examples: its
// first sweep; plan: 3 GPUs × 4 TPs colocated and disaggregated; place:
// the 8-GPU search of disagg-long, ≈ 20 s).
func TestInterruptStopsSearches(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocesses")
	}
	exp := filepath.Join("..", "..", "experiments")
	for _, c := range []struct {
		name, args string
		sig        syscall.Signal
		empty      bool // the output directory must hold nothing
	}{
		{"examples", "examples -q -o {dir}", syscall.SIGINT, false},
		{"plan", "plan -q --config " + filepath.Join(exp, "examples", "plan.toml") + " --rate 20 --gpus h100,h200,b200 --disagg -o {dir}/p.csv --plot {dir}/p.png", syscall.SIGTERM, true},
		{"place", "place -q --config " + filepath.Join(exp, "disagg-long.toml") + " --gpus 8 -o {dir}/p.csv", syscall.SIGINT, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ready := filepath.Join(t.TempDir(), "ready")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "SERVESIM_RUN_MAIN=1", "SERVESIM_READY_FILE="+ready,
				"SERVESIM_ARGS="+strings.ReplaceAll(c.args, "{dir}", dir))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			deadline := time.Now().Add(20 * time.Second)
			for {
				if _, err := os.Stat(ready); err == nil {
					break
				}
				select {
				case err := <-exited:
					t.Fatalf("servesim exited (%v) before its signal handler was in:\n%s", err, out.String())
				default:
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("no signal handler after 20 s")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("servesim still running 20 s after %v", c.sig)
			}
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 130 || !strings.Contains(out.String(), "interrupted") {
				t.Errorf("after %v: %v, output %q; want exit 130 saying interrupted", c.sig, err, out.String())
			}
			var left []string
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && p != dir && (c.empty || experiments.IsTempName(d.Name())) {
					left = append(left, p)
				}
				return nil
			})
			if len(left) != 0 {
				t.Errorf("after the interrupt %s holds %v, want no temporaries", dir, left)
			}
		})
	}
}
