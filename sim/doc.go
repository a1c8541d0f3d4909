// Package sim is servesim's discrete-event engine: a clock in integer
// nanoseconds (Time) and a queue of events ordered by (time, priority,
// sequence number). It knows nothing about LLMs, GPUs or requests, and it
// imports only the standard library; the serving world (package sim/serve)
// is built on top of it.
//
// A run schedules Handlers at times and calls Run, which fires them in order.
// Handlers schedule further events. Ties at equal times are broken first by
// the priority the caller gives (lower fires first), then by scheduling order,
// so a run is a pure function of its inputs.
//
// Events are pointers that remember their heap position, so a pending event
// can be cancelled or moved in O(log n). Hot paths keep one Event per
// recurring action (say, "this instance's next step ends") and reschedule it,
// allocating nothing per event.
//
// Simulated time never goes backwards: scheduling before Now panics, because
// that is a bug in the caller, not bad input.
package sim
