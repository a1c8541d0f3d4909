package serve

import "fmt"

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
