package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servesim/servesim/experiments/scenario"
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
			interruptMain(t, strings.ReplaceAll(c.args, "{dir}", dir), []string{"SERVESIM_READY_FILE=" + ready}, c.sig, "its signal handler was in",
				func() bool { _, err := os.Stat(ready); return err == nil })
			var left []string
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && p != dir && (c.empty || scenario.IsTempName(d.Name())) {
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

// validate stops on SIGTERM within a second as run does, in whatever phase
// it is (the suite replays seven runs, seconds of work on two cores), and
// leaves nothing in its output directory: its tables and figures are one
// set of temporaries that the interrupt removes.
func TestInterruptStopsValidate(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocesses")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "..", "shared", "data", "vllm-h100-runs")); err != nil {
		t.Skipf("the suite's runs are not beside the checkout: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "v")
	ready := filepath.Join(t.TempDir(), "ready")
	took := interruptMain(t, "validate --suite -q --data "+filepath.Join("..", "..", "..", "shared", "data")+" -o "+dir,
		[]string{"SERVESIM_READY_FILE=" + ready}, syscall.SIGTERM, "its signal handler was in",
		func() bool { _, err := os.Stat(ready); return err == nil })
	if took > time.Second {
		t.Errorf("validate exited %v after SIGTERM, want within 1 s", took)
	}
	var left []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			left = append(left, p)
		}
		return nil
	})
	if len(left) != 0 {
		t.Errorf("after the interrupt %s holds %v, want nothing", dir, left)
	}
}
