package policies

import (
	"math/rand/v2"
	"testing"

	"github.com/servesim/servesim/sim"
)

type fakeCluster struct {
	states []InstanceState
	match  []int
}

func (c fakeCluster) Instances() int            { return len(c.states) }
func (c fakeCluster) State(i int) InstanceState { return c.states[i] }

// countsOnly is a CountView whose State panics: a router given it must
// read the counts through Counts.
type countsOnly struct{ c fakeCluster }

func (v countsOnly) Instances() int          { return v.c.Instances() }
func (v countsOnly) State(int) InstanceState { panic("State called on a CountView") }
func (v countsOnly) PrefixMatch(i int) int   { return v.c.PrefixMatch(i) }
func (v countsOnly) Counts(i int) (outstanding, waiting int) {
	return v.c.states[i].Outstanding, v.c.states[i].Waiting
}

func (c fakeCluster) PrefixMatch(i int) int {
	if c.match == nil {
		return 0
	}
	return c.match[i]
}

func TestRouters(t *testing.T) {
	c := fakeCluster{
		states: []InstanceState{{Outstanding: 5, KVUse: 0.2}, {Outstanding: 2, KVUse: 0.9}, {Outstanding: 3, KVUse: 0.1}},
		match:  []int{1, 4, 4},
	}
	cases := []struct {
		r    Router
		want int
		why  string
	}{
		{LeastOutstanding{}, 1, "instance 1 has 2 outstanding, the fewest"},
		{LeastKV{}, 2, "instance 2 uses 10 % of its KV"},
		{PrefixAffinity{}, 1, "instances 1 and 2 both hold 4 prefix units; 1 has fewer outstanding (2 vs 3)"},
	}
	for _, cs := range cases {
		if got := cs.r.Route(c, QueueItem{}); got != cs.want {
			t.Errorf("%s: routed to %d, want %d (%s)", cs.r.Name(), got, cs.want, cs.why)
		}
	}
	rr := &RoundRobin{}
	for i, want := range []int{0, 1, 2, 0} {
		if got := rr.Route(c, QueueItem{}); got != want {
			t.Errorf("round-robin call %d: %d, want %d", i, got, want)
		}
	}
	// Power of two: of any two distinct instances it keeps the less loaded,
	// so it never picks instance 0 (5 outstanding, the most) and picks both
	// others over many draws.
	p2 := PowerOfTwo{Rand: rand.New(rand.NewPCG(1, 1))}
	seen := map[int]int{}
	for range 300 {
		seen[p2.Route(c, QueueItem{})]++
	}
	if seen[0] != 0 || seen[1] == 0 || seen[2] == 0 {
		t.Errorf("power-of-two picks %v, want never 0 and both 1 and 2", seen)
	}
}

func TestSchedulerKeys(t *testing.T) {
	q := QueueItem{Arrival: 7, Prompt: 300, PredictedOutput: 40, Deadline: 99, Class: "batch"}
	cases := []struct {
		s    Scheduler
		want int64
	}{
		{FCFS{}, 7}, {SJF{}, 300}, {SJF{ByPrediction: true}, 40}, {EDF{}, 99},
		{Priority{Classes: map[string]int{"chat": 0, "batch": 2}}, 2},
		{Priority{Classes: map[string]int{"chat": 0}, Default: 5}, 5},
	}
	for _, c := range cases {
		if got := c.s.Key(q); got != c.want {
			t.Errorf("%s key %d, want %d", c.s.Name(), got, c.want)
		}
	}
	if (EDF{}).Key(QueueItem{}) <= (EDF{}).Key(q) {
		t.Error("EDF: a request without a deadline must sort after one with a deadline")
	}
}

type fakeAdmit struct {
	now     sim.Time
	waiting int
	ttft    sim.Time
}

func (f fakeAdmit) Now() sim.Time            { return f.now }
func (f fakeAdmit) Waiting() int             { return f.waiting }
func (f fakeAdmit) PredictTTFT(int) sim.Time { return f.ttft }

func TestAdmission(t *testing.T) {
	if v := (QueueCap{Max: 3}).Admit(fakeAdmit{waiting: 3}, QueueItem{}); v.Admit || v.Reason != RejectQueueFull {
		t.Errorf("queue-cap at 3 waiting: %+v, want reject queue-full", v)
	}
	if v := (QueueCap{Max: 3}).Admit(fakeAdmit{waiting: 2}, QueueItem{}); !v.Admit {
		t.Errorf("queue-cap at 2 waiting: %+v, want admit", v)
	}
	// SLO-aware: now 100 ms, predicted TTFT 50 ms, deadline 120 ms: 150 > 120.
	ms := sim.Millisecond
	v := (SLOAware{}).Admit(fakeAdmit{now: 100 * ms, ttft: 50 * ms}, QueueItem{Deadline: 120 * ms})
	if v.Admit || v.Reason != RejectSLO {
		t.Errorf("slo-aware: %+v, want reject", v)
	}
	// Deferring: retry after the 30 ms excess.
	v = (SLOAware{Defer: true}).Admit(fakeAdmit{now: 100 * ms, ttft: 50 * ms}, QueueItem{Deadline: 120 * ms})
	if v.Admit || v.RetryAt != 130*ms {
		t.Errorf("slo-aware defer: %+v, want retry at 130ms", v)
	}
	// Token bucket, 2/s, burst 2: two admitted at t=0, the third rejected;
	// at t=0.5 s one token has refilled.
	tb := &TokenBucket{Rate: 2, Burst: 2}
	got := []bool{}
	for _, at := range []sim.Time{0, 0, 0, 500 * ms} {
		got = append(got, tb.Admit(fakeAdmit{now: at}, QueueItem{}).Admit)
	}
	if want := []bool{true, true, false, true}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("token bucket admits %v, want %v", got, want)
	}
}

// TestDPCoordinator checks vLLM's DP score, waiting × 4 + running, lowest
// first, the first rank on ties.
func TestDPCoordinator(t *testing.T) {
	cases := []struct {
		states []InstanceState
		want   int
	}{
		// scores: 2×4 + 1 = 9; 0×4 + 6 = 6; 1×4 + 1 = 5 → rank 2.
		{[]InstanceState{{Outstanding: 3, Waiting: 2}, {Outstanding: 6}, {Outstanding: 2, Waiting: 1}}, 2},
		// scores 4 and 5: a waiting request weighs 4 running ones, so rank 0 (1 waiting) beats rank 1 (5 running) though it has fewer outstanding.
		{[]InstanceState{{Outstanding: 1, Waiting: 1}, {Outstanding: 5}}, 0},
		// scores 8 and 5: rank 1 with more outstanding (5 running) beats rank 0 (2 waiting); least-outstanding picks 0.
		{[]InstanceState{{Outstanding: 2, Waiting: 2}, {Outstanding: 5}}, 1},
		// a tie (4 and 4): the first.
		{[]InstanceState{{Outstanding: 4}, {Outstanding: 1, Waiting: 1}}, 0},
	}
	for i, c := range cases {
		if got := (DPCoordinator{}).Route(fakeCluster{states: c.states}, QueueItem{}); got != c.want {
			t.Errorf("case %d: rank %d, want %d", i, got, c.want)
		}
		// Through CountView's counts alone (KV fields left out): the same rank.
		if got := (DPCoordinator{}).Route(countsOnly{fakeCluster{states: c.states}}, QueueItem{}); got != c.want {
			t.Errorf("case %d through CountView: rank %d, want %d", i, got, c.want)
		}
	}
	if r, err := RouterByName("dp-coordinator", nil); err != nil || r.Name() != "dp-coordinator" {
		t.Errorf("RouterByName: %v, %v", r, err)
	}
}
