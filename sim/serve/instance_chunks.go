package serve

import (
	"fmt"

	"github.com/servesim/servesim/sim"
)

// A step's prefill chunks, as startStep takes them from the decision.

// resolveChunks resolves the decision's prefill requests into
// in.stepReqs before anything moves, then admits the queued ones (taking
// references to their cached prefixes, so that no allocation of the step
// evicts them).
func (in *Instance) resolveChunks() {
	for _, c := range in.dec.Prefill {
		var r *request
		if c.FromQueue {
			r = in.waiting.at(c.Index)
		} else {
			r = in.prefilling[c.Index]
		}
		if r.id != c.ID {
			panic(fmt.Sprintf("serve: decision %v names request %d at a position holding %d", &in.dec, c.ID, r.id))
		}
		in.stepReqs = append(in.stepReqs, r)
	}
	for i, c := range in.dec.Prefill {
		if c.FromQueue {
			in.admit(in.stepReqs[i])
		}
	}
}

// takeChunks allocates the blocks of each chunk whose request is still
// prefilling after the decodes' preemptions (a preempted one's entry of
// in.stepReqs is cleared) and returns the chunks' sums for the batch.
func (in *Instance) takeChunks() (prefills, ptoks int, pctx int64, pairs float64) {
	for i, c := range in.dec.Prefill {
		r := in.stepReqs[i]
		if r.state == stateLoading && r.blocks == 0 {
			in.allocLoad(r) // out of this step's batch until loaded
		}
		if r.state != statePrefill {
			in.stepReqs[i] = nil // preempted above
			continue
		}
		tokens := min(c.Tokens, r.target-r.computed)
		need := in.blocksOf(r.computed+tokens) - in.blocksOf(r.computed)
		in.allocate(need)
		r.blocks += need
		p, ctx := tokens, r.computed
		prefills++
		ptoks += p
		pctx += int64(ctx)
		pairs += float64(p) * (float64(ctx) + float64(p+1)/2)
		r.computed += p
	}
	return prefills, ptoks, pctx, pairs
}

// endChunks takes the step's prefill chunks that ended at now: a request
// whose prefill is done samples its first token (or the next, after a
// recompute), then finishes, is handed off (a prefill instance) or
// decodes; they leave in.prefilling together.
func (in *Instance) endChunks(now sim.Time) {
	w := in.w
	completed := false
	for _, r := range in.stepReqs {
		if r == nil || r.state != statePrefill || r.computed < r.target {
			continue
		}
		completed = true // r leaves in.prefilling below, all at once
		in.cachePrefix(r)
		if in.tiers != nil {
			in.storeTiers(r)
		}
		// The prefill's last chunk samples a token.
		if r.generated == 0 {
			r.firstToken = now
		} else {
			w.coll.AddITL(now-r.lastToken, 1)
		}
		r.generated++
		r.lastToken = now
		if r.generated >= r.output {
			in.finish(r, now)
			continue
		}
		if in.role == rolePrefill {
			in.handoff(r, now)
			continue
		}
		in.enterDecode(r)
	}
	if completed {
		in.compactPrefilling()
	}
}
