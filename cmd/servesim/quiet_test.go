package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// quietScenario is a tiny scenario for place and plan: 20 requests of 100
// prompt and 10 output tokens on one H100, SLOs every deployment meets.
const quietScenario = `name = "q"
model = "llama-3.1-8b"
gpu = "h100"
seed = 1
[workload]
rate = 1
requests = 20
prompt = "constant:100"
output = "constant:10"
[slo]
ttft_ms = 2000
tpot_ms = 100
`

// quietSweep is a two-point sweep (rate 1 and 2) of 20 requests each.
const quietSweep = `name = "q"
seeds = [1]
[base]
name = "q"
model = "llama-3.1-8b"
gpu = "h100"
[base.workload]
requests = 20
prompt = "constant:100"
output = "constant:10"
[base.slo]
ttft_ms = 2000
tpot_ms = 100
[[axis]]
field = "workload.rate"
values = [1, 2]
`

// quietCase is one command with the least arguments it needs; file says
// its result is a file, so that -q prints nothing at all.
type quietCase struct {
	name string
	args []string
	file bool
}

// quietSetup writes the inputs of the quiet cases into a temporary
// directory and returns the cases (a run directory and a sweep made once).
func quietSetup(t *testing.T) []quietCase {
	t.Helper()
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	for name, text := range map[string]string{
		"s.toml":     quietScenario,
		"sweep.toml": quietSweep,
		// two requests in servesim's CSV: arrival 0 s and 0.5 s
		"t.csv": "arrival_s,prompt_tokens,output_tokens\n0,100,10\n0.5,200,20\n",
	} {
		if err := os.WriteFile(p(name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := dispatch([]string{"run", "-o", p("run"), "--requests", "20", "-q"}, &out, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if err := dispatch([]string{"sweep", p("sweep.toml"), "-o", p("sw"), "-j", "1", "-q"}, &out, &out); err != nil {
		t.Fatalf("sweep: %v\n%s", err, out.String())
	}
	cases := []quietCase{
		{"run", []string{"run", "--requests", "20", "-o", p("run2")}, false},
		{"models", []string{"models"}, false},
		{"gpus", []string{"gpus"}, false},
		{"trace stats", []string{"trace", "stats", p("t.csv")}, false},
		{"plot", []string{"plot", "cdf", p("run"), "-o", p("cdf.png"), "--width", "200", "--height", "150"}, true},
		{"place", []string{"place", "--config", p("s.toml"), "--gpus", "1", "--tps", "1", "--only", "colocated", "-j", "1", "-o", p("place.csv")}, false},
		{"plan", []string{"plan", "--config", p("s.toml"), "--rate", "1", "--tps", "1", "--max-gpus", "1", "-j", "1", "-o", p("plan.csv")}, false},
		{"sweep", []string{"sweep", p("sweep.toml"), "-o", p("sw"), "-j", "1"}, false},
		{"merge", []string{"merge", p("sweep.toml"), p("sw"), "-o", p("merged")}, false},
		{"calibrate builtin", []string{"calibrate", "--builtin", "h100", "-o", p("h100.toml")}, true},
		{"calibrate fit", []string{"calibrate", "--trace", filepath.Join("..", "..", "hardware", "calibrate", "testdata", "h200_randn.csv"), "--gpu", "h200", "--no-trees", "-o", p("h200.toml")}, true},
		{"data list", []string{"data", "list", "--dir", p("cache")}, false},
		{"version", []string{"version"}, false},
	}
	// validate replays a real run when ../shared/data is beside the checkout.
	if run := filepath.Join(sharedData, "llmservingsim", "vllm-runs", "RTX4090", "Llama-3.1-8B"); dirExists(run) {
		cases = append(cases, quietCase{"validate", []string{"validate", "-o", "", run}, false})
	}
	if !testing.Short() { // about 10 s
		cases = append(cases, quietCase{"examples", []string{"examples", "-o", p("ex")}, true})
	}
	return cases
}

// TestQuietEverywhere: every command accepts -q; quiet, it writes nothing
// on stderr and each line it prints is in its normal output (none
// for a command whose result is a file); and with stderr not a terminal
// (a bytes.Buffer) the normal run draws no progress bar.
func TestQuietEverywhere(t *testing.T) {
	for _, c := range quietSetup(t) {
		t.Run(c.name, func(t *testing.T) {
			var quiet, quietErr bytes.Buffer
			if err := dispatch(append(c.args, "-q"), &quiet, &quietErr); err != nil {
				t.Fatalf("%s -q: %v\n%s", strings.Join(c.args, " "), err, quietErr.String())
			}
			if c.name == "examples" { // once is enough (10 s)
				if quiet.Len() > 0 || quietErr.Len() > 0 {
					t.Errorf("examples -q printed %q, %q", quiet.String(), quietErr.String())
				}
				return
			}
			var normal, normalErr bytes.Buffer
			if err := dispatch(c.args, &normal, &normalErr); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(c.args, " "), err, normalErr.String())
			}
			if quietErr.Len() > 0 {
				t.Errorf("-q wrote on stderr: %q", quietErr.String())
			}
			if c.file && quiet.Len() > 0 {
				t.Errorf("-q printed %q; the result is a file", quiet.String())
			}
			for _, l := range strings.Split(quiet.String(), "\n") {
				if !strings.Contains(normal.String(), l) { // version -q: "devel" of "servesim devel (go…)"
					t.Errorf("-q printed %q, not in the normal output:\n%s", l, normal.String())
				}
			}
			if strings.ContainsRune(normalErr.String(), '\r') {
				t.Errorf("a progress bar on a stderr that is not a terminal: %q", normalErr.String())
			}
		})
	}
}

// TestProgressOnTerminalsOnly: a long command draws its bar on stderr when
// it is a terminal (pretended here) and not quiet, never on stdout, and
// the bar leaves the result as it is; on a bytes.Buffer no bar is made.
func TestProgressOnTerminalsOnly(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, false, 3, "x")
	p.Add()
	p.Done()
	if fn, done := progressFunc(&buf, false, "x"); fn != nil || buf.Len() > 0 {
		t.Errorf("stderr not a terminal: a progress callback, or %q written", buf.String())
	} else {
		done()
	}

	cases := quietSetup(t)
	old := isTerminal
	t.Cleanup(func() { isTerminal = old })
	for _, tc := range []struct{ name, bar string }{
		{"place", "place: deployments"},
		{"plan", "plan: shapes"},
		{"sweep", "sweep q"},
		{"calibrate fit", "calibrate h200: fit stages"},
	} {
		var c quietCase
		for _, q := range cases {
			if q.name == tc.name {
				c = q
			}
		}
		t.Run(tc.name, func(t *testing.T) {
			run := func(terminal bool, args ...string) (stdout, stderr string) {
				isTerminal = func(io.Writer) bool { return terminal }
				defer func() { isTerminal = old }()
				var o, e bytes.Buffer
				if err := dispatch(append(c.args, args...), &o, &e); err != nil {
					t.Fatalf("%s: %v\n%s", strings.Join(c.args, " "), err, e.String())
				}
				return o.String(), e.String()
			}
			plain, _ := run(false)
			out, bar := run(true)
			if !strings.Contains(bar, tc.bar) {
				t.Errorf("on a terminal: no bar %q on stderr: %q", tc.bar, bar)
			}
			if out != plain {
				t.Errorf("the bar changed stdout:\n%s\nwithout it:\n%s", out, plain)
			}
			if _, e := run(true, "-q"); e != "" {
				t.Errorf("-q on a terminal wrote %q", e)
			}
		})
	}
}
