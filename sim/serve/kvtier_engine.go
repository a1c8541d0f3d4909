package serve

import "github.com/servesim/servesim/sim"

// The instance's side of the KV offload tiers (kvtier.go): which prefix
// units and own blocks a queued request finds in a tier, its load before
// its prefill, and the stores.

// prefixUnits is how many of r's prefix units are full units of its
// prompt: the ones stored by hash; its own blocks start after them.
func prefixUnits(r *request) int {
	if r.unitToks == 0 {
		return 0
	}
	return min(len(r.hashes), r.prompt/r.unitToks)
}

// ownLo is the block index where r's own blocks start.
func (in *Instance) ownLo(r *request) int {
	return prefixUnits(r) * r.unitToks / in.cfg.BlockSize
}

// tierHits returns how many of r's prefix units after its n GPU prefix
// hits, and then how many of its own blocks, some tier holds, leaving at
// least one token to compute (as hits does). After k > 0 GPU self blocks
// no prefix unit can follow (they sit inside or after the prefix), only
// own blocks. Own blocks are found only by the request that stored them,
// readmitted after a recompute preemption. One whose load is done
// (loadToks > 0, back in the queue) has nothing to find, nor has one
// whose loaded KV was dropped (loadToks < 0).
func (in *Instance) tierHits(r *request, n, k int) (m, j int) {
	if in.tiers == nil || r.loadToks != 0 {
		return 0, 0
	}
	bs := in.cfg.BlockSize
	pos := k // blocks covered so far
	if r.unitToks > 0 {
		pos += n * r.unitToks / bs
		if pu := prefixUnits(r); k == 0 && n < pu {
			m = in.tiers.match(r.hashes[n:pu], (r.target-1)/r.unitToks-n)
			pos += m * r.unitToks / bs
		}
	}
	if r.preemptions > 0 && pos >= in.ownLo(r) && pos < r.ownStored {
		j = in.tiers.matchOwn(r.id, pos, min(r.ownStored, (r.target-1)/bs)-pos)
	}
	return m, max(j, 0)
}

// beginLoad takes an admitted request that finds m prefix units and j
// own blocks in a tier out of the batch and starts their load at now
// (reading the tiers at once, so that no later admission of the step
// evicts them first): it waits, holding its GPU hits, until the load
// ends. The blocks the load fills are allocated in allocLoad, after every
// admission of the step has taken its references (as the prefill blocks
// are).
func (in *Instance) beginLoad(r *request, m, j int, now sim.Time) {
	r.state = stateLoading
	bs := in.cfg.BlockSize
	r.loadUnits, r.loadOwn = m, j
	r.loadToks = m*r.unitToks + j*bs
	n := len(r.units) - r.nSelf
	b0 := r.computed/bs + m*r.unitToks/bs
	kv := in.cfg.KVBytesPerToken
	r.loadEnd = in.tiers.load(r.hashes[n:n+m], r.unitToks, float64(r.unitToks)*kv, r.id, b0, j, bs, float64(bs)*kv, now)
	in.w.res.TierLoads++
	if j > 0 {
		in.w.res.TierPreemptLoads++
	}
	in.w.res.TierLoadWaitSeconds += (r.loadEnd - now).Seconds()
	in.loading = append(in.loading, r)
	if !in.loadEv.Pending() || r.loadEnd < in.loadEv.Time() {
		in.w.eng.ScheduleEvent(in.loadEv, r.loadEnd)
	}
}

// allocLoad allocates the blocks a loading request's units and own
// blocks fill. Loaded tokens of a preempted request are not recomputed.
func (in *Instance) allocLoad(r *request) {
	b := r.loadToks / in.cfg.BlockSize
	in.allocate(b)
	r.blocks += b
	r.computed += r.loadToks
	if r.dropped > 0 {
		in.w.res.RecomputeTokens -= int64(min(r.loadToks, r.dropped))
		r.dropped = 0
	}
}

// loadDone puts the requests whose loads have ended back in the queue
// with their prefix computed and its blocks held (vLLM returns a request
// whose KV arrived to the waiting queue, num_computed_tokens set), and
// starts a step if the instance is idle.
func (in *Instance) loadDone(now sim.Time) {
	next := sim.Forever
	j := 0
	for _, r := range in.loading {
		if r.loadEnd > now {
			next = min(next, r.loadEnd)
			in.loading[j] = r
			j++
			continue
		}
		r.state = stateWaiting
		in.waiting.insert(r)
	}
	clear(in.loading[j:])
	in.loading = in.loading[:j]
	if next < sim.Forever {
		in.w.eng.ScheduleEvent(in.loadEv, next)
	}
	if !in.busy && !(in.wakeEv.Pending() && in.wakeEv.Time() == now) {
		in.w.eng.ScheduleEvent(in.wakeEv, now)
	}
}

// storeTiers writes a request's full prefix units, and its own full
// blocks not stored yet, through to the tiers: when its prefill ends,
// when it is preempted and when it finishes (r.computed is current).
func (in *Instance) storeTiers(r *request) {
	kv := in.cfg.KVBytesPerToken
	if pu := prefixUnits(r); pu > 0 {
		bytes := float64(r.unitToks) * kv
		for _, h := range r.hashes[:min(pu, r.computed/r.unitToks)] {
			in.tiers.store(prefixKey(h), bytes)
		}
	}
	bs := in.cfg.BlockSize
	bytes := float64(bs) * kv
	hi := r.computed / bs
	for b := max(r.ownStored, in.ownLo(r)); b < hi; b++ {
		in.tiers.store(ownKey(r.id, b), bytes)
	}
	r.ownStored = max(r.ownStored, hi)
}

// dropLoaded frees the loaded KV of the last request in the queue that
// holds some, when the instance can run nothing else: loaded requests
// waiting in the queue hold blocks that the queue's head (or the lone
// running request) needs. The request then prefills from its GPU hits
// only (it looks in no tier again), as a recompute preemption would. It
// reports whether it freed any.
func (in *Instance) dropLoaded() bool {
	for i := in.waiting.len() - 1; i >= 0; i-- {
		r := in.waiting.at(i)
		if r.loadToks <= 0 {
			continue
		}
		in.release(r)
		r.computed, r.loadToks = 0, -1
		in.w.res.TierLoadsDropped++
		return true
	}
	return false
}
