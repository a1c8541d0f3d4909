package serve

import "github.com/servesim/servesim/sim"

// Preemption: choosing a victim, freeing its KV, swapping it out and back.

// victim picks the running request to preempt.
func (in *Instance) victim() *request {
	if in.cfg.Victim == VictimFewestOutput {
		return in.fewestOutput()
	}
	if in.cfg.Victim != VictimLowestPriority {
		return in.tail
	}
	v := in.tail
	for r := in.tail.prev; r != nil; r = r.prev {
		if v.key < r.key {
			v = r
		}
	}
	return v
}

// release frees a running request's KV: its private blocks and its
// references to cached units. With prefix caching the freed blocks join
// the cache's LRU tail-first, as vLLM's KVCacheManager.free returns a
// request's blocks to the free queue in reverse order (the tail is evicted
// first): private blocks, then self units last to first, then the shared
// prefix units (in their order, as before). keep (a recompute preemption)
// leaves the private full blocks as self units the request can match when
// it is readmitted; otherwise they, and its self units, are anonymous.
func (in *Instance) release(r *request) { in.releaseKV(r, false) }

func (in *Instance) releaseKV(r *request, keep bool) {
	c := in.cache
	if c == nil {
		in.usedBlocks -= r.blocks
		r.blocks = 0
		return
	}
	shared := in.sharedBlocks(r)
	np := len(r.units) - r.nSelf
	if keep {
		// Private full blocks [shared, computed/blockSize); the partial
		// one (if any) is anonymous.
		full := max(0, r.computed/in.cfg.BlockSize-shared)
		c.freeAnon(r.blocks - full)
		for b := shared + full - 1; b >= shared; b-- {
			c.freeSelf(r.id, b)
		}
		r.selfLo, r.selfHi = shared-r.nSelf, shared+full
	} else {
		c.freeAnon(r.blocks)
	}
	r.blocks = 0
	for i := len(r.units) - 1; i >= np; i-- {
		u := r.units[i]
		c.release(u)
		if !keep {
			c.anonymize(u)
		}
	}
	for _, u := range r.units[:np] {
		c.release(u)
	}
	clear(r.units)
	r.units = r.units[:0]
	r.nSelf = 0
}

// preempt evicts a running request: by swap when configured and host space
// allows, else by recompute (its KV is dropped and it goes back to the queue
// to prefill its prompt and generated tokens again).
func (in *Instance) preempt(r *request, now sim.Time) {
	switch r.state {
	case stateDecode:
		in.leaveDecode(r)
	case statePrefill:
		in.removePrefilling(r)
	default:
		panic("serve: preempting a request that is not running")
	}
	in.unlink(r)
	r.preemptions++
	in.preempted++
	in.retracted++
	in.w.res.Preemptions++
	kvBytes := float64(r.computed) * in.cfg.KVBytesPerToken
	if in.cfg.Preempt == PreemptSwap && in.swapBytes+kvBytes <= in.cfg.SwapSpace {
		in.release(r)
		in.swapBytes += kvBytes
		sec := kvBytes / in.cfg.HostBW
		in.swapSec += sec
		in.w.res.SwapOutSeconds += sec
		in.w.res.SwapOuts++
		r.state = stateSwapped
		in.swapped.insert(r)
		return
	}
	if in.tiers != nil {
		// Its full blocks are in the tiers (stored as computed); a load
		// done before is spent, so readmission looks them up again.
		in.storeTiers(r)
		r.loadToks = 0
	}
	in.releaseKV(r, true)
	in.w.res.RecomputeTokens += int64(r.computed)
	r.dropped = r.computed
	r.computed = 0
	r.target = r.prompt + r.generated
	r.state = stateWaiting
	in.waiting.insert(r)
}

// swapIn brings swapped requests back, in queue order, while their blocks
// fit and the sequence limit allows.
func (in *Instance) swapIn(now sim.Time) {
	for in.swapped.len() > 0 {
		r := in.swapped.at(0)
		need := in.blocksOf(r.computed)
		if need > in.FreeBlocks() || in.running >= in.cfg.Limits.MaxNumSeqs {
			return
		}
		in.swapped.removeAt(0)
		in.allocate(need)
		r.blocks = need
		kvBytes := float64(r.computed) * in.cfg.KVBytesPerToken
		in.swapBytes -= kvBytes
		sec := kvBytes / in.cfg.HostBW
		in.swapSec += sec
		in.w.res.SwapInSeconds += sec
		in.link(r)
		if r.computed < r.target {
			r.state = statePrefill
			r.pidx = len(in.prefilling)
			in.prefilling = append(in.prefilling, r)
		} else {
			in.enterDecode(r)
		}
	}
}
