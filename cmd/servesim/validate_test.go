package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/experiments/validate"
)

// TestValidateWritesNothingOnFailure: when validation fails (here: an
// unknown model), the output directory gets no file.
func TestValidateWritesNothingOnFailure(t *testing.T) {
	dir, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("meta.json", `{"engine_kwargs": {"model": "acme/Giant-1T"}, "hardware": {"device_name": "NVIDIA GeForce RTX 4090"}}`)
	write("requests.jsonl", `{"input_toks": 100, "output_toks": 10, "arrival_time": 1000.0, "queued_ts": 5.0, "first_token_ts": 5.1, "last_token_ts": 5.5}`+"\n")
	var buf bytes.Buffer
	err := dispatch([]string{"validate", "-o", out, dir}, &buf, &buf)
	if err == nil || !strings.Contains(err.Error(), "--models-file") {
		t.Fatalf("err = %v, want the unknown model named with --models-file", err)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("failed validation wrote %d entries to %s", len(ents), out)
	}
}

// TestValidateSharedRuns validates both LLMServingSim runs in one call and
// checks the outputs exist (no accuracy is asserted).
func TestValidateSharedRuns(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "data", "llmservingsim", "vllm-runs")
	if _, err := os.Stat(root); err != nil {
		t.Skip("../shared/data/llmservingsim/vllm-runs not found")
	}
	out := t.TempDir()
	var buf bytes.Buffer
	err := dispatch([]string{"validate", "-o", out, filepath.Join(root, "RTXPRO6000", "Llama-3.1-8B"), filepath.Join(root, "RTX4090", "Llama-3.1-8B")}, &buf, &buf)
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	for _, f := range []string{"validation.csv", "validation.json", "validation-RTXPRO6000-Llama-3.1-8B.png", "validation-RTX4090-Llama-3.1-8B.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, want := range []string{"ttft_median (ms)", "median |err|", "rtx-4090", "rtx-pro-6000"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestValidateSuiteCLI runs the whole suite through the CLI and checks the
// tables and the suite figure are written (no accuracy is asserted).
func TestValidateSuiteCLI(t *testing.T) {
	out, text := suiteRun(t)
	for _, f := range []string{"validation.csv", "validation.json", "validation-suite.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, want := range []string{"llama-2-70b-tp4-general/stage_1", "median |err|, held out (", "Signed error", "(median |error| held out)"} {
		csv, _ := os.ReadFile(filepath.Join(out, "validation.csv"))
		if !strings.Contains(text, want) && !strings.Contains(string(csv), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// suite is one `servesim validate --suite` run over ../shared/data, shared
// by the tests that read it (TestValidateSuiteCLI, TestDocsValidationSuite):
// the suite takes about 1.6 s, and its output does not depend on the test.
var suite struct {
	once      sync.Once
	dir, text string
	err       error
}

// suiteRun returns the suite's output directory and printed text, running
// it on first use; it skips without ../shared/data. The directory is
// removed when the package's tests end (TestMain).
func suiteRun(t *testing.T) (dir, text string) {
	t.Helper()
	data := filepath.Join("..", "..", "..", "shared", "data")
	for _, f := range []string{filepath.Join("vllm-h100-runs", "runs.csv"), "vllm-sim2real-runs"} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Skipf("../shared/data/%s not found", f)
		}
	}
	suite.once.Do(func() {
		if suite.dir, suite.err = os.MkdirTemp("", "servesim-suite-"); suite.err != nil {
			return
		}
		var buf bytes.Buffer
		if err := dispatch([]string{"validate", "--suite", "--data", data, "-o", suite.dir}, &buf, &buf); err != nil {
			suite.err = fmt.Errorf("servesim validate --suite: %v\n%s", err, buf.String())
		}
		suite.text = buf.String()
	})
	if suite.err != nil {
		t.Fatal(suite.err)
	}
	return suite.dir, suite.text
}

// TestSuitePanelsPlotScored: the suite figure plots the figures the suite
// scores, the means, not the medians (a stage whose mean TTFT is off
// +327 % and its median +33 % showed as +33 %). Each point is its
// validation's mean, measured and simulated; overlapping summary rows and
// unsimulated rows are left out.
func TestSuitePanelsPlotScored(t *testing.T) {
	v := func(name string, overlap bool, ttftMean, ttftMedian float64) *validate.Validation {
		return &validate.Validation{Run: &realrun.Run{Name: name}, Plan: &scenario.Plan{}, Overlap: overlap, Metrics: []validate.MetricRow{
			{Metric: "ttft_mean", Real: 51.85, Sim: ttftMean}, {Metric: "ttft_median", Real: 50, Sim: ttftMedian},
			{Metric: "tpot_mean", Real: 16.62, Sim: 23.12}, {Metric: "tpot_median", Real: 16, Sim: 17},
			{Metric: "e2e_mean", Real: 4158, Sim: 5933}, {Metric: "e2e_median", Real: 4000, Sim: 5000},
		}}
	}
	vs := []*validate.Validation{v("a", false, 221.57, 66.5), v("b", true, 1, 1), {Run: &realrun.Run{Name: "c"}}}
	panels, held := suitePanels(vs)
	if len(panels) != 3 || held != 1 {
		t.Fatalf("%d panels, %d held out; want 3 and 1 (b overlaps, c was not simulated)", len(panels), held)
	}
	for i, want := range []struct {
		title     string
		real, sim float64
	}{{"TTFT mean", 51.85, 221.57}, {"TPOT mean", 16.62, 23.12}, {"E2E latency mean", 4158, 5933}} {
		p := panels[i]
		if p.Title != want.title || len(p.Points) != 1 || p.Points[0].Real != want.real || p.Points[0].Sim != want.sim {
			t.Errorf("panel %d: %q %+v, want %q with one point %g|%g", i, p.Title, p.Points, want.title, want.real, want.sim)
		}
	}
}

// TestValidateKVOffloadFlag: a sim2real table with a CPU KV offload tier
// (the realrun fixture: its Scout experiment, 5,461 CPU blocks) is refused
// is replayed by validate RUN with a host tier of its logged blocks (on
// main: refused, naming the column, the experiment and the flag);
// --ignore-kv-offload replays it with the GPU's logged KV cache only and
// says so in the run's notes; --suite takes the flag from its files
// instead (on main the flag did not exist and the directory was not a run).
func TestValidateKVOffloadFlag(t *testing.T) {
	dir := filepath.Join("..", "..", "experiments", "realrun", "testdata", "sim2real")
	var buf bytes.Buffer
	if err := dispatch([]string{"validate", "-o", "", dir}, &buf, &buf); err != nil || !strings.Contains(buf.String(), "note: CPU offload tier of 5461 blocks (cpu_kv_blocks_logged): replayed with a host KV tier") {
		t.Fatalf("without the flag: %v\n%s", err, buf.String())
	}
	buf.Reset()
	if err := dispatch([]string{"validate", "-o", "", "--ignore-kv-offload", dir}, &buf, &buf); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	wantOutput(t, buf.String(),
		"note: CPU offload tier of 5461 blocks configured, ignored",
		"note: KV cache: the run's 8253 blocks (servesim's own plan: ",
		"note: KV cache: the run's 65352 blocks (servesim's own plan: ",
		"shared_prefix prompts: 11 groups × 4, system prompt 100 + question 466 tokens",
		"b-scout-tp2-reasoning/stage_0",
	)
	if strings.Count(buf.String(), "CPU offload tier of") != 1 { // once: the Scout experiment's header (its scopes share one simulation)
		t.Errorf("offload note %d times, want once", strings.Count(buf.String(), "CPU offload tier of"))
	}
	if err := dispatch([]string{"validate", "--suite", "--ignore-kv-offload"}, &buf, &buf); err == nil || !strings.Contains(err.Error(), "ignore_kv_offload") {
		t.Errorf("--suite --ignore-kv-offload: %v", err)
	}
}
