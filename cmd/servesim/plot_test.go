package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func pngSize(t *testing.T, path string) (int, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg.Width, cfg.Height
}

func TestPlotCmd(t *testing.T) {
	td := "../../plots/testdata"
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		w, h int
	}{
		{[]string{"batch-latency", td + "/batch-latency.csv", "--slo-ttft", "2000", "--slo-tpot", "50"}, 1600, 1000},
		{[]string{"goodput", td + "/goodput.csv", "--target", "0.95"}, 1600, 1000},
		{[]string{"perception", td + "/batching.csv", "--slo-ttft", "2000", "--target-throughput", "2500"}, 1600, 1000},
		{[]string{"provider-fit", td + "/batch-latency.csv", "--slo-ttft", "2000", "--stat", "p99"}, 1600, 1000},
		{[]string{"cdf", td + "/run-chunked", td + "/run-prefill-first", "--label", "chunked,prefill-first"}, 1600, 1000},
		{[]string{"dashboard", td + "/run-chunked", "--window", "0.5", "--width", "1200", "--height", "800"}, 1200, 800},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			out := filepath.Join(dir, tc.args[0]+".png")
			var stdout, stderr bytes.Buffer
			args := append([]string{"plot"}, append(tc.args, "-o", out, "--numbers")...)
			if err := dispatch(args, &stdout, &stderr); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			if w, h := pngSize(t, out); w != tc.w || h != tc.h {
				t.Errorf("%s: %d×%d, want %d×%d", out, w, h, tc.w, tc.h)
			}
			if !strings.Contains(stdout.String(), "Wrote "+out) || !strings.HasPrefix(stdout.String(), strings.Split(tc.args[0], "-")[0]) {
				t.Errorf("output:\n%s", stdout.String())
			}
		})
	}
}

// TestPlotFreshRun plots what the simulator writes now, so a change in its
// output format shows here.
func TestPlotFreshRun(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := dispatch([]string{"run", "-o", dir, "--requests", "150", "-q"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := dispatch([]string{"plot", "dashboard", dir}, &out, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// Default output: dashboard.png in the run directory.
	if w, h := pngSize(t, filepath.Join(dir, "dashboard.png")); w != 1600 || h != 1000 {
		t.Errorf("%d×%d", w, h)
	}
}

func TestPlotCmdErrors(t *testing.T) {
	td := "../../plots/testdata"
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"plot"}, "name a kind"},
		{[]string{"plot", "pie", "x"}, `unknown kind "pie"`},
		{[]string{"plot", "goodput"}, "name an input"},
		{[]string{"plot", "goodput", "a.csv", "b.csv"}, "want one input, got 2"},
		{[]string{"plot", "cdf", td + "/run-chunked", "--label", "a,b"}, "2 labels for 1 inputs"},
		{[]string{"plot", "goodput", td + "/nonexistent.csv"}, "nonexistent.csv"},
		{[]string{"plot", "goodput", td + "/goodput.csv", "--x", "nope"}, `no axis "nope"`},
		{[]string{"plot", "goodput", td + "/goodput.csv", "-o", filepath.Join(t.TempDir(), "x.gif")}, "unknown image format"},
		{[]string{"plot", "dashboard", td + "/goodput.csv"}, "requests.csv"},
	} {
		var out bytes.Buffer
		err := dispatch(tc.args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.err)
		}
	}
}

// A sweep's own SLOs travel in its results.csv (slo_*_ms) and `plot` judges
// against them when no --slo-* is given: the numbers (sweet spots included)
// are those of the same file plotted with --slo-ttft 2000 --slo-tpot 50, and
// a flag still overrides its objective.
func TestPlotUsesSweepSLO(t *testing.T) {
	src, err := os.ReadFile("../../plots/testdata/batch-latency.csv")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lines := strings.Split(strings.TrimRight(string(src), "\n"), "\n")
	with := func(ttft, tpot string) string {
		var b strings.Builder
		for i, l := range lines {
			if i == 0 {
				b.WriteString(l + ",slo_ttft_ms,slo_tpot_ms,slo_e2e_ms\n")
			} else {
				b.WriteString(l + "," + ttft + "," + tpot + ",0\n")
			}
		}
		return b.String()
	}
	own := filepath.Join(dir, "own.csv")
	if err := os.WriteFile(own, []byte(with("2000", "50")), 0o644); err != nil {
		t.Fatal(err)
	}
	plot := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		a := append([]string{"plot", "batch-latency"}, append(args, "-o", filepath.Join(dir, "x.png"), "--numbers", "-q")...)
		if err := dispatch(a, &stdout, &stderr); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		s := stdout.String()
		return s[strings.Index(s, ":"):] // past the file name
	}
	flags := plot("../../plots/testdata/batch-latency.csv", "--slo-ttft", "2000", "--slo-tpot", "50")
	if got := plot(own); got != flags {
		t.Errorf("own SLOs:\n%s\nwant (as with --slo-ttft 2000 --slo-tpot 50):\n%s", got, flags)
	}
	if !strings.Contains(flags, "TTFT ≤ 2000 ms, TPOT ≤ 50 ms") {
		t.Errorf("numbers do not name the SLO:\n%s", flags)
	}
	if got, want := plot(own, "--slo-ttft", "500"), plot("../../plots/testdata/batch-latency.csv", "--slo-ttft", "500", "--slo-tpot", "50"); got != want {
		t.Errorf("--slo-ttft 500 over the file's:\n%s\nwant:\n%s", got, want)
	}
	if got := plot("../../plots/testdata/batch-latency.csv"); !strings.Contains(got, "no SLO") {
		t.Errorf("a file without slo columns:\n%s", got)
	}
}

// A sweep writes its [slo] into results.csv, and `plot` reads it back.
func TestSweepResultsCarrySLO(t *testing.T) {
	dir := t.TempDir()
	toml := writeTwoPointSweep(t, dir)
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if err := dispatch([]string{"sweep", toml, "-o", out, "-q"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	stdout.Reset()
	if err := dispatch([]string{"plot", "batch-latency", filepath.Join(out, "results.csv"), "-o", filepath.Join(dir, "b.png"), "--numbers", "-q"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "TTFT ≤ 750 ms, TPOT ≤ 40 ms") {
		t.Errorf("plot of the sweep's results does not use its SLO:\n%s", stdout.String())
	}
}

// On one worker and on two (where results.csv and results.json are written
// while the plots are drawn), a result file that cannot be written fails
// the sweep with an error naming it and no "Wrote" line; the same sweep
// into a fresh directory writes every file.
func TestSweepResultsWriteFails(t *testing.T) {
	dir := t.TempDir()
	toml := writeTwoPointSweep(t, dir)
	for _, j := range []string{"1", "2"} {
		out := filepath.Join(dir, "out"+j)
		// results.json is a non-empty directory: it cannot be replaced.
		if err := os.MkdirAll(filepath.Join(out, "results.json", "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		err := dispatch([]string{"sweep", toml, "-o", out, "-j", j}, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "results.json") {
			t.Fatalf("-j %s: err %v; want one naming results.json", j, err)
		}
		if strings.Contains(stdout.String(), "Wrote") {
			t.Errorf("-j %s: says it wrote the results:\n%s", j, stdout.String())
		}
		ok := filepath.Join(dir, "ok"+j)
		stdout.Reset()
		if err := dispatch([]string{"sweep", toml, "-o", ok, "-j", j, "-q"}, &stdout, &stderr); err != nil {
			t.Fatalf("-j %s: %v", j, err)
		}
		for _, f := range []string{"results.csv", "results.json", "batch-latency.png", "perception.png", "provider-fit.png"} {
			if _, err := os.Stat(filepath.Join(ok, f)); err != nil {
				t.Errorf("-j %s: %v", j, err)
			}
		}
	}
}

// writeTwoPointSweep writes dir/s.toml, a sweep of two points (40 requests
// each, max_num_seqs 8 and 64) with an [slo], and returns its path.
func writeTwoPointSweep(t *testing.T, dir string) string {
	t.Helper()
	toml := filepath.Join(dir, "s.toml")
	if err := os.WriteFile(toml, []byte(`name = "slo"
seeds = [1]
[base]
model = "llama-3.1-8b"
gpu = "h100"
[base.workload]
requests = 40
rate = 4
prompt = "lognormal:6.5,0.8"
output = "lognormal:5,0.6"
[base.slo]
ttft_ms = 750
tpot_ms = 40
[[axis]]
field = "batch.max_num_seqs"
values = [8, 64]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return toml
}
