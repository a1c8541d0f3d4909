package serve

import (
	"fmt"
	"slices"

	"github.com/servesim/servesim/policies"
)

// policies.Chunked, the default batcher (vLLM V1), decided on the instance
// itself: batchChunked is Chunked.Batch with the view's methods called on
// *Instance, where they inline, instead of through policies.View (a dozen
// interface calls a step, each result spilled and reloaded around the
// next call). Its decisions are Chunked's, every step: under checkAll the
// engine asks Chunked too and panics on any difference (checkChunked), and
// TestChunkedMatchesPolicy runs random workloads that way.

// isChunked reports whether b is policies.Chunked, by value or pointer.
func isChunked(b policies.Batcher) bool {
	switch b.(type) {
	case policies.Chunked, *policies.Chunked:
		return true
	}
	return false
}

// batchChunked fills d (already reset) as policies.Chunked.Batch does
// through the view; keep the two in step.
func (in *Instance) batchChunked(d *policies.Decision) {
	lim := &in.cfg.Limits
	budget := lim.MaxNumBatchedTokens
	free := in.FreeBlocks()
	if n := in.decodes; n > 0 {
		d.Decode = true
		budget -= lim.DecodeTokens(n)
		free -= in.DecodeBlocks() // may go negative: the engine preempts, nothing new is admitted
	}
	for i, np := 0, len(in.prefilling); i < np && budget > 0; i++ {
		r := in.prefilling[i]
		n := in.fitChunk(r.computed, min(r.target-r.computed, budget), free)
		if n == 0 {
			continue
		}
		d.Prefill = append(d.Prefill, policies.Chunk{Index: i, ID: r.id, Tokens: n})
		budget -= n
		free -= in.blocksOf(r.computed+n) - in.blocksOf(r.computed)
	}
	seqs := in.Running()
	for i, nw := 0, in.Waiting(); i < nw && budget > 0 && seqs < lim.MaxNumSeqs; i++ {
		c := in.WaitingAt(i)
		n := min(c.Left(), budget)
		need := in.BlocksFor(c, n)
		if free < 0 || need > free {
			break // as vLLM V1: a waiting request that does not fit stops admission
		}
		d.Prefill = append(d.Prefill, policies.Chunk{FromQueue: true, Index: i, ID: c.ID, Tokens: n})
		budget -= n
		free -= need
		seqs++
	}
}

// fitChunk is policies' fitChunk for a partial prefill with computed
// tokens (no pinned blocks: PrefillingAt's Candidate has none): the
// largest chunk of at most n tokens whose blocks fit in free.
func (in *Instance) fitChunk(computed, n, free int) int {
	if n <= 0 || free < 0 {
		return 0
	}
	have := in.blocksOf(computed)
	if in.blocksOf(computed+n)-have <= free {
		return n
	}
	// Binary search for the largest fitting n; the blocks are monotone in n.
	lo, hi := 0, n
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if in.blocksOf(computed+mid)-have <= free {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// checkChunked asks policies.Chunked for the step's decision through the
// view and panics if it is not the one batchChunked made.
func (in *Instance) checkChunked() {
	var ref policies.Decision
	policies.Chunked{}.Batch(policies.View(in), in.cfg.Limits, &ref)
	if ref.Decode != in.dec.Decode || ref.WakeAt != in.dec.WakeAt || !slices.Equal(ref.Prefill, in.dec.Prefill) {
		panic(fmt.Sprintf("serve: instance %d at %v: batchChunked decided %v, policies.Chunked %v", in.id, in.Now(), &in.dec, &ref))
	}
}
