package serve

import (
	"testing"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/workload"
)

// checkCounts routes as DPCoordinator does and, at every request, checks
// the pool's Counts against State's counts for every instance.
type checkCounts struct {
	t      *testing.T
	routed int
}

func (c *checkCounts) Route(v policies.RouteView, q policies.QueueItem) int {
	cv := v.(policies.CountView)
	for i := range v.Instances() {
		st := v.State(i)
		if out, wait := cv.Counts(i); out != st.Outstanding || wait != st.Waiting {
			c.t.Fatalf("request %d, instance %d: Counts %d, %d; State %d, %d", q.ID, i, out, wait, st.Outstanding, st.Waiting)
		}
	}
	c.routed++
	return policies.DPCoordinator{}.Route(v, q)
}

func (*checkCounts) Name() string { return "check-counts" }

// TestPoolCounts runs 3 replicas under bursts, current and with a stale
// router view, checking that Counts gives State's counts.
func TestPoolCounts(t *testing.T) {
	var reqs []workload.Request
	for i := range 120 {
		reqs = append(reqs, workload.Request{ID: int64(i), Arrival: sim.Time(i/8) * 3 * sim.Millisecond, PromptTokens: 40 + i%50, OutputTokens: 5 + i%30})
	}
	for _, stale := range []sim.Time{0, 4 * sim.Millisecond} {
		r := &checkCounts{t: t}
		res, err := Run(Config{Instance: baseConfig(policies.Chunked{}, 200, 128), Replicas: 3, Router: r, RouterStaleness: stale,
			Source: &sliceSource{reqs: reqs}, Collector: metrics.NewCollector(metrics.SLO{})})
		if err != nil || res.Finished != int64(len(reqs)) || r.routed != len(reqs) {
			t.Fatalf("staleness %v: %v, finished %d, routed %d of %d", stale, err, res.Finished, r.routed, len(reqs))
		}
	}
}
