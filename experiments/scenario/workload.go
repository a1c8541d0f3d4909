package scenario

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// resolveShape checks the workload's shape beyond its rate and lengths:
// stages, drain and gap, rescaling, closed-loop concurrency, and the
// shared_prefix generator; it fills p's fields for them. mix says whether a
// class mix or a trace (rather than the synthetic generator) supplies the
// requests: only max_concurrency applies to those.
// MaxConcurrency bounds workload.max_concurrency (the client holds a slot
// per concurrent user; ten million is past any load generator).
const MaxConcurrency = 10_000_000

func (s *Scenario) resolveShape(p *Plan, other string) error {
	wl := &s.Workload
	if c := wl.MaxConcurrency; c != nil {
		if *c < 1 {
			return s.fieldError("workload.max_concurrency", "max-concurrency", "%d must be ≥ 1 (leave it unset for no limit)", *c)
		}
		if *c > MaxConcurrency {
			return s.fieldError("workload.max_concurrency", "max-concurrency", "%d is out of range (at most %d: the client keeps a slot per user)", *c, MaxConcurrency)
		}
		p.MaxConcurrency = *c
	}
	if _, err := s.duration("workload.think_time_s", "think-time", wl.ThinkTimeS, 1, "s"); err != nil {
		return err
	}
	if !(wl.ThinkTimeS >= 0) || math.IsInf(wl.ThinkTimeS, 0) {
		return s.fieldError("workload.think_time_s", "think-time", "%g must be ≥ 0 seconds", wl.ThinkTimeS)
	}
	if wl.ThinkTimeS > 0 && p.MaxConcurrency == 0 {
		return s.fieldError("workload.think_time_s", "think-time", "think time applies to closed-loop users: set max_concurrency too")
	}
	p.Think = sim.FromSeconds(wl.ThinkTimeS)
	if other != "" {
		for _, f := range []struct {
			set  bool
			name string
		}{{len(wl.Stages) > 0, "stages"}, {wl.Drain, "drain"}, {wl.GapS != 0, "gap_s"}, {wl.Rescale, "rescale"}, {wl.SharedPrefixData != nil, "shared_prefix"}} {
			if f.set {
				return s.fieldError("workload."+f.name, strings.ReplaceAll(f.name, "_", "-"), "applies to the synthetic workload, not to %s", other)
			}
		}
		return nil
	}
	if len(wl.Stages) > 0 {
		if wl.Rate != 0 || wl.Requests != 0 || wl.DurationS != 0 {
			return s.fieldError("workload.stages", "stage", "stages set the rate and length of the run: leave rate, requests and duration_s unset")
		}
		for i, st := range wl.Stages {
			f := fmt.Sprintf("workload.stages[%d]", i)
			if !(st.Rate > 0) || math.IsInf(st.Rate, 0) {
				return s.fieldError(f+".rate", "stage", "%g requests/s: must be a finite number > 0", st.Rate)
			}
			if !(st.DurationS > 0) || math.IsInf(st.DurationS, 0) || st.DurationS > 1e9 {
				return s.fieldError(f+".duration_s", "stage", "%g must be a number of seconds > 0", st.DurationS)
			}
			p.Workload.Stages = append(p.Workload.Stages, workload.Stage{Rate: st.Rate, Duration: sim.FromSeconds(st.DurationS)})
		}
	}
	if (wl.Drain || wl.GapS != 0) && len(wl.Stages) < 2 {
		return s.fieldError("workload.drain", "drain", "drain and gap_s apply between stages: give two [[workload.stages]] or more")
	}
	if !(wl.GapS >= 0) || math.IsInf(wl.GapS, 0) || wl.GapS > 1e9 {
		return s.fieldError("workload.gap_s", "gap", "%g must be a number of seconds ≥ 0", wl.GapS)
	}
	p.Workload.Drain, p.Workload.Gap, p.Workload.Rescale = wl.Drain, sim.FromSeconds(wl.GapS), wl.Rescale
	if math.IsInf(wl.Rate, 1) && wl.Rescale {
		return s.fieldError("workload.rescale", "rescale", "rate inf sends every request at t = 0: there are no gaps to rescale")
	}
	if d := wl.SharedPrefixData; d != nil {
		if wl.Prompt != "" || wl.Output != "" || wl.SharedPrefix != 0 || wl.PrefixGroups != 0 || wl.Turns != 0 {
			return s.fieldError("workload.shared_prefix", "shared-prefix", "sets every prompt and output length: leave prompt, output, shared_prefix_tokens, prefix_groups and turns unset")
		}
		dd := *d
		dd.BlockTokens = s.Batch.BlockSize // the engine's blocks: hashes it can use
		if err := dd.Validate(); err != nil {
			return s.fieldError("workload.shared_prefix", "shared-prefix", "%v", err)
		}
		p.Workload.Data = &dd
	}
	return nil
}

// DescribeShape describes the workload's length and timing, for the
// header line: "1000 requests, poisson arrivals at 10 req/s", "2 stages
// (8 req/s × 600 s, 20 req/s × 600 s; drain) of poisson arrivals rescaled
// to fill each stage", "1000 requests, all at t = 0 (rate inf)".
func (p *Plan) DescribeShape() string {
	wl := p.Scenario.Workload
	var b strings.Builder
	switch {
	case len(wl.Stages) > 0:
		parts := make([]string, len(wl.Stages))
		for i, st := range wl.Stages {
			parts[i] = fmt.Sprintf("%g req/s × %g s", st.Rate, st.DurationS)
		}
		fmt.Fprintf(&b, "%d stages (%s", len(wl.Stages), strings.Join(parts, ", "))
		if wl.Drain {
			b.WriteString("; each drained before the next")
		}
		if wl.GapS > 0 {
			fmt.Fprintf(&b, "; %g s between stages", wl.GapS)
		}
		fmt.Fprintf(&b, ") of %s arrivals", wl.Arrival)
		if wl.Rescale {
			b.WriteString(" rescaled to fill each stage (int(rate × duration) requests)")
		}
	case math.IsInf(wl.Rate, 1):
		fmt.Fprintf(&b, "%d requests, all at t = 0 (rate inf)", wl.Requests)
	default:
		if wl.Requests > 0 {
			fmt.Fprintf(&b, "%d requests", wl.Requests)
		} else {
			fmt.Fprintf(&b, "%g s of requests", wl.DurationS)
		}
		fmt.Fprintf(&b, ", %s arrivals at %g req/s", wl.Arrival, wl.Rate)
		if wl.Rescale && wl.Requests > 0 {
			fmt.Fprintf(&b, " rescaled to end at %g s", float64(wl.Requests)/wl.Rate)
		} else if wl.Rescale {
			fmt.Fprintf(&b, " rescaled to fill it (%d requests)", int64(wl.Rate*wl.DurationS))
		}
	}
	if p.MaxConcurrency > 0 {
		fmt.Fprintf(&b, ", at most %d in flight (vLLM --max-concurrency: requests wait at the client, TTFT counts from the send)", p.MaxConcurrency)
		if wl.ThinkTimeS > 0 {
			fmt.Fprintf(&b, " with %g s think time", wl.ThinkTimeS)
		}
	}
	return b.String()
}

// DescribeLengths describes the prompt and output lengths.
func (p *Plan) DescribeLengths() string {
	wl := p.Scenario.Workload
	if d := wl.SharedPrefixData; d != nil {
		return fmt.Sprintf("shared_prefix prompts: %d groups × %d, system prompt %d + question %d tokens, cycled every %d requests, output %d",
			d.Groups, d.PromptsPerGroup, d.SystemPromptLen, d.QuestionLen, d.Groups*d.PromptsPerGroup, d.OutputLen)
	}
	return fmt.Sprintf("prompt %s, output %s", wl.Prompt, wl.Output)
}

// MarshalJSON writes w with an infinite rate as "inf" (JSON has no
// infinity).
func (w Workload) MarshalJSON() ([]byte, error) {
	type plain Workload
	if !math.IsInf(w.Rate, 1) {
		return json.Marshal(plain(w))
	}
	return json.Marshal(struct {
		plain
		Rate string `json:"rate"`
	}{plain(w), "inf"})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (w *Workload) UnmarshalJSON(data []byte) error {
	type plain Workload
	var v struct {
		plain
		Rate json.RawMessage `json:"rate"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*w = Workload(v.plain)
	switch r := strings.TrimSpace(string(v.Rate)); r {
	case "", "null":
	case `"inf"`:
		w.Rate = math.Inf(1)
	default:
		return json.Unmarshal(v.Rate, &w.Rate)
	}
	return nil
}
