package workload

import (
	"slices"
	"testing"
)

// The shared_prefix generator cycles its G × U prompts: request i and
// i + G·U are the same prompt, the G·U requests of one cycle are all
// distinct, and prompts of one group share their system prompt's blocks.
func TestSharedPrefixDataCycles(t *testing.T) {
	const g, u = 3, 4 // 12 prompts
	d := &SharedPrefixData{Groups: g, PromptsPerGroup: u, SystemPromptLen: 40, QuestionLen: 30, OutputLen: 7, BlockTokens: 16}
	src := mustSource(t, Synthetic{Arrival: Arrival{Rate: 5}, Count: 3 * g * u, Data: d, Seed: 9})
	var reqs []Request
	var r Request
	for src.Next(&r) {
		r.Prefix = slices.Clone(r.Prefix) // valid only until the next Next
		reqs = append(reqs, r)
	}
	for i, r := range reqs {
		// 40 + 30 = 70 tokens: 4 full blocks of 16, 2 of them wholly in
		// the 40-token system prompt.
		if r.PromptTokens != 70 || r.OutputTokens != 7 || len(r.Prefix) != 4 || r.PrefixBlockTokens != 16 {
			t.Fatalf("request %d: %d prompt, %d output tokens, %d hashes of %d: want 70, 7, 4 of 16", i, r.PromptTokens, r.OutputTokens, len(r.Prefix), r.PrefixBlockTokens)
		}
		if i >= g*u && !slices.Equal(r.Prefix, reqs[i-g*u].Prefix) {
			t.Fatalf("request %d is not request %d's prompt", i, i-g*u)
		}
	}
	seen := map[uint64]bool{}
	groups := map[uint64]int{} // system prompt's first block → prompts
	for _, r := range reqs[:g*u] {
		if seen[r.Prefix[3]] {
			t.Fatalf("a prompt repeats within the first cycle: %x", r.Prefix)
		}
		seen[r.Prefix[3]] = true
		groups[r.Prefix[0]]++
		if r.Prefix[0] == r.Prefix[2] {
			t.Fatal("system and question blocks share a hash")
		}
	}
	if len(groups) != g {
		t.Fatalf("%d distinct system prompts, want %d", len(groups), g)
	}
	for h, n := range groups {
		if n != u {
			t.Errorf("system prompt %x: %d prompts, want %d", h, n, u)
		}
	}
	// The order is shuffled (seeded), not group by group.
	byGroup := true
	for i := 1; i < u; i++ {
		byGroup = byGroup && reqs[i].Prefix[0] == reqs[0].Prefix[0]
	}
	if byGroup {
		t.Error("the first U requests are all of one group: the order is not shuffled")
	}
}
