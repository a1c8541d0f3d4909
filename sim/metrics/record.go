package metrics

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/servesim/servesim/sim"
)

// Record is what the simulator writes for one request when it ends, served
// or rejected.
type Record struct {
	ID         int64
	Instance   int      // instance that produced the last token (or rejected it)
	Arrival    sim.Time // request arrival
	FirstToken sim.Time // first output token; 0 when rejected
	Finish     sim.Time // last output token; 0 when rejected
	// PromptTokens and OutputTokens are the request's lengths; a served
	// request has at least one output token.
	PromptTokens, OutputTokens int
	Preemptions                int    // times the request was preempted
	Rejected                   string // "" when served, else the reason (e.g. "too-long")

	// Class is the request's traffic class ("" = none), for per-class
	// reports; SLO, when any field is set, replaces the collector's
	// objectives for this request field by field.
	Class string
	SLO   SLO
	// Phase times (0 = not reached): Scheduled is when the request was
	// first admitted to a batch; in disaggregated serving TransferStart and
	// TransferEnd bound the KV transfer from the prefill to the decode pool.
	Scheduled, TransferStart, TransferEnd sim.Time
}

// TTFT returns the time to first token, FirstToken − Arrival.
func (r *Record) TTFT() sim.Time { return r.FirstToken - r.Arrival }

// E2E returns the end-to-end latency, Finish − Arrival.
func (r *Record) E2E() sim.Time { return r.Finish - r.Arrival }

// TPOT returns the time per output token after the first, in milliseconds:
// (E2E − TTFT)/(OutputTokens − 1). ok is false for a request with at most
// one output token, which has no TPOT (vLLM leaves such requests out).
func (r *Record) TPOT() (ms float64, ok bool) {
	if r.OutputTokens <= 1 {
		return 0, false
	}
	return float64(r.Finish-r.FirstToken) / 1e6 / float64(r.OutputTokens-1), true
}

// check panics if a served record is inconsistent: the simulator broke its
// contract.
func (r *Record) check() {
	if r.Rejected != "" {
		return
	}
	if r.FirstToken < r.Arrival || r.Finish < r.FirstToken || r.OutputTokens < 1 || r.PromptTokens < 0 || r.Preemptions < 0 {
		panic(fmt.Sprintf("metrics: inconsistent record %+v", *r))
	}
}

// SLO holds latency objectives; a zero field is not set. A request meets
// the SLO when every set objective holds with ≤ (vLLM --goodput):
// TTFT ≤ SLO.TTFT, TPOT ≤ SLO.TPOT, E2E ≤ SLO.E2E. The TPOT objective is
// skipped for a request with one output token, which has no TPOT (vLLM
// counts its TPOT as 0, which meets any objective: the same outcome).
//
// In JSON the objectives are milliseconds, named so: {"ttft_ms": 300,
// "tpot_ms": 30, "e2e_ms": 0} (see MarshalJSON).
type SLO struct {
	TTFT sim.Time
	TPOT sim.Time
	E2E  sim.Time
}

// sloJSON is SLO's JSON form: milliseconds. The _ns fields are read only,
// from files written before the objectives were in milliseconds.
type sloJSON struct {
	TTFTms float64 `json:"ttft_ms"`
	TPOTms float64 `json:"tpot_ms"`
	E2Ems  float64 `json:"e2e_ms"`
}

type sloJSONLegacy struct {
	sloJSON
	TTFTns *int64 `json:"ttft_ns,omitempty"`
	TPOTns *int64 `json:"tpot_ns,omitempty"`
	E2Ens  *int64 `json:"e2e_ns,omitempty"`
}

// MarshalJSON writes the objectives in milliseconds (ttft_ms, tpot_ms,
// e2e_ms), like every other latency of a summary.
func (s SLO) MarshalJSON() ([]byte, error) {
	return json.Marshal(sloJSON{s.TTFT.Milliseconds(), s.TPOT.Milliseconds(), s.E2E.Milliseconds()})
}

// UnmarshalJSON reads the objectives in milliseconds, rounded to the
// nanosecond; it also reads the integer nanoseconds (ttft_ns, tpot_ns,
// e2e_ns) of older files. Negative values are kept for Validate to report.
func (s *SLO) UnmarshalJSON(b []byte) error {
	var j sloJSONLegacy
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		ms   float64
		ns   *int64
		dst  *sim.Time
	}{{"ttft_ms", j.TTFTms, j.TTFTns, &s.TTFT}, {"tpot_ms", j.TPOTms, j.TPOTns, &s.TPOT}, {"e2e_ms", j.E2Ems, j.E2Ens, &s.E2E}} {
		if f.ns != nil && f.ms == 0 {
			*f.dst = sim.Time(*f.ns)
			continue
		}
		ns := math.Round(f.ms * 1e6)
		if !(math.Abs(ns) < math.MaxInt64) {
			return fmt.Errorf("metrics: SLO %s %g: out of range", f.name, f.ms)
		}
		*f.dst = sim.Time(ns)
	}
	return nil
}

// IsSet reports whether any objective is set.
func (s SLO) IsSet() bool { return s.TTFT != 0 || s.TPOT != 0 || s.E2E != 0 }

// Override returns s with the objectives o sets (non-zero) replacing its own.
func (s SLO) Override(o SLO) SLO {
	if o.TTFT > 0 {
		s.TTFT = o.TTFT
	}
	if o.TPOT > 0 {
		s.TPOT = o.TPOT
	}
	if o.E2E > 0 {
		s.E2E = o.E2E
	}
	return s
}

// Validate reports whether every objective is ≥ 0.
func (s SLO) Validate() error {
	for _, f := range []struct {
		name string
		v    sim.Time
	}{{"ttft", s.TTFT}, {"tpot", s.TPOT}, {"e2e", s.E2E}} {
		if f.v < 0 {
			return fmt.Errorf("metrics: SLO %s %v: must be >= 0 (0 = not set)", f.name, f.v)
		}
	}
	return nil
}

// Met reports whether served record r meets every set objective. TPOT is
// compared exactly, in integers: (Finish−FirstToken)/(n−1) ≤ TPOT ⇔
// Finish−FirstToken ≤ TPOT·(n−1).
func (s SLO) Met(r *Record) bool {
	if r.Rejected != "" {
		return false
	}
	if s.TTFT > 0 && r.TTFT() > s.TTFT {
		return false
	}
	if s.E2E > 0 && r.E2E() > s.E2E {
		return false
	}
	if s.TPOT > 0 && r.OutputTokens > 1 {
		n := int64(r.OutputTokens - 1)
		// If TPOT·n overflows int64 it exceeds any decode time: met.
		if int64(s.TPOT) <= math.MaxInt64/n && int64(r.Finish-r.FirstToken) > int64(s.TPOT)*n {
			return false
		}
	}
	return true
}

// Step is what one instance's model step (one batch iteration) did.
type Step struct {
	Instance      int
	Start         sim.Time
	Duration      sim.Time
	Prefills      int     // requests with a prefill chunk in the batch
	PrefillTokens int     // prompt tokens computed in the step
	Decodes       int     // requests decoding one token
	KVBlocksUsed  int     // KV-cache blocks in use after the step
	KVBlocksTotal int     // KV-cache blocks on the instance
	Preempted     int     // requests preempted to make room for the step
	FLOPs         float64 // floating-point operations per GPU
	Bytes         float64 // HBM bytes moved per GPU
}

// check panics if the step is inconsistent.
func (s *Step) check() {
	if s.Duration < 0 || s.Prefills < 0 || s.PrefillTokens < 0 || s.Decodes < 0 || s.Preempted < 0 ||
		s.KVBlocksUsed < 0 || s.KVBlocksUsed > s.KVBlocksTotal || !(s.FLOPs >= 0) || !(s.Bytes >= 0) {
		panic(fmt.Sprintf("metrics: inconsistent step %+v", *s))
	}
}
