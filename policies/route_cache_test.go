package policies

import "testing"

// fakeTiers is a fakeCluster with offload tiers (a CacheView).
type fakeTiers struct {
	fakeCluster
	tier        []int
	unit, block int
	queued      []int // blocks of queued prompts
}

func (c fakeTiers) TierMatch(i int) int { return c.tier[i] }
func (c fakeTiers) UnitTokens() int     { return c.unit }
func (c fakeTiers) BlockSize() int      { return c.block }
func (c fakeTiers) ActiveBlocks(i int) int {
	return c.states[i].KVBlocksUsed + c.queued[i]
}

// TestPrecisePrefix: score = 2 · prefix + 1 · (1 − KV use) + 1 · queue,
// prefix and queue min–max normalized over the instances.
//
//	GPU matches 0, 4, 2; tiers 0, 0, 3 → held 0, 4, 5 → prefix 0, 0.8, 1
//	waiting 0, 5, 1 → queue 1, 0, 0.8; KV use 0.5, 0.2, 0.9
//	scores 0 + 0.5 + 1 = 1.5; 1.6 + 0.8 + 0 = 2.4; 2 + 0.1 + 0.8 = 2.9 → 2
//
// Without the tiers: prefix 0, 1, 0.5: 1.5; 2 + 0.8 = 2.8; 1 + 0.1 + 0.8
// = 1.9 → 1. With every instance equal, the first.
func TestPrecisePrefix(t *testing.T) {
	gpu := fakeCluster{
		states: []InstanceState{{Waiting: 0, KVUse: 0.5}, {Waiting: 5, KVUse: 0.2}, {Waiting: 1, KVUse: 0.9}},
		match:  []int{0, 4, 2},
	}
	if got := (PrecisePrefix{}).Route(fakeTiers{gpu, []int{0, 0, 3}, 512, 16, []int{0, 0, 0}}, QueueItem{}); got != 2 {
		t.Errorf("with tiers: routed to %d, want 2 (score 2.9)", got)
	}
	if got := (PrecisePrefix{}).Route(gpu, QueueItem{}); got != 1 {
		t.Errorf("GPU only: routed to %d, want 1 (score 2.8)", got)
	}
	same := fakeCluster{states: make([]InstanceState, 3), match: []int{2, 2, 2}}
	if got := (PrecisePrefix{}).Route(same, QueueItem{}); got != 0 {
		t.Errorf("equal instances: routed to %d, want 0", got)
	}
}

// TestKVRouter: cost = 1.0 · (prompt − held units × 512) / 16 + blocks in
// use, lowest wins. Prompt 2,048 tokens (128 blocks).
//
//	GPU matches 0, 3, 1; in use 100, 120, 150 blocks
//	GPU only: 128 + 100 = 228; 32 + 120 = 152; 96 + 150 = 246 → 1
//	tiers 0, 0, 3 → instance 2 holds 4 units: 0 + 150 = 150 → 2
//
// Active blocks are those in use plus the queued prompts' (ActiveBlocks).
func TestKVRouter(t *testing.T) {
	gpu := fakeCluster{
		states: []InstanceState{{KVBlocksUsed: 100}, {KVBlocksUsed: 120}, {KVBlocksUsed: 150}},
		match:  []int{0, 3, 1},
	}
	q := QueueItem{Prompt: 2048}
	none := []int{0, 0, 0}
	if got := (KVRouter{}).Route(fakeTiers{gpu, none, 512, 16, none}, q); got != 1 {
		t.Errorf("no tier hits: routed to %d, want 1 (cost 152)", got)
	}
	if got := (KVRouter{}).Route(fakeTiers{gpu, []int{0, 0, 3}, 512, 16, none}, q); got != 2 {
		t.Errorf("tier hits: routed to %d, want 2 (cost 150)", got)
	}
	// Queued prompts count as active: 10 queued blocks on instance 2 make
	// its cost 160 > 152.
	if got := (KVRouter{}).Route(fakeTiers{gpu, []int{0, 0, 3}, 512, 16, []int{0, 0, 10}}, q); got != 1 {
		t.Errorf("queued blocks: routed to %d, want 1 (cost 152 < 160)", got)
	}
	// A view with no CacheView: no unit size, so matches save nothing and
	// the least used instance wins.
	if got := (KVRouter{}).Route(gpu, q); got != 0 {
		t.Errorf("plain view: routed to %d, want 0 (fewest blocks in use)", got)
	}
	for _, name := range []string{"precise-prefix", "kv-router"} {
		if r, err := RouterByName(name, nil); err != nil || r.Name() != name {
			t.Errorf("RouterByName(%q) = %v, %v", name, r, err)
		}
	}
}
