package serve

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/workload"
)

func runCfg(t *testing.T, cfg Config, reqs []workload.Request) (Result, *recorder) {
	t.Helper()
	rec := &recorder{t: t}
	cfg.Source = &sliceSource{reqs: reqs}
	cfg.Collector = metrics.NewCollector(metrics.SLO{})
	cfg.Sink = rec
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res, rec
}

func recordsByID(recs []metrics.Record) []metrics.Record {
	out := slices.Clone(recs)
	slices.SortFunc(out, func(a, b metrics.Record) int { return int(a.ID - b.ID) })
	return out
}

// One replica behind any router behaves exactly as the bare instance.
func TestOneReplicaAnyRouter(t *testing.T) {
	reqs := randomRequests(11, 200)
	base := baseConfig(policies.Chunked{}, 80, 512)
	_, want, _ := run(t, base, reqs)
	for _, name := range []string{"round-robin", "least-outstanding", "least-kv", "power-of-two", "prefix-affinity"} {
		router, err := policies.RouterByName(name, rand.New(rand.NewPCG(1, StreamRouting)))
		if err != nil {
			t.Fatal(err)
		}
		_, got := runCfg(t, Config{Instance: base, Router: router, RouterStaleness: 5 * sim.Millisecond}, reqs)
		if !slices.Equal(got.recs, want.recs) {
			t.Errorf("%s: records differ from the bare instance", name)
		}
	}
}

// Chunked prefill with a budget at least as long as every prompt runs the
// same iterations as unchunked (mixed) continuous batching.
func TestChunkedWithLargeBudgetEqualsMixed(t *testing.T) {
	reqs := randomRequests(12, 300) // prompts ≤ 600 tokens
	_, a, _ := run(t, baseConfig(policies.Chunked{}, 2000, 4096), reqs)
	_, b, _ := run(t, baseConfig(policies.Mixed{}, 2000, 4096), reqs)
	if !slices.Equal(a.recs, b.recs) {
		t.Fatal("chunked with a budget ≥ every prompt differs from mixed")
	}
}

// Static batching with batch size 1 is sequential FCFS service: each
// request starts when it has arrived and the previous one has finished, and
// takes one prefill iteration then output−1 decode iterations alone. With
// step time 1000 µs + 10 µs per token, a request of prompt p and output o
// takes 1000 + 10p µs to its first token, then 1010 µs per further token.
func TestStaticBatchOneIsSequentialFCFS(t *testing.T) {
	reqs := randomRequests(13, 100)
	cfg := baseConfig(policies.Static{}, 1000, 1024)
	cfg.Limits.MaxNumSeqs = 1
	_, rec, _ := run(t, cfg, reqs)
	free := sim.Time(0)
	for i, q := range reqs {
		start := max(q.Arrival, free)
		first := start + sim.Time(1000+10*q.PromptTokens)*sim.Microsecond
		finish := first + sim.Time(q.OutputTokens-1)*1010*sim.Microsecond
		free = finish
		r := rec.recs[i]
		if r.ID != q.ID || r.FirstToken != first || r.Finish != finish {
			t.Fatalf("request %d: first %v finish %v, sequential FCFS gives %v, %v", q.ID, r.FirstToken, r.Finish, first, finish)
		}
	}
}

func withPrefix(reqs []workload.Request, hashes func(i int, q workload.Request) []uint64) []workload.Request {
	out := slices.Clone(reqs)
	for i := range out {
		out[i].Prefix = hashes(i, out[i])
		out[i].PrefixBlockTokens = 64
	}
	return out
}

// A prefix cache that never hits (every request's hashes are unique, and
// the KV is large enough that no request is preempted and recomputed, which
// would hit its own prefix) gives the same records as no cache: cached blocks
// are evicted on demand and count as free. 1,000 blocks hold the ≤ 8 running
// requests (≤ 720 tokens each) but not the 300 prompts' units, so the cache
// evicts.
func TestPrefixCacheWithoutHitsEqualsNoCache(t *testing.T) {
	for _, b := range []policies.Batcher{policies.Chunked{}, policies.PrefillFirst{}} {
		reqs := withPrefix(randomRequests(14, 300), func(i int, q workload.Request) []uint64 {
			h := make([]uint64, q.PromptTokens/64)
			for j := range h {
				h[j] = uint64(i)<<32 | uint64(j)
			}
			return h
		})
		cfg := baseConfig(b, 1000, 1024)
		_, want, _ := run(t, cfg, reqs)
		cfg.PrefixCache = true
		res, got := runCfg(t, Config{Instance: cfg}, reqs)
		if res.PrefixHitTokens != 0 || res.Preemptions != 0 || res.PrefixEvictions == 0 {
			t.Fatalf("%s: %d hit tokens, %d preemptions, %d evictions; want 0, 0, > 0", b.Name(), res.PrefixHitTokens, res.Preemptions, res.PrefixEvictions)
		}
		if !slices.Equal(got.recs, want.recs) {
			t.Fatalf("%s: a never-hitting prefix cache changed the records", b.Name())
		}
	}
}

// Two requests sharing a 512-token prefix, the second arriving after the
// first finished: the second prefills only its last 488 tokens. With step
// time 1000 µs + 10 µs per token: first TTFT = 1000 + 10·1000 = 11,000 µs;
// second: 1000 + 10·(1000 − 512) = 5,880 µs.
func TestPrefixCacheHit(t *testing.T) {
	shared := []uint64{1, 2, 3, 4, 5, 6, 7, 8} // 8 × 64 = 512 tokens
	reqs := []workload.Request{
		{ID: 0, Arrival: 0, PromptTokens: 1000, OutputTokens: 2, Prefix: shared, PrefixBlockTokens: 64},
		{ID: 1, Arrival: sim.Second, PromptTokens: 1000, OutputTokens: 2, Prefix: shared, PrefixBlockTokens: 64},
	}
	cfg := baseConfig(policies.Chunked{}, 1000, 2048)
	cfg.PrefixCache = true
	res, rec := runCfg(t, Config{Instance: cfg}, reqs)
	ttft := []sim.Time{rec.recs[0].FirstToken - rec.recs[0].Arrival, rec.recs[1].FirstToken - rec.recs[1].Arrival}
	if ttft[0] != 11000*sim.Microsecond || ttft[1] != 5880*sim.Microsecond {
		t.Fatalf("TTFTs %v, want 11ms, 5.88ms", ttft)
	}
	if res.PrefixHitTokens != 512 || res.PromptTokensAdmitted != 2000 {
		t.Fatalf("hit tokens %d of %d, want 512 of 2000", res.PrefixHitTokens, res.PromptTokensAdmitted)
	}
}

// TestRandomPolicyInvariants runs random workloads through combinations of
// batchers, schedulers, preemption modes, prefix caching and replicas, with
// the full invariant check after every iteration.
func TestRandomPolicyInvariants(t *testing.T) {
	checkAll = true
	defer func() { checkAll = false }()
	batchers := []policies.Batcher{policies.Chunked{}, policies.PrefillFirst{}, policies.Mixed{}, policies.DecodeFirst{},
		policies.Static{}, policies.Dynamic{MaxWait: 20 * sim.Millisecond}}
	scheds := []policies.Scheduler{policies.FCFS{}, policies.SJF{}, policies.SJF{ByPrediction: true}, policies.EDF{},
		policies.Priority{Classes: map[string]int{"a": 0, "b": 1}}}
	var swaps, hits, preempts int64
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		b := batchers[r.IntN(len(batchers))]
		sch := scheds[r.IntN(len(scheds))]
		cfg := baseConfig(b, 60, 1024)
		cfg.PrefixCache = r.IntN(2) == 0
		if r.IntN(2) == 0 {
			cfg.Preempt, cfg.HostBW, cfg.KVBytesPerToken, cfg.SwapSpace = PreemptSwap, 25e9, 1e5, float64(r.IntN(3))*5e7
		}
		if r.IntN(2) == 0 {
			cfg.Victim = VictimLowestPriority
		}
		reqs := randomRequests(seed, 150)
		for i := range reqs {
			reqs[i].Class = []string{"a", "b"}[i%2]
			g := uint64(r.IntN(4)) // four shared system prompts
			reqs[i].Prefix = []uint64{g<<8 | 1, g<<8 | 2, g<<8 | 3}[:min(3, reqs[i].PromptTokens/64)]
			reqs[i].PrefixBlockTokens = 64
		}
		replicas := 1 + r.IntN(3)
		router, _ := policies.RouterByName([]string{"round-robin", "least-outstanding", "least-kv", "power-of-two", "prefix-affinity"}[r.IntN(5)],
			rand.New(rand.NewPCG(seed, StreamRouting)))
		name := fmt.Sprintf("seed%d/%s/%s/%s/cache=%v/x%d", seed, b.Name(), sch.Name(), cfg.Preempt, cfg.PrefixCache, replicas)
		t.Run(name, func(t *testing.T) {
			res, rec := runCfg(t, Config{Instance: cfg, Replicas: replicas, Router: router, Scheduler: sch, PredictError: 0.5,
				TTFTSLO: 200 * sim.Millisecond, Seed: seed}, reqs)
			if res.Finished != int64(len(reqs)) || res.Rejected != 0 {
				t.Fatalf("finished %d rejected %d of %d", res.Finished, res.Rejected, len(reqs))
			}
			for _, x := range recordsByID(rec.recs) {
				q := reqs[x.ID]
				if x.OutputTokens != q.OutputTokens || x.FirstToken <= x.Arrival || x.Finish < x.FirstToken {
					t.Fatalf("request %d: bad record %+v", x.ID, x)
				}
			}
			swaps += res.SwapOuts
			hits += res.PrefixHitTokens
			preempts += res.Preemptions
		})
	}
	if swaps == 0 || hits == 0 || preempts == 0 {
		t.Fatalf("swaps %d, prefix hits %d, preemptions %d: a path is not exercised", swaps, hits, preempts)
	}
}

// A dynamic batcher with max wait 50 ms holds a lone request until then.
// TTFT = 50 ms wait + (1000 + 10·100) µs prefill = 52 ms.
func TestDynamicWaits(t *testing.T) {
	cfg := baseConfig(policies.Dynamic{MaxWait: 50 * sim.Millisecond}, 100, 1024)
	_, rec, _ := run(t, cfg, []workload.Request{{ID: 0, Arrival: sim.Second, PromptTokens: 100, OutputTokens: 1}})
	if got := rec.recs[0].FirstToken - rec.recs[0].Arrival; got != 52*sim.Millisecond {
		t.Fatalf("TTFT %v, want 52ms", got)
	}
}

// With one sequence at a time and all requests queued behind a long first
// one, SJF serves the rest shortest prompt first and FCFS in arrival order.
func TestSchedulerOrder(t *testing.T) {
	reqs := []workload.Request{
		{ID: 0, Arrival: 0, PromptTokens: 500, OutputTokens: 50},
		{ID: 1, Arrival: 1, PromptTokens: 300, OutputTokens: 5},
		{ID: 2, Arrival: 2, PromptTokens: 100, OutputTokens: 5},
		{ID: 3, Arrival: 3, PromptTokens: 200, OutputTokens: 5},
	}
	cfg := baseConfig(policies.Chunked{}, 1000, 1024)
	cfg.Limits.MaxNumSeqs = 1
	for _, c := range []struct {
		s    policies.Scheduler
		want []int64
	}{{policies.FCFS{}, []int64{0, 1, 2, 3}}, {policies.SJF{}, []int64{0, 2, 3, 1}}} {
		_, rec := runCfg(t, Config{Instance: cfg, Scheduler: c.s}, reqs)
		var got []int64
		for _, r := range rec.recs {
			got = append(got, r.ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: finish order %v, want %v", c.s.Name(), got, c.want)
		}
	}
}

// Admission: a queue cap of 2 with one sequence at a time and five requests
// at once: the first runs, two wait, two are rejected as queue-full.
func TestAdmissionQueueCap(t *testing.T) {
	var reqs []workload.Request
	for i := range 5 {
		reqs = append(reqs, workload.Request{ID: int64(i), Arrival: sim.Time(i), PromptTokens: 100, OutputTokens: 20})
	}
	cfg := baseConfig(policies.Chunked{}, 1000, 1024)
	cfg.Limits.MaxNumSeqs = 1
	res, rec := runCfg(t, Config{Instance: cfg, Admission: policies.QueueCap{Max: 2}}, reqs)
	if res.Finished != 3 || res.Rejected != 2 {
		t.Fatalf("finished %d rejected %d, want 3, 2", res.Finished, res.Rejected)
	}
	n := 0
	for _, r := range rec.recs {
		if r.Rejected == policies.RejectQueueFull {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d queue-full rejections, want 2", n)
	}
}

// A deferring token bucket of 10 req/s with burst 1 spaces ten simultaneous
// arrivals 100 ms apart and loses none.
func TestAdmissionTokenBucketDefers(t *testing.T) {
	var reqs []workload.Request
	for i := range 10 {
		reqs = append(reqs, workload.Request{ID: int64(i), PromptTokens: 10, OutputTokens: 2})
	}
	cfg := baseConfig(policies.Chunked{}, 1000, 1024)
	res, rec := runCfg(t, Config{Instance: cfg, Admission: &policies.TokenBucket{Rate: 10, Burst: 1, Defer: true}}, reqs)
	if res.Finished != 10 || res.Deferrals == 0 {
		t.Fatalf("finished %d deferrals %d", res.Finished, res.Deferrals)
	}
	last := recordsByID(rec.recs)[9]
	// The tenth token is due 9 × 100 ms after the first admission.
	if last.FirstToken < 900*sim.Millisecond {
		t.Fatalf("tenth request's first token at %v, want ≥ 900ms", last.FirstToken)
	}
}

// SLO-aware admission rejects what cannot meet its TTFT deadline: with a
// 20 ms TTFT SLO and requests whose prefill alone takes 11 ms arriving at
// once, the queue builds and later ones are rejected; everything admitted
// keeps its deadline up to the prediction's error.
func TestAdmissionSLOAware(t *testing.T) {
	var reqs []workload.Request
	for i := range 20 {
		reqs = append(reqs, workload.Request{ID: int64(i), PromptTokens: 1000, OutputTokens: 2})
	}
	cfg := baseConfig(policies.Chunked{}, 2000, 1024)
	res, rec := runCfg(t, Config{Instance: cfg, Admission: policies.SLOAware{}, TTFTSLO: 20 * sim.Millisecond}, reqs)
	if res.Rejected == 0 || res.Finished == 0 {
		t.Fatalf("finished %d rejected %d: want some of each", res.Finished, res.Rejected)
	}
	for _, r := range rec.recs {
		if r.Rejected == "" && r.FirstToken-r.Arrival > 30*sim.Millisecond {
			t.Errorf("admitted request %d has TTFT %v, far past the 20ms SLO", r.ID, r.FirstToken-r.Arrival)
		}
	}
}
