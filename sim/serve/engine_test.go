package serve

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/workload"
)

func runEngine(t *testing.T, e Engine, cfg InstanceConfig, reqs []workload.Request) *recorder {
	t.Helper()
	rec := &recorder{t: t}
	_, err := Run(Config{Instance: cfg, Source: &sliceSource{reqs: reqs}, Collector: metrics.NewCollector(metrics.SLO{}), Sink: rec, Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func recordOf(t *testing.T, rec *recorder, id int64) metrics.Record {
	t.Helper()
	for _, r := range rec.recs {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no record of request %d", id)
	return metrics.Record{}
}

// Each mechanism of the vLLM V1 engine on the linear timer (a step is
// 1000 µs + 10 µs per token).
func TestEngineMechanisms(t *testing.T) {
	us := func(n int64) sim.Time { return sim.Time(n * 1000) }
	front := VLLMV1{FrontEnd: true, RequestCost: us(5000), TokenizeCost: 1e-6, TokenCost: us(200)}
	cases := []struct {
		name      string
		e         Engine
		reqs      []workload.Request
		id        int64
		ttft, e2e sim.Time
	}{
		{
			// Prefill 1000 + 10·100 = 2000 µs; two decodes of 1000 + 10 = 1010.
			name: "ideal lone request", e: Ideal{},
			reqs: []workload.Request{{ID: 0, PromptTokens: 100, OutputTokens: 3}},
			ttft: us(2000), e2e: us(2000 + 2*1010),
		},
		{
			// Ingress 5000 + 1 µs × 100 tokens = 5100; egress 200; an idle
			// engine schedules at once, async or not: TTFT 5100 + 2000 + 200.
			name: "front end, idle engine", e: VLLMV1{AsyncScheduling: true, FrontEnd: true, RequestCost: front.RequestCost, TokenizeCost: front.TokenizeCost, TokenCost: front.TokenCost},
			reqs: []workload.Request{{ID: 0, PromptTokens: 100, OutputTokens: 3}},
			ttft: us(5100 + 2000 + 200), e2e: us(5100 + 2000 + 2*1010 + 200),
		},
		{
			// Synchronous: B (arrives 2500, during A's first decode 2000–3010)
			// joins the step at 3010: A's decode + B's prefill 1000 + 10·101
			// = 2010 → first token at 5020, TTFT 2520; then B's decode
			// with A's, 1000 + 10·2 = 1020 → 6040, E2E 3540.
			name: "sync join", e: VLLMV1{},
			reqs: []workload.Request{{ID: 0, PromptTokens: 100, OutputTokens: 10}, {ID: 1, Arrival: us(2500), PromptTokens: 100, OutputTokens: 2}},
			id:   1, ttft: us(2520), e2e: us(3540),
		},
		{
			// Async: step 3010–4020 (A's decode) was planned before B arrived;
			// B joins at 4020: one decode step (1010) later than sync.
			name: "async join lags a step", e: VLLMV1{AsyncScheduling: true},
			reqs: []workload.Request{{ID: 0, PromptTokens: 100, OutputTokens: 10}, {ID: 1, Arrival: us(2500), PromptTokens: 100, OutputTokens: 2}},
			id:   1, ttft: us(2520 + 1010), e2e: us(3540 + 1010),
		},
		{
			// A (one output token) finishes with its prefill at 2000; B arrived
			// at 1000 and is held, but nothing else was planned: it runs at
			// 2000, as with sync: TTFT 2000 + 2000 − 1000 = 3000.
			name: "async, nothing else planned", e: VLLMV1{AsyncScheduling: true},
			reqs: []workload.Request{{ID: 0, PromptTokens: 100, OutputTokens: 1}, {ID: 1, Arrival: us(1000), PromptTokens: 100, OutputTokens: 1}},
			id:   1, ttft: us(3000), e2e: us(3000),
		},
		{
			// 50 µs per request in the batch: prefill 2000 + 50, decodes
			// 1010 + 50.
			name: "step CPU", e: VLLMV1{StepCPU: true, PerRequestCPU: 50e-6},
			reqs: []workload.Request{{ID: 0, PromptTokens: 100, OutputTokens: 3}},
			ttft: us(2050), e2e: us(2050 + 2*1060),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := runEngine(t, c.e, baseConfig(policies.Chunked{}, 1000, 512), c.reqs)
			r := recordOf(t, rec, c.id)
			if r.TTFT() != c.ttft || r.E2E() != c.e2e {
				t.Fatalf("TTFT %v E2E %v, want %v and %v", r.TTFT(), r.E2E(), c.ttft, c.e2e)
			}
		})
	}
}

// Metamorphic: vllm-v1 with every mechanism off is Ideal, record for
// record and step for step, on a seeded random workload with queueing,
// chunking and preemption.
func TestEngineAllOffIsIdeal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	var reqs []workload.Request
	at := sim.Time(0)
	for i := range 300 {
		at += sim.Time(rng.IntN(3_000_000))
		reqs = append(reqs, workload.Request{ID: int64(i), Arrival: at, PromptTokens: 1 + rng.IntN(900), OutputTokens: 1 + rng.IntN(200)})
	}
	cfg := baseConfig(policies.Chunked{}, 300, 512)
	off := VLLMV1{RequestCost: 5e6, TokenizeCost: 1e-6, TokenCost: 1e5, PerRequestCPU: 4e-5} // parameters set, switches off
	a := runEngine(t, Ideal{}, cfg, reqs)
	b := runEngine(t, off, cfg, reqs)
	if !slices.Equal(a.recs, b.recs) || !slices.Equal(a.steps, b.steps) {
		t.Fatalf("vllm-v1 with every mechanism off differs from ideal (replay: go test ./sim/serve -run TestEngineAllOffIsIdeal)")
	}
	// And each mechanism on changes something, and keeps every request.
	graphs := &CUDAGraphs{Sizes: CaptureSizes(300, 512), EagerLaunches: 300, PiecewiseLaunches: 65, Launch: 5e-6}
	for _, e := range []VLLMV1{{AsyncScheduling: true}, {FrontEnd: true, RequestCost: 5e6}, {StepCPU: true, PerRequestCPU: 4e-5},
		{AsyncScheduling: true, CPUOverlap: true, StepCPU: true, PerRequestCPU: 4e-3}, {Graphs: graphs}} {
		c := runEngine(t, e, cfg, reqs)
		if len(c.recs) != len(reqs) || slices.Equal(a.recs, c.recs) {
			t.Fatalf("%v: %d records, or the same as ideal", e, len(c.recs))
		}
	}
}

func TestEngineValidate(t *testing.T) {
	for _, e := range []VLLMV1{{RequestCost: -1}, {TokenCost: -1}, {TokenizeCost: -1e-6}, {PerRequestCPU: -1}} {
		if e.Validate() == nil {
			t.Errorf("%+v: no error", e)
		}
	}
	if err := (VLLMV1{AsyncScheduling: true, FrontEnd: true, StepCPU: true, PerRequestCPU: 4e-5}).Validate(); err != nil {
		t.Error(err)
	}
}
