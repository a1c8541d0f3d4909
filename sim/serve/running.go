package serve

// The running list (admission order) and the decode bookkeeping (see
// Instance: decoding requests are advanced by a counter, not touched).

func (in *Instance) link(r *request) {
	r.prev, r.next = in.tail, nil
	if in.tail != nil {
		in.tail.next = r
	} else {
		in.head = r
	}
	in.tail = r
	in.running++
}

func (in *Instance) unlink(r *request) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		in.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		in.tail = r.prev
	}
	r.prev, r.next = nil, nil
	in.running--
}

func (in *Instance) removePrefilling(r *request) {
	last := len(in.prefilling) - 1
	copy(in.prefilling[r.pidx:], in.prefilling[r.pidx+1:])
	in.prefilling[last] = nil
	in.prefilling = in.prefilling[:last]
	for i := r.pidx; i < last; i++ {
		in.prefilling[i].pidx = i
	}
}

// compactPrefilling drops the requests that are no longer prefilling, in
// one pass: O(prefilling), however many finished their prefill.
func (in *Instance) compactPrefilling() {
	j := 0
	for _, r := range in.prefilling {
		if r.state == statePrefill {
			r.pidx = j
			in.prefilling[j] = r
			j++
		}
	}
	clear(in.prefilling[j:])
	in.prefilling = in.prefilling[:j]
}

// phaseOf returns (d0 − k0) mod blockSize in [0, blockSize): a mask when
// the block size is a power of two (two's complement makes it the
// floored modulo).
func (in *Instance) phaseOf(r *request) int {
	x := r.d0 - int64(r.k0)
	if in.bsShift >= 0 {
		return int(x & int64(in.cfg.BlockSize-1))
	}
	bs := int64(in.cfg.BlockSize)
	return int((x%bs + bs) % bs)
}

func (in *Instance) sharedBlocks(r *request) int {
	n := 0
	for _, u := range r.units {
		n += u.blocks
	}
	return n
}

// materialize writes a decoding request's derived counts into its fields.
func (in *Instance) materialize(r *request) {
	n := int(in.decCounter - r.d0)
	r.generated = r.g0 + n
	r.computed = r.k0 + n
	r.blocks = in.blocksOf(r.computed) - in.sharedBlocks(r)
	if !r.newcomer {
		r.lastToken = in.lastDecode
	}
}

// enterDecode registers a request in the decode bookkeeping.
func (in *Instance) enterDecode(r *request) {
	r.state = stateDecode
	r.d0, r.g0, r.k0 = in.decCounter, r.generated, r.computed
	r.finishAt = r.d0 + int64(r.output-r.g0)
	if in.cfg.Spec != nil {
		in.heap.push(r)
	} else {
		in.wheel.push(r, in.decCounter)
	}
	in.phase[in.phaseOf(r)]++
	in.decodes++
	in.sumKV += int64(r.k0)
	if in.cfg.Spec != nil {
		in.specBlocks += in.specNeed(r.k0)
	}
	if r.lastToken != in.lastDecode {
		r.newcomer = true
		in.newcomers = append(in.newcomers, r)
	}
}

// leaveDecode removes a decoding request from the decode bookkeeping.
func (in *Instance) leaveDecode(r *request) {
	in.materialize(r)
	if r.inWheel {
		in.wheel.remove(r, in.decCounter)
	}
	if r.hidx >= 0 {
		in.heap.remove(r.hidx)
	}
	in.phase[in.phaseOf(r)]--
	in.decodes--
	in.sumKV -= int64(r.computed)
	if in.cfg.Spec != nil {
		in.specBlocks -= in.specNeed(r.computed)
	}
	if r.newcomer {
		for i, x := range in.newcomers {
			if x == r {
				in.newcomers = append(in.newcomers[:i], in.newcomers[i+1:]...)
				break
			}
		}
		r.newcomer = false
	}
}
