package experiments

import (
	"os"
	"path/filepath"
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
		s, err := LoadScenario(path)
		if err != nil {
			t.Fatal(err)
		}
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
		var b strings.Builder
		if err := p.Describe(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: header lacks %q:\n%s", c.name, c.want, b.String())
		}
	}
	// The front end off: no Front end line.
	s := small()
	s.Engine = &Engine{NoFrontEnd: true}
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := p.Describe(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Front end:") {
		t.Errorf("no_front_end: header has a Front end line:\n%s", b.String())
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
