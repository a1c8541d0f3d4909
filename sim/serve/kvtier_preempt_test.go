package serve

import (
	"math"
	"slices"
	"testing"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim/workload"
)

// A recompute-preempted request's own blocks, stored in the host tier as
// they were computed (vLLM's OffloadingConnector stores every full block
// by its hash), are loaded back on readmission over the host link instead
// of recomputed: the blocks the GPU's free queue evicted meanwhile.
//
// The scenario of TestPreemptedRequestFindsItsBlocks: 12 blocks × 16
// tokens; B (prompt 85: 5 full blocks) is preempted when A's first decode
// needs a 7th block, and A's further blocks evict B's tail blocks 4, 3, …
// (its partial block goes first). KV 1,000 B a token: a block is 16,000 B;
// host link 32e6 B/s: 0.5 ms a block.
func TestPreemptedRequestLoadsItsBlocks(t *testing.T) {
	for _, tc := range []struct {
		name       string
		aOut       int   // A's output tokens: its KV reaches 96 + aOut − 1
		gpuHit     int64 // B's self-hit tokens on the GPU
		loaded     int64 // B's own tokens loaded from the host tier
		recomputed int64
	}{
		// KV 137: 9 blocks, B's 4 and 3 evicted: the GPU gives blocks
		// 0–2 (48 tokens), the tier 3 and 4 (32 tokens, 32,000 B, 1 ms);
		// recomputed 85 − 48 − 32 = 5 (today: 37).
		{"two tail blocks evicted", 42, 48, 32, 5},
		// KV 185: 12 blocks, all of B's evicted: the tier gives its 5
		// blocks (80 tokens, 80,000 B, 2.5 ms); recomputed 85 − 80 = 5
		// (today: 85).
		{"all evicted", 90, 0, 80, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkAll = true
			defer func() { checkAll = false }()
			reqs := []workload.Request{
				{ID: 0, Arrival: 0, PromptTokens: 96, OutputTokens: tc.aOut},
				{ID: 1, Arrival: 0, PromptTokens: 85, OutputTokens: 4},
			}
			cfg := baseConfig(policies.Chunked{}, 12, 1024)
			cfg.PrefixCache, cfg.KVBytesPerToken = true, 1000
			cfg.Tiers = []KVTier{{Name: "cpu", Bytes: 1e9, ReadBW: 32e6, WriteBW: 32e6}}
			res, rec := runCfg(t, Config{Instance: cfg}, reqs)
			prefill := 0
			for _, s := range rec.steps {
				prefill += s.PrefillTokens
			}
			bytes := float64(tc.loaded) * 1000
			if res.Preemptions != 1 || res.PreemptHitTokens != tc.gpuHit || res.TierPreemptHitTokens[0] != tc.loaded ||
				res.TierPreemptLoads != 1 || res.TierLoads != 1 || res.TierHitTokens[0] != 0 {
				t.Fatalf("preemptions %d, GPU self hits %d, tier own hits %d in %d loads (%d in all, prefix hits %d); want 1, %d, %d, 1 (1, 0)",
					res.Preemptions, res.PreemptHitTokens, res.TierPreemptHitTokens[0], res.TierPreemptLoads, res.TierLoads, res.TierHitTokens[0], tc.gpuHit, tc.loaded)
			}
			if res.TierLoadBytes[0] != bytes || math.Abs(res.TierLoadSeconds[0]-bytes/32e6) > 1e-12 {
				t.Fatalf("loaded %g B in %g s, want %g B in %g s", res.TierLoadBytes[0], res.TierLoadSeconds[0], bytes, bytes/32e6)
			}
			// Prefilled: A 96, B 85, then B's 86 − 48 − loaded (the partial
			// block's 5 tokens and its last generated one: 6).
			if res.RecomputeTokens != tc.recomputed || prefill != 96+85+6 {
				t.Fatalf("recomputed %d, prefilled %d; want %d, %d", res.RecomputeTokens, prefill, tc.recomputed, 96+85+6)
			}
		})
	}
}

// TestTierTooSmallIsGPUOnly is metamorphic: a host tier smaller than one
// block (16 tokens × 1,000 B) stores nothing, so every record and step
// equals the GPU-only run's, preemptions included.
func TestTierTooSmallIsGPUOnly(t *testing.T) {
	reqs := randomRequests(7, 200)
	for i := range reqs {
		if i%2 == 0 {
			reqs[i].Prefix = hashesFrom(uint64(i%5), reqs[i].PromptTokens/64)
			reqs[i].PrefixBlockTokens = 64
		}
	}
	cfg := baseConfig(policies.Chunked{}, 70, 1024)
	cfg.PrefixCache, cfg.KVBytesPerToken = true, 1000
	resOff, off := runCfg(t, Config{Instance: cfg}, reqs)
	cfg.Tiers = []KVTier{{Name: "cpu", Bytes: 15999, ReadBW: 1e9, WriteBW: 1e9}}
	res, on := runCfg(t, Config{Instance: cfg}, reqs)
	if resOff.Preemptions == 0 {
		t.Fatal("no preemption: the scenario does not test readmission")
	}
	if res.TierStoreBytes[0] != 0 || res.TierLoads != 0 || res.Preemptions != resOff.Preemptions || res.RecomputeTokens != resOff.RecomputeTokens {
		t.Fatalf("%g B stored, %d loads, %d preemptions (%d recomputed): want 0, 0, %d (%d)",
			res.TierStoreBytes[0], res.TierLoads, res.Preemptions, res.RecomputeTokens, resOff.Preemptions, resOff.RecomputeTokens)
	}
	if !slices.Equal(recordsByID(off.recs), recordsByID(on.recs)) || !slices.Equal(off.steps, on.steps) {
		t.Fatal("records or steps differ with a tier too small to hold a block")
	}
}
