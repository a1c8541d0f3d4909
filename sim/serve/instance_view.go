package serve

import (
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
)

// The instance as its policies see it: policies.View for the batcher and
// policies.AdmitView for admission control (read-only queries of the
// queues, the KV cache and the decode bookkeeping).

// policies.View and policies.AdmitView.

func (in *Instance) Now() sim.Time { return in.w.eng.Now() }
func (in *Instance) Running() int  { return in.running + len(in.loading) }
func (in *Instance) Decoding() int { return in.decodes }
func (in *Instance) DecodeBlocks() int {
	if in.cfg.Spec != nil {
		return in.specBlocks
	}
	return in.phase[in.decPhase]
}
func (in *Instance) Prefilling() int { return len(in.prefilling) }
func (in *Instance) PrefillingAt(i int) policies.Candidate {
	r := in.prefilling[i]
	return policies.Candidate{ID: r.id, Arrival: r.arrival, Computed: r.computed, Target: r.target, Final: r.prompt + r.output, Output: r.output - r.generated}
}

// Waiting returns the queue length, or 0 while swapped requests wait to
// come back (they go first, as in vLLM).
func (in *Instance) Waiting() int {
	if in.swapped.len() > 0 || (in.maxPending > 0 && len(in.handoffs) >= in.maxPending) {
		return 0 // swapped requests first; or backpressure from the decode pool
	}
	return in.waiting.len()
}

func (in *Instance) WaitingAt(i int) policies.Candidate {
	r := in.waiting.at(i)
	c := policies.Candidate{ID: r.id, Arrival: r.arrival, Computed: r.computed, Target: r.target, Final: r.prompt + r.output, Output: r.output - r.generated}
	if n, k := in.hits(r); n+k > 0 || in.tiers != nil {
		// Units found in an offload tier count as computed; the blocks
		// their load fills are needed now.
		if m, j := in.tierHits(r, n, k); n+k+m+j > 0 {
			c.Computed = (n+m)*r.unitToks + (k+j)*in.cfg.BlockSize
			c.Pinned = in.cache.pinnedBlocks(r.hashes, n) + k + j + m*r.unitToks/in.cfg.BlockSize
		}
	}
	return c
}

func (in *Instance) FreeBlocks() int {
	free := in.cfg.Blocks - in.usedBlocks
	if in.cache != nil {
		free += in.cache.evictable
	}
	return free
}

func (in *Instance) BlocksFor(c policies.Candidate, tokens int) int {
	return in.blocksOf(c.Computed+tokens) - in.blocksOf(c.Computed) + c.Pinned
}

// PredictTTFT estimates when a request of prompt tokens joining now would
// get its first token: the prefill tokens queued or in progress ahead of it
// and its own, at the instance's full-budget prefill throughput, after the
// iteration in flight. It walks the queue: O(waiting).
func (in *Instance) PredictTTFT(prompt int) sim.Time {
	if in.prefillTPS == 0 {
		return 0
	}
	pending := int64(prompt)
	for i := 0; i < in.waiting.len(); i++ {
		r := in.waiting.at(i)
		pending += int64(r.target - r.computed)
	}
	for _, r := range in.prefilling {
		pending += int64(r.target - r.computed)
	}
	for i := 0; i < in.held.len(); i++ {
		pending += int64(in.held.at(i).prompt)
	}
	// After the iteration in flight; the prediction saturates where the
	// clock ends, so that Now() plus it never overflows (a very slow GPU,
	// a long queue).
	from := in.Now()
	if in.busy {
		from = in.endEv.Time()
	}
	at, ok := from.AddSeconds(float64(pending) / in.prefillTPS)
	if !ok {
		at = sim.Forever
	}
	return at - in.Now()
}

var (
	_ policies.View      = (*Instance)(nil)
	_ policies.AdmitView = (*Instance)(nil)
)

// blocksOf returns the blocks that hold tokens: a shift when the block
// size is a power of two (it is called several times a step; a division
// by a variable is tens of cycles).
func (in *Instance) blocksOf(tokens int) int {
	t := tokens + in.cfg.BlockSize - 1
	if in.bsShift >= 0 && t >= 0 {
		return t >> in.bsShift
	}
	return t / in.cfg.BlockSize
}
