package serve

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/sim"
)

// KV offload tiers below the GPU's prefix cache, as vLLM's
// OffloadingConnector and LMCache run them.
//
//   - What is stored, when: every full prefix unit a request computed, and
//     its own full blocks after them (below), are written to the first
//     tier (host memory) when its prefill ends, and its own blocks again
//     when it is preempted or finishes (write-through of computed KV: vLLM's OffloadingConnectorScheduler
//     stores each request's new full blocks as they are computed,
//     vllm/distributed/kv_transfer/kv_connector/v1/offloading_connector.py
//     _get_reqs_to_store; LMCache's LMCacheConnectorV1 stores a request's
//     KV after its prefill, lmcache/integration/vllm/vllm_v1_adapter.py
//     save_kv_layer/wait_for_save). A unit already held is only touched
//     (OffloadingManager.prepare_store skips stored blocks; LRU order,
//     vllm/v1/kv_offload/cpu/ LRU policy). The stores are asynchronous DMA
//     on the device-to-host direction, which a full-duplex PCIe link runs
//     beside the host-to-device loads: they delay nothing; their bytes and
//     link seconds are counted.
//   - A lower tier (local disk: LMCache's LocalDiskBackend) is written
//     either when the tier above evicts a unit (OnEvict, write-back) or
//     together with it (write-through: LMCache's StorageManager puts a
//     chunk into every configured backend).
//   - Eviction per tier is LRU over units (OffloadingConnector's LRU
//     manager; LMCache's LocalCPUBackend and LocalDiskBackend evict LRU).
//   - Loads: at admission a request's prefix units after its GPU hits that
//     a tier holds (consecutively, in any tier) are loaded into newly
//     allocated GPU blocks over the host link before its prefill: the
//     request waits out of the batch, other requests keep running (vLLM's
//     KVConnector get_num_new_matched_tokens(…) → load_kv_async: the
//     request is WAITING_FOR_REMOTE_KVS until its load finishes,
//     vllm/v1/core/sched/scheduler.py), so a load overlaps other compute
//     and one that arrives late delays only that request's first step.
//     Loads on a link queue in order (one DMA engine per direction); a
//     disk unit crosses the disk's read link and then the host link,
//     chunk by chunk (pipelined: the load ends when the slower of the two
//     ends). A load changes no tier's contents, only their LRU order (a
//     disk unit is not copied into the host tier on its way), so that what
//     a step's batcher saw in the tiers is what its admissions find.
//
// Granularity: a prefix unit is the workload's prefix hash unit (Mooncake:
// 512 tokens = 32 GPU blocks of 16 = two LMCache chunks of 256), so a tier
// matches whole units, as the GPU cache does here; a partial last unit is
// neither stored nor loaded as a prefix unit.
//
// Own blocks: vLLM hashes every full block a request computes (prompt and
// output, Request.block_hashes) and the OffloadingConnector stores each
// new full block by its hash as the steps compute it (_get_reqs_to_store
// walks a request's block hashes past the last one stored, decode blocks
// included). The blocks after a request's full prefix units (all of them
// for a request without prefix hashes) carry hashes only that request
// has: they are stored here as own blocks of one GPU block each, keyed by
// (request, block index) as the GPU's self units are (prefix.go), when
// its prefill ends, when it is preempted and when it finishes (the same
// blocks as the per-step stores; only their order within the tier's LRU
// is coarser). Only the request itself can find them: after a recompute
// preemption its readmission loads them over the host link instead of
// recomputing them (vLLM: the preempted request goes back to WAITING and
// get_num_new_matched_tokens looks its block hashes up again).

// MaxTiers is how many offload tiers an instance may have below the GPU.
const MaxTiers = 2

// KVTier is one offload tier, per GPU of the instance.
type KVTier struct {
	Name string
	// Bytes is the tier's capacity per GPU.
	Bytes float64
	// ReadBW is the rate (bytes/s per GPU) of the tier's link towards the
	// GPU: the host link for the first tier, the disk's read rate for a
	// lower one (whose units then also cross the first tier's link).
	ReadBW float64
	// WriteBW is the rate (bytes/s per GPU) at which the tier is written:
	// the host link's device-to-host direction, the disk's write rate.
	WriteBW float64
	// OnEvict (lower tiers only) stores the units the tier above evicts,
	// instead of every unit the tier above stores.
	OnEvict bool
}

// validateTiers checks the tiers of an instance configuration.
func validateTiers(c *InstanceConfig) error {
	if len(c.Tiers) == 0 {
		return nil
	}
	if len(c.Tiers) > MaxTiers {
		return fmt.Errorf("serve: %d KV offload tiers: at most %d (host memory, then disk)", len(c.Tiers), MaxTiers)
	}
	if !c.PrefixCache {
		return fmt.Errorf("serve: KV offload tiers need prefix caching (offloaded KV is found by its block hashes)")
	}
	if !(c.KVBytesPerToken > 0) {
		return fmt.Errorf("serve: KV offload tiers need the KV bytes per token")
	}
	for i, t := range c.Tiers {
		if !(t.Bytes > 0) || math.IsInf(t.Bytes, 0) || !(t.ReadBW > 0) || !(t.WriteBW > 0) || math.IsInf(t.ReadBW, 0) || math.IsInf(t.WriteBW, 0) {
			return fmt.Errorf("serve: KV offload tier %d (%s): capacity %g B and read/write rates %g/%g B/s must be finite numbers > 0", i, t.Name, t.Bytes, t.ReadBW, t.WriteBW)
		}
		if i == 0 && t.OnEvict {
			return fmt.Errorf("serve: KV offload tier 0 (%s): the first tier is written through from the GPU (OnEvict is for lower tiers)", t.Name)
		}
	}
	return nil
}

// tierKey names a unit held in a tier: a prefix unit by its hash, or a
// request's own block (own set) by its selfKey. A key type of its own
// keeps content hashes and own blocks from ever colliding.
type tierKey struct {
	hash uint64
	self selfKey
	own  bool
}

func prefixKey(h uint64) tierKey         { return tierKey{hash: h} }
func ownKey(id int64, block int) tierKey { return tierKey{self: selfKey{id, block}, own: true} }

// tierNode is one unit held in a tier.
type tierNode struct {
	key        tierKey
	bytes      float64
	prev, next *tierNode
}

// tierLRU is one tier's units in LRU order (head = least recently used).
// Prefix units are found by their hash and own blocks in a selfMap (most
// keys one packed word): a tier of a 100k-request run takes millions of
// stores, most of them own blocks, and hashing the 32-byte tierKey for
// each was most of their cost (BenchmarkSimulate100kKVTier/cpu).
type tierLRU struct {
	capacity, used float64
	prefix         map[uint64]*tierNode // prefix units by hash
	own            selfMap[tierNode]    // own blocks
	head, tail     *tierNode
	free           []*tierNode
}

func newTierLRU(capacity float64) tierLRU {
	return tierLRU{capacity: capacity, prefix: map[uint64]*tierNode{}, own: newSelfMap[tierNode]()}
}

// get returns the node holding k, or nil.
func (t *tierLRU) get(k tierKey) *tierNode {
	if k.own {
		return t.own.get(k.self)
	}
	return t.prefix[k.hash]
}

// put makes n the node holding k.
func (t *tierLRU) put(k tierKey, n *tierNode) {
	if k.own {
		t.own.put(k.self, n)
	} else {
		t.prefix[k.hash] = n
	}
}

// del forgets k.
func (t *tierLRU) del(k tierKey) {
	if k.own {
		t.own.del(k.self)
	} else {
		delete(t.prefix, k.hash)
	}
}

func (t *tierLRU) has(k tierKey) bool { return t.get(k) != nil }

func (t *tierLRU) units() int { return len(t.prefix) + t.own.len() }

func (t *tierLRU) unlink(n *tierNode) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		t.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		t.tail = n.prev
	}
	n.prev, n.next = nil, nil
}

func (t *tierLRU) pushBack(n *tierNode) {
	n.prev, n.next = t.tail, nil
	if t.tail != nil {
		t.tail.next = n
	} else {
		t.head = n
	}
	t.tail = n
}

// touch makes k the most recently used unit, if held.
func (t *tierLRU) touch(k tierKey) {
	if n := t.get(k); n != nil {
		t.touchNode(n)
	}
}

// touchNode makes held unit n the most recently used.
func (t *tierLRU) touchNode(n *tierNode) {
	if n != t.tail {
		t.unlink(n)
		t.pushBack(n)
	}
}

// evictHead drops the least recently used unit and returns it.
func (t *tierLRU) evictHead() (tierKey, float64) {
	v := t.head
	t.unlink(v)
	t.del(v.key)
	t.used -= v.bytes
	t.free = append(t.free, v)
	return v.key, v.bytes
}

// add stores unit k of bytes as the most recently used; the caller has
// made room (used + bytes ≤ capacity) and checked that k is not held.
func (t *tierLRU) add(k tierKey, bytes float64) {
	var n *tierNode
	if k := len(t.free); k > 0 {
		n = t.free[k-1]
		t.free = t.free[:k-1]
	} else {
		n = new(tierNode)
	}
	*n = tierNode{key: k, bytes: bytes}
	t.put(k, n)
	t.pushBack(n)
	t.used += bytes
}

// kvTiers is an instance's offload tiers and their links.
type kvTiers struct {
	cfg  []KVTier
	lru  [MaxTiers]tierLRU
	free [MaxTiers]sim.Time // when each tier's read link is next idle
	res  *Result
}

func newKVTiers(cfg []KVTier, res *Result) *kvTiers {
	k := &kvTiers{cfg: cfg, res: res}
	for i, t := range cfg {
		k.lru[i] = newTierLRU(t.Bytes)
	}
	return k
}

// where returns the first tier holding key, or -1.
func (k *kvTiers) where(key tierKey) int {
	for i := range k.cfg {
		if k.lru[i].has(key) {
			return i
		}
	}
	return -1
}

// match returns how many consecutive hashes (at most limit) some tier holds.
func (k *kvTiers) match(hashes []uint64, limit int) int {
	n := 0
	for n < len(hashes) && n < limit && k.where(prefixKey(hashes[n])) >= 0 {
		n++
	}
	return n
}

// matchOwn returns how many consecutive own blocks of request id from
// block b0 (at most limit) some tier holds.
func (k *kvTiers) matchOwn(id int64, b0, limit int) int {
	n := 0
	for n < limit && k.where(ownKey(id, b0+n)) >= 0 {
		n++
	}
	return n
}

// store writes unit key of bytes through to the first tier (and, without
// OnEvict, to the lower one); units the first tier evicts go down to an
// OnEvict tier.
func (k *kvTiers) store(key tierKey, bytes float64) {
	k.storeAt(0, key, bytes)
}

// storeAt stores unit h of bytes in tier i as its most recently used unit
// (a unit held already is touched; one larger than the tier is not
// stored), evicting LRU units until it fits: those go down to tier i+1
// when it stores on eviction. Without OnEvict the unit is written through
// to tier i+1 as well.
func (k *kvTiers) storeAt(i int, h tierKey, bytes float64) {
	t := &k.lru[i]
	down := i+1 < len(k.cfg)
	switch n := t.get(h); {
	case n != nil:
		t.touchNode(n)
	case bytes <= t.capacity:
		for t.used+bytes > t.capacity {
			vh, vb := t.evictHead()
			k.res.TierEvictions[i]++
			if down && k.cfg[i+1].OnEvict {
				k.storeAt(i+1, vh, vb)
			}
		}
		t.add(h, bytes)
		k.res.TierStoreBytes[i] += bytes
		k.res.TierStoreSeconds[i] += bytes / k.cfg[i].WriteBW
	}
	if down && !k.cfg[i+1].OnEvict {
		k.storeAt(i+1, h, bytes)
	}
}

// load starts loading into the GPU at now, and returns when the load ends:
// hashes (prefix units of unitToks tokens and unitBytes each), then own
// blocks [b0, b0+nOwn) of request id (blockToks tokens and blockBytes
// each). Each unit is taken from the first tier holding it (and touched
// there); a lower tier's units cross its read link and then the first
// tier's, pipelined. Own blocks' tokens count in preemptHit, prefix
// units' in TierHitTokens.
func (k *kvTiers) load(hashes []uint64, unitToks int, unitBytes float64, id int64, b0, nOwn, blockToks int, blockBytes float64, now sim.Time) sim.Time {
	var from [MaxTiers]float64
	take := func(key tierKey, toks int, bytes float64, hit *[MaxTiers]int64) {
		i := k.where(key)
		k.lru[i].touch(key)
		from[i] += bytes
		hit[i] += int64(toks)
	}
	for _, h := range hashes {
		take(prefixKey(h), unitToks, unitBytes, &k.res.TierHitTokens)
	}
	for b := b0; b < b0+nOwn; b++ {
		take(ownKey(id, b), blockToks, blockBytes, &k.res.TierPreemptHitTokens)
	}
	total := 0.0
	end := now
	for i := range k.cfg {
		total += from[i]
		if i == 0 || from[i] == 0 {
			continue
		}
		k.res.TierLoadBytes[i] += from[i]
		end = max(end, k.occupy(i, from[i], now))
	}
	k.res.TierLoadBytes[0] += total
	return max(end, k.occupy(0, total, now))
}

// occupy queues bytes on tier i's read link from now and returns when they
// are through.
func (k *kvTiers) occupy(i int, bytes float64, now sim.Time) sim.Time {
	sec := bytes / k.cfg[i].ReadBW
	k.res.TierLoadSeconds[i] += sec
	end, ok := max(now, k.free[i]).AddSeconds(sec)
	if !ok {
		end = sim.Forever
	}
	k.free[i] = end
	return end
}

// check panics unless every tier's LRU list and map hold the same units,
// each once, and their bytes are the tier's use, within its capacity.
func (k *kvTiers) check() {
	for i := range k.cfg {
		t := &k.lru[i]
		n, used := 0, 0.0
		for v := t.head; v != nil; v = v.next {
			if t.get(v.key) != v {
				panic(fmt.Sprintf("serve: tier %d: unit %+v in the LRU list is not its map's", i, v.key))
			}
			n++
			used += v.bytes
		}
		switch {
		case n != t.units():
			panic(fmt.Sprintf("serve: tier %d: %d units in the LRU list, %d in the maps", i, n, t.units()))
		case math.Abs(used-t.used) > 1e-6*max(1, t.used):
			panic(fmt.Sprintf("serve: tier %d: units hold %g bytes, counter %g", i, used, t.used))
		case t.used > t.capacity:
			panic(fmt.Sprintf("serve: tier %d: %g bytes held > capacity %g", i, t.used, t.capacity))
		}
	}
}
