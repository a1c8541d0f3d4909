package policies

import (
	"fmt"
	"math/rand/v2"
)

// InstanceState is what a router knows of one instance. It may be stale:
// the engine refreshes it at most once per configured interval.
type InstanceState struct {
	Outstanding int     // requests routed to it and not yet finished (waiting + running)
	Waiting     int     // requests in its queue
	KVUse       float64 // fraction of KV blocks in use
	// KVBlocksUsed is the KV blocks in use (cached blocks no request holds
	// count as free).
	KVBlocksUsed int
}

// RouteView is a router's view of the cluster.
type RouteView interface {
	Instances() int
	State(i int) InstanceState
	// PrefixMatch returns how many of the request's leading prefix blocks
	// instance i holds in its prefix cache now (0 without a cache).
	PrefixMatch(i int) int
}

// CountView is a RouteView that gives State's request counts alone (the
// same values, as current or as stale as State's), without computing the
// KV fields: routers that read only the counts ask every instance for
// every request (DPCoordinator over 64 ranks).
type CountView interface {
	RouteView
	Counts(i int) (outstanding, waiting int)
}

// counts returns instance i's Outstanding and Waiting from v.
func counts(v RouteView, cv CountView, i int) (outstanding, waiting int) {
	if cv != nil {
		return cv.Counts(i)
	}
	st := v.State(i)
	return st.Outstanding, st.Waiting
}

// Router picks the instance for an arriving request.
type Router interface {
	Route(v RouteView, q QueueItem) int
	Name() string
}

// RoundRobin cycles through the instances.
type RoundRobin struct{ next int }

// LeastOutstanding picks the instance with the fewest outstanding requests
// (lowest index on ties).
type LeastOutstanding struct{}

// LeastKV picks the instance with the lowest KV use, then fewest outstanding.
type LeastKV struct{}

// PowerOfTwo samples two distinct instances and picks the one with fewer
// outstanding requests (Mitzenmacher's power of two choices). Rand is its
// own seeded stream.
type PowerOfTwo struct{ Rand *rand.Rand }

// PrefixAffinity picks the instance holding the longest cached prefix of
// the request, then the fewest outstanding requests.
type PrefixAffinity struct{}

var (
	_ Router = (*RoundRobin)(nil)
	_ Router = LeastOutstanding{}
	_ Router = LeastKV{}
	_ Router = PowerOfTwo{}
	_ Router = PrefixAffinity{}
	_ Router = DPCoordinator{}
)

// DPCoordinator is vLLM's data-parallel load balancer: the engine with the
// lowest score waiting × 4 + running, the first on ties
// (vllm/v1/engine/core_client.py DPLBAsyncMPClient.get_core_engine_for_request,
// from the request counts the DP coordinator publishes).
type DPCoordinator struct{}

// Route returns the rank with the lowest waiting × 4 + running.
func (DPCoordinator) Route(v RouteView, _ QueueItem) int {
	cv, _ := v.(CountView)
	score := func(i int) int {
		out, wait := counts(v, cv, i)
		return 4*wait + (out - wait)
	}
	best, bs := 0, score(0)
	for i, n := 1, v.Instances(); i < n; i++ {
		if sc := score(i); sc < bs {
			best, bs = i, sc
		}
	}
	return best
}

// Name returns "dp-coordinator".
func (DPCoordinator) Name() string { return "dp-coordinator" }

// Route returns the next instance in turn.
func (r *RoundRobin) Route(v RouteView, _ QueueItem) int {
	i := r.next % v.Instances()
	r.next = i + 1
	return i
}

// Name returns "round-robin".
func (*RoundRobin) Name() string { return "round-robin" }

// Route returns the least-loaded instance.
func (LeastOutstanding) Route(v RouteView, _ QueueItem) int {
	best := 0
	for i := 1; i < v.Instances(); i++ {
		if v.State(i).Outstanding < v.State(best).Outstanding {
			best = i
		}
	}
	return best
}

// Name returns "least-outstanding".
func (LeastOutstanding) Name() string { return "least-outstanding" }

// Route returns the instance with the least KV in use.
func (LeastKV) Route(v RouteView, _ QueueItem) int {
	best := 0
	for i := 1; i < v.Instances(); i++ {
		a, b := v.State(i), v.State(best)
		if a.KVUse < b.KVUse || (a.KVUse == b.KVUse && a.Outstanding < b.Outstanding) {
			best = i
		}
	}
	return best
}

// Name returns "least-kv".
func (LeastKV) Name() string { return "least-kv" }

// Route samples two instances and keeps the less loaded.
func (p PowerOfTwo) Route(v RouteView, _ QueueItem) int {
	n := v.Instances()
	if n == 1 {
		return 0
	}
	a := p.Rand.IntN(n)
	b := p.Rand.IntN(n - 1)
	if b >= a {
		b++
	}
	if v.State(b).Outstanding < v.State(a).Outstanding {
		return b
	}
	return a
}

// Name returns "power-of-two".
func (PowerOfTwo) Name() string { return "power-of-two" }

// Route returns the instance with the longest cached prefix.
func (PrefixAffinity) Route(v RouteView, _ QueueItem) int {
	best, bestMatch := 0, v.PrefixMatch(0)
	for i := 1; i < v.Instances(); i++ {
		m := v.PrefixMatch(i)
		if m > bestMatch || (m == bestMatch && v.State(i).Outstanding < v.State(best).Outstanding) {
			best, bestMatch = i, m
		}
	}
	return best
}

// Name returns "prefix-affinity".
func (PrefixAffinity) Name() string { return "prefix-affinity" }

// RouterByName returns the router a scenario names; rng is the routing
// stream (used by power-of-two).
func RouterByName(name string, rng *rand.Rand) (Router, error) {
	switch name {
	case "", "round-robin":
		return &RoundRobin{}, nil
	case "least-outstanding":
		return LeastOutstanding{}, nil
	case "least-kv":
		return LeastKV{}, nil
	case "power-of-two":
		return PowerOfTwo{Rand: rng}, nil
	case "prefix-affinity":
		return PrefixAffinity{}, nil
	case "dp-coordinator":
		return DPCoordinator{}, nil
	case "precise-prefix":
		return PrecisePrefix{}, nil
	case "kv-router":
		return KVRouter{}, nil
	}
	return nil, fmt.Errorf("policies: unknown router %q (known: round-robin, least-outstanding, least-kv, power-of-two, prefix-affinity, dp-coordinator, precise-prefix, kv-router)", name)
}
