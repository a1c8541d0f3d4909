package scenario

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware/calibrate"
	"github.com/servesim/servesim/sim/serve"
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
		{func(s *Scenario) { s.PP = 2; s.Batch.Policy = "prefill-first" }, "needs chunked prefill"},
	} {
		s := base()
		c.edit(s)
		if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", s.Engine, err, c.want)
		}
	}
}

// TestSGLangDetokenizeShare refits SGLangDetokenizeShare from its data:
// sarathi-serve's A100 cpu_overheads.csv at TP 1, all four phases against
// process_model_outputs alone (42.314 and 15.439 µs a request), and checks
// that the sglang engine's default step CPU is the built-in profile's slope
// less that share: 42.314 × (1 − 15.439 / 42.314) = 26.875 µs.
func TestSGLangDetokenizeShare(t *testing.T) {
	const file = "../../../shared/data/vidur-profiling/historical/a100/cpu_overheads.csv"
	f, err := os.Open(file)
	if err != nil {
		t.Skipf("%s: %v", file, err)
	}
	defer f.Close()
	rows, err := calibrate.ReadVidurCPUOverheads(f, file)
	if err != nil {
		t.Fatal(err)
	}
	all, err := calibrate.FitIterOverhead(rows, file)
	if err != nil {
		t.Fatal(err)
	}
	only := make([]calibrate.CPUOverheadRow, len(rows))
	for i, r := range rows {
		only[i] = calibrate.CPUOverheadRow{Batch: r.Batch, TP: r.TP, ProcessModelOutputs: r.ProcessModelOutputs}
	}
	pmo, err := calibrate.FitIterOverhead(only, file)
	if err != nil {
		t.Fatal(err)
	}
	if got := pmo.PerRequest / all.PerRequest; math.Abs(got-SGLangDetokenizeShare) > 1e-4 {
		t.Errorf("process_model_outputs share %.5f (%.3f / %.3f µs), SGLangDetokenizeShare %.5f", got, pmo.PerRequest*1e6, all.PerRequest*1e6, SGLangDetokenizeShare)
	}
	s := &Scenario{Name: "t", Model: "llama-3.1-8b", GPU: "h100", Engine: &Engine{Name: "sglang"}}
	s.Workload.Requests, s.Workload.Rate, s.Workload.Prompt, s.Workload.Output = 10, 1, "constant:100", "constant:10"
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Serve.Engine.(serve.SGLang).PerRequestCPU * 1e6; math.Abs(got-26.875) > 0.01 {
		t.Errorf("sglang step CPU %.4g µs a request, want 26.875", got)
	}
}
