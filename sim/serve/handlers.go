package serve

import "github.com/servesim/servesim/sim"

// The event handlers of the hot path, without closures: each is the
// instance or world under another name, so that firing is one interface
// call, not an interface call, a closure call and a method-value wrapper
// (513,000 events in BenchmarkSimulate100k).
type (
	stepEndHandler Instance // its Fire is endStep (instance.go)
	wakeHandler    Instance // Instance.wake
	arriveHandler  World    // World.arrive
)

func (h *wakeHandler) Fire(now sim.Time)   { (*Instance)(h).wake(now) }
func (h *arriveHandler) Fire(now sim.Time) { (*World)(h).arrive(now) }
