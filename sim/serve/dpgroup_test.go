package serve

import (
	"testing"

	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/workload"
)

func runDP(t *testing.T, ranks int, lock DPLockstep, cfg InstanceConfig, reqs []workload.Request) (Result, *recorder) {
	t.Helper()
	rec := &recorder{t: t}
	res, err := Run(Config{Instance: cfg, Replicas: ranks, Router: &policies.RoundRobin{}, DPLockstep: lock,
		Source: &sliceSource{reqs: reqs}, Collector: metrics.NewCollector(metrics.SLO{}), Sink: rec})
	if err != nil {
		t.Fatal(err)
	}
	return res, rec
}

// TestDPLockstepSlowestRank: two DP ranks in lock-step at 1000 µs + 10 µs
// per token a step. Rank 0 prefills 200 tokens (3000 µs), rank 1 50 (1500
// µs): both steps end at 3000 µs, the slowest rank's. Rank 0 then decodes
// twice (1010 µs each) while rank 1, idle, runs a dummy batch of one token
// (1010 µs) in each wave: rank 0's last token at 3000 + 2 × 1010 = 5020 µs,
// 3 waves, 2 dummies. The group's mean tokens per rank reach Load before
// each wave's pricing: 125, then 0.5 twice. Without lock-step rank 1's
// request is done at 1500 µs.
func TestDPLockstepSlowestRank(t *testing.T) {
	reqs := []workload.Request{
		{ID: 0, Arrival: 0, PromptTokens: 200, OutputTokens: 3},
		{ID: 1, Arrival: 0, PromptTokens: 50, OutputTokens: 1},
	}
	var loads []float64
	res, rec := runDP(t, 2, DPLockstep{Ranks: 2, Load: func(v float64) { loads = append(loads, v) }}, baseConfig(policies.Chunked{}, 1000, 1000), reqs)
	finish := map[int64]sim.Time{}
	for _, r := range rec.recs {
		finish[r.ID] = r.Finish
	}
	if finish[0] != 5020*sim.Microsecond || finish[1] != 3000*sim.Microsecond {
		t.Errorf("finish times %v, want request 0 at 5020 µs, request 1 at 3000 µs", finish)
	}
	if res.DPWaves != 3 || res.DPDummySteps != 2 || res.Steps != 4 {
		t.Errorf("waves %d, dummies %d, steps %d; want 3, 2, 4", res.DPWaves, res.DPDummySteps, res.Steps)
	}
	if len(rec.steps) < 2 || rec.steps[0].Duration != 3000*sim.Microsecond || rec.steps[1].Duration != 3000*sim.Microsecond {
		t.Errorf("first wave's steps %+v, want both 3000 µs", rec.steps[:2])
	}
	want := []float64{125, 0, 0.5, 0, 0.5, 0}
	if len(loads) != len(want) {
		t.Fatalf("loads %v, want %v", loads, want)
	}
	for i := range want {
		if loads[i] != want[i] {
			t.Errorf("loads %v, want %v", loads, want)
			break
		}
	}
	free, _ := runDP(t, 2, DPLockstep{}, baseConfig(policies.Chunked{}, 1000, 1000), reqs)
	if free.DPWaves != 0 || free.Steps != 4 {
		t.Errorf("without lock-step: %d waves, %d steps; want 0, 4", free.DPWaves, free.Steps)
	}
}

// TestDPLockstepInvariants runs random workloads on 4 lock-step ranks with
// a small KV cache (preemptions) and checks: no request lost, every step of
// a wave starts and ends with the others (one duration per start time),
// KV within each rank's capacity (the recorder), and each wave at most one
// step per rank.
func TestDPLockstepInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		reqs := randomRequests(seed, 300)
		res, rec := runDP(t, 4, DPLockstep{Ranks: 4}, baseConfig(policies.Chunked{}, 200, 256), reqs)
		if res.Arrived != 300 || res.Finished+res.Rejected != res.Arrived {
			t.Errorf("seed %d: arrived %d, finished %d, rejected %d", seed, res.Arrived, res.Finished, res.Rejected)
		}
		type wave struct {
			dur   sim.Time
			ranks map[int]bool
		}
		waves := map[sim.Time]*wave{}
		for _, s := range rec.steps {
			w := waves[s.Start]
			if w == nil {
				w = &wave{dur: s.Duration, ranks: map[int]bool{}}
				waves[s.Start] = w
			}
			if s.Duration != w.dur || w.ranks[s.Instance] {
				t.Fatalf("seed %d: at %v rank %d steps %v, the wave's others %v (ranks %v)", seed, s.Start, s.Instance, s.Duration, w.dur, w.ranks)
			}
			w.ranks[s.Instance] = true
		}
		if int64(len(waves)) != res.DPWaves {
			t.Errorf("seed %d: %d distinct wave starts, %d waves", seed, len(waves), res.DPWaves)
		}
		if res.DPDummySteps != 4*res.DPWaves-res.Steps {
			t.Errorf("seed %d: %d dummies, want 4 × %d waves − %d steps", seed, res.DPDummySteps, res.DPWaves, res.Steps)
		}
	}
}

// halfBack prices a step that follows another at once at half the base
// (a PipelinedTimer, as vllm-v1's overlapped CPU).
type halfBack struct{ linearTimer }

func (h halfBack) StepPipelined(b models.Batch) (float64, float64, float64) {
	return float64(h.base/2+h.perToken*int64(b.Tokens())) * 1e-6, 0, 0
}

// TestDPLockstepBackToBack: a rank's step that follows its previous one at
// once is priced as the engine's back-to-back step under lock-step too.
// Two ranks prefill 100 tokens each from idle (1000 + 1000 µs), then
// decode back to back (500 + 10 µs): the last tokens at 2510 µs.
func TestDPLockstepBackToBack(t *testing.T) {
	cfg := baseConfig(policies.Chunked{}, 1000, 1000)
	cfg.Step = halfBack{linearTimer{base: 1000, perToken: 10}}
	reqs := []workload.Request{{ID: 0, PromptTokens: 100, OutputTokens: 2}, {ID: 1, PromptTokens: 100, OutputTokens: 2}}
	_, rec := runDP(t, 2, DPLockstep{Ranks: 2}, cfg, reqs)
	for _, r := range rec.recs {
		if r.Finish != 2510*sim.Microsecond {
			t.Errorf("request %d finished at %v, want 2510 µs", r.ID, r.Finish)
		}
	}
}
