package realrun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// RawRequest is one line of requests.jsonl as LLMServingSim's bench writes
// it (bench/core/recorder.py): lengths, the wall-clock arrival_time (epoch
// seconds) and four engine monotonic-clock stamps copied from vLLM's
// RequestStateStats.
type RawRequest struct {
	Line         int // line in the file
	RequestID    string
	InputToks    int
	OutputToks   int
	ArrivalTime  float64
	QueuedTS     float64
	ScheduledTS  float64
	FirstTokenTS float64
	LastTokenTS  float64
}

type rawRequestJSON struct {
	RequestID    *string  `json:"request_id"`
	InputToks    *int     `json:"input_toks"`
	OutputToks   *int     `json:"output_toks"`
	ArrivalTime  *float64 `json:"arrival_time"`
	QueuedTS     *float64 `json:"queued_ts"`
	ScheduledTS  *float64 `json:"scheduled_ts"`
	FirstTokenTS *float64 `json:"first_token_ts"`
	LastTokenTS  *float64 `json:"last_token_ts"`
}

// RequestReader streams requests.jsonl one line at a time (bufio.Scanner's
// pattern: Next until false, then Err). Blank lines are skipped; unknown
// fields are ignored (the bench adds fields over time); a missing or
// ill-typed field, a negative length or a stamp out of order is an error
// naming the file, the line and the field.
type RequestReader struct {
	name string
	sc   *bufio.Scanner
	line int
	err  error
}

// NewRequestReader reads r; name is the file name errors use.
func NewRequestReader(r io.Reader, name string) *RequestReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	return &RequestReader{name: name, sc: sc}
}

// Next reads the next request into q.
func (rr *RequestReader) Next(q *RawRequest) bool {
	if rr.err != nil {
		return false
	}
	for rr.sc.Scan() {
		rr.line++
		b := bytes.TrimSpace(rr.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := rr.parse(b, q); err != nil {
			rr.err = err
			return false
		}
		return true
	}
	if err := rr.sc.Err(); err != nil {
		rr.err = fmt.Errorf("realrun: %s line %d: %w", rr.name, rr.line+1, err)
	}
	return false
}

// Err returns the error that ended the stream, nil at a normal end.
func (rr *RequestReader) Err() error { return rr.err }

func (rr *RequestReader) parse(b []byte, q *RawRequest) error {
	var j rawRequestJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return jsonErr(rr.name, rr.line, err)
	}
	req := func(field string, ok bool) error {
		if !ok {
			return fieldErr(rr.name, rr.line, field, "missing")
		}
		return nil
	}
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"input_toks", j.InputToks != nil}, {"output_toks", j.OutputToks != nil},
		{"arrival_time", j.ArrivalTime != nil}, {"queued_ts", j.QueuedTS != nil},
		{"first_token_ts", j.FirstTokenTS != nil}, {"last_token_ts", j.LastTokenTS != nil},
	} {
		if err := req(f.name, f.ok); err != nil {
			return err
		}
	}
	*q = RawRequest{Line: rr.line, InputToks: *j.InputToks, OutputToks: *j.OutputToks, ArrivalTime: *j.ArrivalTime,
		QueuedTS: *j.QueuedTS, FirstTokenTS: *j.FirstTokenTS, LastTokenTS: *j.LastTokenTS, ScheduledTS: math.NaN()}
	if j.RequestID != nil {
		q.RequestID = *j.RequestID
	}
	if j.ScheduledTS != nil {
		q.ScheduledTS = *j.ScheduledTS
	}
	switch {
	case q.InputToks < 1:
		return fieldErr(rr.name, rr.line, "input_toks", "%d: want ≥ 1", q.InputToks)
	case q.OutputToks < 1:
		return fieldErr(rr.name, rr.line, "output_toks", "%d: want ≥ 1", q.OutputToks)
	case q.ArrivalTime < 0:
		return fieldErr(rr.name, rr.line, "arrival_time", "%g: want ≥ 0", q.ArrivalTime)
	case q.QueuedTS < 0:
		return fieldErr(rr.name, rr.line, "queued_ts", "%g: want ≥ 0", q.QueuedTS)
	case q.FirstTokenTS < q.QueuedTS:
		return fieldErr(rr.name, rr.line, "first_token_ts", "%g is before queued_ts %g", q.FirstTokenTS, q.QueuedTS)
	case q.LastTokenTS < q.FirstTokenTS:
		return fieldErr(rr.name, rr.line, "last_token_ts", "%g is before first_token_ts %g", q.LastTokenTS, q.FirstTokenTS)
	case j.ScheduledTS != nil && (q.ScheduledTS < q.QueuedTS || q.ScheduledTS > q.FirstTokenTS):
		return fieldErr(rr.name, rr.line, "scheduled_ts", "%g is outside [queued_ts, first_token_ts] = [%g, %g]", q.ScheduledTS, q.QueuedTS, q.FirstTokenTS)
	}
	return nil
}

// jsonErr names the field of a JSON type error, or the byte offset of a
// syntax error.
func jsonErr(file string, line int, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fieldErr(file, line, te.Field, "want %s, got a JSON %s", te.Type, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("realrun: %s: malformed JSON at byte %d: %v", where(file, line), se.Offset, err)
	}
	return fmt.Errorf("realrun: %s: %v", where(file, line), err)
}

// ClockSlackS is how far before its arrival (wall clock, relative to the
// first arrival) a request's first token (engine clock, relative to the
// first queued_ts) may fall before the two clocks are taken to contradict
// each other. Relative to their first stamps the clocks differ by each
// request's arrival-to-queued delay less the first request's; across the
// 600 requests of LLMServingSim's two runs that difference spans −0.002 to
// +0.199 s (RTX 4090), so 1 s is five times the widest.
const ClockSlackS = 1.0

// ReadRequests reads a whole requests.jsonl and converts it to Requests:
// Arrival = arrival_time − the first arrival_time (wall clock); Start,
// Scheduled, FirstToken and Finish = the engine stamps − the first
// queued_ts (engine clock). Requests are sorted by arrival (stably). An
// empty file is an error, and so is a stamp more than MaxSpanS after the
// first (the longest replay) or a first token more than ClockSlackS before
// its own arrival (the clocks disagree): each names the line, the field
// and the request it is measured from.
func ReadRequests(r io.Reader, name string) ([]Request, error) {
	rr := NewRequestReader(r, name)
	var raw []RawRequest
	var q RawRequest
	for rr.Next(&q) {
		raw = append(raw, q)
	}
	if err := rr.Err(); err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("realrun: %s: no requests", name)
	}
	first, firstQ := &raw[0], &raw[0] // earliest arrival_time, earliest queued_ts
	for i := range raw {
		if raw[i].ArrivalTime < first.ArrivalTime {
			first = &raw[i]
		}
		if raw[i].QueuedTS < firstQ.QueuedTS {
			firstQ = &raw[i]
		}
	}
	a0, q0 := first.ArrivalTime, firstQ.QueuedTS
	out := make([]Request, len(raw))
	for i, q := range raw {
		if d := q.ArrivalTime - a0; !(d <= MaxSpanS) {
			return nil, fieldErr(name, q.Line, "arrival_time", "%g is %g s after the first arrival_time (line %d, %g): past the longest replay (%g s)", q.ArrivalTime, d, first.Line, a0, MaxSpanS)
		}
		if d := q.LastTokenTS - q0; !(d <= MaxSpanS) {
			return nil, fieldErr(name, q.Line, "last_token_ts", "%g is %g s after the first queued_ts (line %d, %g): past the longest replay (%g s)", q.LastTokenTS, d, firstQ.Line, q0, MaxSpanS)
		}
		out[i] = Request{ID: q.RequestID, Input: q.InputToks, Output: q.OutputToks,
			Arrival: q.ArrivalTime - a0, Start: q.QueuedTS - q0, Scheduled: q.ScheduledTS - q0,
			FirstToken: q.FirstTokenTS - q0, Finish: q.LastTokenTS - q0}
		if o := &out[i]; o.FirstToken < o.Arrival-ClockSlackS {
			return nil, fieldErr(name, q.Line, "first_token_ts", "%g puts the first token %.6g s after the first queued_ts (line %d) but arrival_time %g is %.6g s after the first arrival (line %d): the engine and wall clocks disagree by %.3g s (more than %g s)",
				q.FirstTokenTS, o.FirstToken, firstQ.Line, q.ArrivalTime, o.Arrival, first.Line, o.Arrival-o.FirstToken, ClockSlackS)
		}
	}
	sortByArrival(out)
	return out, nil
}
