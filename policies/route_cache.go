package policies

// Cache-aware routers: they score instances by the request's prefix each
// holds (in GPU memory and in its KV offload tiers) against its load, as
// llm-d's precise prefix-cache scheduling and Dynamo's KV router do. Both
// read the prefix matches current (from the instances' caches, as
// llm-d's indexer and Dynamo's radix tree follow the engines' KV events)
// and the load through InstanceState, as stale as the router's view is
// (RouteView.State, Config.RouterStaleness).

// CacheView is a RouteView that also tells, for the request being routed,
// how many prefix units after its GPU match instance i holds in an
// offload tier, and the request's units and their size. A RouteView
// without it has no tiers and the routers below read only PrefixMatch.
type CacheView interface {
	RouteView
	TierMatch(i int) int
	// UnitTokens is the tokens of one prefix unit of the request (0: it
	// has no prefix hashes); BlockSize the instances' KV block size.
	UnitTokens() int
	BlockSize() int
	// ActiveBlocks is the KV blocks of every request routed to instance i
	// and not finished: those in use, and those its queued requests'
	// prompts will need (current: Dynamo's router counts them itself as it
	// routes and as requests finish).
	ActiveBlocks(i int) int
}

// cacheMatch returns the units of the request's prefix instance i holds
// in any tier, and the tokens per unit.
func cacheMatch(v RouteView, i int) (units, unitToks int) {
	units = v.PrefixMatch(i)
	if cv, ok := v.(CacheView); ok {
		units += cv.TierMatch(i)
		unitToks = cv.UnitTokens()
	}
	return units, unitToks
}

// PrecisePrefix is llm-d's precise prefix-cache-aware scheduling profile
// (llm-d guides/precise-prefix-cache-aware, the scheduler's
// EndpointPickerConfig): the weighted sum of three scorers, each in
// [0, 1], and the highest total wins (max-score-picker; the lowest index
// on ties here, where llm-d picks at random among them):
//
//   - precise-prefix-cache-scorer, weight 2: the request's prefix blocks
//     the instance holds, min–max normalized over the instances (llm-d-kv-cache
//     scores a pod by its longest run of held blocks; the scheduler
//     normalizes the pods' scores); a block held in a lower tier counts as
//     held (llm-d-kv-cache indexes the KV events of every medium vLLM
//     reports; an assumption of equal weight: the load of a held block is
//     cheaper than its prefill);
//   - kv-cache-utilization-scorer, weight 1: 1 − the KV cache's use
//     (gateway-api-inference-extension scorer/kvcache_utilization.go);
//   - queue-scorer, weight 1: the waiting queue min–max normalized,
//     (max − q)/(max − min), 1 for all when equal (scorer/queue.go).
type PrecisePrefix struct{}

// Weights of the llm-d precise prefix-cache profile (see PrecisePrefix).
const (
	llmdPrefixWeight = 2.0
	llmdKVWeight     = 1.0
	llmdQueueWeight  = 1.0
)

// Route returns the instance with the highest weighted score.
func (PrecisePrefix) Route(v RouteView, _ QueueItem) int {
	n := v.Instances()
	minM, maxM, minQ, maxQ := 0, 0, 0, 0
	for i := range n {
		m, _ := cacheMatch(v, i)
		q := v.State(i).Waiting
		if i == 0 || m < minM {
			minM = m
		}
		if i == 0 || m > maxM {
			maxM = m
		}
		if i == 0 || q < minQ {
			minQ = q
		}
		if i == 0 || q > maxQ {
			maxQ = q
		}
	}
	best, bestScore := 0, -1.0
	for i := range n {
		m, _ := cacheMatch(v, i)
		st := v.State(i)
		prefix, queue := 0.0, 1.0
		if maxM > minM {
			prefix = float64(m-minM) / float64(maxM-minM)
		}
		if maxQ > minQ {
			queue = float64(maxQ-st.Waiting) / float64(maxQ-minQ)
		}
		score := llmdPrefixWeight*prefix + llmdKVWeight*(1-st.KVUse) + llmdQueueWeight*queue
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// Name returns "precise-prefix".
func (PrecisePrefix) Name() string { return "precise-prefix" }

// KVRouter is Dynamo's KV router (docs.nvidia.com/dynamo, router design:
// "Cost Function"): the worker with the lowest
//
//	cost = kv_overlap_score_weight × potential prefill blocks + potential active blocks
//
// where the prefill blocks are the request's prompt blocks the worker
// does not hold (prompt tokens − overlap blocks × block size, over the
// block size), the active blocks those of every request routed to the
// worker and not finished (CacheView.ActiveBlocks; Dynamo's router-local
// ActiveSequences; the request's own are the same on every worker and
// drop out; a view without it: the blocks in use), the weight
// 1.0 (Dynamo's default --kv-overlap-score-weight), and the lowest index
// on ties (Dynamo's --router-temperature 0: deterministic). Blocks held in
// an offload tier count as overlap (Dynamo's KVBM reports the blocks of
// its host and disk tiers to the router as it does the device's).
type KVRouter struct{}

// dynamoOverlapWeight is Dynamo's default kv_overlap_score_weight.
const dynamoOverlapWeight = 1.0

// Route returns the instance with the lowest cost.
func (KVRouter) Route(v RouteView, q QueueItem) int {
	bs := 16 // vLLM's default block size, for a view that does not say
	cv, ok := v.(CacheView)
	if ok && cv.BlockSize() > 0 {
		bs = cv.BlockSize()
	}
	best, bestCost := 0, 0.0
	for i := range v.Instances() {
		m, unit := cacheMatch(v, i)
		prefill := float64(max(0, q.Prompt-m*unit)) / float64(bs)
		active := v.State(i).KVBlocksUsed
		if ok {
			active = cv.ActiveBlocks(i)
		}
		cost := dynamoOverlapWeight*prefill + float64(active)
		if i == 0 || cost < bestCost {
			best, bestCost = i, cost
		}
	}
	return best
}

// Name returns "kv-router".
func (KVRouter) Name() string { return "kv-router" }

var (
	_ Router = PrecisePrefix{}
	_ Router = KVRouter{}
)
