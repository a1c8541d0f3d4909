package hardware

import "sync"

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
// maxCachedTokens), filled by whichever step model prices a count first.
// A step model reads it only on a miss of its own cache, once per token
// count, so one mutex is no contention.
type priceTable struct {
	mu    sync.Mutex
	parts []tokenPart
}

// get returns n's part if priced.
func (t *priceTable) get(n int) (tokenPart, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n < len(t.parts) && t.parts[n].ok {
		return t.parts[n], true
	}
	return tokenPart{}, false
}

// put records n's part (n < maxCachedTokens).
func (t *priceTable) put(n int, tp tokenPart) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.parts = growParts(t.parts, n)
	t.parts[n] = tp
}

// growParts returns parts with room for index n, doubling.
func growParts(parts []tokenPart, n int) []tokenPart {
	if n < len(parts) {
		return parts
	}
	grown := make([]tokenPart, max(n+1, 2*len(parts)))
	copy(grown, parts)
	return grown
}

// SharePrices makes s read and fill store's table under key on a miss of
// its own token-count cache. The key must identify everything a token
// count's price depends on: the model's shapes, the GPU's numbers, the
// parallel layout and the kernel model's definition (including its
// wrappers). A nil store leaves s on its own cache.
func (s *StepModel) SharePrices(store *PriceStore, key string) {
	if store == nil {
		s.shared = nil
		return
	}
	s.shared = store.table(key)
}
