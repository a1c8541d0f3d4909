package scenario

import (
	"testing"

	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/sim/serve"
)

// BenchmarkSimulate100k simulates 100,000 requests of the default workload
// (Llama-3.1-8B, BF16, one H100, chunked prefill, calibrated kernel times)
// at 17 req/s, at the instance's saturation (≈ 16.8 req/s completed when
// 3,000 requests are offered at 30 req/s), streaming requests.csv and
// steps.csv to disk. It reports simulated requests per wall-clock second.
func BenchmarkSimulate100k(b *testing.B) {
	s := default100k()
	benchRun(b, s)
}

// BenchmarkSimulate100kPP2 is BenchmarkSimulate100k at pp = 2 (two H100s,
// rounds priced by hardware.PipelineStep): the cost of pricing up to two
// micro-batches a step from the whole model's operators.
func BenchmarkSimulate100kPP2(b *testing.B) {
	s := default100k()
	s.PP = 2
	benchRun(b, s)
}

// BenchmarkSimulate100kWideEP64 is a 64-rank wide-EP simulation of 100k
// requests: DeepSeek-V3 at FP8 on GB200, DP 64 ranks with expert
// parallelism over all 64 GPUs (4 experts a GPU, one NVL72 domain), DeepEP
// low-latency, at 5 req/s a rank. Each rank is an instance, so the cost is
// 64 instances' steps, each priced with its all-to-all.
func BenchmarkSimulate100kWideEP64(b *testing.B) {
	s := Default()
	s.Model, s.GPU, s.Weights, s.KV = "deepseek-v3", "gb200", "fp8", "fp8"
	s.DP, s.ExpertParallel, s.All2All = 64, true, "deepep_low_latency"
	s.Workload.Rate = 64 * 5
	s.Workload.Requests = 100_000
	benchRun(b, s)
}

// default100k is BenchmarkSimulate100k's scenario: the default workload at
// 17 req/s, 100,000 requests.
func default100k() Scenario {
	s := Default()
	s.Workload.Rate = 17
	s.Workload.Requests = 100_000
	return s
}

// resolveBench resolves s or stops the benchmark.
func resolveBench(b *testing.B, s Scenario) *Plan {
	b.Helper()
	p, err := s.Resolve()
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// benchRun resolves s and runs it b.N times into one directory, streaming
// requests.csv and steps.csv, checking that all of its requests finish, and
// reports simulated requests per wall-clock second.
func benchRun(b *testing.B, s Scenario) {
	b.Helper()
	p, err := s.Resolve()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := Run(p, dir)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Result.Finished != int64(s.Workload.Requests) {
			b.Fatalf("finished %d of %d", rep.Result.Finished, s.Workload.Requests)
		}
	}
	b.ReportMetric(float64(b.N)*float64(s.Workload.Requests)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkSimulate100kNoFiles simulates 100,000 requests of the default
// workload at 12 req/s (the CLI's `run --requests 100000 --rate 12 -o ""`)
// and writes no files: the simulation goroutine's own cost (its event loop,
// pricing and metrics) and the summary, without the CSV writers it would
// otherwise wait for.
func BenchmarkSimulate100kNoFiles(b *testing.B) {
	s := Default()
	s.Workload.Rate = 12
	s.Workload.Requests = 100_000
	p := resolveBench(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := Run(p, "")
		if err != nil {
			b.Fatal(err)
		}
		if rep.Result.Finished != int64(s.Workload.Requests) {
			b.Fatalf("finished %d of %d", rep.Result.Finished, s.Workload.Requests)
		}
	}
	b.ReportMetric(float64(b.N)*float64(s.Workload.Requests)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkSimulate100kEAGLE3 is BenchmarkSimulate100k with EAGLE-3
// speculative decoding (k = 3): the cost of drawing every decoding
// request's acceptance each step and pricing the drafter's passes.
func BenchmarkSimulate100kEAGLE3(b *testing.B) {
	s := default100k()
	s.Speculative = &Speculative{Method: "eagle3", NumSpeculativeTokens: 3}
	benchRun(b, s)
}

// BenchmarkSimulate100kKVTier is BenchmarkSimulate100k with prefix caching
// on shared system prompts (1,024 tokens, 200 of them) and a 4,000-block
// GPU cache, without and with a 100 GiB host-memory offload tier: the
// cost of the tier's stores, lookups and loads.
func BenchmarkSimulate100kKVTier(b *testing.B) {
	for _, cpu := range []float64{0, 100} {
		name := "off"
		if cpu > 0 {
			name = "cpu"
		}
		b.Run(name, func(b *testing.B) {
			s := default100k()
			s.Workload.SharedPrefix, s.Workload.PrefixGroups = 1024, 200
			s.Batch.PrefixCaching = true
			s.Batch.NumGPUBlocksOverride = 4000
			s.Offload = &Offload{CPUGiB: cpu}
			benchRun(b, s)
		})
	}
}

// BenchmarkRunSetup resolves and runs a 10-request default scenario with
// its files: the fixed cost of one run (scenario resolution, the kernel
// model's build, the output set) that a sweep pays for every scenario.
func BenchmarkRunSetup(b *testing.B) {
	s := Default()
	s.Workload.Requests = 10
	dir := b.TempDir()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p, err := s.Resolve()
		if err != nil {
			b.Fatal(err)
		}
		rep, err := Run(p, dir)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Result.Finished != int64(s.Workload.Requests) {
			b.Fatalf("finished %d of %d", rep.Result.Finished, s.Workload.Requests)
		}
	}
}

// BenchmarkSimulate100kLoop is BenchmarkSimulate100k with the kernel
// model's step prices replayed: a first run records every price the
// engine asks for, in order, and the timed runs get them back from that
// list (each batch checked against the recorded one). What is left is the
// event loop's own work: the batcher, the engine's bookkeeping, the
// metrics and the files, without the pricing.
func BenchmarkSimulate100kLoop(b *testing.B) {
	s := default100k()
	p := resolveBench(b, s)
	k := p.Serve.Instance.Step
	if _, ok := k.(serve.PipelinedTimer); ok {
		b.Fatal("the replay timer does not price back-to-back steps apart")
	}
	ov, ok := k.(interface{ IterOverhead() float64 })
	if !ok {
		b.Fatal("the kernel model reports no per-iteration overhead")
	}
	rt := &replayTimer{k: k, overhead: ov.IterOverhead()}
	p.Serve.Instance.Step = rt
	dir := b.TempDir()
	first, err := Run(p, dir) // records
	if err != nil {
		b.Fatal(err)
	}
	rt.replay = true
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rt.next = 0
		rep, err := Run(p, dir)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Result != first.Result || rt.next != len(rt.steps) {
			b.Fatalf("replayed run differs: %+v after %d of %d steps, recorded %+v", rep.Result, rt.next, len(rt.steps), first.Result)
		}
	}
	b.ReportMetric(float64(b.N)*float64(s.Workload.Requests)/b.Elapsed().Seconds(), "req/s")
}

// replayTimer records the prices k gives, then replays them in order.
type replayTimer struct {
	k        serve.StepTimer
	overhead float64
	replay   bool
	steps    []pricedStep
	next     int
}

type pricedStep struct {
	b                    models.Batch
	seconds, flops, byts float64
}

func (t *replayTimer) IterOverhead() float64 { return t.overhead }

func (t *replayTimer) Step(b models.Batch) (seconds, flops, bytes float64) {
	if !t.replay {
		s, f, y := t.k.Step(b)
		t.steps = append(t.steps, pricedStep{b, s, f, y})
		return s, f, y
	}
	if t.next >= len(t.steps) || t.steps[t.next].b != b {
		panic("scenario: the replayed run asked for a batch the recording did not")
	}
	p := &t.steps[t.next]
	t.next++
	return p.seconds, p.flops, p.byts
}
