package realrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
)

// BenchResult is a `vllm bench serve --save-result --save-detailed` JSON
// file as vLLM writes it (vllm/benchmarks/serve.py: benchmark() builds the
// result dict, main_async adds request_rate, burstiness and
// max_concurrency). Times in the per-request arrays are seconds; ttfts,
// latencies and output_lens are 0 for a failed request, whose errors entry
// is not empty.
type BenchResult struct {
	ModelID        string      `json:"model_id"`
	RequestRate    json.Number `json:"-"` // "inf" or a number
	Burstiness     float64     `json:"burstiness"`
	MaxConcurrency *int        `json:"max_concurrency"`
	Duration       float64     `json:"duration"`
	Completed      *int        `json:"completed"` // nil when absent
	Failed         *int        `json:"failed"`
	InputLens      []int       `json:"input_lens"`
	OutputLens     []int       `json:"output_lens"`
	TTFTs          []float64   `json:"ttfts"`
	ITLs           [][]float64 `json:"itls"`
	Latencies      []float64   `json:"latencies"`
	StartTimes     []float64   `json:"start_times"`
	Errors         []string    `json:"errors"`
	// Optional --metadata keys servesim understands (vLLM stores
	// --metadata KEY=VALUE pairs as top-level strings).
	GPU string `json:"gpu"`
	TP  string `json:"tensor_parallel_size"`

	rate float64 // parsed RequestRate; +Inf for "inf"
}

// MaxSpanS is the longest stretch of arrivals a replay holds, in seconds
// (experiments.MaxDurationS, the longest run; a test keeps them equal).
const MaxSpanS = 1e6

// ReadBench reads a vllm bench serve result and converts its successful
// requests: Start from start_times (relative to the first) when present,
// else 0; FirstToken = Start + ttft, Finish = Start + latency. The replay
// schedule is start_times when present; without them an infinite rate
// sends everything at 0 and a finite one is replayed at constant spacing
// 1/rate (a note says so: vLLM drew Poisson or gamma gaps that the file
// does not keep); max_concurrency then goes to Run.MaxConcurrency, for
// the replay to apply (with start_times it is in them already). Arrays
// must have input_lens' length; a request with
// output_lens 0 or an error is left out and counted in a note.
func ReadBench(r io.Reader, name string) (*Run, *BenchResult, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("realrun: %s: %w", name, err)
	}
	data = stripBOM(data)
	var b BenchResult
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, nil, jsonErr(name, 0, err)
	}
	var top map[string]json.RawMessage
	_ = json.Unmarshal(data, &top) // the same bytes decoded above
	// --metadata KEY=VALUE pairs are top-level keys: those that name an
	// engine argument go through the table (the result's own keys are in
	// it under no name).
	args := &argChecker{file: name}
	var meta []string // modelled --metadata arguments, applied below
	for _, k := range sortedKeys(top) {
		args.check(k, k, argText(top[k]))
		if a, ok := EngineArgs[k]; ok && a.Effect == Modelled && k != "tensor_parallel_size" {
			meta = append(meta, k)
		}
	}
	if err := args.err(); err != nil {
		return nil, nil, err
	}
	switch s := string(bytes.TrimSpace(top["request_rate"])); s {
	case "", "null":
		return nil, nil, fieldErr(name, 0, "request_rate", "missing")
	case `"inf"`, `"Infinity"`:
		b.rate = math.Inf(1)
	default:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, nil, fieldErr(name, 0, "request_rate", "%s: want a positive number or \"inf\"", s)
		}
		b.rate = v
	}
	b.RequestRate = json.Number(fmt.Sprint(b.rate))
	n := len(b.InputLens)
	if n == 0 {
		return nil, nil, fieldErr(name, 0, "input_lens", "missing or empty (was the run saved with --save-detailed?)")
	}
	for _, f := range []struct {
		field string
		n     int
		need  bool
	}{
		{"output_lens", len(b.OutputLens), true}, {"ttfts", len(b.TTFTs), true}, {"latencies", len(b.Latencies), true},
		{"itls", len(b.ITLs), false}, {"start_times", len(b.StartTimes), false}, {"errors", len(b.Errors), false},
	} {
		if f.n != n && (f.need || f.n != 0) {
			return nil, nil, fieldErr(name, 0, f.field, "%d entries, input_lens has %d", f.n, n)
		}
	}
	if b.ModelID == "" {
		return nil, nil, fieldErr(name, 0, "model_id", "missing")
	}
	if !(b.Duration >= 0) || math.IsInf(b.Duration, 0) {
		return nil, nil, fieldErr(name, 0, "duration", "%g: want ≥ 0", b.Duration)
	}
	if len(b.StartTimes) != n && !math.IsInf(b.rate, 1) && float64(n-1)/b.rate > MaxSpanS {
		return nil, nil, fieldErr(name, 0, "request_rate", "%g: no start_times, so %d requests are replayed 1/rate apart, over %g s: past the longest replay (%g s)", b.rate, n, float64(n-1)/b.rate, MaxSpanS)
	}
	run := &Run{Path: name, Format: FormatBench, Duration: b.Duration, Engine: Engine{Model: b.ModelID, GPU: b.GPU}}
	if b.TP != "" {
		tp, err := strconv.Atoi(b.TP)
		if err != nil || tp < 1 {
			return nil, nil, fieldErr(name, 0, "tensor_parallel_size", "%q: want a whole number ≥ 1", b.TP)
		}
		run.Engine.TP = tp
	}
	for _, k := range meta {
		if err := applyArg(&run.Engine, k, argText(top[k])); err != nil {
			return nil, nil, fieldErr(name, 0, k, "%v", err)
		}
	}
	if run.Engine.Model != b.ModelID {
		return nil, nil, fieldErr(name, 0, "model", "%q, but model_id is %q: which model ran?", run.Engine.Model, b.ModelID)
	}
	t0 := math.Inf(1)
	for _, s := range b.StartTimes {
		t0 = math.Min(t0, s)
	}
	failed := 0
	for i := range n {
		at := func(field string) error {
			return fieldErr(name, 0, fmt.Sprintf("%s[%d]", field, i), "want a finite value ≥ 0")
		}
		if len(b.Errors) == n && b.Errors[i] != "" || b.OutputLens[i] == 0 {
			failed++
			continue
		}
		q := Request{ID: strconv.Itoa(i), Input: b.InputLens[i], Output: b.OutputLens[i], Scheduled: math.NaN()}
		switch {
		case q.Input < 1:
			return nil, nil, fieldErr(name, 0, fmt.Sprintf("input_lens[%d]", i), "%d: want ≥ 1", q.Input)
		case q.Output < 1:
			return nil, nil, fieldErr(name, 0, fmt.Sprintf("output_lens[%d]", i), "%d: want ≥ 0", q.Output)
		case !finite(b.TTFTs[i]) || b.TTFTs[i] < 0:
			return nil, nil, at("ttfts")
		case b.Latencies[i] > MaxSpanS:
			return nil, nil, fieldErr(name, 0, fmt.Sprintf("latencies[%d]", i), "%g s (ttfts[%d] %g s): past the longest replay (%g s)", b.Latencies[i], i, b.TTFTs[i], MaxSpanS)
		case !finite(b.Latencies[i]) || b.Latencies[i] < b.TTFTs[i]:
			return nil, nil, fieldErr(name, 0, fmt.Sprintf("latencies[%d]", i), "%g: want finite and ≥ ttfts[%d] %g", b.Latencies[i], i, b.TTFTs[i])
		}
		if len(b.StartTimes) == n {
			if !finite(b.StartTimes[i]) {
				return nil, nil, at("start_times")
			}
			q.Start = b.StartTimes[i] - t0
			q.Arrival = q.Start
		} else if !math.IsInf(b.rate, 1) {
			q.Arrival = float64(i) / b.rate
		}
		q.FirstToken, q.Finish = q.Start+b.TTFTs[i], q.Start+b.Latencies[i]
		if len(b.ITLs) == n {
			for k, g := range b.ITLs[i] {
				if !finite(g) || g < 0 {
					return nil, nil, at(fmt.Sprintf("itls[%d]", k))
				}
			}
			q.ITLs = b.ITLs[i]
		}
		run.Requests = append(run.Requests, q)
	}
	// vLLM counts completed and failed from the same outputs the arrays
	// hold (benchmark(): calculate_metrics, success or not): they must
	// agree with the arrays.
	ok := 0
	for i := range n {
		if len(b.Errors) == n && b.Errors[i] == "" || len(b.Errors) != n && b.OutputLens[i] > 0 {
			ok++
		}
	}
	if c := b.Completed; c != nil && *c != ok {
		return nil, nil, fieldErr(name, 0, "completed", "%d, but the per-request arrays hold %d requests, %d of them successful", *c, n, ok)
	}
	if f := b.Failed; f != nil && *f != n-ok {
		return nil, nil, fieldErr(name, 0, "failed", "%d, but the per-request arrays hold %d requests, %d of them failed", *f, n, n-ok)
	}
	if len(run.Requests) == 0 {
		return nil, nil, fmt.Errorf("realrun: %s: no successful request (%d failed)", name, failed)
	}
	if failed > 0 {
		run.Notes = append(run.Notes, fmt.Sprintf("%d failed requests left out", failed))
	}
	if len(b.StartTimes) != n {
		if math.IsInf(b.rate, 1) {
			run.Notes = append(run.Notes, "no start_times: every request replayed at time 0 (request_rate inf)")
		} else {
			run.Notes = append(run.Notes, fmt.Sprintf("no start_times: replayed at constant spacing 1/%g s (the bench drew gamma gaps with burstiness %g that the file does not keep)", b.rate, b.Burstiness))
		}
	}
	if mc := b.MaxConcurrency; mc != nil {
		switch {
		case *mc < 1:
			return nil, nil, fieldErr(name, 0, "max_concurrency", "%d: want ≥ 1 (null for no limit)", *mc)
		case len(b.StartTimes) == n:
			// vLLM starts a request's clock (start_time) after its slot is
			// free: the recorded start times hold the waits already.
			run.Notes = append(run.Notes, fmt.Sprintf("max_concurrency %d: already in the recorded start times (vLLM records a request's start once it has a slot)", *mc))
		default:
			run.MaxConcurrency = min(*mc, len(run.Requests))
		}
	}
	sortByArrival(run.Requests)
	return run, &b, nil
}
