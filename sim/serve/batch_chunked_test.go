package serve

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
)

// TestChunkedFitChunk checks Instance.fitChunk against the definition of
// policies' fitChunk (the largest m ≤ n whose new blocks fit in free),
// found by trying every m, for power-of-two and other block sizes.
func TestChunkedFitChunk(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, bs := range []int{1, 3, 16, 17, 64} {
		in := newInstance(0, baseConfig(policies.Chunked{}, 100, 512), &World{})
		in.cfg.BlockSize, in.bsShift = bs, -1
		if bs&(bs-1) == 0 {
			for in.bsShift = 0; 1<<in.bsShift != bs; in.bsShift++ {
			}
		}
		for range 4000 {
			computed, n, free := r.IntN(300), r.IntN(200)-10, r.IntN(20)-2
			want := 0
			for m := 1; m <= n && free >= 0; m++ {
				if in.blocksOf(computed+m)-in.blocksOf(computed) <= free {
					want = m
				}
			}
			if got := in.fitChunk(computed, n, free); got != want {
				t.Fatalf("block size %d: fitChunk(%d, %d, %d) = %d, want %d", bs, computed, n, free, got, want)
			}
		}
	}
}

// TestChunkedMatchesPolicy runs random workloads under policies.Chunked on
// small caches (partial prefills shrunk to the free blocks, preemption),
// with and without prefix caching, swap, offload tiers and a join lag,
// with checkAll on: every step's batchChunked decision is compared with
// policies.Chunked's through the view (checkChunked panics on a
// difference).
func TestChunkedMatchesPolicy(t *testing.T) {
	checkAll = true
	defer func() { checkAll = false }()
	var preempts, hits int64
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		cfg := baseConfig(policies.Chunked{}, 40+r.IntN(60), []int{64, 100, 256, 1024}[r.IntN(4)])
		cfg.Limits.MaxNumSeqs = 2 + r.IntN(12)
		cfg.BlockSize = []int{16, 16, 12}[r.IntN(3)]
		cfg.PrefixCache = r.IntN(2) == 0
		if r.IntN(3) == 0 {
			cfg.Preempt, cfg.HostBW, cfg.KVBytesPerToken, cfg.SwapSpace = PreemptSwap, 25e9, 1e5, float64(r.IntN(3))*5e7
		}
		if r.IntN(2) == 0 { // an offload tier: requests wait, loading, outside the running list
			cfg.PrefixCache, cfg.BlockSize, cfg.KVBytesPerToken = true, 16, 1000
			cfg.Tiers = []KVTier{{Name: "cpu", Bytes: 64 * 1000 * float64(2+r.IntN(12)), ReadBW: 1e7 + float64(r.IntN(3))*1e8, WriteBW: 1e8}}
		}
		reqs := randomRequests(seed, 150)
		for i := range reqs {
			g := uint64(r.IntN(4))
			reqs[i].Prefix = []uint64{g<<8 | 1, g<<8 | 2, g<<8 | 3}[:min(3, reqs[i].PromptTokens/64)]
			if len(cfg.Tiers) > 0 {
				reqs[i].Prefix = hashesFrom(uint64(r.IntN(6)), reqs[i].PromptTokens/64) // whole prompts: loads from the tier
			}
			reqs[i].PrefixBlockTokens = 64
		}
		c := Config{Instance: cfg, Replicas: 1 + r.IntN(2), Router: &policies.RoundRobin{}, Seed: seed}
		if r.IntN(3) == 0 {
			c.Engine = &VLLMV1{AsyncScheduling: true, FrontEnd: true, RequestCost: 3 * sim.Millisecond, TokenCost: 100 * sim.Microsecond}
		}
		t.Run(fmt.Sprintf("seed%d/blocks%d/bs%d/cache=%v/tiers%d", seed, cfg.Blocks, cfg.BlockSize, cfg.PrefixCache, len(cfg.Tiers)), func(t *testing.T) {
			res, _ := runCfg(t, c, reqs)
			if res.Finished+res.Rejected != int64(len(reqs)) || res.Finished < int64(len(reqs))/2 {
				t.Fatalf("finished %d and rejected %d of %d", res.Finished, res.Rejected, len(reqs))
			}
			preempts += res.Preemptions
			hits += res.PrefixHitTokens
		})
	}
	if preempts == 0 || hits == 0 {
		t.Fatalf("preemptions %d, prefix hits %d: a path is not exercised", preempts, hits)
	}
}

// TestChunkedCheckCatches: checkChunked panics when the decision differs
// from policies.Chunked's (so TestChunkedMatchesPolicy can fail).
func TestChunkedCheckCatches(t *testing.T) {
	in := newInstance(0, baseConfig(policies.Chunked{}, 100, 512), &World{})
	in.dec.Decode = true // nothing decodes: Chunked decides no decode
	defer func() {
		if recover() == nil {
			t.Fatal("checkChunked let a wrong decision pass")
		}
	}()
	in.checkChunked()
}
