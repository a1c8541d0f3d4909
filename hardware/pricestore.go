package hardware

import (
	"sync"
	"sync/atomic"
)

// PriceStore holds token-count price tables that step models of the same
// model, GPU, parallel layout and kernel model share, so that a sweep's
// points (each resolving its own plan, and its own StepModel) price each
// token count once per process instead of once per point.
//
// A token count's part (tokenPart: the operators whose cost depends on the
// token count alone, and the LM head of a batch without prefill) is a pure
// function of the model, the parallel layout and the kernel model's
// OpTime: whichever step model computes it first computes the same bits
// as any other would, so sharing changes no output. Keying is the
// caller's business (SharePrices): the key must name everything OpTime
// and Model.Ops read.
//
// A PriceStore is safe for concurrent use. It keeps at most maxKeys tables,
// dropping the oldest key first; a step model that holds a dropped table
// keeps using it (the store only stops handing it out).
type PriceStore struct {
	mu      sync.Mutex
	maxKeys int
	tables  map[string]*priceTable
	order   []string // keys, oldest first
}

// NewPriceStore returns an empty store of at most maxKeys tables (at least
// one).
func NewPriceStore(maxKeys int) *PriceStore {
	return &PriceStore{maxKeys: max(maxKeys, 1), tables: make(map[string]*priceTable)}
}

// Len returns the number of tables the store holds.
func (ps *PriceStore) Len() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return len(ps.tables)
}

// table returns key's table, made (and the oldest dropped past maxKeys)
// if new.
func (ps *PriceStore) table(key string) *priceTable {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if t, ok := ps.tables[key]; ok {
		return t
	}
	for len(ps.order) >= ps.maxKeys {
		delete(ps.tables, ps.order[0])
		ps.order = ps.order[1:]
	}
	t := &priceTable{}
	ps.tables[key] = t
	ps.order = append(ps.order, key)
	return t
}

// priceTable is one key's token parts by token count (below
// maxCachedTokens), in chunks of priceChunk counts made when a count in
// them is first priced, so that a table holds about what its runs priced.
// Every entry is written once, by whichever step model claims it first,
// and never changes: readers need no lock (an entry's state is read
// atomically, and published after its part is written), and a step model
// keeps the chunk pointers it has seen (chunks are never dropped).
type priceTable struct {
	chunks [maxCachedTokens / priceChunk]atomic.Pointer[partChunk]
}

// priceChunk is how many token counts a chunk holds (64 KiB of parts).
const priceChunk = 1 << 10

type partChunk struct {
	state [priceChunk]atomic.Uint32 // entryEmpty, entryWriting, entryReady
	parts [priceChunk]tokenPart
}

const (
	entryEmpty uint32 = iota
	entryWriting
	entryReady
)

// chunk returns the chunk holding n, made if absent.
func (t *priceTable) chunk(n int) *partChunk {
	slot := &t.chunks[n/priceChunk]
	if c := slot.Load(); c != nil {
		return c
	}
	slot.CompareAndSwap(nil, new(partChunk))
	return slot.Load()
}

// ready returns n's part in c if priced.
func (c *partChunk) ready(n int) (*tokenPart, bool) {
	i := n % priceChunk
	if c.state[i].Load() == entryReady {
		return &c.parts[i], true
	}
	return nil, false
}

// publish records tp as n's part in c unless another step model has
// claimed the entry (it is writing the same bits), and returns whether it
// did.
func (c *partChunk) publish(n int, tp tokenPart) bool {
	i := n % priceChunk
	if !c.state[i].CompareAndSwap(entryEmpty, entryWriting) {
		return false
	}
	c.parts[i] = tp
	c.state[i].Store(entryReady)
	return true
}

// SharePrices makes s read and fill store's table under key on a miss of
// its own token-count cache. The key must identify everything a token
// count's price depends on: the model's shapes, the GPU's numbers, the
// parallel layout and the kernel model's definition (including its
// wrappers). A nil store gives s a table of its own.
func (s *StepModel) SharePrices(store *PriceStore, key string) {
	if store == nil {
		s.prices = &priceTable{}
	} else {
		s.prices = store.table(key)
	}
	s.seen = [len(s.seen)]*partChunk{}
}
