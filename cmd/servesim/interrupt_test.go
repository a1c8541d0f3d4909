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
	skipSubprocesses(t)
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
			interruptWhenReady(t, strings.ReplaceAll(c.args, "{dir}", dir), c.sig)
			keep := scenario.IsTempName
			if c.empty {
				keep = nil
			}
			if left := pathsUnder(dir, keep); len(left) != 0 {
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
	skipSubprocesses(t)
	if _, err := os.Stat(filepath.Join("..", "..", "..", "shared", "data", "vllm-h100-runs")); err != nil {
		t.Skipf("the suite's runs are not beside the checkout: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "v")
	took := interruptWhenReady(t, "validate --suite -q --data "+filepath.Join("..", "..", "..", "shared", "data")+" -o "+dir, syscall.SIGTERM)
	if took > time.Second {
		t.Errorf("validate exited %v after SIGTERM, want within 1 s", took)
	}
	if left := pathsUnder(dir, nil); len(left) != 0 {
		t.Errorf("after the interrupt %s holds %v, want nothing", dir, left)
	}
}

// pathsUnder lists the paths below dir (dir itself not included) whose
// base name keep accepts; a nil keep accepts every one. A dir that does
// not exist holds none.
func pathsUnder(dir string, keep func(name string) bool) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir && (keep == nil || keep(d.Name())) {
			out = append(out, p)
		}
		return nil
	})
	return out
}
