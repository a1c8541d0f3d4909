package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHelpOnStdout: every command's --help goes to stdout with exit 0, so
// that `servesim run --help | grep max-num-seqs` works.
func TestHelpOnStdout(t *testing.T) {
	for _, c := range append(commands, command{name: "--help"}) {
		var stdout, stderr bytes.Buffer
		args := []string{c.name, "--help"}
		if c.name == "--help" {
			args = args[:1]
		}
		err := dispatch(args, &stdout, &stderr)
		if code := exitCode(err, &stderr); code != 0 || stdout.Len() == 0 || stderr.Len() > 0 {
			t.Errorf("servesim %s: exit %d, %d bytes on stdout, stderr %q", strings.Join(args, " "), code, stdout.Len(), stderr.String())
		}
	}
	var out bytes.Buffer
	if err := dispatch([]string{"run", "--help"}, &out, os.Stderr); err == nil || !strings.Contains(out.String(), "--max-num-seqs") {
		t.Errorf("run --help: %v, lacks --max-num-seqs", err)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"version", "-q"}} {
		var out bytes.Buffer
		if err := dispatch(args, &out, &out); err != nil || !strings.Contains(out.String(), "devel") {
			t.Errorf("%v: %v, %q", args, err, out.String())
		}
	}
}

// TestCompletion: each script names every command and run's vLLM flags,
// and bash (when installed) parses it.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		var out bytes.Buffer
		if err := dispatch([]string{"completion", sh}, &out, &out); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"validate", "max-num-seqs", "tensor-parallel-size", "save-result", "quiet"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s script lacks %q", sh, want)
			}
		}
		if path, err := exec.LookPath(sh); err == nil {
			cmd := exec.Command(path, "-n")
			cmd.Stdin = &out
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", sh, err, msg)
			}
		}
	}
	if err := dispatch([]string{"completion", "tcsh"}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Error("tcsh: no error")
	}
}
