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
	*q = RawRequest{InputToks: *j.InputToks, OutputToks: *j.OutputToks, ArrivalTime: *j.ArrivalTime,
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

// ReadRequests reads a whole requests.jsonl and converts it to Requests:
// Arrival = arrival_time − the first arrival_time (wall clock); Start,
// Scheduled, FirstToken and Finish = the engine stamps − the first
// queued_ts (engine clock). Requests are sorted by arrival (stably). An
// empty file is an error.
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
	a0, q0 := raw[0].ArrivalTime, raw[0].QueuedTS
	for _, q := range raw {
		a0, q0 = math.Min(a0, q.ArrivalTime), math.Min(q0, q.QueuedTS)
	}
	out := make([]Request, len(raw))
	for i, q := range raw {
		out[i] = Request{ID: q.RequestID, Input: q.InputToks, Output: q.OutputToks,
			Arrival: q.ArrivalTime - a0, Start: q.QueuedTS - q0, Scheduled: q.ScheduledTS - q0,
			FirstToken: q.FirstTokenTS - q0, Finish: q.LastTokenTS - q0}
	}
	sortByArrival(out)
	return out, nil
}
