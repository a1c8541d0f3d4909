package policies

import (
	"strings"
	"testing"
)

// reserveView is a fakeView that reports a reservation.
type reserveView struct {
	fakeView
	reserved int
}

func (v *reserveView) ReservedBlocks() int { return v.reserved }

// f is a waiting request of prompt tokens and prompt + output final tokens.
func f(id int64, prompt, final int) Candidate { return Candidate{ID: id, Target: prompt, Final: final} }

func TestTRTLLMBatcher(t *testing.T) {
	lim := Limits{MaxNumSeqs: 8, MaxNumBatchedTokens: 1000}
	gne := TRTLLM{ChunkUnit: 16}
	mu := TRTLLM{Policy: MaxUtilization, ChunkUnit: 16}
	five := []Candidate{f(1, 200, 500), f(2, 200, 500), f(3, 200, 500), f(4, 200, 500), f(5, 200, 500)}
	cases := []struct {
		name string
		b    TRTLLM
		v    reserveView
		want string
	}{
		{"GUARANTEED_NO_EVICT admits what runs to completion", gne,
			// 100 free − 40 reserved by the 2 decodes = 60; each request needs
			// ceil(500/16) = 32 blocks to completion: one fits (60 − 32 = 28 < 32).
			reserveView{fakeView{running: 2, decoding: 2, free: 100, waiting: five}, 40},
			"decode+prefill[q#1:200]"},
		{"MAX_UTILIZATION admits what fits this step", mu,
			// Each prompt takes ceil(200/16) = 13 of the 100 free blocks; the
			// budget 1000 − 2 decodes = 998 holds four 200-token prompts (the
			// fifth would make 1000 > 998).
			reserveView{fakeView{running: 2, decoding: 2, free: 100, waiting: five}, 40},
			"decode+prefill[q#1:200 q#2:200 q#3:200 q#4:200]"},
		{"GUARANTEED_NO_EVICT stops at the first that does not fit", gne,
			// avail 60: #1 needs ceil(1000/16) = 63 > 60, so #2 (32) waits too.
			reserveView{fakeView{free: 60, running: 1, decoding: 1, waiting: []Candidate{f(1, 100, 1000), f(2, 100, 500)}}, 0},
			"decode"},
		{"without chunking a prompt over the budget ends the batch", gne,
			// 3 decodes leave 997 tokens; the 998-token prompt does not fit.
			reserveView{fakeView{running: 3, decoding: 3, free: 1000, waiting: []Candidate{f(1, 998, 1000), f(2, 10, 20)}}, 0},
			"decode"},
		{"chunked prefill cuts the chunk to a multiple of tokens_per_block", TRTLLM{Chunked: true, ChunkUnit: 16},
			// 997 tokens left, cut to 62 × 16 = 992.
			reserveView{fakeView{running: 3, decoding: 3, free: 1000, waiting: []Candidate{f(1, 2000, 2100)}}, 0},
			"decode+prefill[q#1:992]"},
		{"partial prefills continue before admission", TRTLLM{Chunked: true, ChunkUnit: 16},
			// 500 left of #5; then 500 of the budget for #1 (800), cut to 496.
			reserveView{fakeView{running: 1, free: 1000, prefilling: []Candidate{{ID: 5, Computed: 1500, Target: 2000, Final: 2100}},
				waiting: []Candidate{f(1, 800, 900)}}, 7},
			"prefill[r#5:500 q#1:496]"},
		{"an idle instance admits its head even if the reservation overshoots", gne,
			// ceil(1700/16) = 107 > 100 free, but nothing runs.
			reserveView{fakeView{free: 100, waiting: []Candidate{f(1, 100, 1700), f(2, 10, 20)}}, 0},
			"prefill[q#1:100]"},
		{"max_batch_size counts running requests", gne,
			reserveView{fakeView{running: 8, decoding: 8, free: 1000, waiting: five}, 0},
			"decode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkDecision(t, c.b, &c.v, lim, c.want) })
	}
}

func TestTRTLLMLimits(t *testing.T) {
	lim := Limits{MaxNumSeqs: 8, MaxNumBatchedTokens: 8192}
	for _, c := range []struct {
		b                TRTLLM
		context, request int
	}{
		{TRTLLM{}, 8192, 1<<63 - 1},                   // GUARANTEED_NO_EVICT never pauses: the prompt alone must fit
		{TRTLLM{Policy: MaxUtilization}, 8192, 8192},  // a pause recomputes prompt + generated in one step
		{TRTLLM{Chunked: true}, 1<<63 - 1, 1<<63 - 1}, // chunks hold any prompt
		{TRTLLM{Policy: MaxUtilization, Chunked: true}, 1<<63 - 1, 1<<63 - 1},
	} {
		if got := c.b.MaxContext(lim); got != c.context {
			t.Errorf("%s: MaxContext %d, want %d", c.b.Name(), got, c.context)
		}
		if got := c.b.MaxPrompt(lim); got != c.request {
			t.Errorf("%s: MaxPrompt %d, want %d", c.b.Name(), got, c.request)
		}
	}
}

func TestTRTLLMNeedsReserveView(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "ReserveView") {
			t.Fatalf("recovered %v, want a panic naming ReserveView", r)
		}
	}()
	var d Decision
	TRTLLM{}.Batch(&fakeView{free: 10}, Limits{MaxNumSeqs: 1, MaxNumBatchedTokens: 10}, &d)
}

func TestTRTLLMAllocatesNothing(t *testing.T) {
	v := &reserveView{fakeView{running: 3, decoding: 3, free: 1000, waiting: []Candidate{f(1, 2000, 2100), f(2, 10, 20)}}, 5}
	d := Decision{Prefill: make([]Chunk, 0, 8)}
	lim := Limits{MaxNumSeqs: 8, MaxNumBatchedTokens: 4096}
	for _, b := range []Batcher{TRTLLM{Chunked: true, ChunkUnit: 16}, TRTLLM{Policy: MaxUtilization}} {
		if a := testing.AllocsPerRun(100, func() { d.Reset(); b.Batch(v, lim, &d) }); a != 0 {
			t.Errorf("%s: %v allocs per decision, want 0", b.Name(), a)
		}
	}
}
