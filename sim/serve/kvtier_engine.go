package serve

import "github.com/servesim/servesim/sim"

// The instance's side of the KV offload tiers (kvtier.go): which prefix
// units a queued request finds in a tier, its load before its prefill,
// and the stores after it.

// tierHits returns how many of r's prefix units after its n GPU hits some
// tier holds, leaving at least one token to compute (as hits does). A
// request with self units (a recompute preemption's own blocks follow its
// GPU hits) or one preempted before re-matches the GPU cache only; one
// whose load is done (loadUnits > 0, back in the queue) has nothing to
// find, nor has one whose loaded KV was dropped (loadUnits < 0).
func (in *Instance) tierHits(r *request, n, k int) int {
	if in.tiers == nil || r.unitToks == 0 || k > 0 || r.preemptions > 0 || r.loadUnits != 0 {
		return 0
	}
	return in.tiers.match(r.hashes[n:], (r.target-1)/r.unitToks-n)
}

// beginLoad takes an admitted request that finds m > 0 units in a tier out
// of the batch and starts their load at now (reading the tiers at once,
// so that no later admission of the step evicts them first): it waits,
// holding its GPU hits, until the load ends. The blocks the load fills
// are allocated in allocLoad, after every admission of the step has taken
// its references (as the prefill blocks are).
func (in *Instance) beginLoad(r *request, m int, now sim.Time) {
	r.state = stateLoading
	r.loadUnits = m
	n := len(r.units)
	bytes := float64(r.unitToks) * in.cfg.KVBytesPerToken
	r.loadEnd = in.tiers.load(r.hashes[n:n+m], r.unitToks, bytes, now)
	in.w.res.TierLoads++
	in.w.res.TierLoadWaitSeconds += (r.loadEnd - now).Seconds()
	in.loading = append(in.loading, r)
	if !in.loadEv.Pending() || r.loadEnd < in.loadEv.Time() {
		in.w.eng.ScheduleEvent(in.loadEv, r.loadEnd)
	}
}

// allocLoad allocates the blocks a loading request's units fill.
func (in *Instance) allocLoad(r *request) {
	b := r.loadUnits * r.unitToks / in.cfg.BlockSize
	in.allocate(b)
	r.blocks += b
	r.computed += r.loadUnits * r.unitToks
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

// storeTiers writes a request's full prefix units through to the tiers
// when its prefill ends.
func (in *Instance) storeTiers(r *request) {
	if r.unitToks == 0 {
		return
	}
	bytes := float64(r.unitToks) * in.cfg.KVBytesPerToken
	for _, h := range r.hashes[:min(len(r.hashes), r.computed/r.unitToks)] {
		in.tiers.store(h, bytes)
	}
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
		if r.loadUnits <= 0 {
			continue
		}
		in.release(r)
		r.computed, r.loadUnits = 0, -1
		in.w.res.TierLoadsDropped++
		return true
	}
	return false
}
