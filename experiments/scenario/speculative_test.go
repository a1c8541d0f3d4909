package scenario

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

const specBase = `name = "spec"
model = "llama-3.1-8b"
gpu = "h100"
seed = 3
[workload]
rate = 4
requests = 60
prompt = "uniform:100,800"
output = "uniform:20,200"
`

func specScenario(t *testing.T, extra string) Scenario {
	t.Helper()
	s, err := Parse(strings.NewReader(specBase+extra), "spec.toml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// specText runs s (checking that no request is lost) and returns its
// header and summary text.
func specText(t *testing.T, s Scenario) (string, *Report) {
	t.Helper()
	p, rep, _ := runConserved(t, s, int64(s.Workload.Requests), s.Name)
	var b bytes.Buffer
	if err := p.Describe(&b); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String(), rep
}

// TestSpeculativeZeroTokensIsOff: num_speculative_tokens = 0 (or no table)
// reproduces the run without speculation byte for byte.
func TestSpeculativeZeroTokensIsOff(t *testing.T) {
	off, _ := specText(t, specScenario(t, ""))
	zero, rep := specText(t, specScenario(t, "[speculative]\nmethod = \"eagle3\"\nnum_speculative_tokens = 0\n"))
	if off != zero {
		t.Errorf("num_speculative_tokens = 0 changed the run:\n%s\nvs\n%s", off, zero)
	}
	if rep.Result.Spec != nil || rep.SummaryJSON().Speculative != nil {
		t.Error("speculation counted with 0 tokens")
	}
	on, rep := specText(t, specScenario(t, "[speculative]\nmethod = \"eagle3\"\nnum_speculative_tokens = 3\n"))
	if !strings.Contains(on, "Speculative decoding: eagle3, 3 tokens") || !strings.Contains(on, "Mean acceptance length:") {
		t.Errorf("no speculative header or results:\n%s", on)
	}
	// TPOT falls at this light load (several tokens a step, memory-bound
	// verification): the EAGLE-3 default expects 2.69 tokens a step.
	if s := rep.Summary; !(s.TPOT.Mean < 0.7*mustMean(t, off)) {
		t.Errorf("TPOT mean %g ms with EAGLE-3, not below 0.7 × the plain run's", s.TPOT.Mean)
	}
}

func mustMean(t *testing.T, text string) float64 {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "Mean TPOT (ms):") {
			var v float64
			f := strings.Fields(l)
			if _, err := fmt.Sscan(f[len(f)-1], &v); err == nil {
				return v // ms, as Summary.TPOT
			}
		}
	}
	t.Fatal("no Mean TPOT line")
	return 0
}

// TestSpeculativeMemory: the EAGLE-3 head's weights come out of the KV
// budget and its KV joins every block: blocks = floor((KV − draft weights)
// / (16 × (131072 + 4096) B)) for Llama-3.1-8B BF16 (32 layers × 4096 B a
// token for the target, one layer for the head).
func TestSpeculativeMemory(t *testing.T) {
	p0, err := specScenario(t, "").Resolve()
	if err != nil {
		t.Fatal(err)
	}
	p1, err := specScenario(t, "[speculative]\nmethod = \"eagle3\"\nnum_speculative_tokens = 3\n").Resolve()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := models.Builtin().Lookup("llama-3.1-8b")
	d, _ := m.DraftHead(models.DraftEagle3, 0)
	dw := d.WeightBytesPerGPU(p0.Parallel)
	// CUDA graphs captured up to min(max_num_seqs·4·2, 512) tokens: their
	// memory grows with the larger capture.
	cg := p1.VLLMMemory.CUDAGraph - p0.VLLMMemory.CUDAGraph
	if !(cg >= 0) {
		t.Errorf("CUDA-graph memory %g → %g: the capture grew, so must it", p0.VLLMMemory.CUDAGraph, p1.VLLMMemory.CUDAGraph)
	}
	want := math.Floor((p0.Memory.KVBytesPerGPU - dw - cg) / (16 * (131072 + 4096)))
	if float64(p1.Memory.Blocks) != want || p1.Memory.WeightBytesPerGPU != p0.Memory.WeightBytesPerGPU+dw {
		t.Errorf("blocks %d (want %g), weights %g (want %g)", p1.Memory.Blocks, want, p1.Memory.WeightBytesPerGPU, p0.Memory.WeightBytesPerGPU+dw)
	}
	if p1.Serve.Instance.Limits.SpecTokens != 3 || p1.Serve.Instance.Blocks != p1.Memory.Blocks {
		t.Error("limits or instance blocks not set")
	}
}

func TestSpeculativeErrors(t *testing.T) {
	for _, c := range []struct{ table, want string }{
		{"method = \"medusa\"\nnum_speculative_tokens = 2", `field "speculative.method": unknown method "medusa"`},
		{"method = \"medusa\"\nnum_speculative_tokens = 0", `unknown method "medusa"`}, // off, but still a typo
		{"method = \"eagle3\"\nnum_speculative_tokens = -1", `"speculative.num_speculative_tokens": -1 must be in [0, 64]`},
		{"method = \"ngram\"\nnum_speculative_tokens = 3", `method "ngram" has no published default`},
		{"method = \"mtp\"\nnum_speculative_tokens = 4", "covers 3 positions"},
		{"method = \"eagle3\"\nnum_speculative_tokens = 2\nacceptance_rates = [0.5, 0.7]", "cannot rise"},
		{"method = \"draft_model\"\nnum_speculative_tokens = 2\nacceptance_rates = [0.5, 0.3]", "needs the draft model"},
		{"method = \"draft_model\"\nnum_speculative_tokens = 2\nmodel = \"qwen2.5-7b\"\nacceptance_rates = [0.5, 0.3]", "vocabulary"},
		{"method = \"eagle\"\nnum_speculative_tokens = 2\nproposer_cpu_us = 5", `"speculative.proposer_cpu_us"`},
		{"method = \"ngram\"\nnum_speculative_tokens = 2\nacceptance_trace = \"nope.txt\"", `"speculative.acceptance_trace"`},
		{"method = \"eagle3\"\nnum_speculative_tokens = 2\nbogus = 1", "bogus"},
		{"method = \"mtp\"\nnum_speculative_tokens = 1\nverify = \"mqa\"", `field "speculative.verify": "mqa": want decode`},
	} {
		s, err := Parse(strings.NewReader(specBase+"[speculative]\n"+c.table+"\n"), "spec.toml")
		if err == nil {
			_, err = s.Resolve()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.table, err, c.want)
		}
	}
	// Under the sglang and trtllm engines speculation is refused, not run
	// through vLLM's proposer and rejection sampler.
	for _, e := range []string{"sglang", "trtllm"} {
		s := &Scenario{Name: "t", Model: "llama-3.1-8b", GPU: "h100", Engine: &Engine{Name: e},
			Speculative: &Speculative{Method: "eagle3", NumSpeculativeTokens: 3}}
		s.Workload.Requests, s.Workload.Rate, s.Workload.Prompt, s.Workload.Output = 10, 1, "constant:100", "constant:10"
		_, err := s.Resolve()
		if want := "the " + e + " engine's own speculative decoding is not modelled"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("engine %s: error %v, want %q", e, err, want)
		}
	}
}

const specClasses = `name = "spec-classes"
model = "llama-3.1-8b"
gpu = "h100"
seed = 3
[workload]
rate = 4
requests = 200
[[workload.classes]]
name = "chat"
weight = 0.5
prompt = "constant:300"
output = "constant:100"
[[workload.classes]]
name = "code"
weight = 0.5
prompt = "constant:300"
output = "constant:100"
[speculative]
method = "ngram"
num_speculative_tokens = 2
acceptance_rates = [0.2, 0.1]
`

// TestSpeculativeClassAcceptance: class_acceptance_rates give a class its
// own rates (here code accepts every draft: 3 tokens a verification; chat
// the default 0.2, 0.1: 1.3 expected), and the run's measured mean
// acceptance length lies between; a class the workload lacks is refused.
func TestSpeculativeClassAcceptance(t *testing.T) {
	s, err := Parse(strings.NewReader(specClasses+"class_acceptance_rates = {code = [1.0, 1.0]}\n"), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, rep := specText(t, s)
	// Half the requests at 3 tokens a verification, half at 1.3: code
	// requests finish in fewer verifications, so the mean per draft is
	// weighted toward chat: between 1.3 and 2.15 (the unweighted mean).
	if m := rep.Result.Spec.MeanAcceptanceLength(); !(m > 1.3 && m < 2.15) {
		t.Errorf("mean acceptance length %g, want in (1.3, 2.15)", m)
	}
	s, err = Parse(strings.NewReader(specClasses+"class_acceptance_rates = {prose = [1.0, 1.0]}\n"), "c.toml")
	if err == nil {
		_, err = s.Resolve()
	}
	if err == nil || !strings.Contains(err.Error(), `class "prose" is not one of the workload's classes`) {
		t.Errorf("unknown class: %v", err)
	}
}

// TestSpeculativeAcceptanceTrace: a trace replays its counts (every
// request's row "3": 4 tokens a verification), and the trace is one of
// the plan's inputs (its digest moves with its bytes).
func TestSpeculativeAcceptanceTrace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "acc.txt")
	if err := os.WriteFile(path, []byte("# accepted drafts\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := specScenario(t, "[speculative]\nmethod = \"ngram\"\nnum_speculative_tokens = 3\nacceptance_trace = \""+filepath.ToSlash(path)+"\"\n")
	_, rep := specText(t, s)
	if m := rep.Result.Spec.MeanAcceptanceLength(); m != 4 {
		t.Errorf("mean acceptance length %g, want 4", m)
	}
	in1 := rep.Plan.Inputs
	if err := os.WriteFile(path, []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if p.Inputs == in1 {
		t.Error("the plan's inputs digest ignores the acceptance trace")
	}
}
