package serve

import (
	"slices"
	"testing"

	"github.com/servesim/servesim/models"
)

// fixedTimer is 1000 µs of fixed CPU overhead (reported as IterOverhead,
// as hardware.StepModel does) + 10 µs per token of kernels.
type fixedTimer struct{}

func (fixedTimer) Step(b models.Batch) (float64, float64, float64) {
	if b.Tokens() == 0 {
		return 0, 0, 0
	}
	return 1000e-6 + 10e-6*float64(b.Tokens()), 0, 0
}
func (fixedTimer) IterOverhead() float64 { return 1000e-6 }

func TestCaptureSizes(t *testing.T) {
	cases := []struct {
		seqs, tokens int
		n            int // how many sizes
		last         int
	}{
		// max = min(256·2, 512, 8192) = 512: 1, 2, 4 + 8..248 step 8 (31) + 256..512 step 16 (17) = 51.
		{256, 8192, 51, 512},
		// max = min(1024·2, 512, 8192) = 512: the same.
		{1024, 8192, 51, 512},
		// max = min(8·2, 512, 8192) = 16: 1, 2, 4, 8, 16.
		{8, 8192, 5, 16},
		// max = min(256·2, 512, 100) = 100: 1, 2, 4 + 8..96 step 8 (12) = 15.
		{256, 100, 15, 96},
	}
	for _, c := range cases {
		s := CaptureSizes(c.seqs, c.tokens)
		if len(s) != c.n || s[len(s)-1] != c.last || !slices.IsSorted(s) {
			t.Errorf("CaptureSizes(%d, %d) = %v: want %d sizes up to %d", c.seqs, c.tokens, s, c.n, c.last)
		}
	}
}

// Step prices on fixedTimer with 2 µs of CPU per request and 5 µs per
// launch; graphs captured at 1, 2, 4, 8, 16; 100 kernels eager, 9
// piecewise.
func TestEngineStepPrices(t *testing.T) {
	g := &CUDAGraphs{Sizes: []int{1, 2, 4, 8, 16}, EagerLaunches: 100, PiecewiseLaunches: 9, Launch: 5e-6}
	eager := *g
	eager.Eager = true
	dec := func(n int) models.Batch { return models.Batch{Decodes: n, DecodeCtx: int64(100 * n)} }
	pre := func(p int) models.Batch { return models.Batch{Prefills: 1, PrefillTokens: p} }
	cases := []struct {
		name         string
		e            VLLMV1
		b            models.Batch
		serial, pipe float64 // µs; pipe 0: not a PipelinedTimer
	}{
		// 1000 + 10·5 kernels + 2·5 CPU = 1060, as before this mechanism.
		{"step CPU, no launches", VLLMV1{StepCPU: true, PerRequestCPU: 2e-6}, dec(5), 1060, 0},
		// 5 decodes pad to 8: GPU 10·8 = 80; CPU 1000 + 2·5 = 1010; one
		// graph launch 5 (under the GPU's 80): serial 1010 + max(80, 5) = 1090.
		{"decode graph padded, sync", VLLMV1{StepCPU: true, PerRequestCPU: 2e-6, Graphs: g}, dec(5), 1090, 0},
		// Overlapped: max(80, 1010 + 5) = 1015; a step from idle as sync.
		{"decode graph padded, overlap", VLLMV1{AsyncScheduling: true, CPUOverlap: true, StepCPU: true, PerRequestCPU: 2e-6, Graphs: g}, dec(5), 1090, 1015},
		// Eager: no padding, GPU 50; 100 launches 500: serial 1010 + 500 = 1510; overlapped max(50, 1510) = 1510.
		{"eager decode, overlap", VLLMV1{AsyncScheduling: true, CPUOverlap: true, StepCPU: true, PerRequestCPU: 2e-6, Graphs: &eager}, dec(5), 1510, 1510},
		// A prefill of 10 tokens pads to 16 in piecewise graphs: GPU 160,
		// 9 launches 45, CPU 1000 + 2: serial 1002 + 160 = 1162; overlapped max(160, 1047) = 1047.
		{"piecewise prefill", VLLMV1{AsyncScheduling: true, CPUOverlap: true, StepCPU: true, PerRequestCPU: 2e-6, Graphs: g}, pre(10), 1162, 1047},
		// 100 tokens are past the largest size (16): eager, GPU 1000, launches 500: serial 1002 + 1000 = 2002; overlapped max(1000, 1502) = 1502.
		{"eager prefill past the sizes", VLLMV1{AsyncScheduling: true, CPUOverlap: true, StepCPU: true, PerRequestCPU: 2e-6, Graphs: g}, pre(100), 2002, 1502},
		// Overlap needs async scheduling: sync keeps 1060 and no pipelined price.
		{"overlap without async", VLLMV1{CPUOverlap: true, StepCPU: true, PerRequestCPU: 2e-6}, dec(5), 1060, 0},
		// Overlap alone: CPU is the fixed 1000 µs: max(1050 − 1000, 1000) = 1000.
		{"overlap, fixed CPU only", VLLMV1{AsyncScheduling: true, CPUOverlap: true}, dec(5), 1050, 1000},
	}
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	for _, c := range cases {
		k := c.e.Kernels(fixedTimer{})
		sec, _, _ := k.Step(c.b)
		if !near(sec*1e6, c.serial) {
			t.Errorf("%s: serial step %.3f µs, want %.3f", c.name, sec*1e6, c.serial)
		}
		p, ok := k.(PipelinedTimer)
		if ok != (c.pipe != 0) {
			t.Errorf("%s: pipelined timer %v, want %v", c.name, ok, c.pipe != 0)
			continue
		}
		if ok {
			if sec, _, _ := p.StepPipelined(c.b); !near(sec*1e6, c.pipe) {
				t.Errorf("%s: pipelined step %.3f µs, want %.3f", c.name, sec*1e6, c.pipe)
			}
		}
	}
}

func TestCUDAGraphsValidate(t *testing.T) {
	for _, g := range []CUDAGraphs{{Sizes: []int{4, 2}}, {Sizes: []int{0, 2}}, {EagerLaunches: -1}, {Launch: -1e-6}} {
		if (VLLMV1{Graphs: &g}).Validate() == nil {
			t.Errorf("%+v: no error", g)
		}
	}
}

// pipeTimer is fixedTimer whose back-to-back step costs half the kernels
// (as a pipeline-parallel round that finds its stages already busy).
type pipeTimer struct{ fixedTimer }

func (pipeTimer) StepPipelined(b models.Batch) (float64, float64, float64) {
	if b.Tokens() == 0 {
		return 0, 0, 0
	}
	return 1000e-6 + 5e-6*float64(b.Tokens()), 0, 0
}

// TestEngineForwardsPipelined: vllm-v1's step wrappers price a step that
// follows another on the kernel timer's StepPipelined when it has one. 10
// decodes, 2 µs of CPU per request: in series a first step costs 1000 +
// 100 + 20 = 1120 µs and a back-to-back one 1000 + 50 + 20 = 1070 µs.
// Overlapped, 400 decodes: a back-to-back step costs max(GPU 2000, CPU
// 1000 + 800) = 2000 µs (4000 µs of GPU without the forwarding), a first
// one 1000 + 800 + 4000 = 5800 µs.
func TestEngineForwardsPipelined(t *testing.T) {
	b := models.Batch{Decodes: 10, DecodeCtx: 1000}
	series := VLLMV1{StepCPU: true, PerRequestCPU: 2e-6}.Kernels(pipeTimer{})
	p, ok := series.(PipelinedTimer)
	if !ok {
		t.Fatalf("series wrapper %T over a PipelinedTimer is not one", series)
	}
	first, _, _ := p.Step(b)
	back, _, _ := p.StepPipelined(b)
	if !near(first, 1120e-6) || !near(back, 1070e-6) {
		t.Errorf("series: first %g s, back-to-back %g s; want 1120 µs, 1070 µs", first, back)
	}
	if _, ok := (VLLMV1{StepCPU: true, PerRequestCPU: 2e-6}.Kernels(fixedTimer{})).(PipelinedTimer); ok {
		t.Error("series wrapper over a plain timer prices back-to-back steps apart")
	}
	over := VLLMV1{StepCPU: true, PerRequestCPU: 2e-6, AsyncScheduling: true, CPUOverlap: true}.Kernels(pipeTimer{}).(PipelinedTimer)
	big := models.Batch{Decodes: 400, DecodeCtx: 40000}
	first, _, _ = over.Step(big)
	back, _, _ = over.StepPipelined(big)
	if !near(first, 5800e-6) || !near(back, 2000e-6) {
		t.Errorf("overlap: first %g s, back-to-back %g s; want 5800 µs, 2000 µs", first, back)
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }
