package serve

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/workload"
)

// linearTimer prices an iteration as base + perToken·tokens + perCtx·(KV
// tokens read), all in microseconds, so that step times are whole
// microseconds and scale exactly.
type linearTimer struct{ base, perToken, perCtx int64 }

func (t linearTimer) Step(b models.Batch) (float64, float64, float64) {
	us := t.base + t.perToken*int64(b.Tokens()) + t.perCtx*(b.DecodeCtx+b.PrefillCtx)
	return float64(us) * 1e-6, 0, 0
}

type sliceSource struct {
	reqs []workload.Request
	i    int
}

func (s *sliceSource) Next(r *workload.Request) bool {
	if s.i >= len(s.reqs) {
		return false
	}
	*r = s.reqs[s.i]
	s.i++
	return true
}

// recorder is a Sink that keeps copies and checks per-step invariants.
type recorder struct {
	t       *testing.T
	recs    []metrics.Record
	steps   []metrics.Step
	lastEnd map[int]sim.Time // per instance
}

func (r *recorder) Record(x *metrics.Record) error { r.recs = append(r.recs, *x); return nil }
func (r *recorder) Step(s *metrics.Step) error {
	if r.lastEnd == nil {
		r.lastEnd = map[int]sim.Time{}
	}
	if s.Start < r.lastEnd[s.Instance] {
		r.t.Fatalf("instance %d: iteration starts at %v before the previous one ended at %v: time went backwards", s.Instance, s.Start, r.lastEnd[s.Instance])
	}
	if s.KVBlocksUsed > s.KVBlocksTotal {
		r.t.Fatalf("KV blocks used %d > capacity %d", s.KVBlocksUsed, s.KVBlocksTotal)
	}
	r.lastEnd[s.Instance] = s.Start + s.Duration
	r.steps = append(r.steps, *s)
	return nil
}

func run(t *testing.T, cfg InstanceConfig, reqs []workload.Request) (Result, *recorder, metrics.Summary) {
	t.Helper()
	rec := &recorder{t: t}
	coll := metrics.NewCollector(metrics.SLO{})
	res, err := Run(Config{Instance: cfg, Source: &sliceSource{reqs: reqs}, Collector: coll, Sink: rec})
	if err != nil {
		t.Fatal(err)
	}
	return res, rec, coll.Summary()
}

func baseConfig(b policies.Batcher, blocks, budget int) InstanceConfig {
	return InstanceConfig{
		Step:        linearTimer{base: 1000, perToken: 10},
		Blocks:      blocks,
		BlockSize:   16,
		Limits:      policies.Limits{MaxNumSeqs: 8, MaxNumBatchedTokens: budget},
		Batcher:     b,
		MaxModelLen: 4096,
	}
}

// TestSingleRequestExact follows one request through chunked prefill and
// decode with step time = 1000 µs + 10 µs per token:
//
//	chunk 100 tokens: 0 → 2000 µs; chunk 100: → 4000; chunk 50: → 5500 (first token)
//	3 decodes of 1 token, 1010 µs each: tokens at 6510, 7520, 8530 µs
//
// so TTFT = 5.5 ms, E2E = 8.53 ms, TPOT = (8.53 − 5.5)/3 = 1.01 ms.
func TestSingleRequestExact(t *testing.T) {
	res, rec, sum := run(t, baseConfig(policies.Chunked{}, 1000, 100),
		[]workload.Request{{ID: 7, Arrival: 0, PromptTokens: 250, OutputTokens: 4}})
	if res.Finished != 1 || len(rec.recs) != 1 {
		t.Fatalf("finished %d, records %d; want 1, 1", res.Finished, len(rec.recs))
	}
	r := rec.recs[0]
	want := metrics.Record{ID: 7, Arrival: 0, FirstToken: 5500 * sim.Microsecond, Finish: 8530 * sim.Microsecond,
		PromptTokens: 250, OutputTokens: 4}
	if r != want {
		t.Fatalf("record = %+v\nwant     %+v", r, want)
	}
	if len(rec.steps) != 6 {
		t.Fatalf("%d iterations, want 6 (3 prefill chunks + 3 decodes)", len(rec.steps))
	}
	// ITL: the three decode gaps, 1.01 ms each.
	if sum.ITL.N != 3 || sum.ITL.Mean != 1.01 {
		t.Fatalf("ITL n=%d mean=%v, want 3, 1.01 ms", sum.ITL.N, sum.ITL.Mean)
	}
}

// randomRequests draws n requests with random gaps and lengths.
func randomRequests(seed uint64, n int) []workload.Request {
	r := rand.New(rand.NewPCG(seed, 99))
	reqs := make([]workload.Request, n)
	at := sim.Time(0)
	for i := range reqs {
		at += sim.Time(r.IntN(3000)) * sim.Microsecond
		reqs[i] = workload.Request{ID: int64(i), Arrival: at, PromptTokens: 1 + r.IntN(600), OutputTokens: 1 + r.IntN(120)}
	}
	return reqs
}

// TestRandomInvariants runs random workloads on a small KV cache (so that
// preemption happens) under both batchers with the expensive invariant check
// after every iteration, and checks conservation and each record.
func TestRandomInvariants(t *testing.T) {
	checkAll = true
	defer func() { checkAll = false }()
	var preemptions, selfHits int64
	for _, b := range []policies.Batcher{policies.Chunked{}, policies.PrefillFirst{}} {
		for i := uint64(0); i < 40; i++ {
			// Runs 20–39 replay seeds 1–20 with prefix caching: preempted
			// requests find their own blocks (the requests carry no
			// prefix hashes).
			seed, pc := i%20+1, i >= 20
			name := fmt.Sprintf("%s/seed%d/prefix=%t", b.Name(), seed, pc)
			t.Run(name, func(t *testing.T) {
				reqs := randomRequests(seed, 150)
				// 60 blocks × 16 = 960 tokens: the longest request (600 + 120 − 1 tokens) fits alone.
				cfg := baseConfig(b, 60, 1024)
				cfg.PrefixCache = pc
				res, rec, sum := run(t, cfg, reqs)
				preemptions += res.Preemptions
				selfHits += res.PreemptHitTokens
				if res.Arrived != int64(len(reqs)) || res.Finished+res.Rejected != res.Arrived || res.Rejected != 0 {
					t.Fatalf("arrived %d finished %d rejected %d, want %d, all finished", res.Arrived, res.Finished, res.Rejected, len(reqs))
				}
				byID := map[int64]workload.Request{}
				wantITL := int64(0)
				for _, q := range reqs {
					byID[q.ID] = q
					wantITL += int64(q.OutputTokens - 1)
				}
				for _, r := range rec.recs {
					q := byID[r.ID]
					if r.OutputTokens != q.OutputTokens || r.PromptTokens != q.PromptTokens {
						t.Fatalf("request %d: tokens %d/%d, want %d/%d", r.ID, r.PromptTokens, r.OutputTokens, q.PromptTokens, q.OutputTokens)
					}
					if r.Arrival != q.Arrival || r.FirstToken <= r.Arrival || r.Finish < r.FirstToken {
						t.Fatalf("request %d: arrival %v first %v finish %v out of order", r.ID, r.Arrival, r.FirstToken, r.Finish)
					}
					if q.OutputTokens == 1 && r.Finish != r.FirstToken {
						t.Fatalf("request %d with one output token finished after its first token", r.ID)
					}
				}
				if sum.ITL.N != wantITL {
					t.Fatalf("ITL samples %d, want Σ(output−1) = %d", sum.ITL.N, wantITL)
				}
			})
		}
	}
	if preemptions == 0 || selfHits == 0 {
		t.Fatalf("%d preemptions, %d self-hit tokens: the test does not exercise preemption and its cache hits", preemptions, selfHits)
	}
}

// TestScaleTime is metamorphic: multiplying every step time and every
// arrival time by k multiplies every record's times by k, exactly (step
// times are whole microseconds).
func TestScaleTime(t *testing.T) {
	const k = 3
	for _, b := range []policies.Batcher{policies.Chunked{}, policies.PrefillFirst{}} {
		reqs := randomRequests(5, 200)
		cfg := baseConfig(b, 80, 1024)
		cfg.Step = linearTimer{base: 700, perToken: 3, perCtx: 1}
		_, rec1, _ := run(t, cfg, reqs)
		scaled := slices.Clone(reqs)
		for i := range scaled {
			scaled[i].Arrival *= k
		}
		cfg.Step = linearTimer{base: 700 * k, perToken: 3 * k, perCtx: 1 * k}
		_, rec2, _ := run(t, cfg, scaled)
		if len(rec1.recs) != len(rec2.recs) {
			t.Fatalf("%s: %d vs %d records", b.Name(), len(rec1.recs), len(rec2.recs))
		}
		for i, r := range rec1.recs {
			s := rec2.recs[i]
			r.Arrival, r.FirstToken, r.Finish, r.Scheduled = r.Arrival*k, r.FirstToken*k, r.Finish*k, r.Scheduled*k
			if r != s {
				t.Fatalf("%s: record %d: scaled %+v\nwant %+v", b.Name(), i, s, r)
			}
		}
	}
}

// TestBatchersAgreeWithoutContention is metamorphic: with requests spaced so
// that each runs alone and a budget larger than every prompt, chunked prefill
// and prefill-first run the same iterations, so every record is equal.
func TestBatchersAgreeWithoutContention(t *testing.T) {
	reqs := randomRequests(9, 50)
	for i := range reqs {
		reqs[i].Arrival = sim.Time(i) * sim.Second // each finishes well within a second
	}
	_, a, _ := run(t, baseConfig(policies.Chunked{}, 1000, 1024), reqs)
	_, b, _ := run(t, baseConfig(policies.PrefillFirst{}, 1000, 1024), reqs)
	if !slices.Equal(a.recs, b.recs) {
		t.Fatal("chunked and prefill-first differ on a contention-free workload")
	}
}

func TestRejections(t *testing.T) {
	cases := []struct {
		name    string
		batcher policies.Batcher
		req     workload.Request
		want    string
	}{
		// max_model_len 4096 < 4000 + 200.
		{"context", policies.Chunked{}, workload.Request{PromptTokens: 4000, OutputTokens: 200}, RejectContext},
		// 100 blocks × 16 = 1600 tokens < 1500 + 200 − 1 = 1699.
		{"kv", policies.Chunked{}, workload.Request{PromptTokens: 1500, OutputTokens: 200}, RejectKVCapacity},
		// prefill-first with a 1024-token budget cannot run 1000 + 100 tokens in one iteration.
		{"budget", policies.PrefillFirst{}, workload.Request{PromptTokens: 1000, OutputTokens: 100}, RejectBudget},
		{"empty", policies.Chunked{}, workload.Request{PromptTokens: 10, OutputTokens: 0}, "empty-request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok := workload.Request{ID: 1, Arrival: sim.Millisecond, PromptTokens: 10, OutputTokens: 5}
			res, rec, sum := run(t, baseConfig(c.batcher, 100, 1024), []workload.Request{c.req, ok})
			if res.Rejected != 1 || res.Finished != 1 {
				t.Fatalf("rejected %d finished %d, want 1, 1", res.Rejected, res.Finished)
			}
			if rec.recs[0].Rejected != c.want {
				t.Fatalf("reason %q, want %q", rec.recs[0].Rejected, c.want)
			}
			if sum.RejectedBy[c.want] != 1 {
				t.Fatalf("summary rejected-by %v, want %s: 1", sum.RejectedBy, c.want)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	reqs := randomRequests(3, 300)
	_, a, _ := run(t, baseConfig(policies.Chunked{}, 70, 512), reqs)
	_, b, _ := run(t, baseConfig(policies.Chunked{}, 70, 512), reqs)
	if !slices.Equal(a.recs, b.recs) || !slices.Equal(a.steps, b.steps) {
		t.Fatal("same inputs gave different records")
	}
}
