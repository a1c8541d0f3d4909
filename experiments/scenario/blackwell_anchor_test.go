package scenario

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// trtllmV1 is TensorRT-LLM's v1.0 performance overview at ISL/OSL
// 1000/1000 (docs/source/performance/perf-overview.md at commit 00f37686,
// transcribed in hardware/calibrate/testdata/blackwell/SOURCE.md): Total
// Output Throughput, tokens/s, of the whole run (the H100 70B column is
// two GPUs at TP 2).
var trtllmV1 = []struct {
	file     string
	gpus     int
	measured float64
}{
	{"b200-70b-fp4.toml", 1, 7007},
	{"h200-70b-fp8.toml", 1, 2909},
	{"h100-70b-fp8.toml", 2, 4205},
	{"h200-8b-fp8.toml", 1, 17744},
	{"h100-8b-fp8.toml", 1, 15220},
	// The same two 70B columns on the trtllm engine at trtllm-bench's own
	// limits, kernels re-rated for TensorRT-LLM (calibrate.TRTLLMStack).
	{"b200-70b-fp4-trtllm.toml", 1, 7007},
	{"h200-70b-fp8-trtllm.toml", 1, 2909},
	{"b200-70b-fp4-128-2048-trtllm.toml", 1, 9922},
	{"h200-70b-fp8-128-2048-trtllm.toml", 1, 4336},
	{"b200-70b-fp4-2048-2048-trtllm.toml", 1, 4783},
	{"h200-70b-fp8-2048-2048-trtllm.toml", 1, 2003},
}

// TestBlackwellTRTLLMAnchor replays the published throughput scenarios of
// experiments/validation/published/blackwell-trtllm (README.md there) and
// reports the simulated output throughput per GPU beside the published
// one, and the per-GPU B200/H200 and H200/H100 ratios on each model;
// nothing is fitted to them. It checks what must hold whatever the
// profiles: every request is served and each newer GPU is faster per GPU
// on the same model.
func TestBlackwellTRTLLMAnchor(t *testing.T) {
	if testing.Short() {
		t.Skip("eleven saturated runs of 1,500–3,000 requests")
	}
	dir := filepath.Join("..", "validation", "published", "blackwell-trtllm")
	sim, meas := map[string]float64{}, map[string]float64{}
	var b strings.Builder
	fmt.Fprintln(&b, "| scenario | published tok/s/GPU | simulated | error |")
	fmt.Fprintln(&b, "|---|---|---|---|")
	for _, c := range trtllmV1 {
		s, err := LoadScenario(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(p, "")
		if err != nil {
			t.Fatal(err)
		}
		if trt := strings.HasSuffix(c.file, "-trtllm.toml"); trt != strings.Contains(p.Kernel, "re-rated for TensorRT-LLM") {
			t.Errorf("%s: kernels %q: want the TensorRT-LLM re-rating exactly on the trtllm runs", c.file, p.Kernel)
		}
		if c.file == "b200-70b-fp4-trtllm.toml" && !strings.Contains(strings.Join(p.EngineNotes, "\n"), "kernels: b200 profile re-rated for TensorRT-LLM: FP4 GEMMs compute × ") {
			t.Errorf("%s: the engine notes do not say which stack priced the kernels: %q", c.file, p.EngineNotes)
		}
		if n := r.Counts(); n.Finished != n.Arrived || n.Arrived != int64(s.Workload.Requests) {
			t.Fatalf("%s: %d of %d requests finished", c.file, n.Finished, n.Arrived)
		}
		key := strings.TrimSuffix(c.file, ".toml")
		sim[key], meas[key] = r.Summary.OutputThroughput/float64(c.gpus), c.measured/float64(c.gpus)
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %+.1f %% |\n", key, meas[key], sim[key], 100*(sim[key]/meas[key]-1))
	}
	fmt.Fprintln(&b, "| ratio (per GPU) | published | simulated | error |")
	for _, r := range []struct{ name, num, den string }{
		{"70B B200 FP4 / H200 FP8", "b200-70b-fp4", "h200-70b-fp8"},
		{"70B H200 FP8 TP1 / H100 FP8 TP2", "h200-70b-fp8", "h100-70b-fp8"},
		{"8B H200 / H100 FP8", "h200-8b-fp8", "h100-8b-fp8"},
		{"70B B200 FP4 / H200 FP8, trtllm engine", "b200-70b-fp4-trtllm", "h200-70b-fp8-trtllm"},
		{"70B B200 / H200, trtllm, 128/2048", "b200-70b-fp4-128-2048-trtllm", "h200-70b-fp8-128-2048-trtllm"},
		{"70B B200 / H200, trtllm, 2048/2048", "b200-70b-fp4-2048-2048-trtllm", "h200-70b-fp8-2048-2048-trtllm"},
	} {
		ps, pm := sim[r.num]/sim[r.den], meas[r.num]/meas[r.den]
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %+.1f %% |\n", r.name, pm, ps, 100*(ps/pm-1))
		if !(ps > 1) {
			t.Errorf("%s: simulated per-GPU ratio %.3f, want > 1 (the newer GPU is faster)", r.name, ps)
		}
	}
	t.Log("\n" + b.String())
}
