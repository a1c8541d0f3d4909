package serve

import "fmt"

// checkAll enables the expensive invariant check after every iteration. Tests
// switch it on; it costs O(running requests) per iteration, so runs keep it
// off (STYLE §6: cheap invariants always, expensive ones on demand).
var checkAll = false

// checkInvariants recomputes, by walking every running request, what the
// instance keeps incrementally, and panics on any difference.
func (in *Instance) checkInvariants() {
	used, decodes, running := 0, 0, 0
	var sumKV int64
	phase := make([]int, in.cfg.BlockSize)
	for r := in.head; r != nil; r = r.next {
		running++
		switch r.state {
		case stateDecode:
			n := int(in.decCounter - r.d0)
			kv := r.k0 + n
			gen := r.g0 + n
			if gen >= r.output {
				panic(fmt.Sprintf("serve: request %d decoding with %d of %d tokens", r.id, gen, r.output))
			}
			used += in.blocksOf(kv) - in.sharedBlocks(r)
			sumKV += int64(kv)
			decodes++
			phase[in.phaseOf(r)]++
			inHeap := r.hidx >= 0 && r.hidx < len(in.heap) && in.heap[r.hidx].r == r && in.heap[r.hidx].at == r.finishAt
			if r.inWheel == (in.cfg.Spec != nil) || inHeap != (in.cfg.Spec != nil) {
				panic(fmt.Sprintf("serve: decoding request %d not in the finish wheel (in it %v) or heap (in it %v), speculation %v", r.id, r.inWheel, inHeap, in.cfg.Spec != nil))
			}
		case statePrefill:
			if r.blocks+in.sharedBlocks(r) != in.blocksOf(r.computed) {
				panic(fmt.Sprintf("serve: request %d holds %d+%d blocks for %d tokens", r.id, r.blocks, in.sharedBlocks(r), r.computed))
			}
			used += r.blocks
			if in.prefilling[r.pidx] != r {
				panic(fmt.Sprintf("serve: prefilling request %d not at its index", r.id))
			}
		default:
			panic(fmt.Sprintf("serve: request %d in the running list in state %d", r.id, r.state))
		}
	}
	used += in.incomingBlocks
	for i := 0; i < in.waiting.len(); i++ {
		if r := in.waiting.at(i); r.loadToks > 0 {
			used += r.blocks // loaded from an offload tier, back in the queue
		}
	}
	for _, r := range in.loading {
		if r.state != stateLoading || r.blocks+in.sharedBlocks(r) != in.blocksOf(r.computed) {
			panic(fmt.Sprintf("serve: loading request %d in state %d holds %d+%d blocks for %d tokens", r.id, r.state, r.blocks, in.sharedBlocks(r), r.computed))
		}
		used += r.blocks
	}
	for _, r := range in.handoffs {
		if r.state != stateHandoff || r.src != in {
			panic(fmt.Sprintf("serve: handoff %d in state %d", r.id, r.state))
		}
		used += r.blocks
	}
	if in.cache != nil {
		evictable, refs := 0, map[*unit]int{}
		for r := in.head; r != nil; r = r.next {
			for _, u := range r.units {
				refs[u]++
			}
		}
		for _, r := range in.handoffs {
			for _, u := range r.units {
				refs[u]++
			}
		}
		for _, r := range in.loading {
			for _, u := range r.units {
				refs[u]++
			}
		}
		for i := 0; i < in.waiting.len(); i++ {
			for _, u := range in.waiting.at(i).units {
				refs[u]++ // a loaded request back in the queue
			}
		}
		unrefs := 0
		for h, u := range in.cache.units {
			used += u.blocks
			if u.hash != h || u.kind != unitPrefix || u.refs != refs[u] {
				panic(fmt.Sprintf("serve: cached unit %x has %d references, running requests hold %d", h, u.refs, refs[u]))
			}
			if u.refs == 0 {
				unrefs++
			}
		}
		in.cache.selfs.each(func(k selfKey, u *unit) {
			used += u.blocks
			if u.self != k || u.kind != unitSelf || u.blocks != 1 || u.refs != refs[u] || u.refs > 1 {
				panic(fmt.Sprintf("serve: self unit %v has %d references, running requests hold %d", k, u.refs, refs[u]))
			}
			if u.refs == 0 {
				unrefs++
			}
		})
		// The LRU holds exactly the unreferenced units and the anonymous
		// freed blocks, and its blocks are the evictable count.
		anon, lru := 0, 0
		for u := in.cache.head; u != nil; u = u.next {
			if u.refs != 0 {
				panic(fmt.Sprintf("serve: unit with %d references in the LRU", u.refs))
			}
			evictable += u.blocks
			if u.kind == unitAnon {
				anon += u.blocks
			} else {
				lru++
			}
		}
		used += anon
		switch {
		case evictable != in.cache.evictable:
			panic(fmt.Sprintf("serve: evictable blocks %d, counter %d", evictable, in.cache.evictable))
		case anon != in.cache.anon:
			panic(fmt.Sprintf("serve: anonymous freed blocks %d, counter %d", anon, in.cache.anon))
		case lru != unrefs:
			panic(fmt.Sprintf("serve: %d units in the LRU, %d unreferenced", lru, unrefs))
		}
	}
	for i := 0; i < in.swapped.len(); i++ {
		if r := in.swapped.at(i); r.state != stateSwapped || r.blocks != 0 || len(r.units) != 0 {
			panic(fmt.Sprintf("serve: swapped request %d in state %d with %d blocks", r.id, r.state, r.blocks))
		}
	}
	switch {
	case running != in.running:
		panic(fmt.Sprintf("serve: running list has %d, count says %d", running, in.running))
	case used != in.usedBlocks:
		panic(fmt.Sprintf("serve: blocks held %d, counter says %d", used, in.usedBlocks))
	case used > in.cfg.Blocks:
		panic(fmt.Sprintf("serve: blocks used %d > capacity %d", used, in.cfg.Blocks))
	case int64(in.decPhase) != in.decCounter%int64(in.cfg.BlockSize):
		panic(fmt.Sprintf("serve: decode phase %d at counter %d, block size %d", in.decPhase, in.decCounter, in.cfg.BlockSize))
	case decodes != in.decodes || decodes != in.wheel.len()+len(in.heap):
		panic(fmt.Sprintf("serve: %d decoding, counter %d, finish wheel %d, heap %d", decodes, in.decodes, in.wheel.len(), len(in.heap)))
	case sumKV != in.sumKV:
		panic(fmt.Sprintf("serve: Σ KV %d, counter %d", sumKV, in.sumKV))
	case running != decodes+len(in.prefilling):
		panic(fmt.Sprintf("serve: running %d ≠ decoding %d + prefilling %d", running, decodes, len(in.prefilling)))
	}
	for i := range phase {
		if phase[i] != in.phase[i] {
			panic(fmt.Sprintf("serve: phase %d has %d requests, counter %d", i, phase[i], in.phase[i]))
		}
	}
	in.wheel.check(in.decCounter)
	if in.tiers != nil {
		in.tiers.check()
	}
	for i := 0; i < in.waiting.len(); i++ {
		r := in.waiting.at(i)
		if r.loadToks > 0 && r.state == stateWaiting && r.blocks+in.sharedBlocks(r) == in.blocksOf(r.computed) {
			continue // loaded from a tier, holding its prefix (counted above)
		}
		if r.state != stateWaiting || r.blocks != 0 || len(r.units) != 0 {
			panic(fmt.Sprintf("serve: waiting request %d in state %d with %d blocks", r.id, r.state, r.blocks))
		}
	}
}
