package serve

// The prefix cache follows vLLM V1's block pool (vllm/v1/core/block_pool.py:
// BlockPool, FreeKVCacheBlockQueue): every freed block joins ONE free queue
// in free order, keeps its hash until it is reused, and allocation pops the
// queue's front (the least recently freed), evicting that block's hash.
// Blocks never used yet are handed out first (vLLM's initial queue). Here the
// queue is the LRU list of units; a unit is one of:
//   - a shared prefix unit: the KV of a run of unitToks prompt tokens,
//     identified by a chained content hash (a hash of the block and
//     everything before it, as Mooncake's hash_ids), shared by reference;
//   - a self unit: one full block of a recompute-preempted request, with
//     the identity (request, block index), which only that request matches
//     when it is readmitted (vLLM hashes every full block of a request,
//     prompt and generated tokens, as it fills: KVCacheManager.allocate_slots
//     → cache_blocks, Request.block_hashes; the preempted request finds them
//     again with KVCacheManager.get_computed_blocks);
//   - an anonymous unit: freed blocks nobody can match (a finished request's
//     private blocks, partial blocks), which only hold their place in the
//     queue; adjacent ones merge, and eviction may take part of one.

// Unit kinds.
const (
	unitPrefix uint8 = iota
	unitSelf
	unitAnon
)

// unit is a run of cached (or freed, in the LRU) KV blocks.
type unit struct {
	hash       uint64
	self       selfKey
	kind       uint8
	blocks     int // KV blocks it occupies
	refs       int // running requests using it
	prev, next *unit
}

// selfKey identifies a preempted request's own full block: its index from
// the start of the request's KV. Self units live in their own map, so no
// content hash can collide with them.
type selfKey struct {
	id    int64
	block int
}

// selfMap maps selfKeys to Ts (the GPU cache's self units, a tier's own
// blocks). A key packs into one word where it can (packSelf), so that
// most lookups take the runtime's fast map for 8-byte keys, not a hash of
// the 16-byte key: the batcher looks a queued preempted request's self
// blocks up at every step it is considered, and a tier stores millions of
// own blocks in a 100k-request run (BenchmarkSimulate100kKVTier).
type selfMap[T any] struct {
	packed map[uint64]*T
	wide   map[selfKey]*T // keys that do not pack
}

func newSelfMap[T any]() selfMap[T] {
	return selfMap[T]{packed: map[uint64]*T{}, wide: map[selfKey]*T{}}
}

// Self keys pack as id<<selfBlockBits | block for 0 ≤ id < 2^40 and
// 0 ≤ block < 2^24 (16M blocks: 268M tokens at 16 a block, past any
// model's context); the others use the wide map.
const selfBlockBits = 24

// packSelf returns k as one word, and whether it packs.
func packSelf(k selfKey) (uint64, bool) {
	if k.id < 0 || k.id >= 1<<(64-selfBlockBits) || k.block < 0 || k.block >= 1<<selfBlockBits {
		return 0, false
	}
	return uint64(k.id)<<selfBlockBits | uint64(k.block), true
}

// get returns k's value, or nil.
func (m *selfMap[T]) get(k selfKey) *T {
	if p, ok := packSelf(k); ok {
		return m.packed[p]
	}
	return m.wide[k]
}

func (m *selfMap[T]) put(k selfKey, v *T) {
	if p, ok := packSelf(k); ok {
		m.packed[p] = v
	} else {
		m.wide[k] = v
	}
}

func (m *selfMap[T]) del(k selfKey) {
	if p, ok := packSelf(k); ok {
		delete(m.packed, p)
	} else {
		delete(m.wide, k)
	}
}

func (m *selfMap[T]) len() int { return len(m.packed) + len(m.wide) }

// each calls f for every entry, in no particular order (for invariant
// checks: nothing that reaches an output may depend on it).
func (m *selfMap[T]) each(f func(k selfKey, v *T)) {
	for p, v := range m.packed {
		f(selfKey{int64(p >> selfBlockBits), int(p & (1<<selfBlockBits - 1))}, v)
	}
	for k, v := range m.wide {
		f(k, v)
	}
}

// prefixCache maps hashes to cached units and keeps the unreferenced ones
// in LRU order (head = least recently released) for eviction.
type prefixCache struct {
	units      map[uint64]*unit
	selfs      selfMap[unit]
	head, tail *unit
	evictable  int // blocks held by unreferenced units (all of the LRU)
	anon       int // blocks of anonymous units
	free       []*unit
}

func newPrefixCache() *prefixCache {
	return &prefixCache{units: map[uint64]*unit{}, selfs: newSelfMap[unit]()}
}

// match returns how many leading hashes are cached, at most limit.
func (c *prefixCache) match(hashes []uint64, limit int) int {
	n := 0
	for n < len(hashes) && n < limit {
		if _, ok := c.units[hashes[n]]; !ok {
			break
		}
		n++
	}
	return n
}

// matchSelf returns how many consecutive self blocks of request id from
// block b0 are cached, at most limit.
func (c *prefixCache) matchSelf(id int64, b0, limit int) int {
	n := 0
	for n < limit {
		if c.selfs.get(selfKey{id, b0 + n}) == nil {
			break
		}
		n++
	}
	return n
}

// pinnedBlocks returns the blocks of the first n units of hashes that are
// unreferenced now: referencing them takes them out of the evictable pool.
func (c *prefixCache) pinnedBlocks(hashes []uint64, n int) int {
	b := 0
	for _, h := range hashes[:n] {
		if u := c.units[h]; u.refs == 0 {
			b += u.blocks
		}
	}
	return b
}

// ref takes a reference to the unit of h.
func (c *prefixCache) ref(h uint64) *unit { return c.take(c.units[h]) }

// refSelf takes a reference to request id's self unit of block b.
func (c *prefixCache) refSelf(id int64, b int) *unit { return c.take(c.selfs.get(selfKey{id, b})) }

func (c *prefixCache) take(u *unit) *unit {
	if u.refs == 0 {
		c.unlinkLRU(u)
		c.evictable -= u.blocks
	}
	u.refs++
	return u
}

// release drops a reference; an unreferenced unit becomes the most recent
// eviction candidate.
func (c *prefixCache) release(u *unit) {
	u.refs--
	if u.refs > 0 {
		return
	}
	c.evictable += u.blocks
	c.pushLRU(u)
}

func (c *prefixCache) pushLRU(u *unit) {
	u.prev, u.next = c.tail, nil
	if c.tail != nil {
		c.tail.next = u
	} else {
		c.head = u
	}
	c.tail = u
}

func (c *prefixCache) newUnit() *unit {
	if n := len(c.free); n > 0 {
		u := c.free[n-1]
		c.free = c.free[:n-1]
		return u
	}
	return new(unit)
}

// add caches a new unit of h held by one reference; false if h is cached.
func (c *prefixCache) add(h uint64, blocks int) (*unit, bool) {
	if _, ok := c.units[h]; ok {
		return nil, false
	}
	u := c.newUnit()
	*u = unit{hash: h, blocks: blocks, refs: 1}
	c.units[h] = u
	return u, true
}

// freeAnon appends n freed blocks nobody can match to the LRU.
func (c *prefixCache) freeAnon(n int) {
	if n <= 0 {
		return
	}
	c.evictable += n
	c.anon += n
	if t := c.tail; t != nil && t.kind == unitAnon {
		t.blocks += n
		return
	}
	u := c.newUnit()
	*u = unit{kind: unitAnon, blocks: n}
	c.pushLRU(u)
}

// freeSelf appends request id's freed full block b to the LRU under its
// own identity. A stale unit of the same key (there is none: admit
// anonymizes a request's unmatched self units) would be a bug.
func (c *prefixCache) freeSelf(id int64, b int) {
	k := selfKey{id, b}
	if c.selfs.get(k) != nil {
		panic("serve: self block cached twice")
	}
	u := c.newUnit()
	*u = unit{kind: unitSelf, self: k, blocks: 1}
	c.selfs.put(k, u)
	c.evictable++
	c.pushLRU(u)
}

// anonymize takes an unreferenced self unit's identity away; it keeps its
// place in the LRU.
func (c *prefixCache) anonymize(u *unit) {
	if u.kind != unitSelf || u.refs != 0 {
		return
	}
	c.selfs.del(u.self)
	u.kind = unitAnon
	c.anon += u.blocks
}

// evict frees up to need blocks from the LRU head: part of an anonymous
// unit, or a whole unit. It returns the blocks freed (0 if none is
// evictable) and whether a shared prefix unit went.
func (c *prefixCache) evict(need int) (int, bool) {
	u := c.head
	if u == nil {
		return 0, false
	}
	if u.kind == unitAnon && u.blocks > need {
		u.blocks -= need
		c.evictable -= need
		c.anon -= need
		return need, false
	}
	c.unlinkLRU(u)
	c.evictable -= u.blocks
	switch u.kind {
	case unitPrefix:
		delete(c.units, u.hash)
	case unitSelf:
		c.selfs.del(u.self)
	default:
		c.anon -= u.blocks
	}
	c.free = append(c.free, u)
	return u.blocks, u.kind == unitPrefix
}

func (c *prefixCache) unlinkLRU(u *unit) {
	if u.prev != nil {
		u.prev.next = u.next
	} else {
		c.head = u.next
	}
	if u.next != nil {
		u.next.prev = u.prev
	} else {
		c.tail = u.prev
	}
	u.prev, u.next = nil, nil
}

// hits returns how many of r's leading prefix units are cached and, after
// them, how many of its own blocks (self units left by a recompute
// preemption), leaving at least one token to compute (vLLM's
// KVCacheManager.get_computed_blocks matches at most num_tokens − 1).
func (in *Instance) hits(r *request) (n, k int) {
	if in.cache == nil || r.computed > 0 {
		return 0, 0
	}
	if r.unitToks > 0 {
		n = in.cache.match(r.hashes, (r.target-1)/r.unitToks)
	}
	if r.selfHi > 0 {
		bs := in.cfg.BlockSize
		if b0 := n * r.unitToks / bs; b0 >= r.selfLo && b0 < r.selfHi {
			k = in.cache.matchSelf(r.id, b0, min(r.selfHi, (r.target-1)/bs)-b0)
		}
	}
	return n, k
}

// takeHits references an admitted request's cached prefix and own blocks
// and sets its computed tokens. A readmitted request's self units that it
// does not match lose their identity (nobody else can match them).
func (in *Instance) takeHits(r *request) {
	c := in.cache
	n, k := in.hits(r)
	for _, h := range r.hashes[:n] {
		r.units = append(r.units, c.ref(h))
	}
	b0 := n * r.unitToks / in.cfg.BlockSize
	for b := b0; b < b0+k; b++ {
		r.units = append(r.units, c.refSelf(r.id, b))
	}
	r.nSelf = k
	for b := r.selfLo; b < r.selfHi; b++ {
		if b < b0 || b >= b0+k {
			if u := c.selfs.get(selfKey{r.id, b}); u != nil {
				c.anonymize(u)
			}
		}
	}
	r.selfLo, r.selfHi = 0, 0
	r.computed = n*r.unitToks + k*in.cfg.BlockSize
	in.w.res.PrefixHitTokens += int64(n * r.unitToks)
	in.w.res.PreemptHitTokens += int64(k * in.cfg.BlockSize)
	if r.dropped > 0 {
		// Only what is recomputed counts: the dropped KV less the hits.
		// A tier load after them counts in allocLoad.
		d := min(r.computed, r.dropped)
		in.w.res.RecomputeTokens -= int64(d)
		r.dropped -= d
	}
}

// cachePrefix turns the full prefix units of a request that finished its
// prefill into cached units it references (its private blocks become
// shared ones). It stops at a unit already cached by another request (that
// one stays private, and so do those after it), and caches none for a
// request holding self units (they cover the blocks after its prefix), so
// that a request's units always cover its first blocks contiguously.
func (in *Instance) cachePrefix(r *request) {
	if in.cache == nil || r.unitToks == 0 || r.nSelf > 0 {
		return
	}
	ub := r.unitToks / in.cfg.BlockSize
	full := min(len(r.hashes), r.computed/r.unitToks)
	for j := len(r.units); j < full; j++ {
		u, ok := in.cache.add(r.hashes[j], ub)
		if !ok {
			return
		}
		r.units = append(r.units, u)
		r.blocks -= ub
	}
}
