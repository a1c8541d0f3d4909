package serve

import (
	"testing"

	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
)

func sglangConfig(r policies.SGLangRatio, tokens int) InstanceConfig {
	return InstanceConfig{
		Step: linearTimer{base: 1000, perToken: 10}, Blocks: tokens, BlockSize: 1,
		Limits:  policies.Limits{MaxNumSeqs: 64, MaxNumBatchedTokens: 512},
		Batcher: &policies.SGLang{Ratio: r, MaxPrefillTokens: policies.SGLangMaxPrefillTokens, Chunked: true, PageSize: 1},
		Victim:  VictimFewestOutput, MaxModelLen: 4096,
	}
}

// TestSGLangRetraction: the same heavy load on a small KV pool (3,000
// tokens at page size 1) retracts decodes under SGLang's default ratio,
// which reserves 0.7 down to 0.098 of the running requests' output left,
// and never with a ratio fixed at 1, which reserves all of it (every
// admitted request's prompt and whole output then fit: PrefillAdder's
// budget is the free tokens less everything the running ones may still
// write). Both finish every request, with the invariants checked.
func TestSGLangRetraction(t *testing.T) {
	checkAll = true
	defer func() { checkAll = false }()
	reqs := randomRequests(31, 300)
	for i := range reqs {
		reqs[i].Arrival /= 20 // a burst: everything waits
	}
	for _, c := range []struct {
		name  string
		r     policies.SGLangRatio
		retry bool
	}{
		{"default ratio", policies.NewSGLangRatio(1), true},
		{"ratio 1", policies.SGLangRatio{Init: 1, Min: 1}, false},
	} {
		res, rec, _ := run(t, sglangConfig(c.r, 3000), reqs)
		if res.Finished != int64(len(reqs)) || len(rec.recs) != len(reqs) {
			t.Fatalf("%s: finished %d of %d", c.name, res.Finished, len(reqs))
		}
		if got := res.Preemptions > 0; got != c.retry {
			t.Errorf("%s: %d retractions, want any: %t", c.name, res.Preemptions, c.retry)
		}
	}
}

// TestSGLangSeparateBatches: without --enable-mixed-chunk no step holds
// both prefill and decode tokens; a prefill batch runs whenever one forms.
func TestSGLangSeparateBatches(t *testing.T) {
	_, rec, _ := run(t, sglangConfig(policies.NewSGLangRatio(1), 20000), randomRequests(32, 200))
	for _, s := range rec.steps {
		if s.PrefillTokens > 0 && s.Decodes > 0 {
			t.Fatalf("step %+v mixes prefill and decode", s)
		}
	}
}

// TestFewestOutputVictim: SGLang retracts the decoding request with the
// fewest output tokens, the longest prompt on ties (retract_decode).
func TestFewestOutputVictim(t *testing.T) {
	in := &Instance{cfg: InstanceConfig{BlockSize: 1}, decCounter: 10}
	add := func(id int64, prompt, g0 int, d0 int64, state uint8) *request {
		r := &request{id: id, prompt: prompt, g0: g0, d0: d0, state: state}
		in.link(r)
		return r
	}
	add(1, 100, 3, 5, stateDecode)  // 3 + 5 = 8 generated
	add(2, 100, 0, 8, stateDecode)  // 2
	add(3, 500, 1, 9, stateDecode)  // 2, longer prompt
	add(4, 900, 0, 0, statePrefill) // not decoding
	if v := in.fewestOutput(); v.id != 3 {
		t.Errorf("victim %d, want 3 (2 tokens, the longer prompt)", v.id)
	}
}

// TestDecodeOnlyGraphs: SGLang's CUDA graphs pad decode batches to the
// next captured size and run every batch with a prefill eagerly.
func TestDecodeOnlyGraphs(t *testing.T) {
	g := &CUDAGraphs{Sizes: []int{1, 2, 4, 8, 12, 16}, EagerLaunches: 300, PiecewiseLaunches: 65, DecodeOnly: true}
	for _, c := range []struct {
		b        models.Batch
		decodes  int
		launches int
	}{
		{models.Batch{Decodes: 9}, 12, 1},                     // padded to 12, one graph
		{models.Batch{Decodes: 17}, 17, 300},                  // above cuda_graph_max_bs: eager
		{models.Batch{Prefills: 1, PrefillTokens: 5}, 0, 300}, // prefill: eager, unpadded
	} {
		b, n := g.dispatch(c.b)
		if b.Decodes != c.decodes || n != c.launches {
			t.Errorf("%+v: %d decodes, %d launches; want %d, %d", c.b, b.Decodes, n, c.decodes, c.launches)
		}
	}
}
