package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// trtllmScenario is the trtllm golden scenario with edit applied.
func trtllmScenario(t *testing.T, edit func(s *Scenario)) Scenario {
	t.Helper()
	s := loadFile(t, filepath.Join("testdata", "golden", "llama8b-h100-trtllm.toml"))
	tr := *s.Engine.TRTLLM
	e := *s.Engine
	e.TRTLLM = &tr
	s.Engine = &e
	if edit != nil {
		edit(&s)
	}
	return s
}

// requestsCSV runs s and returns its requests.csv.
func requestsCSV(t *testing.T, s Scenario) []byte {
	t.Helper()
	_, _, out := runDir(t, s)
	b, err := os.ReadFile(filepath.Join(out, "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Bad or unmodelled trtllm settings are errors naming the field and what
// TensorRT-LLM has instead.
func TestTRTLLMScenarioErrors(t *testing.T) {
	set := func(key string, f func(s *Scenario)) func(s *Scenario) {
		return func(s *Scenario) { f(s); s.SetByFlag(key) }
	}
	for _, c := range []struct {
		name string
		edit func(s *Scenario)
		want string
	}{
		{"batch.policy", set("batch.policy", func(s *Scenario) { s.Batch.Policy = "chunked" }), `"batch.policy"`},
		{"gpu_memory_utilization", set("batch.gpu_memory_utilization", func(s *Scenario) { s.Batch.GPUMemUtil = 0.8 }), "free_gpu_memory_fraction"},
		{"prefix_caching", set("batch.prefix_caching", func(s *Scenario) { s.Batch.PrefixCaching = true }), "disable_block_reuse"},
		{"kv_cache_memory_bytes", set("batch.kv_cache_memory_bytes", func(s *Scenario) { s.Batch.KVCacheMemoryBytes = 1e9 }), "max_tokens"},
		{"unknown capacity policy", func(s *Scenario) { s.Engine.TRTLLM.CapacitySchedulerPolicy = "FIFO" }, `unknown policy "FIFO"`},
		{"STATIC_BATCH", func(s *Scenario) { s.Engine.TRTLLM.CapacitySchedulerPolicy = "STATIC_BATCH" }, "not modelled"},
		{"vLLM's async switch", func(s *Scenario) { s.Engine.NoAsyncScheduling = true }, "disable_overlap_scheduler"},
		{"vLLM's enforce-eager", func(s *Scenario) { s.Engine.EnforceEager = true }, "no_cuda_graphs"},
		{"the table under vllm-v1", func(s *Scenario) { s.Engine.Name = "vllm-v1" }, "[engine.trtllm] is the trtllm engine's table"},
		{"fraction 1", func(s *Scenario) { s.Engine.TRTLLM.FreeGPUMemoryFraction = 1 }, "free_gpu_memory_fraction"},
		{"max_batch_size above max_num_tokens", func(s *Scenario) { s.Batch.MaxNumSeqs, s.Batch.MaxNumBatchedTokens = 4096, 2048 }, "max_batch_size 4096 is above max_num_tokens 2048"},
		{"swap", func(s *Scenario) { s.Batch.Preemption = "swap" }, "pauses a request"},
		{"disaggregated", func(s *Scenario) { s.Disagg.DecodeReplicas = 1 }, "not modelled"},
		{"no graphs and a graph size", func(s *Scenario) { s.Engine.TRTLLM.NoCUDAGraphs, s.Engine.TRTLLM.CUDAGraphMaxBatchSize = true, 64 }, "give one"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := trtllmScenario(t, c.edit)
			_, err := s.Resolve()
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "scenario: ") {
				t.Fatalf("err %v, want one naming %q", err, c.want)
			}
		})
	}
}

// Metamorphic relations of the trtllm engine that hold exactly:
//   - chunked prefill with a token budget above every prompt runs the
//     same steps as no chunking (no prompt is ever cut);
//   - with a KV cache that holds every request to completion at once,
//     GUARANTEED_NO_EVICT admits what MAX_UTILIZATION admits.
func TestTRTLLMMetamorphic(t *testing.T) {
	light := func(s *Scenario) {
		s.Workload.Requests, s.Workload.Rate = 120, 6
		s.Engine.TRTLLM.MaxTokens = 0 // 465k tokens: far above 120 requests' worth
	}
	for _, c := range []struct {
		name string
		a, b func(s *Scenario)
	}{
		{"chunked prefill with an ample budget",
			func(s *Scenario) { light(s); s.Batch.MaxNumBatchedTokens = 16384 },
			func(s *Scenario) {
				light(s)
				s.Batch.MaxNumBatchedTokens = 16384
				s.Engine.TRTLLM.EnableChunkedPrefill = true
			}},
		{"GUARANTEED_NO_EVICT with ample KV",
			light,
			func(s *Scenario) { light(s); s.Engine.TRTLLM.CapacitySchedulerPolicy = "MAX_UTILIZATION" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := requestsCSV(t, trtllmScenario(t, c.a))
			b := requestsCSV(t, trtllmScenario(t, c.b))
			if !bytes.Equal(a, b) {
				t.Fatal("the two runs differ")
			}
		})
	}
}

// The reservation to completion costs GUARANTEED_NO_EVICT latency when
// the KV cache is tight (the golden scenario's 24,000 tokens), against
// MAX_UTILIZATION's greedy admission: more queueing, no preemptions.
func TestTRTLLMPoliciesDiffer(t *testing.T) {
	runOf := func(edit func(s *Scenario)) (*Report, error) {
		p, err := trtllmScenario(t, edit).Resolve()
		if err != nil {
			return nil, err
		}
		return Run(p, t.TempDir())
	}
	gne, err := runOf(nil)
	if err != nil {
		t.Fatal(err)
	}
	mu, err := runOf(func(s *Scenario) { s.Engine.TRTLLM.CapacitySchedulerPolicy = "MAX_UTILIZATION" })
	if err != nil {
		t.Fatal(err)
	}
	if gne.Result.Preemptions != 0 || mu.Result.Preemptions == 0 {
		t.Errorf("preemptions: GUARANTEED_NO_EVICT %d (want 0), MAX_UTILIZATION %d (want > 0)", gne.Result.Preemptions, mu.Result.Preemptions)
	}
	if !(gne.Summary.TTFT.Median > mu.Summary.TTFT.Median) {
		t.Errorf("median TTFT: GUARANTEED_NO_EVICT %.1f ms, MAX_UTILIZATION %.1f ms: want the reservation to queue more", gne.Summary.TTFT.Median, mu.Summary.TTFT.Median)
	}
	t.Logf("median TTFT %.1f vs %.1f ms, preemptions %d vs %d", gne.Summary.TTFT.Median, mu.Summary.TTFT.Median, gne.Result.Preemptions, mu.Result.Preemptions)
}
