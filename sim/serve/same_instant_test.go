package serve

import (
	"testing"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// Requests that arrive at the same instant are all queued before the
// batcher decides: 8 arrivals at t = 0 under a batch size (max_num_seqs)
// of 8 run as one batch of 8, not a batch of 1 and then one of 7. Step
// time = 1000 µs + 10 µs per token (baseConfig):
//
//	prefill 8 × 100 = 800 tokens: 1000 + 8000 = 9000 µs, first tokens at 9 ms
//	2 decodes of 8 tokens, 1080 µs each: last tokens at 9000 + 2160 = 11160 µs
//
// for every policy that forms batches (static and dynamic with and without
// a wait), and for the continuous batchers too.
func TestSameInstantArrivalsBatchTogether(t *testing.T) {
	reqs := make([]workload.Request, 8)
	for i := range reqs {
		reqs[i] = workload.Request{ID: int64(i), Arrival: 0, PromptTokens: 100, OutputTokens: 3}
	}
	for _, c := range []struct {
		name string
		b    policies.Batcher
	}{
		{"static", policies.Static{}},
		{"dynamic no wait", policies.Dynamic{}},
		{"dynamic 5 ms", policies.Dynamic{MaxWait: 5 * sim.Millisecond}}, // a full batch need not wait
		{"chunked", policies.Chunked{}},
		{"prefill-first", policies.PrefillFirst{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, rec, _ := run(t, baseConfig(c.b, 1000, 1024), reqs)
			if res.Finished != 8 || len(rec.steps) != 3 {
				t.Fatalf("finished %d in %d iterations, want 8 in 3 (one prefill of 8, two decodes)", res.Finished, len(rec.steps))
			}
			if s := rec.steps[0]; s.Prefills != 8 || s.PrefillTokens != 800 || s.Duration != 9000*sim.Microsecond {
				t.Errorf("first iteration %+v, want 8 prefills of 800 tokens in 9 ms", s)
			}
			for _, r := range rec.recs {
				if r.FirstToken != 9000*sim.Microsecond || r.Finish != 11160*sim.Microsecond {
					t.Errorf("request %d: first token %v, finish %v; want 9 ms, 11.16 ms", r.ID, r.FirstToken, r.Finish)
				}
			}
		})
	}
}

// A request arriving alone still starts at its arrival (the wake-up event is
// at the same instant), and one arriving while an iteration runs joins the
// next, as before.
func TestLoneArrivalStartsAtOnce(t *testing.T) {
	reqs := []workload.Request{
		{ID: 1, Arrival: 2 * sim.Millisecond, PromptTokens: 100, OutputTokens: 2},
		{ID: 2, Arrival: 3 * sim.Millisecond, PromptTokens: 100, OutputTokens: 2},
	}
	_, rec, _ := run(t, baseConfig(policies.Chunked{}, 1000, 1024), reqs)
	// Request 1: prefill 2 → 4 ms (1000 + 1000 µs). Request 2 waits for it,
	// then prefills with request 1's decode: 101 tokens, 2010 µs → 6.01 ms.
	if rec.steps[0].Start != 2*sim.Millisecond || rec.steps[0].Prefills != 1 {
		t.Fatalf("first iteration %+v, want one prefill starting at 2 ms", rec.steps[0])
	}
	if s := rec.steps[1]; s.Start != 4*sim.Millisecond || s.Prefills != 1 || s.Decodes != 1 {
		t.Fatalf("second iteration %+v, want request 2's prefill with request 1's decode at 4 ms", s)
	}
}
