package scenario

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/serve"
)

// hostGPUs is a user catalog with one GPU whose host measured its front
// end (the numbers besides front_end_request_ms are illustrative).
const hostGPUs = `[[gpu]]
name = "myhost-l40s"
bf16_flops = 362e12
mem_bytes = 48e9
mem_bw = 864e9
link_bw = 32e9
host_bw = 32e9
front_end_request_ms = 9.5
sources = ["front_end_request_ms: 9.5 ms, my host, 10 requests at 0.2 req/s, TTFT minus the prefill step"]
`

// TestFrontEndPerHost: vllm-v1's front end per request comes from the
// scenario when it sets one, else from the serving GPU's catalog entry,
// else the H100 fit assumed; the run header's Front end line says which.
func TestFrontEndPerHost(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gpus.toml"), []byte(hostGPUs), 0o644); err != nil {
		t.Fatal(err)
	}
	scenarioFile := func(body string) Scenario {
		path := filepath.Join(dir, "s.toml")
		if err := os.WriteFile(path, []byte("model = \"llama-3.1-8b\"\ngpu = \"myhost-l40s\"\ngpus_file = \"gpus.toml\"\n"+body+"[workload]\nrate = 1\nrequests = 10\nprompt = \"constant:100\"\noutput = \"constant:10\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		s := loadFile(t, path)
		return s
	}
	byFlag := func(gpu string, ms float64) Scenario {
		s := small()
		s.GPU = gpu
		s.Engine = &Engine{RequestMs: ms}
		s.SetByFlag("engine.front_end_request_ms")
		return s
	}
	onGPU := func(gpu string) Scenario {
		s := small()
		s.GPU = gpu
		return s
	}
	cases := []struct {
		name   string
		s      Scenario
		wantMs float64
		want   string // in the header's Front end line
	}{
		// the built-in H100 entry: DefaultFrontEndRequestMs, fitted on the vllm-h100-runs host
		{"h100 catalog entry", onGPU("h100"), 5.504, "Front end: 5.504 ms per request, from the h100 catalog entry (5.504 ms, fitted on the host of vllm-h100-runs/runs.csv"},
		// H200 has no measured host: the same 5.504 ms, said to be assumed
		{"no host value", onGPU("h200"), 5.504, "Front end: 5.504 ms per request, assumed: the h200 catalog entry has no front_end_request_ms"},
		// a user's GPU entry with its host's value, the scenario setting none
		{"user catalog entry", scenarioFile(""), 9.5, "Front end: 9.5 ms per request, from the myhost-l40s catalog entry (9.5 ms, my host, 10 requests at 0.2 req/s"},
		// the scenario file overrides the entry
		{"scenario file", scenarioFile("[engine]\nfront_end_request_ms = 3\n"), 3, "Front end: 3 ms per request, set by engine.front_end_request_ms in s.toml."},
		{"flag over the entry", byFlag("h100", 2), 2, "Front end: 2 ms per request, set by --front-end-request-ms."},
		// an explicit 0 is no front-end time, not the default
		{"explicit 0", byFlag("h100", 0), 0, "Front end: 0 ms per request, set by --front-end-request-ms."},
	}
	for _, c := range cases {
		p, err := c.s.Resolve()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		v, ok := p.Serve.Engine.(serve.VLLMV1)
		if !ok {
			t.Fatalf("%s: engine %T, want vllm-v1", c.name, p.Serve.Engine)
		}
		if want := sim.FromSeconds(c.wantMs / 1e3); v.RequestCost != want {
			t.Errorf("%s: request cost %v, want %v", c.name, v.RequestCost, want)
		}
		hdr := header(t, p)
		if !strings.Contains(hdr, c.want) {
			t.Errorf("%s: header lacks %q:\n%s", c.name, c.want, hdr)
		}
	}
	// The front end off: no Front end line.
	s := small()
	s.Engine = &Engine{NoFrontEnd: true}
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	hdr := header(t, p)
	if strings.Contains(hdr, "Front end:") {
		t.Errorf("no_front_end: header has a Front end line:\n%s", hdr)
	}
}

// TestFrontEndH100EntryIsTheFit: the built-in H100 entry's
// front_end_request_ms is the fitted DefaultFrontEndRequestMs (TestEngineFit
// refits it), so the catalog and the engine's default cannot drift apart.
func TestFrontEndH100EntryIsTheFit(t *testing.T) {
	g, err := hardware.Builtin().Get("h100")
	if err != nil {
		t.Fatal(err)
	}
	if g.FrontEndRequestMs != DefaultFrontEndRequestMs {
		t.Errorf("h100 front_end_request_ms %g, DefaultFrontEndRequestMs %g: refit both", g.FrontEndRequestMs, DefaultFrontEndRequestMs)
	}
	for _, name := range hardware.Builtin().Names() {
		if h, _ := hardware.Builtin().Get(name); name != "h100" && h.FrontEndRequestMs != 0 {
			t.Errorf("%s: front_end_request_ms %g, but no run measured that host", name, h.FrontEndRequestMs)
		}
	}
}

// TestLLMServingSimHandoff measures what the two LLMServingSim runs show
// of a host-side delay before the engine (docs/engine-model.md: "Setting
// the front end for your host"). Their arrival_time is stamped by the
// in-process AsyncLLM client (wall clock) and queued_ts by the engine core
// (monotonic clock), so arrival_time − queued_ts is an unknown clock
// offset minus the hand-off delay: the hand-off above its smallest value
// is measured, its absolute value is not (data/llmservingsim/SOURCE.md).
// It checks: the first four requests of the RTX PRO 6000 run, sent to an
// idle engine, are handed off within 2 ms of the run's fastest hand-off,
// and the median over all 300 requests is above 10 ms on both runs (the
// hand-off grows with load: the engine core's input thread queues a
// request and its busy loop adds it to the scheduler, which stamps
// queued_ts, between steps, vllm/v1/engine/core.py EngineCoreProc, so the
// hand-off holds the rest of the step in progress, which vllm-v1's async
// scheduling prices as the join lag, not as front end). Neither run passes through HTTP or a
// tokenizer (token IDs in), and TTFT there starts at queued_ts, so neither
// gives a front_end_request_ms for its host.
func TestLLMServingSimHandoff(t *testing.T) {
	dir, err := FindDataDir(filepath.Join("..", "..", "..", "shared", "data"))
	if err != nil {
		t.Skip(err)
	}
	for _, c := range []struct {
		run        string
		idle       int     // leading requests that reach an idle engine
		maxIdleMs  float64 // their hand-off above the run's fastest, at most
		minMedianM float64 // the median hand-off above the fastest, at least
	}{
		{"RTXPRO6000", 4, 2, 10},
		{"RTX4090", 0, 0, 10}, // its second request already waits 124 ms: no idle window
	} {
		f, err := os.ReadFile(filepath.Join(dir, "llmservingsim", "vllm-runs", c.run, "Llama-3.1-8B", "vllm", "requests.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		type req struct {
			Arrival float64 `json:"arrival_time"`
			Queued  float64 `json:"queued_ts"`
		}
		var rs []req
		for i, line := range strings.Split(strings.TrimSpace(string(f)), "\n") {
			var r req
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s line %d: %v", c.run, i+1, err)
			}
			rs = append(rs, r)
		}
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Arrival < rs[j].Arrival })
		// hand-off_i − min hand-off = max(offset) − offset_i, offset = arrival − queued.
		maxOff := math.Inf(-1)
		for _, r := range rs {
			maxOff = math.Max(maxOff, r.Arrival-r.Queued)
		}
		h := make([]float64, len(rs))
		for i, r := range rs {
			h[i] = (maxOff - (r.Arrival - r.Queued)) * 1e3
		}
		sorted := append([]float64(nil), h...)
		sort.Float64s(sorted)
		median := (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
		t.Logf("%s: hand-off above the fastest: first requests %.2f %.2f %.2f %.2f ms; median %.1f ms, p90 %.1f ms, max %.1f ms over %d",
			c.run, h[0], h[1], h[2], h[3], median, sorted[len(sorted)*9/10], sorted[len(sorted)-1], len(h))
		for i := 0; i < c.idle; i++ {
			if h[i] > c.maxIdleMs {
				t.Errorf("%s request %d (idle engine): hand-off %.2f ms above the fastest, want ≤ %g", c.run, i, h[i], c.maxIdleMs)
			}
		}
		if median < c.minMedianM {
			t.Errorf("%s: median hand-off %.1f ms above the fastest, want ≥ %g (it grows with load)", c.run, median, c.minMedianM)
		}
	}
}
