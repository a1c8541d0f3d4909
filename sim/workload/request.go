package workload

import "github.com/servesim/servesim/sim"

// Request is one inference request as a workload produces it: when it
// arrives and how many tokens it reads and writes. The struct may grow (a
// request class, prefix block hashes); a Source overwrites the whole value on
// each Next, so a Request reused across calls never carries stale fields.
type Request struct {
	ID           int64    // 0, 1, 2, ... in arrival order
	Arrival      sim.Time // arrival time since the start of the run
	PromptTokens int      // ≥ 1
	OutputTokens int      // ≥ 1

	// Class names the request's traffic class ("" = none), for per-class
	// SLOs and reports. Sources take it from a fixed table, so copying it
	// allocates nothing.
	Class string
	// TTFTSLO and TPOTSLO are the request's own latency objectives (0 = the
	// scenario's).
	TTFTSLO, TPOTSLO sim.Time
	// Prefix holds the hashes of the prompt's leading blocks of
	// PrefixBlockTokens tokens each, chained (each hash identifies its block
	// and everything before it, as Mooncake's hash_ids), for prefix caching;
	// nil when unknown. The slice belongs to the Source and is valid only
	// until the next call to Next: the engine copies what it keeps.
	Prefix            []uint64
	PrefixBlockTokens int
}

// Source is a stream of requests in non-decreasing arrival order. Next fills
// r with the next request and reports true, or reports false at the end of
// the stream (r is then left unspecified). A Source holds O(1) state: it
// generates or reads requests one at a time, never the whole workload.
type Source interface {
	Next(r *Request) bool
}

// ErrSource is a Source that can fail part way, like a trace reader that
// meets a bad line. After Next reports false, Err says why the stream
// ended: nil at a normal end, the error otherwise (bufio.Scanner's pattern).
type ErrSource interface {
	Source
	Err() error
}

// SourceErr returns s.Err() when s is an ErrSource and nil otherwise. Call it
// after Next has reported false.
func SourceErr(s Source) error {
	if e, ok := s.(ErrSource); ok {
		return e.Err()
	}
	return nil
}
