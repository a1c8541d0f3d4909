package serve

// unit is one cached prefix block: the KV of a run of unitToks prompt tokens
// identified by a chained content hash (a hash of the block and everything
// before it, as Mooncake's hash_ids), shared by reference count.
type unit struct {
	hash       uint64
	blocks     int // KV blocks it occupies
	refs       int // running requests using it
	prev, next *unit
}

// prefixCache maps hashes to cached units and keeps the unreferenced ones
// in LRU order (head = least recently released) for eviction.
type prefixCache struct {
	units      map[uint64]*unit
	head, tail *unit
	evictable  int // blocks held by unreferenced units
	free       []*unit
}

func newPrefixCache() *prefixCache { return &prefixCache{units: map[uint64]*unit{}} }

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
func (c *prefixCache) ref(h uint64) *unit {
	u := c.units[h]
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
	u.prev, u.next = c.tail, nil
	if c.tail != nil {
		c.tail.next = u
	} else {
		c.head = u
	}
	c.tail = u
}

// add caches a new unit of h held by one reference; false if h is cached.
func (c *prefixCache) add(h uint64, blocks int) (*unit, bool) {
	if _, ok := c.units[h]; ok {
		return nil, false
	}
	var u *unit
	if n := len(c.free); n > 0 {
		u = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		u = new(unit)
	}
	*u = unit{hash: h, blocks: blocks, refs: 1}
	c.units[h] = u
	return u, true
}

// evict removes the least recently released unit and returns its blocks
// (0 if none is evictable).
func (c *prefixCache) evict() int {
	u := c.head
	if u == nil {
		return 0
	}
	c.unlinkLRU(u)
	c.evictable -= u.blocks
	delete(c.units, u.hash)
	c.free = append(c.free, u)
	return u.blocks
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
