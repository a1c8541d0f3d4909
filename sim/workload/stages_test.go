package workload

import (
	"math"
	"testing"

	"github.com/servesim/servesim/sim"
)

// Stage schedules: request counts per stage and where each stage starts.
func TestStageSchedule(t *testing.T) {
	two := []Stage{{Rate: 5, Duration: 10 * sim.Second}, {Rate: 20, Duration: 4 * sim.Second}}
	tests := []struct {
		name    string
		s       Synthetic
		counts  []int      // requests per stage (stage k is [start_k, end_k))
		bounds  []sim.Time // stage boundaries: starts and the last end
		lastAt  []sim.Time // last arrival in each stage, when exact (-1: not checked)
		firstAt []sim.Time // first arrival in each stage, when exact (-1: not checked)
	}{
		{
			// Constant gaps: stage 0 has arrivals 0.2, 0.4, ... 9.8 s (49; the
			// one at 10 s is its end, excluded), stage 1 starts at 10 s:
			// 10.05 ... 13.95 s (79; 14 s excluded).
			name:    "constant",
			s:       Synthetic{Arrival: Arrival{Process: ProcessConstant}, Stages: two},
			counts:  []int{49, 79},
			bounds:  []sim.Time{0, 10 * sim.Second, 14 * sim.Second},
			firstAt: []sim.Time{200 * sim.Millisecond, 10050 * sim.Millisecond},
			lastAt:  []sim.Time{9800 * sim.Millisecond, 13950 * sim.Millisecond},
		},
		{
			// A gap of 2 s after stage 0: stage 1 runs 12–16 s.
			name:    "constant with gap",
			s:       Synthetic{Arrival: Arrival{Process: ProcessConstant}, Stages: two, Gap: 2 * sim.Second},
			counts:  []int{49, 79},
			bounds:  []sim.Time{0, 12 * sim.Second, 16 * sim.Second},
			firstAt: []sim.Time{200 * sim.Millisecond, 12050 * sim.Millisecond},
			lastAt:  []sim.Time{9800 * sim.Millisecond, 15950 * sim.Millisecond},
		},
		{
			// Rescaled (inference-perf constant): int(5 × 10) = 50 and
			// int(20 × 4) = 80 requests, each stage's last exactly at its end.
			name:   "rescaled poisson",
			s:      Synthetic{Stages: two, Rescale: true},
			counts: []int{50, 80},
			bounds: []sim.Time{0, 10*sim.Second + 1, 14*sim.Second + 1},
			lastAt: []sim.Time{10 * sim.Second, 14 * sim.Second},
		},
		{
			// Rescaled with a 1 s gap: stage 1 fills (11 s, 15 s].
			name:   "rescaled gamma with gap",
			s:      Synthetic{Arrival: Arrival{Process: ProcessGamma, Burstiness: 0.5}, Stages: two, Rescale: true, Gap: sim.Second},
			counts: []int{50, 80},
			bounds: []sim.Time{0, 10*sim.Second + 1, 15*sim.Second + 1},
			lastAt: []sim.Time{10 * sim.Second, 15 * sim.Second},
		},
		{
			// Rescaled with a count and no duration (vLLM bench): 100
			// requests at 10 req/s, the last at 100/10 = 10 s.
			name:   "rescaled count",
			s:      Synthetic{Arrival: Arrival{Rate: 10}, Count: 100, Rescale: true},
			counts: []int{100},
			bounds: []sim.Time{0, 10*sim.Second + 1},
			lastAt: []sim.Time{10 * sim.Second},
		},
		{
			// Rate inf: every request at time 0 (vLLM's default rate).
			name:    "rate inf",
			s:       Synthetic{Arrival: Arrival{Rate: math.Inf(1)}, Count: 30},
			counts:  []int{30},
			bounds:  []sim.Time{0, 1},
			firstAt: []sim.Time{0},
			lastAt:  []sim.Time{0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			s.Prompt, s.Output, s.Seed = Constant{10}, Constant{5}, 3
			reqs := collect(t, mustSource(t, s))
			got := make([]int, len(tt.counts))
			for i, r := range reqs {
				if r.ID != int64(i) || (i > 0 && r.Arrival < reqs[i-1].Arrival) {
					t.Fatalf("request %d: %+v out of order", i, r)
				}
				k := -1
				for j := range tt.counts {
					if r.Arrival >= tt.bounds[j] && r.Arrival < tt.bounds[j+1] || (r.Arrival == 0 && tt.bounds[j] == 0) {
						k = j
						break
					}
				}
				if k < 0 {
					t.Fatalf("request %d at %v is in no stage %v", i, r.Arrival, tt.bounds)
				}
				got[k]++
			}
			for k := range tt.counts {
				if got[k] != tt.counts[k] {
					t.Errorf("stage %d: %d requests, want %d", k, got[k], tt.counts[k])
				}
			}
			i := 0
			for k, n := range tt.counts {
				if tt.firstAt != nil && reqs[i].Arrival != tt.firstAt[k] {
					t.Errorf("stage %d: first arrival %v, want %v", k, reqs[i].Arrival, tt.firstAt[k])
				}
				i += n
				if tt.lastAt != nil && reqs[i-1].Arrival != tt.lastAt[k] {
					t.Errorf("stage %d: last arrival %v, want %v", k, reqs[i-1].Arrival, tt.lastAt[k])
				}
			}
		})
	}
}

// Constant gaps are exact: request i arrives at (i+1)/rate, to the
// nanosecond, not at a running float sum.
func TestConstantGapsExact(t *testing.T) {
	reqs := collect(t, mustSource(t, Synthetic{Arrival: Arrival{Process: ProcessConstant, Rate: 10}, Prompt: Constant{1}, Output: Constant{1}, Count: 1000}))
	for i, r := range reqs {
		if want := sim.Time(i+1) * 100 * sim.Millisecond; r.Arrival != want { // 1/10 s = 100 ms apart
			t.Fatalf("request %d at %v, want %v", i, r.Arrival, want)
		}
	}
}

// fakeWorld serves every request in service time d, at most one per
// arrival time (an infinite server): it calls Finished as a serving world
// does, and returns each request's (send, finish) times.
func fakeWorld(t *testing.T, src Source, d func(Request) sim.Time) (sends, finishes []sim.Time, maxInflight int) {
	t.Helper()
	fb, _ := src.(Feedback)
	type fin struct {
		at sim.Time
		id int64
	}
	var pending []fin // finish events, unsorted
	var now sim.Time
	var r Request
	have := src.Next(&r)
	for have || len(pending) > 0 {
		// The next event: an arrival (first at equal times, as the world
		// orders them) or the earliest finish.
		j := -1
		for i, f := range pending {
			if j < 0 || f.at < pending[j].at || (f.at == pending[j].at && f.id < pending[j].id) {
				j = i
			}
		}
		if have && (j < 0 || r.Arrival <= pending[j].at) {
			if r.Arrival < now {
				t.Fatalf("request %d arrives at %v, before now %v", r.ID, r.Arrival, now)
			}
			now = r.Arrival
			sends = append(sends, now)
			finishes = append(finishes, 0)
			pending = append(pending, fin{now + d(r), r.ID})
			maxInflight = max(maxInflight, len(pending))
			have = src.Next(&r)
			continue
		}
		f := pending[j]
		pending = append(pending[:j], pending[j+1:]...)
		now = f.at
		finishes[f.id] = now
		if fb == nil {
			continue
		}
		fb.Finished(f.id, now)
		if !have && fb.Blocked() {
			have = src.Next(&r)
		}
	}
	if fb != nil && fb.Blocked() {
		t.Fatal("source blocked with nothing in flight")
	}
	return sends, finishes, maxInflight
}

// With Drain, stage 1 starts when the last request of stage 0 finishes
// (plus the gap), and its arrivals are shifted by as much.
func TestStagesDrain(t *testing.T) {
	s := Synthetic{Arrival: Arrival{Process: ProcessConstant}, Prompt: Constant{1}, Output: Constant{1},
		Stages: []Stage{{Rate: 2, Duration: 5 * sim.Second}, {Rate: 4, Duration: 2 * sim.Second}}, Drain: true, Gap: sim.Second}
	src := mustSource(t, s)
	if _, ok := src.(Feedback); !ok {
		t.Fatal("a draining schedule is not a Feedback")
	}
	// Every request takes 3 s. Stage 0: 0.5 … 4.5 s (9 requests), the last
	// finishes at 7.5 s; stage 1 starts at 7.5 + 1 = 8.5 s: 8.75 … 10.25 s
	// (7 requests; 10.5 s is its end).
	sends, _, _ := fakeWorld(t, src, func(Request) sim.Time { return 3 * sim.Second })
	if len(sends) != 16 {
		t.Fatalf("%d requests, want 9 + 7 = 16", len(sends))
	}
	if sends[8] != 4500*sim.Millisecond || sends[9] != 8750*sim.Millisecond || sends[15] != 10250*sim.Millisecond {
		t.Errorf("stage 0 ends at %v, stage 1 runs %v … %v; want 4.5 s, 8.75 s … 10.25 s", sends[8], sends[9], sends[15])
	}
	// Without drain, stage 1 starts at 5 + 1 = 6 s: 6.25 … 7.75 s.
	s.Drain = false
	sends, _, _ = fakeWorld(t, mustSource(t, s), func(Request) sim.Time { return 3 * sim.Second })
	if len(sends) != 16 || sends[9] != 6250*sim.Millisecond {
		t.Errorf("no drain: %d requests, stage 1 from %v; want 16 from 6.25 s", len(sends), sends[9])
	}
}

// Limit: at most n in flight, requests sent in order when a slot frees (a
// semaphore), never before their scheduled arrival; think time delays
// the slot's reuse.
func TestLimitConcurrency(t *testing.T) {
	tests := []struct {
		name  string
		rate  float64
		n     int
		think sim.Time
		check func(t *testing.T, sends, finishes []sim.Time)
	}{
		{"closed loop, 1 user", math.Inf(1), 1, 0, func(t *testing.T, sends, finishes []sim.Time) {
			for i := 1; i < len(sends); i++ { // each sent when the one before finishes
				if sends[i] != finishes[i-1] {
					t.Fatalf("request %d sent at %v, previous finished %v", i, sends[i], finishes[i-1])
				}
			}
		}},
		{"closed loop, 4 users, think 1 s", math.Inf(1), 4, sim.Second, func(t *testing.T, sends, finishes []sim.Time) {
			// Every request takes 2 s and every user thinks 1 s: users send
			// at 0, 3, 6 … s, four at a time.
			for i, s := range sends {
				if want := sim.Time(i/4) * 3 * sim.Second; s != want {
					t.Fatalf("request %d sent at %v, want %v", i, s, want)
				}
			}
		}},
		{"open loop under the limit", 0.1, 4, 0, func(t *testing.T, sends, finishes []sim.Time) {
			// 1 request per 10 s on average, each taking 2 s: rarely capped;
			// a send is never before the request's own arrival.
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Synthetic{Arrival: Arrival{Rate: tt.rate}, Prompt: Constant{1}, Output: Constant{1}, Count: 200, Seed: 5}
			plain := collect(t, mustSource(t, s))
			l := Limit(mustSource(t, s), tt.n, tt.think)
			sends, finishes, maxIn := fakeWorld(t, l, func(Request) sim.Time { return 2 * sim.Second })
			if len(sends) != 200 {
				t.Fatalf("%d requests sent, want 200", len(sends))
			}
			if maxIn > tt.n || l.MaxInflight() > tt.n {
				t.Fatalf("%d in flight at once (source counts %d), limit %d", maxIn, l.MaxInflight(), tt.n)
			}
			for i, s := range sends {
				if s < plain[i].Arrival {
					t.Fatalf("request %d sent at %v, before it arrives at %v", i, s, plain[i].Arrival)
				}
			}
			tt.check(t, sends, finishes)
		})
	}
}
