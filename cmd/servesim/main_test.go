package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets a test run the real main in a subprocess (to check exit codes).
func TestMain(m *testing.M) {
	if os.Getenv("SERVESIM_RUN_MAIN") == "1" {
		if ready := os.Getenv("SERVESIM_READY_FILE"); ready != "" {
			// Tell the test once the signal handler is in (see
			// TestInterruptStopsSearches): a signal sent later is caught.
			orig := interruptible
			interruptible = func() (context.Context, func()) {
				ctx, stop := orig()
				if err := os.WriteFile(ready, nil, 0o644); err != nil {
					panic(err)
				}
				return ctx, stop
			}
		}
		os.Args = append([]string{"servesim"}, strings.Fields(os.Getenv("SERVESIM_ARGS"))...)
		main()
		os.Exit(0)
	}
	code := m.Run()
	if suite.dir != "" {
		os.RemoveAll(suite.dir)
	}
	os.Exit(code)
}

func runMain(t *testing.T, args string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SERVESIM_RUN_MAIN=1", "SERVESIM_ARGS="+args)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestNoArgumentsRunsDefault(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	// The same path as `servesim` with no arguments, writing into dir.
	if err := dispatch([]string{"run", "-o", dir, "--requests", "200"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, out.String(), "embedded default scenario", "llama-3.1-8b", "Successful requests:", "Mean TTFT (ms):", "P99 ITL (ms):")
	for _, f := range []string{"requests.csv", "steps.csv", "summary.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestFlagsOverrideConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "s.toml")
	os.WriteFile(cfg, []byte(`model = "llama-3.1-8b"
gpu = "a100"
[workload]
rate = 3
requests = 50
prompt = "constant:100"
output = "constant:10"
`), 0o644)
	var out bytes.Buffer
	if err := dispatch([]string{"run", "--config", cfg, "--gpu", "h200", "-o", "", "-q"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "on 1× h200") {
		t.Fatalf("--gpu did not override the file:\n%s", out.String())
	}
}

// TestBadInputExitsNonZero runs the real main on bad input: each must print
// an error naming the problem and exit 1 (bad input) or 2 (usage: an
// unknown command or flag), never panic.
func TestBadInputExitsNonZero(t *testing.T) {
	skipSubprocesses(t)
	cases := []struct{ args, want string }{
		{"run --model nope", `unknown model "nope"`},
		{"run --gpu v100", `"v100"`},
		{"run --rate 0", "workload.rate"},
		{"run --rate -2", "workload.rate"},
		{"run --tp 3", "tp"},
		{"run --model llama-3.1-405b", "llama-3.1-405b"},
		{"run --prompt-len weibull:1,2", "workload.prompt"},
	}
	usage := []struct{ args, want string }{
		{"run --no-such-flag", "unknown flag"},
		{"frobnicate", `unknown command "frobnicate"`},
		{"run --rate", "flag needs an argument"},
		{"run extra", "unexpected argument"},
		{"validate", "give one or more RUN paths"},
		{"completion", "want one shell"},
	}
	for _, c := range usage {
		out, code := runMain(t, c.args)
		if code != 2 || !strings.Contains(out, c.want) || strings.Contains(out, "panic") {
			t.Errorf("servesim %s: exit %d, output %q; want exit 2 and %q", c.args, code, out, c.want)
		}
	}
	for _, c := range cases {
		out, code := runMain(t, c.args)
		if code != 1 || !strings.Contains(out, c.want) || strings.Contains(out, "panic") {
			t.Errorf("servesim %s: exit %d, output %q; want exit 1 and %q", c.args, code, out, c.want)
		}
	}
}

func TestCatalogListings(t *testing.T) {
	var out bytes.Buffer
	if err := dispatch([]string{"models"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"llama-2-7b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen2.5-72b", "mixtral-8x7b", "gpt-oss-120b"} {
		if !strings.Contains(out.String(), m) {
			t.Errorf("models lacks %s", m)
		}
	}
	out.Reset()
	if err := dispatch([]string{"gpus", "--sources"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"a100", "h100", "h200", "b200", "gpu-specs.md"} {
		if !strings.Contains(out.String(), g) {
			t.Errorf("gpus lacks %s", g)
		}
	}
}

// A malformed trace row fails the run naming file, line and column; with
// --skip-bad-rows it is skipped and counted in the output.
func TestTraceBadRows(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "bad.csv")
	os.WriteFile(f, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,100,20\n2023-11-16 18:17:04.0,1x0,20\n2023-11-16 18:17:06.0,50,5\n"), 0o644)
	var out bytes.Buffer
	err := dispatch([]string{"run", "--trace", f, "-o", "", "-q"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "bad.csv:3:23") {
		t.Fatalf("error %v, want one naming bad.csv:3:23", err)
	}
	out.Reset()
	if err := dispatch([]string{"run", "--trace", f, "--skip-bad-rows", "-o", "", "-q"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Trace rows skipped as bad:               1") || !strings.Contains(out.String(), "Successful requests:                     2") {
		t.Fatalf("output lacks the skipped row or the two served requests:\n%s", out.String())
	}
}

// wantOutput wants out to contain each of wants.
func wantOutput(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}
