package serve

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// hashesFrom returns n chained hashes of a prefix identified by g.
func hashesFrom(g uint64, n int) []uint64 {
	h := make([]uint64, n)
	for i := range h {
		h[i] = g<<16 | uint64(i+1)
	}
	return h
}

// TestTierLoadArithmetic follows a prefix the GPU evicted back from the
// host tier. Blocks of 16 tokens, prefix units of 64 tokens (4 blocks), KV
// 1,000 B a token, so a unit is 64,000 B; step = 1000 µs + 10 µs a token.
//
//   - A (1,000 tokens, 15 full units) prefills; its 15 units are written
//     through to the host tier: 15 × 64,000 = 960,000 B.
//   - C (1,000 tokens, no prefix) needs 63 of the 70 blocks: 7 never used,
//     then the LRU (A's 3 private blocks, then its units in order) gives
//     A's units 0–13 up: the GPU no longer matches A's first unit.
//   - B (A's prompt) at 2 s: 0 GPU hits, 15 host-tier units (limit
//     (1000−1)/64 = 15); 960,000 B over 192e6 B/s = 5 ms; then its 40
//     remaining tokens, 1000 + 10·40 = 1,400 µs: TTFT 6.4 ms (without the
//     tier 1000 + 10·1000 = 11 ms).
func TestTierLoadArithmetic(t *testing.T) {
	pre := hashesFrom(1, 15)
	reqs := []workload.Request{
		{ID: 0, Arrival: 0, PromptTokens: 1000, OutputTokens: 2, Prefix: pre, PrefixBlockTokens: 64},
		{ID: 1, Arrival: sim.Second, PromptTokens: 1000, OutputTokens: 2},
		{ID: 2, Arrival: 2 * sim.Second, PromptTokens: 1000, OutputTokens: 2, Prefix: pre, PrefixBlockTokens: 64},
	}
	cfg := baseConfig(policies.Chunked{}, 70, 2048)
	cfg.PrefixCache, cfg.KVBytesPerToken = true, 1000
	for _, tc := range []struct {
		name  string
		tiers []KVTier
		ttft  sim.Time
	}{
		{"gpu-only", nil, 11 * sim.Millisecond},
		{"host-tier", []KVTier{{Name: "cpu", Bytes: 1e9, ReadBW: 192e6, WriteBW: 192e6}}, 6400 * sim.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkAll = true
			defer func() { checkAll = false }()
			cfg.Tiers = tc.tiers
			res, rec, _ := run(t, cfg, reqs)
			b := recordsByID(rec.recs)[2]
			if got := b.FirstToken - b.Arrival; got != tc.ttft {
				t.Fatalf("B's TTFT %v, want %v", got, tc.ttft)
			}
			if tc.tiers == nil {
				return
			}
			if res.TierHitTokens[0] != 960 || res.TierLoadBytes[0] != 960000 || res.TierLoadSeconds[0] != 0.005 || res.TierLoads != 1 {
				t.Fatalf("tier hits %d tokens, %g B loaded in %g s by %d loads; want 960, 960000, 0.005, 1",
					res.TierHitTokens[0], res.TierLoadBytes[0], res.TierLoadSeconds[0], res.TierLoads)
			}
			// A stores its 15 units (960,000 B) and its own full blocks
			// after them, 60 and 61 (1,000 tokens = 62 full blocks of 16;
			// 2 × 16,000 B); C its 62 own blocks (992,000 B); B finds the
			// units held (touched, not written) and stores its own 60, 61
			// (32,000 B): 2,016,000 B over 192e6 B/s = 10.5 ms.
			if res.TierStoreBytes[0] != 2016000 || math.Abs(res.TierStoreSeconds[0]-0.0105) > 1e-12 {
				t.Fatalf("stored %g B in %g s, want 2016000 B, 0.0105 s", res.TierStoreBytes[0], res.TierStoreSeconds[0])
			}
			if res.PrefixHitTokens != 0 {
				t.Fatalf("GPU prefix hits %d, want 0 (C evicted A's first unit)", res.PrefixHitTokens)
			}
		})
	}
}

// TestTierEvictionOrder checks LRU eviction per tier, store on eviction
// into the disk tier, and the load time over the two links. Units of
// 100 B; host tier 200 B (2 units), disk 300 B (3 units).
func TestTierEvictionOrder(t *testing.T) {
	var res Result
	k := newKVTiers([]KVTier{
		{Name: "cpu", Bytes: 200, ReadBW: 1000, WriteBW: 1000},
		{Name: "disk", Bytes: 300, ReadBW: 100, WriteBW: 50, OnEvict: true},
	}, &res)
	where := func() []int {
		var w []int
		for h := uint64(1); h <= 5; h++ {
			w = append(w, k.where(prefixKey(h)))
		}
		return w
	}
	k.store(prefixKey(1), 100)
	k.store(prefixKey(2), 100)
	k.store(prefixKey(1), 100) // touched: 2 is now the host's LRU
	k.store(prefixKey(3), 100) // evicts 2 to disk
	if got, want := where(), []int{0, 1, 0, -1, -1}; !slices.Equal(got, want) {
		t.Fatalf("after storing 1, 2, 1, 3: tiers %v, want %v", got, want)
	}
	k.store(prefixKey(4), 100) // evicts 1 (the host's LRU) to disk
	k.store(prefixKey(5), 100) // evicts 3 to disk: disk holds 2, 1, 3 (full)
	if got, want := where(), []int{1, 1, 1, 0, 0}; !slices.Equal(got, want) {
		t.Fatalf("after storing 4, 5: tiers %v, want %v", got, want)
	}
	// 3 evictions from the host; 5 units written to it, 3 to disk.
	if res.TierEvictions != [MaxTiers]int64{3, 0} || res.TierStoreBytes != [MaxTiers]float64{500, 300} {
		t.Fatalf("evictions %v, stored %v; want [3 0], [500 300]", res.TierEvictions, res.TierStoreBytes)
	}
	// Loading 2 (disk) and 5 (host) at 0: the disk link reads 100 B at
	// 100 B/s = 1 s, the host link carries both, 200 B at 1000 B/s =
	// 0.2 s; pipelined, the load ends at max(1, 0.2) = 1 s. It moves no
	// unit; it touches 2, so the disk's LRU is now 1.
	if end := k.load([]uint64{2, 5}, 64, 100, 0, 0, 0, 0, 0, 0); end != sim.Second {
		t.Fatalf("load ends at %v, want 1 s", end)
	}
	if res.TierLoadBytes != [MaxTiers]float64{200, 100} || res.TierHitTokens != [MaxTiers]int64{64, 64} {
		t.Fatalf("loaded %v B, hits %v tokens; want [200 100], [64 64]", res.TierLoadBytes, res.TierHitTokens)
	}
	// Storing 6 evicts the host's LRU, 4, to disk, whose LRU, 1, goes.
	k.store(prefixKey(6), 100)
	if got, want := where(), []int{-1, 1, 1, 1, 0}; !slices.Equal(got, want) || k.where(prefixKey(6)) != 0 {
		t.Fatalf("after storing 6: tiers %v (6: %d), want %v (6: 0)", got, k.where(prefixKey(6)), want)
	}
	// A second load queues behind the first on the host link, busy until
	// 0.2 s: unit 5 at 0.1 s starts at 0.2 s and ends at 0.3 s.
	if end := k.load([]uint64{5}, 64, 100, 0, 0, 0, 0, 0, 100*sim.Millisecond); end != 300*sim.Millisecond {
		t.Fatalf("second load ends at %v, want 300 ms", end)
	}
	k.check()
}

// TestTierBigGPUUnchanged is metamorphic: with a GPU cache that never
// evicts, a host tier holds nothing the GPU does not, so every record
// equals the GPU-only run's.
func TestTierBigGPUUnchanged(t *testing.T) {
	reqs := randomRequests(3, 200)
	for i := range reqs {
		reqs[i].Prefix = hashesFrom(uint64(i%5), reqs[i].PromptTokens/64)
		reqs[i].PrefixBlockTokens = 64
	}
	cfg := baseConfig(policies.Chunked{}, 100000, 1024)
	cfg.PrefixCache, cfg.KVBytesPerToken = true, 1000
	_, off, _ := run(t, cfg, reqs)
	cfg.Tiers = []KVTier{{Name: "cpu", Bytes: 1e9, ReadBW: 1e9, WriteBW: 1e9}}
	res, on, _ := run(t, cfg, reqs)
	if res.TierLoads != 0 || res.TierStoreBytes[0] == 0 {
		t.Fatalf("%d loads, %g B stored: want none loaded, some stored", res.TierLoads, res.TierStoreBytes[0])
	}
	if !slices.Equal(recordsByID(off.recs), recordsByID(on.recs)) {
		t.Fatal("records differ with a host tier the GPU never needs")
	}
}

// TestRandomTierInvariants runs random workloads with shared prefixes on
// small GPU caches and small tiers, with the expensive invariant check
// after every step (tiers within capacity, each unit once per tier, the
// loading requests' blocks and references counted), and checks that every
// request finishes and loads happen from both tiers, preempted requests'
// own blocks among them (a fifth of the requests carry no prefix hashes:
// their blocks are all their own).
func TestRandomTierInvariants(t *testing.T) {
	checkAll = true
	defer func() { checkAll = false }()
	var hits, own [MaxTiers]int64
	var dropped int64
	for seed := uint64(1); seed <= 24; seed++ {
		r := rand.New(rand.NewPCG(seed, 8))
		b := []policies.Batcher{policies.Chunked{}, policies.PrefillFirst{}, policies.Mixed{}}[r.IntN(3)]
		cfg := baseConfig(b, 60+r.IntN(40), 1024)
		cfg.PrefixCache, cfg.KVBytesPerToken = true, 1000
		if r.IntN(2) == 0 {
			cfg.Preempt, cfg.HostBW, cfg.SwapSpace = PreemptSwap, 25e6, 2e5
		}
		unit := 64 * 1000.0
		cfg.Tiers = []KVTier{{Name: "cpu", Bytes: unit * float64(2+r.IntN(12)), ReadBW: 1e7 + float64(r.IntN(5))*1e8, WriteBW: 1e8}}
		if r.IntN(3) > 0 {
			cfg.Tiers = append(cfg.Tiers, KVTier{Name: "disk", Bytes: unit * float64(4+r.IntN(30)), ReadBW: 5e6, WriteBW: 3e6, OnEvict: r.IntN(2) == 0})
		}
		reqs := randomRequests(seed, 150)
		for i := range reqs {
			if i%5 == 4 {
				continue
			}
			reqs[i].Prefix = hashesFrom(uint64(r.IntN(6)), reqs[i].PromptTokens/64)
			reqs[i].PrefixBlockTokens = 64
		}
		replicas := 1 + r.IntN(2)
		t.Run(fmt.Sprintf("seed%d/%s/tiers%d/x%d", seed, b.Name(), len(cfg.Tiers), replicas), func(t *testing.T) {
			res, rec := runCfg(t, Config{Instance: cfg, Replicas: replicas, Router: policies.PrefixAffinity{}, Seed: seed}, reqs)
			if res.Finished != int64(len(reqs)) || len(rec.recs) != len(reqs) {
				t.Fatalf("finished %d of %d", res.Finished, len(reqs))
			}
			for i := range hits {
				hits[i] += res.TierHitTokens[i]
				own[i] += res.TierPreemptHitTokens[i]
			}
			dropped += res.TierLoadsDropped
		})
	}
	if hits[0] == 0 || hits[1] == 0 || own[0] == 0 || own[1] == 0 || dropped == 0 {
		t.Fatalf("tier hits %v, own-block hits %v, loads dropped %d: a path is not exercised", hits, own, dropped)
	}
}

// TestTierConfigErrors: tiers need prefix caching, a colocated instance
// and positive capacities and rates.
func TestTierConfigErrors(t *testing.T) {
	ok := KVTier{Name: "cpu", Bytes: 1e9, ReadBW: 1e9, WriteBW: 1e9}
	for _, tc := range []struct {
		name  string
		edit  func(*InstanceConfig)
		wants string
	}{
		{"no-prefix-cache", func(c *InstanceConfig) { c.PrefixCache = false }, "need prefix caching"},
		{"zero-capacity", func(c *InstanceConfig) { c.Tiers[0].Bytes = 0 }, "must be finite numbers > 0"},
		{"on-evict-first", func(c *InstanceConfig) { c.Tiers[0].OnEvict = true }, "written through"},
		{"three", func(c *InstanceConfig) { c.Tiers = []KVTier{ok, ok, ok} }, "at most 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(policies.Chunked{}, 100, 1024)
			cfg.PrefixCache, cfg.KVBytesPerToken, cfg.Tiers = true, 1000, []KVTier{ok}
			tc.edit(&cfg)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.wants) {
				t.Fatalf("error %v, want one saying %q", err, tc.wants)
			}
		})
	}
}

// TestQueueInsertOrder checks the waiting queue's ordered insert (shifting
// the shorter side) against a sorted reference on random keys, with
// removals from the front mixed in so that the ring wraps.
func TestQueueInsertOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	var q queue
	var ref []*request
	for i := range 3000 {
		if len(ref) > 0 && r.IntN(3) == 0 {
			if got := q.removeAt(0); got != ref[0] {
				t.Fatalf("step %d: front %d, want %d", i, got.id, ref[0].id)
			}
			ref = ref[1:]
			continue
		}
		x := &request{id: int64(i), key: int64(r.IntN(500))}
		q.insert(x)
		j, _ := slices.BinarySearchFunc(ref, x, func(a, b *request) int {
			if a.less(b) {
				return -1
			}
			return 1
		})
		ref = slices.Insert(ref, j, x)
		for k := range ref {
			if q.at(k) != ref[k] {
				t.Fatalf("step %d: position %d holds %d, want %d", i, k, q.at(k).id, ref[k].id)
			}
		}
	}
}

// TestTierKeysPackAndWide stores, in a tier of room for 6 units of 1 B,
// keys on both sides of packSelf's limits (ids below 2^40 and blocks below
// 2^24 pack, others go to the selfKey map) and a prefix hash equal to a
// packed own key: each is found as itself only, and the seventh store
// evicts the first (LRU), from whichever map held it.
func TestTierKeysPackAndWide(t *testing.T) {
	keys := []tierKey{
		ownKey(1<<40-1, 1<<24-1), // packs: the largest id and block
		ownKey(1<<40, 0),         // id too large: wide
		ownKey(0, 1<<24),         // block too large: wide
		ownKey(-1, 3),            // negative id: wide
		ownKey(1, 0),             // packs as 1<<24
		prefixKey(1 << 24),       // the same word as ownKey(1, 0), a prefix unit
	}
	wantPacked := []bool{true, false, false, false, true, false}
	for i, k := range keys[:5] {
		if _, ok := packSelf(k.self); ok != wantPacked[i] {
			t.Errorf("packSelf(%+v) packs = %v, want %v", k.self, ok, wantPacked[i])
		}
	}
	tiers := newKVTiers([]KVTier{{Name: "cpu", Bytes: 6, ReadBW: 1, WriteBW: 1}}, &Result{})
	lru := &tiers.lru[0]
	for i, k := range keys {
		tiers.store(k, 1)
		if got := lru.units(); got != i+1 {
			t.Fatalf("after storing %d keys the tier holds %d units", i+1, got)
		}
	}
	tiers.check()
	if len(lru.prefix) != 1 || len(lru.own.packed) != 2 || len(lru.own.wide) != 3 {
		t.Errorf("maps hold %d prefix, %d packed, %d wide units; want 1, 2, 3", len(lru.prefix), len(lru.own.packed), len(lru.own.wide))
	}
	seen := 0
	lru.own.each(func(k selfKey, n *tierNode) {
		seen++
		if n.key != ownKey(k.id, k.block) {
			t.Errorf("each gives key %+v for the node of %+v", k, n.key)
		}
	})
	if seen != 5 {
		t.Errorf("each visits %d own blocks, want 5", seen)
	}
	for _, k := range keys {
		if n := lru.get(k); n == nil || n.key != k {
			t.Errorf("get(%+v) = %v", k, n)
		}
	}
	for _, k := range []tierKey{ownKey(1<<40-1, 0), ownKey(1<<39, 1<<24-1), prefixKey(1<<64 - 1)} {
		if lru.has(k) {
			t.Errorf("has(%+v) for a key never stored", k)
		}
	}
	tiers.store(ownKey(2, 2), 1) // full: evicts keys[0], the least recently used
	tiers.check()
	if lru.has(keys[0]) || !lru.has(ownKey(2, 2)) || lru.units() != 6 {
		t.Errorf("the seventh store did not replace the first: has first %v, units %d", lru.has(keys[0]), lru.units())
	}
	if tiers.res.TierEvictions[0] != 1 {
		t.Errorf("evictions %d, want 1", tiers.res.TierEvictions[0])
	}
}
