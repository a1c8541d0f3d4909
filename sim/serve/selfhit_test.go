package serve

import (
	"testing"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim/workload"
)

// A recompute-preempted request finds its own full blocks in the prefix
// cache when it is readmitted (vLLM V1: Scheduler._preempt_request →
// KVCacheManager.free, then get_computed_blocks over Request.block_hashes).
//
// 12 blocks × 16 tokens. A (prompt 96 = 6 blocks) and B (prompt 85 = 5 full
// blocks + 5 tokens, 6 blocks) prefill together and fill the cache. A's
// first decode writes its 97th token and needs a 7th block: B, the newest,
// is preempted with 85 tokens of KV (its first token came from its
// prefill). Its partial block joins the free queue first, then its full
// blocks 4, 3, 2, 1, 0 (tail first). A's 7th block takes the partial one;
// every further block A needs (KV 112 → 8 blocks, 128 → 9) evicts B's tail
// blocks 4, then 3. B comes back when A finishes (it needs 6 blocks with 5
// pinned, the cache has 5 evictable), matches its surviving blocks from
// block 0, capped at (86 − 1)/16 = 5 blocks, and recomputes the rest of its
// 86 tokens (prompt 85 + 1 generated).
func TestPreemptedRequestFindsItsBlocks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		aOut      int   // A's output tokens: its KV reaches 96 + aOut − 1
		hit       int64 // B's self-hit tokens
		recompute int64 // B's dropped KV tokens recomputed
		prefill   int   // tokens prefilled in all: A 96 + B 85 + B's recompute prefill
	}{
		// KV ≤ 105: 7 blocks, nothing of B's evicted: hits 5 × 16 = 80,
		// recompute 85 − 80 = 5 (prefill 86 − 80 = 6: the partial block's
		// 5 tokens and the last generated token).
		{"nothing evicted", 10, 80, 5, 96 + 85 + 6},
		// KV 137: 9 blocks, B's blocks 4 and 3 evicted: hits 3 × 16 = 48,
		// recompute 85 − 48 = 37 (prefill 86 − 48 = 38).
		{"two tail blocks evicted", 42, 48, 37, 96 + 85 + 38},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkAll = true
			defer func() { checkAll = false }()
			reqs := []workload.Request{
				{ID: 0, Arrival: 0, PromptTokens: 96, OutputTokens: tc.aOut},
				{ID: 1, Arrival: 0, PromptTokens: 85, OutputTokens: 4},
			}
			cfg := baseConfig(policies.Chunked{}, 12, 1024)
			cfg.PrefixCache = true
			res, rec := runCfg(t, Config{Instance: cfg}, reqs)
			prefill := 0
			for _, s := range rec.steps {
				prefill += s.PrefillTokens
			}
			if res.Preemptions != 1 || res.PreemptHitTokens != tc.hit || res.RecomputeTokens != tc.recompute || prefill != tc.prefill {
				t.Fatalf("preemptions %d, self hits %d, recomputed %d, prefilled %d; want 1, %d, %d, %d",
					res.Preemptions, res.PreemptHitTokens, res.RecomputeTokens, prefill, tc.hit, tc.recompute, tc.prefill)
			}
			// Without prefix caching B recomputes all of it: 85 dropped,
			// 86 prefilled again.
			cfg.PrefixCache = false
			res, rec = runCfg(t, Config{Instance: cfg}, reqs)
			prefill = 0
			for _, s := range rec.steps {
				prefill += s.PrefillTokens
			}
			if res.Preemptions != 1 || res.PreemptHitTokens != 0 || res.RecomputeTokens != 85 || prefill != 96+85+86 {
				t.Fatalf("no cache: preemptions %d, self hits %d, recomputed %d, prefilled %d; want 1, 0, 85, %d",
					res.Preemptions, res.PreemptHitTokens, res.RecomputeTokens, prefill, 96+85+86)
			}
		})
	}
}

// The free queue is one FIFO over finished requests' blocks and preempted
// requests' own blocks: allocation takes the least recently freed first,
// part of an anonymous run if that is enough.
func TestFreeQueueOrder(t *testing.T) {
	c := newPrefixCache()
	c.freeAnon(3)    // a finished request's 3 private blocks
	c.freeSelf(7, 1) // request 7 preempted: its tail block first,
	c.freeSelf(7, 0) // then its first
	c.freeAnon(2)    // another finished request
	c.freeSelf(9, 0) // request 9 preempted
	for _, tc := range []struct {
		need, freed int
		left7       int // request 7's blocks matchable from block 0
		left9       int
	}{
		{2, 2, 2, 1}, // 2 of the first run of 3
		{2, 1, 2, 1}, // its last block (a unit at a time)
		{1, 1, 1, 1}, // request 7's block 1: 7 now matches block 0 only
		{1, 1, 0, 1}, // request 7's block 0
		{5, 2, 0, 1}, // the second finished request's 2
		{1, 1, 0, 0}, // request 9's block 0
		{1, 0, 0, 0}, // nothing left
	} {
		freed, _ := c.evict(tc.need)
		if freed != tc.freed {
			t.Fatalf("evict(%d) freed %d, want %d", tc.need, freed, tc.freed)
		}
		if got := c.matchSelf(7, 0, 2); got != tc.left7 {
			t.Fatalf("after evict(%d): request 7 matches %d blocks, want %d", tc.need, got, tc.left7)
		}
		if got := c.matchSelf(9, 0, 1); got != tc.left9 {
			t.Fatalf("after evict(%d): request 9 matches %d blocks, want %d", tc.need, got, tc.left9)
		}
	}
	if c.evictable != 0 || c.anon != 0 || c.selfs.len() != 0 {
		t.Fatalf("emptied cache holds %d evictable, %d anonymous, %d self units", c.evictable, c.anon, c.selfs.len())
	}
}
