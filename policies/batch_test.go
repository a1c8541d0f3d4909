package policies

import (
	"testing"

	"github.com/servesim/servesim/sim"
)

// fakeView is a hand-built instance state. Blocks hold 16 tokens.
type fakeView struct {
	running, decoding, decodeBlocks, free int
	prefilling, waiting                   []Candidate
}

func (v *fakeView) Now() sim.Time                { return 0 }
func (v *fakeView) Running() int                 { return v.running }
func (v *fakeView) Decoding() int                { return v.decoding }
func (v *fakeView) DecodeBlocks() int            { return v.decodeBlocks }
func (v *fakeView) Prefilling() int              { return len(v.prefilling) }
func (v *fakeView) PrefillingAt(i int) Candidate { return v.prefilling[i] }
func (v *fakeView) Waiting() int                 { return len(v.waiting) }
func (v *fakeView) WaitingAt(i int) Candidate    { return v.waiting[i] }
func (v *fakeView) FreeBlocks() int              { return v.free }
func (v *fakeView) BlocksFor(c Candidate, n int) int {
	return (c.Computed+n+15)/16 - (c.Computed+15)/16 + c.Pinned
}

func w(id int64, target int) Candidate { return Candidate{ID: id, Target: target} }

func TestBatchers(t *testing.T) {
	lim := Limits{MaxNumSeqs: 4, MaxNumBatchedTokens: 1000}
	cases := []struct {
		name string
		b    Batcher
		v    fakeView
		want string
	}{
		{"prefill-first admits whole prompts that fit the budget", PrefillFirst{},
			// 400 + 500 = 900 ≤ 1000; the third (300) would make 1200 > 1000: stop.
			fakeView{free: 1000, waiting: []Candidate{w(1, 400), w(2, 500), w(3, 300)}},
			"prefill[q#1:400 q#2:500]"},
		{"prefill-first prefers prefill over running decodes", PrefillFirst{},
			fakeView{running: 3, decoding: 3, free: 100, waiting: []Candidate{w(1, 100)}},
			"prefill[q#1:100]"},
		{"prefill-first decodes when the head does not fit the KV", PrefillFirst{},
			// 100 tokens need 7 blocks; 5 are free.
			fakeView{running: 3, decoding: 3, free: 5, waiting: []Candidate{w(1, 100), w(2, 10)}},
			"decode"},
		{"prefill-first respects max_num_seqs", PrefillFirst{},
			fakeView{running: 4, decoding: 4, free: 100, waiting: []Candidate{w(1, 10)}},
			"decode"},
		{"prefill-first idle", PrefillFirst{}, fakeView{free: 10}, "idle"},
		{"chunked decodes first, then chunks the head into the rest of the budget", Chunked{},
			// 3 decodes take 3 tokens; 997 left for the 2000-token prompt.
			fakeView{running: 3, decoding: 3, free: 1000, waiting: []Candidate{w(1, 2000), w(2, 10)}},
			"decode+prefill[q#1:997]"},
		{"chunked continues a partial prefill before admitting", Chunked{},
			// partial: 1500 of 2000 done, 500 left; then 500 of the budget go to the queue head.
			fakeView{running: 1, free: 1000, prefilling: []Candidate{{ID: 5, Computed: 1500, Target: 2000}},
				waiting: []Candidate{w(1, 800)}},
			"prefill[r#5:500 q#1:500]"},
		{"chunked admits nothing when decodes need more blocks than are free", Chunked{},
			fakeView{running: 2, decoding: 2, decodeBlocks: 2, free: 1, waiting: []Candidate{w(1, 10)}},
			"decode"},
		{"chunked shrinks a partial prefill to the free blocks", Chunked{},
			// 2 free blocks hold 32 tokens from Computed 0.
			fakeView{running: 1, free: 2, prefilling: []Candidate{{ID: 5, Target: 100}}},
			"prefill[r#5:32]"},
		{"chunked stops at a waiting request whose chunk does not fit", Chunked{},
			// head needs 63 blocks (1000 tokens), 10 free: vLLM V1 stops, so #2 is not admitted either.
			fakeView{free: 10, waiting: []Candidate{w(1, 1000), w(2, 16)}},
			"idle"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkDecision(t, c.b, &c.v, lim, c.want) })
	}
}

func TestBatchAllocatesNothing(t *testing.T) {
	v := &fakeView{running: 3, decoding: 3, free: 1000, waiting: []Candidate{w(1, 2000), w(2, 10)}}
	d := Decision{Prefill: make([]Chunk, 0, 8)}
	lim := Limits{MaxNumSeqs: 8, MaxNumBatchedTokens: 4096}
	for _, b := range []Batcher{Chunked{}, PrefillFirst{}} {
		if a := testing.AllocsPerRun(100, func() { d.Reset(); b.Batch(v, lim, &d) }); a != 0 {
			t.Errorf("%s: %v allocs per decision, want 0", b.Name(), a)
		}
	}
}

// checkDecision wants b's decision on v under lim to print as want.
func checkDecision(t *testing.T, b Batcher, v View, lim Limits, want string) {
	t.Helper()
	var d Decision
	b.Batch(v, lim, &d)
	if got := d.String(); got != want {
		t.Fatalf("decision %s, want %s", got, want)
	}
}
