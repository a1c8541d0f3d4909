package workload

import (
	"fmt"

	"github.com/servesim/servesim/sim"
)

// Replay is a recorded workload served exactly as recorded: each request
// arrives at its own time with its own prompt and output lengths. It is how
// a real run is replayed on the simulator (servesim validate). Arrival times
// are relative to the start of the run (a reader subtracts the first
// arrival); IDs are renumbered 0, 1, 2, ... in order.
type Replay struct {
	Requests []Request
}

// Validate checks that arrivals are non-negative and non-decreasing and
// that every request reads and writes at least one token. Errors name the
// request by its index.
func (r Replay) Validate() error {
	var last sim.Time
	for i, q := range r.Requests {
		switch {
		case q.Arrival < 0:
			return fmt.Errorf("workload: replay request %d: arrival %v before the start", i, q.Arrival)
		case q.Arrival < last:
			return fmt.Errorf("workload: replay request %d: arrival %v before the previous one's %v (want arrival order)", i, q.Arrival, last)
		case q.PromptTokens < 1:
			return fmt.Errorf("workload: replay request %d: %d prompt tokens, want ≥ 1", i, q.PromptTokens)
		case q.OutputTokens < 1:
			return fmt.Errorf("workload: replay request %d: %d output tokens, want ≥ 1", i, q.OutputTokens)
		}
		last = q.Arrival
	}
	return nil
}

// Source returns a stream over the requests, after Validate.
func (r Replay) Source() (Source, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &replaySource{reqs: r.Requests}, nil
}

type replaySource struct {
	reqs []Request
	i    int
}

func (s *replaySource) Next(r *Request) bool {
	if s.i >= len(s.reqs) {
		return false
	}
	*r = s.reqs[s.i]
	r.ID = int64(s.i)
	s.i++
	return true
}
