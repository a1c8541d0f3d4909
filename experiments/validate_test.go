package experiments

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/realrun"
)

// TestValidationSuite runs the embedded suite on ../shared/data and checks
// that every simulated run has every metric it measures, finite, and that
// the replay reproduces the run's token totals exactly. It asserts no
// accuracy.
func TestValidationSuite(t *testing.T) {
	dir, err := FindDataDir(filepath.Join("..", "..", "shared", "data"))
	if err != nil {
		t.Skip(err)
	}
	entries, err := Suite()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 7 { // 2 LLMServingSim runs + 5 inference-perf experiments
		t.Errorf("%d suite files, want 7", len(entries))
	}
	var vs []*Validation
	for _, e := range entries {
		got, err := e.Validate(dir, Scenario{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, got...)
	}
	simulated, rows := 0, 0
	for _, v := range vs {
		if v.Plan == nil {
			t.Errorf("%s: not simulated (%s)", v.Run.Name, v.Status)
			continue
		}
		simulated++
		// Only the codegen run fitted anything: the vllm-v1 front-end cost
		// (DefaultFrontEndRequestMs, TestEngineFit).
		if want := strings.Contains(v.Run.Name, "llama-2-7b-tp1-codegen"); want != (len(v.Fitted) != 0) {
			t.Errorf("%s: fitted %v; only the codegen run fitted a parameter (the vllm-v1 front end)", v.Run.Name, v.Fitted)
		}
		if row := v.Run.Stage; row != nil {
			rows++
			// The simulation sends what inference-perf sent: int(rate ×
			// duration) per stage, the row's successes (no failures).
			if v.Sim.Completed != row.Successes || v.Sim.Rejected != 0 {
				t.Errorf("%s: simulated %d completed, %d rejected; the row has %d successes", v.Run.Name, v.Sim.Completed, v.Sim.Rejected, row.Successes)
			}
		} else {
			in, out := v.Run.TokenTotals()
			if v.Sim.InputTokens != in || v.Sim.OutputTokens != out || v.Sim.Completed != len(v.Run.Requests) {
				t.Errorf("%s: simulated %d requests, %d/%d tokens; the run has %d, %d/%d", v.Run.Name, v.Sim.Completed, v.Sim.InputTokens, v.Sim.OutputTokens, len(v.Run.Requests), in, out)
			}
		}
		for _, m := range v.Metrics {
			if math.IsNaN(m.Real) { // not measured (ITL; inference-perf's TPOT percentiles)
				continue
			}
			if math.IsNaN(m.Sim) || math.IsInf(m.Sim, 0) || math.IsNaN(m.Err()) {
				t.Errorf("%s %s: real %v sim %v", v.Run.Name, m.Metric, m.Real, m.Sim)
			}
		}
	}
	if simulated != 16 || rows != 14 { // 2 LLMServingSim runs + 14 rows of runs.csv
		t.Errorf("%d runs simulated, %d of them inference-perf rows; want 16 and 14", simulated, rows)
	}
	for _, set := range [][]*Validation{vs, HeldOut(vs)} {
		if _, med := MedianAbsErrors(set); len(med) == 0 || math.IsNaN(med["e2e_median"]) || math.IsNaN(med["ttft_p99"]) {
			t.Errorf("median errors %v", med)
		}
	}
}

// TestRunScenarioErrors: a run's model or GPU missing from the catalog is
// named with the flag that adds one.
func TestRunScenarioErrors(t *testing.T) {
	for _, c := range []struct {
		engine realrun.Engine
		want   []string
	}{
		{realrun.Engine{Model: "acme/Giant-1T", GPU: "h100"}, []string{`model "acme/Giant-1T"`, "--models-file", "--model"}},
		{realrun.Engine{Model: "meta-llama/Llama-3.1-8B", GPU: "NVIDIA Quantum Q9"}, []string{`GPU "NVIDIA Quantum Q9"`, "--gpus-file", "--gpu"}},
		{realrun.Engine{Model: "meta-llama/Llama-3.1-8B"}, []string{"records no GPU", "--gpu"}},
		{realrun.Engine{Model: "meta-llama/Llama-3.1-8B", GPU: "h100", DType: "int3"}, []string{"dtype", `"int3"`}},
	} {
		_, err := RunScenario(&realrun.Run{Name: "r", Engine: c.engine}, Scenario{})
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) || !strings.HasPrefix(err.Error(), "experiments: ") {
				t.Errorf("%+v: err = %v, want %q", c.engine, err, w)
			}
		}
	}
	s, err := RunScenario(&realrun.Run{Name: "r", Engine: realrun.Engine{Model: "meta-llama/Llama-3.1-8B", GPU: "NVIDIA GeForce RTX 4090", TP: 1, KVDType: "fp8"}}, Scenario{})
	if err != nil || s.Model != "llama-3.1-8b" || s.GPU != "rtx-4090" || s.KV != "fp8" || s.Weights != "bf16" {
		t.Errorf("scenario %+v, %v", s, err)
	}
}

// TestRunScenarioEngineArgs: the modelled engine arguments the readers
// gained reach the scenario: chunked prefill off is policy mixed (vLLM V1
// batches decodes with whole prompts), --quantization fp8 the weights,
// the vllm-v1 switches the engine; a quantization servesim does not model
// is an error naming it.
func TestRunScenarioEngineArgs(t *testing.T) {
	off := false
	e := realrun.Engine{Model: "meta-llama/Llama-3.1-8B", GPU: "h100", Quantization: "fp8", ChunkedPrefill: &off, AsyncScheduling: &off, EnforceEager: true}
	s, err := RunScenario(&realrun.Run{Name: "r", Engine: e}, Scenario{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Batch.Policy != "mixed" || s.Weights != "fp8" || s.KV != "bf16" || s.Engine == nil || !s.Engine.NoAsyncScheduling || !s.Engine.EnforceEager || s.Engine.NoCustomAllReduce {
		t.Errorf("scenario: policy %q, weights %q, KV %q, engine %+v", s.Batch.Policy, s.Weights, s.KV, s.Engine)
	}
	s, err = RunScenario(&realrun.Run{Name: "r", Engine: realrun.Engine{Model: "meta-llama/Llama-3.1-8B", GPU: "h100"}}, Scenario{})
	if err != nil || s.Batch.Policy != "chunked" || s.Engine != nil {
		t.Errorf("defaults: policy %q, engine %+v, %v", s.Batch.Policy, s.Engine, err)
	}
	e.Quantization = "awq"
	if _, err := RunScenario(&realrun.Run{Name: "r", Engine: e}, Scenario{}); err == nil || !strings.Contains(err.Error(), `quantization "awq"`) {
		t.Errorf("awq: err = %v", err)
	}
}
