package workload

import "github.com/servesim/servesim/sim"

// Feedback is a Source whose stream depends on when its requests finish:
// a closed-loop client that sends a request only when one of its slots is
// free (Limit), or stages that drain, each starting only when every request
// of the one before has finished (Synthetic with Drain).
//
// The serving world calls Finished exactly once for every request it got
// from Next, when that request finishes or is rejected, with the current
// simulated time (calls come in non-decreasing time). Next may report false
// while the stream is only paused: Blocked then reports true, and the world
// calls Next again after each Finished. A request Next yields after a
// Finished call at time now arrives at or after now. A Source that is
// blocked while none of its requests is in flight is a bug in the Source.
type Feedback interface {
	Source
	Finished(id int64, now sim.Time)
	// Blocked reports, after Next has reported false, whether the stream
	// waits for a Finished call (true) or has ended (false).
	Blocked() bool
}
