package experiments

import (
	"strings"
	"testing"
)

// TestSGLangResolve: the sglang engine's defaults on Llama-3.1-8B on one
// H100 (hardware.TestPlanMemorySGLang has the arithmetic): page size 1,
// chunked_prefill_size 8192, mem_fraction_static 0.834 → 416,522 KV tokens,
// max_running_requests 2048, the radix cache on; --mem-fraction-static 0.5
// gives floor((84,718,229,913.32 × 0.5 − 16,060,522,496) / 131,072) = 200,642
// tokens; SGLang's settings under vllm-v1, and vLLM's memory knobs under
// sglang, are errors.
func TestSGLangResolve(t *testing.T) {
	base := func() *Scenario {
		s := &Scenario{Name: "t", Model: "llama-3.1-8b", GPU: "h100", Engine: &Engine{Name: "sglang"}}
		s.Workload.Requests, s.Workload.Rate, s.Workload.Prompt, s.Workload.Output = 10, 1, "constant:100", "constant:10"
		return s
	}
	p, err := base().Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if p.Memory.BlockSize != 1 || p.Memory.Blocks != 416522 || p.Limits.MaxNumBatchedTokens != 8192 || p.Limits.MaxNumSeqs != 2048 || !p.Scenario.Batch.PrefixCaching {
		t.Errorf("defaults: page %d, %d tokens, chunk %d, max running %d, radix cache %t; want 1, 416522, 8192, 2048, true",
			p.Memory.BlockSize, p.Memory.Blocks, p.Limits.MaxNumBatchedTokens, p.Limits.MaxNumSeqs, p.Scenario.Batch.PrefixCaching)
	}
	s := base()
	s.Engine.MemFractionStatic = 0.5
	if p, err = s.Resolve(); err != nil || p.Memory.Blocks != 200642 {
		t.Errorf("mem_fraction_static 0.5: %v, %d tokens, want 200642", err, p.Memory.Blocks)
	}
	for _, c := range []struct {
		edit func(s *Scenario)
		want string
	}{
		{func(s *Scenario) { s.Engine.Name = "vllm-v1"; s.Engine.MemFractionStatic = 0.8 }, `need engine "sglang"`},
		{func(s *Scenario) { s.Engine.MemFractionStatic = 1.2 }, "must be in (0, 1)"},
		{func(s *Scenario) { s.Batch.KVCacheMemoryBytes = 1e9 }, "mem_fraction_static"},
		{func(s *Scenario) { s.Batch.Policy = "decode-first" }, "SGLang's scheduler"},
		{func(s *Scenario) { s.Engine.NoAsyncScheduling = true }, "disable_overlap_schedule"},
		{func(s *Scenario) { s.Engine.MemFractionStatic = 0.15 }, "less than one"},
	} {
		s := base()
		c.edit(s)
		if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", s.Engine, err, c.want)
		}
	}
}
