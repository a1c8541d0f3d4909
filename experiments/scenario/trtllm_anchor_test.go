package scenario

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TensorRT-LLM's performance overview (docs/source/developer-guide/perf-overview.md
// of github.com/NVIDIA/TensorRT-LLM at 03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d,
// "LLaMA v3.3 70B"): output tokens/s per GPU of trtllm-bench throughput,
// Llama-3.3-70B FP8 at TP 2.
var trtllmPerfOverview = []struct {
	file      string
	published float64
}{
	{"h100-tp2-1000-1000.toml", 2209},
	{"h200-tp2-1000-1000.toml", 2587},
	{"h100-tp2-8192-1024.toml", 398},
	{"h200-tp2-8192-1024.toml", 537},
}

// TestTRTLLMPerfOverviewAnchor replays the four published points
// (experiments/validation/published/trtllm-perf-overview, README.md
// there) under the trtllm engine model and reports the simulated output
// throughput per GPU against the published one; nothing is fitted to
// them. It checks what must hold whatever the kernels: every request is
// served, GUARANTEED_NO_EVICT never preempts, and H200 (more KV, more
// bandwidth) serves more per GPU than H100.
func TestTRTLLMPerfOverviewAnchor(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 9,000 requests")
	}
	dir := filepath.Join("..", "validation", "published", "trtllm-perf-overview")
	got := map[string]float64{}
	var b strings.Builder
	b.WriteString("| point | simulated tok/s/GPU | published | error |\n|---|---|---|---|\n")
	for _, c := range trtllmPerfOverview {
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
		if n := r.Counts(); n.Finished != n.Arrived || r.Result.Preemptions != 0 {
			t.Fatalf("%s: %d of %d finished, %d preemptions", c.file, n.Finished, n.Arrived, r.Result.Preemptions)
		}
		perGPU := r.Summary.OutputThroughput / float64(p.Parallel.TP)
		got[c.file] = perGPU
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %+.1f %% |\n", strings.TrimSuffix(c.file, ".toml"), perGPU, c.published, 100*(perGPU/c.published-1))
	}
	for _, w := range []string{"1000-1000", "8192-1024"} {
		h100, h200 := got["h100-tp2-"+w+".toml"], got["h200-tp2-"+w+".toml"]
		if !(h200 > h100) {
			t.Errorf("%s: H200 %.0f tok/s/GPU not above H100 %.0f", w, h200, h100)
		}
	}
	r1 := got["h200-tp2-1000-1000.toml"] / got["h100-tp2-1000-1000.toml"]
	r2 := got["h200-tp2-8192-1024.toml"] / got["h100-tp2-8192-1024.toml"]
	fmt.Fprintf(&b, "| H200/H100, 1000/1000 | %.3f | %.3f | %+.1f %% |\n", r1, 2587.0/2209, 100*(r1/(2587.0/2209)-1))
	fmt.Fprintf(&b, "| H200/H100, 8192/1024 | %.3f | %.3f | %+.1f %% |\n", r2, 537.0/398, 100*(r2/(537.0/398)-1))
	t.Logf("\n%s", b.String())
}

// TestEngineComparison runs two workloads on the embedded default
// scenario's Llama-3.1-8B on one H100: its chat-like lognormal lengths at
// 20 requests/s, and 2,000 requests of 1,000 + 1,000 tokens sent at once
// (a trtllm-bench throughput run); each under vllm-v1, sglang and trtllm with
// its capacity policies, and prints docs/engine-model.md's table ("TensorRT-LLM
// engine").
func TestEngineComparison(t *testing.T) {
	var b strings.Builder
	b.WriteString("| workload | engine | TTFT median / p99 (ms) | TPOT median (ms) | E2E median (ms) | output tok/s | preemptions |\n|---|---|---|---|---|---|---|\n")
	for _, w := range []struct {
		name string
		edit func(s *Scenario)
	}{
		{"chat, 20 req/s", func(s *Scenario) { s.Workload.Rate, s.Workload.Requests = 20, 1000 }},
		{"1000/1000, all at once", func(s *Scenario) {
			s.Workload.Rate, s.Workload.Requests = math.Inf(1), 2000
			s.Workload.Prompt, s.Workload.Output = "constant:1000", "constant:1000"
		}},
	} {
		for _, c := range []struct {
			name string
			edit func(s *Scenario)
		}{
			{"vllm-v1", func(*Scenario) {}},
			{"sglang", func(s *Scenario) { s.Engine = &Engine{Name: "sglang"} }},
			{"trtllm", func(s *Scenario) { s.Engine = &Engine{Name: "trtllm"}; s.TRTLLMBase() }},
			{"trtllm, chunked prefill", func(s *Scenario) {
				s.Engine = &Engine{Name: "trtllm", TRTLLM: &TRTLLMEngine{EnableChunkedPrefill: true}}
				s.TRTLLMBase()
			}},
			{"trtllm, MAX_UTILIZATION", func(s *Scenario) {
				s.Engine = &Engine{Name: "trtllm", TRTLLM: &TRTLLMEngine{CapacitySchedulerPolicy: "MAX_UTILIZATION"}}
				s.TRTLLMBase()
			}},
		} {
			s := Default()
			w.edit(&s)
			c.edit(&s)
			p, err := s.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			r, err := Run(p, "")
			if err != nil {
				t.Fatal(err)
			}
			if n := r.Counts(); n.Finished != n.Arrived || n.Arrived != int64(s.Workload.Requests) {
				t.Errorf("%s, %s: %d of %d requests finished", w.name, c.name, n.Finished, n.Arrived)
			}
			if strings.HasPrefix(c.name, "trtllm") != strings.Contains(p.Kernel, "for TensorRT-LLM") {
				t.Errorf("%s, %s: kernels %q: the TensorRT-LLM stack sentence belongs to the trtllm runs only", w.name, c.name, p.Kernel)
			}
			m := r.Summary
			fmt.Fprintf(&b, "| %s | %s | %.1f / %.1f | %.2f | %.0f | %.0f | %d |\n", w.name, c.name, m.TTFT.Median, m.TTFT.P99, m.TPOT.Median, m.E2E.Median, m.OutputThroughput, r.Result.Preemptions)
		}
	}
	t.Logf("\n%s", b.String())
}
