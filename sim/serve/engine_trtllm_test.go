package serve

import (
	"slices"
	"testing"

	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim/workload"
)

// TensorRT-LLM's default CUDA-graph batch sizes (llm_args.py
// CudaGraphConfig._generate_cuda_graph_batch_sizes).
func TestTRTLLMGraphSizes(t *testing.T) {
	seq := func(lo, hi int) []int {
		var s []int
		for i := lo; i <= hi; i++ {
			s = append(s, i)
		}
		return s
	}
	eights := []int{1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128}
	for _, c := range []struct {
		max     int
		padding bool
		want    []int
	}{
		{0, false, append(seq(1, 32), 64, 128)},             // the default: 1..31 + [32, 64, 128], 34 sizes
		{128, true, eights},                                 // [1, 2, 4] + 8·[1..16]
		{512, false, append(seq(1, 32), 64, 128, 256, 512)}, // 2^8 (range(8, ceil(log2 512) = 9)), then 512
		{1024, true, append(slices.Clone(eights), 256, 512, 1024)},
		{100, false, append(seq(1, 32), 64, 100)}, // sizes ≤ 100, then 100 itself
		{256, false, append(seq(1, 32), 64, 128, 256)},
	} {
		if got := TRTLLMGraphSizes(c.max, c.padding); !slices.Equal(got, c.want) {
			t.Errorf("TRTLLMGraphSizes(%d, %v) = %v, want %v", c.max, c.padding, got, c.want)
		}
	}
}

// TensorRT-LLM replays a CUDA graph only for a generation-only batch, and
// without padding only at a captured size.
func TestTRTLLMGraphDispatch(t *testing.T) {
	sizes := TRTLLMGraphSizes(0, false)
	exact := &CUDAGraphs{Sizes: sizes, DecodeOnly: true, ExactOnly: true, EagerLaunches: 300, PiecewiseLaunches: 65}
	padded := &CUDAGraphs{Sizes: TRTLLMGraphSizes(0, true), DecodeOnly: true, EagerLaunches: 300, PiecewiseLaunches: 65}
	for _, c := range []struct {
		name     string
		g        *CUDAGraphs
		b        models.Batch
		decodes  int
		launches int
	}{
		{"32 decodes: a captured size", exact, models.Batch{Decodes: 32}, 32, 1},
		{"40 decodes: no graph of 40, eager, unpadded", exact, models.Batch{Decodes: 40}, 40, 300},
		{"40 decodes with padding: the graph of 40", padded, models.Batch{Decodes: 40}, 40, 1},
		{"41 decodes with padding: padded to 48", padded, models.Batch{Decodes: 41}, 48, 1},
		{"a prefill in the batch: eager", exact, models.Batch{Prefills: 1, PrefillTokens: 20, Decodes: 11}, 11, 300},
		{"129 decodes: above the largest graph, eager", padded, models.Batch{Decodes: 129}, 129, 300},
	} {
		gb, l := c.g.dispatch(c.b)
		if gb.Decodes != c.decodes || l != c.launches {
			t.Errorf("%s: %d decodes, %d launches; want %d, %d", c.name, gb.Decodes, l, c.decodes, c.launches)
		}
	}
}

// The overlap scheduler prices and schedules exactly as vLLM-V1's async
// scheduling with CPU/GPU overlap: the same parts give the same records.
func TestTRTLLMOverlapIsVLLMAsync(t *testing.T) {
	g := &CUDAGraphs{Sizes: TRTLLMGraphSizes(0, false), DecodeOnly: true, ExactOnly: true, EagerLaunches: 300, Launch: 5e-6}
	reqs := randomRequests(3, 200)
	for _, overlap := range []bool{true, false} {
		tr := TRTLLM{Overlap: overlap, FrontEnd: true, RequestCost: 5000000, StepCPU: true, PerRequestCPU: 40e-6, Graphs: g}
		v := VLLMV1{AsyncScheduling: overlap, CPUOverlap: overlap, FrontEnd: true, RequestCost: 5000000, StepCPU: true, PerRequestCPU: 40e-6, Graphs: g}
		cfg := baseConfig(policies.TRTLLM{Chunked: true, ChunkUnit: 16}, 400, 256)
		a := runEngine(t, tr, cfg, reqs)
		b := runEngine(t, v, cfg, reqs)
		if !slices.Equal(recordsByID(a.recs), recordsByID(b.recs)) {
			t.Fatalf("overlap %v: trtllm and vllm-v1 with the same parts differ", overlap)
		}
		if tr.JoinLag() != map[bool]int{true: 1, false: 0}[overlap] {
			t.Fatalf("overlap %v: join lag %d", overlap, tr.JoinLag())
		}
	}
}

// GUARANTEED_NO_EVICT never preempts, on workloads where MAX_UTILIZATION
// (and vLLM's chunked batcher) must, and serves every request; the
// reservation it reads is never negative.
func TestTRTLLMNoEvict(t *testing.T) {
	checkAll = true
	defer func() { checkAll = false }()
	var muPreempt int64
	for seed := uint64(1); seed <= 20; seed++ {
		reqs := randomRequests(seed, 150)
		for _, chunked := range []bool{false, true} {
			gne := policies.TRTLLM{Chunked: chunked, ChunkUnit: 16}
			mu := policies.TRTLLM{Policy: policies.MaxUtilization, Chunked: chunked, ChunkUnit: 16}
			// 60 blocks of 16 = 960 tokens: the longest request (600 + 120)
			// fits alone; several do not.
			res, _, _ := run(t, baseConfig(gne, 60, 1024), reqs)
			if res.Preemptions != 0 || res.Finished != int64(len(reqs)) {
				t.Fatalf("seed %d chunked %v: GUARANTEED_NO_EVICT preempted %d times, finished %d of %d (replay: go test ./sim/serve -run TestTRTLLMNoEvict)",
					seed, chunked, res.Preemptions, res.Finished, len(reqs))
			}
			res, _, _ = run(t, baseConfig(mu, 60, 1024), reqs)
			if res.Finished != int64(len(reqs)) {
				t.Fatalf("seed %d: MAX_UTILIZATION finished %d of %d", seed, res.Finished, len(reqs))
			}
			muPreempt += res.Preemptions
		}
	}
	if muPreempt == 0 {
		t.Fatal("MAX_UTILIZATION never preempted: the workload does not exercise the KV limit")
	}
}

// The admission count of GUARANTEED_NO_EVICT on the engine: 20 blocks of
// 16 tokens, four requests of prompt 64 and output 96 arriving together.
// Each reserves ceil((64 + 96)/16) = 10 blocks to completion, so two run
// at once and the other two start when the first two finish; MAX_UTILIZATION
// starts all four (each prompt takes 4 blocks) and pauses when they grow.
func TestTRTLLMAdmissionCount(t *testing.T) {
	reqs := make([]workload.Request, 4)
	for i := range reqs {
		reqs[i] = workload.Request{ID: int64(i), PromptTokens: 64, OutputTokens: 96}
	}
	for _, c := range []struct {
		b          policies.TRTLLM
		firstBatch int
		preempted  bool
	}{
		{policies.TRTLLM{ChunkUnit: 16}, 2, false},
		{policies.TRTLLM{Policy: policies.MaxUtilization, ChunkUnit: 16}, 4, true},
	} {
		res, rec, _ := run(t, baseConfig(c.b, 20, 1024), reqs)
		if rec.steps[0].Prefills != c.firstBatch || (res.Preemptions > 0) != c.preempted || res.Finished != 4 {
			t.Errorf("%s: first step %d prompts, %d preemptions, %d finished; want %d, preempted %v, 4",
				c.b.Name(), rec.steps[0].Prefills, res.Preemptions, res.Finished, c.firstBatch, c.preempted)
		}
	}
}
