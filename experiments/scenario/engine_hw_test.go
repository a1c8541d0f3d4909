package scenario

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// vllmOnly returns a vllm-v1 table with only the hardware-plan mechanisms
// left as given (the serving-world ones off).
func vllmOnly(noAR, noMem bool) *Engine {
	return &Engine{Name: "vllm-v1", NoAsyncScheduling: true, NoFrontEnd: true, NoStepCPU: true, NoCustomAllReduce: noAR, NoMemoryProfile: noMem}
}

// TestEngineCustomAllReduce: Llama-2-70B at TP 4 on H100 (builtin
// calibrated profile). A decode step of 16 requests all-reduces 2 × 80
// messages of 16 × 8,192 × 2 B = 256 KiB; the custom all-reduce prices each
// at 5 µs + 3 × 262,144 B / (450e9 × 0.7) = 7.497 µs (one-shot), so the
// step is 160 × (NCCL − 7.497 µs) shorter than with NCCL. On an RTX 4090
// (no NVLink) nothing changes.
func TestEngineCustomAllReduce(t *testing.T) {
	plan := func(gpu, model string, tp int, e *Engine) *Plan {
		t.Helper()
		s := small()
		s.Model, s.GPU, s.TP, s.Engine = model, gpu, tp, e
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	b := models.Batch{Decodes: 16, DecodeCtx: 16 * 512}
	nccl := plan("h100", "llama-2-70b", 4, vllmOnly(true, true))
	custom := plan("h100", "llama-2-70b", 4, vllmOnly(false, true))
	if !strings.Contains(custom.Kernel, "custom all-reduce") {
		t.Errorf("kernel description %q does not name the custom all-reduce", custom.Kernel)
	}
	op := models.Op{Kind: models.OpAllReduce, Count: 1, Tokens: 16, CommBytes: 262144}
	perNCCL := nccl.Step.Kernel().OpTime(&op)
	perCustom := 5e-6 + 3*262144/(450e9*0.7)
	want := 160 * (perNCCL - perCustom)
	if got := nccl.Step.StepTime(b) - custom.Step.StepTime(b); math.Abs(got-want) > 1e-9 || want <= 0 {
		t.Errorf("NCCL step − custom step = %.6g s, want 160 × (%.4g − %.4g µs) = %.6g s", got, perNCCL*1e6, perCustom*1e6, want)
	}
	a := plan("rtx-4090", "llama-3.1-8b", 2, vllmOnly(true, true))
	c := plan("rtx-4090", "llama-3.1-8b", 2, vllmOnly(false, true))
	if a.Step.StepTime(b) != c.Step.StepTime(b) {
		t.Error("the custom all-reduce changed a step on PCIe GPUs")
	}
}

// TestEngineFusedAddNorm: Llama-2-7B (32 layers, hidden 4,096) on H100
// (builtin calibrated profile). A decode step of 16 requests runs 2 × 32
// residual adds of 16 × 4,096 elements, 3 × 16 × 4,096 × 2 B = 393,216 B
// each. The profile's add class (fitted to Vidur's add column) prices one at
// overhead_s + (393,216 / 16) / (3.35e12 × row_memory_eff) =
// 0.87891 µs + 24,576 / (3.35e12 × 0.0146666) = 0.87891 + 0.50019 =
// 1.3791 µs; fused into RMSNorm it is 393,216 / 3.35e12 = 0.11738 µs. So the
// step is 64 × (1.3791 − 0.11738) = 80.75 µs shorter with the fusion. On the
// RTX 4090, whose bundle-fitted profile already prices the add that way,
// nothing changes, to the bit.
func TestEngineFusedAddNorm(t *testing.T) {
	plan := func(gpu, model string, noFused bool) *Plan {
		t.Helper()
		s := small()
		e := vllmOnly(true, true)
		e.NoFusedAddNorm = noFused
		s.Model, s.GPU, s.Engine = model, gpu, e
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	b := models.Batch{Decodes: 16, DecodeCtx: 16 * 512}
	separate, fused := plan("h100", "llama-2-7b", true), plan("h100", "llama-2-7b", false)
	if !strings.Contains(fused.Kernel, "residual adds fused into RMSNorm") || strings.Contains(separate.Kernel, "fused") {
		t.Errorf("kernel descriptions %q / %q do not say which prices the adds fused", fused.Kernel, separate.Kernel)
	}
	op := models.Op{Kind: models.OpAdd, Count: 64, Tokens: 16, FLOPs: 16 * 4096, Bytes: 393216, Compute: models.BF16}
	before, after := separate.Step.Kernel().OpTime(&op), fused.Step.Kernel().OpTime(&op)
	if wantBefore := 0.87891e-6 + 24576/(3.35e12*0.0146666); math.Abs(before-wantBefore) > 1e-4*wantBefore {
		t.Errorf("separate add = %.5g µs, want %.5g µs", before*1e6, wantBefore*1e6)
	}
	if wantAfter := 393216 / 3.35e12; math.Abs(after-wantAfter) > 1e-15 {
		t.Errorf("fused add = %.5g µs, want %.5g µs", after*1e6, wantAfter*1e6)
	}
	want := 64 * (before - after) // ≈ 80.75 µs
	if got := separate.Step.StepTime(b) - fused.Step.StepTime(b); math.Abs(got-want) > 1e-9 || math.Abs(want-80.75e-6) > 0.01e-6 {
		t.Errorf("separate step − fused step = %.6g s, want 64 × (%.5g − %.5g µs) = %.6g s", got, before*1e6, after*1e6, want)
	}
	a, c := plan("rtx-4090", "llama-3.1-8b", true), plan("rtx-4090", "llama-3.1-8b", false)
	for _, bb := range []models.Batch{b, {Prefills: 1, PrefillTokens: 2048, PrefillPairs: 2048 * 2049 / 2}} {
		if a.Step.StepTime(bb) != c.Step.StepTime(bb) {
			t.Errorf("the fused add changed a step on the bundle-fitted rtx-4090 profile: %v vs %v", a.Step.StepTime(bb), c.Step.StepTime(bb))
		}
	}
}

// TestEngineMemoryPlan: the RTX 4090 run's setup (Llama-3.1-8B, TP 1,
// max_num_batched_tokens 2,048, max_num_seqs 256) plans 2,604 blocks under
// vllm-v1 (hardware.TestPlanMemoryVLLM has the arithmetic) and 1,642 with
// the memory profile off (25,250,627,584 × 0.9 − 16,060,522,496 − 3 GiB,
// over 2 MiB blocks); the [batch] overrides replace either.
func TestEngineMemoryPlan(t *testing.T) {
	for _, c := range []struct {
		name   string
		e      *Engine
		edit   func(b *Batch)
		blocks int
		vllm   bool
	}{
		{"vllm-v1", vllmOnly(false, false), func(*Batch) {}, 2604, true},
		{"no memory profile", vllmOnly(false, true), func(*Batch) {}, 1642, false},
		{"ideal", &Engine{Name: "ideal"}, func(*Batch) {}, 1642, false},
		// 4 GiB / 2 MiB = 2,048 blocks.
		{"kv_cache_memory_bytes", vllmOnly(false, false), func(b *Batch) { b.KVCacheMemoryBytes = 4 << 30 }, 2048, true},
		{"kv_cache_memory_bytes ideal", &Engine{Name: "ideal"}, func(b *Batch) { b.KVCacheMemoryBytes = 4 << 30 }, 2048, false},
		{"num_gpu_blocks_override", vllmOnly(false, false), func(b *Batch) { b.NumGPUBlocksOverride = 2588 }, 2588, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := small()
			s.Model, s.GPU, s.Engine = "llama-3.1-8b", "rtx-4090", c.e
			s.Batch.MaxNumBatchedTokens, s.Batch.MaxNumSeqs = 2048, 256
			c.edit(&s.Batch)
			p, err := s.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			if p.Memory.Blocks != c.blocks || (p.VLLMMemory != nil) != c.vllm {
				t.Errorf("blocks %d (vLLM plan %v), want %d (%v)", p.Memory.Blocks, p.VLLMMemory != nil, c.blocks, c.vllm)
			}
			if p.Serve.Instance.Blocks != c.blocks {
				t.Errorf("instance has %d blocks, want %d", p.Serve.Instance.Blocks, c.blocks)
			}
		})
	}
}

func TestEngineHardwareBadInput(t *testing.T) {
	for _, c := range []struct {
		e    *Engine
		edit func(b *Batch)
		want string
	}{
		{&Engine{Name: "vllm-v1", CustomARLinkEff: 1.5}, func(*Batch) {}, `field "engine.custom_all_reduce_link_efficiency" (flag --custom-all-reduce-link-efficiency): 1.5 is out of range (at most 1)`},
		{&Engine{Name: "vllm-v1", CustomARMaxBytes: math.Inf(1)}, func(*Batch) {}, `field "engine.custom_all_reduce_max_bytes"`},
		{nil, func(b *Batch) { b.KVCacheMemoryBytes = -1 }, `field "batch.kv_cache_memory_bytes" (flag --kv-cache-memory-bytes)`},
		{nil, func(b *Batch) { b.NumGPUBlocksOverride = -2 }, `field "batch.num_gpu_blocks_override" (flag --num-gpu-blocks-override)`},
		{nil, func(b *Batch) { b.KVCacheMemoryBytes = 1000 }, `less than one 16-token block`},
	} {
		s := small()
		s.Engine = c.e
		c.edit(&s.Batch)
		_, err := s.Resolve()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.e, err, c.want)
		}
	}
}
