package metrics

import "io"

// RecordHeader is the header line of the per-request CSV (records.csv).
const RecordHeader = "id,instance,arrival_s,first_token_s,finish_s,prompt_tokens,output_tokens,ttft_ms,tpot_ms,e2e_ms,preemptions,rejected"

// StepHeader is the header line of the per-step CSV (steps.csv).
const StepHeader = "instance,start_s,duration_s,prefills,prefill_tokens,decodes,kv_blocks_used,kv_blocks_total,preempted,flops_per_gpu,bytes_per_gpu"

// RecordWriter writes records as CSV rows under RecordHeader, one row per
// Write, buffered: call Flush at the end. Times are exact: seconds with 9
// decimals and milliseconds with 6 are whole nanoseconds, printed from
// integers; tpot_ms, a quotient, is rounded to 6 decimals (1 ns). A rejected
// request leaves first_token_s, finish_s, ttft_ms, tpot_ms and e2e_ms empty;
// a request with one output token leaves tpot_ms empty. The rejected reason
// is quoted as RFC 4180 requires when it holds a comma, quote or newline.
// Write copies the record; it does not allocate, and it does not wait
// for the rows before it to be written (see rowQueue).
type RecordWriter struct{ q *rowQueue[Record] }

// NewRecordWriter returns a RecordWriter that writes to w.
func NewRecordWriter(w io.Writer) *RecordWriter {
	return &RecordWriter{newRowQueue(new(pipe), w, "records", RecordHeader, appendRecordFast)}
}

// Write queues r as one row. It returns the error of a write made for an
// earlier Write, if any.
func (rw *RecordWriter) Write(r *Record) error { return rw.q.add(r) }

// Flush writes the rows held (the header alone if none was written),
// flushes the writer if it is a bufio.Writer, and returns the first write
// error.
func (rw *RecordWriter) Flush() error { return rw.q.flush() }

// Discard drops the rows not yet written and waits for a write in
// progress: a run that ends without its files calls it, so that nothing
// writes to them after it closes them. The writer (and the StepWriter
// that NewWriters returned with it) then writes nothing more.
func (rw *RecordWriter) Discard() { rw.q.p.discard() }

// appendRecord appends r as one row of RecordHeader.
func appendRecord(b []byte, r *Record) []byte {
	served := r.Rejected == ""
	b = appendInt(b, r.ID)
	b = append(b, ',')
	b = appendInt(b, int64(r.Instance))
	b = append(b, ',')
	b = appendFixed(b, r.Arrival, 9)
	b = append(b, ',')
	if served {
		b = appendFixed(b, r.FirstToken, 9)
	}
	b = append(b, ',')
	if served {
		b = appendFixed(b, r.Finish, 9)
	}
	b = append(b, ',')
	b = appendInt(b, int64(r.PromptTokens))
	b = append(b, ',')
	b = appendInt(b, int64(r.OutputTokens))
	b = append(b, ',')
	if served {
		b = appendFixed(b, r.TTFT(), 6)
	}
	b = append(b, ',')
	if ms, ok := r.TPOT(); served && ok {
		b = appendMs6(b, ms)
	}
	b = append(b, ',')
	if served {
		b = appendFixed(b, r.E2E(), 6)
	}
	b = append(b, ',')
	b = appendInt(b, int64(r.Preemptions))
	b = append(b, ',')
	b = appendCSVField(b, r.Rejected)
	return append(b, '\n')
}

// StepWriter writes steps as CSV rows under StepHeader, buffered: call
// Flush at the end. start_s and duration_s are exact (9 decimals);
// flops_per_gpu and bytes_per_gpu use the shortest form that reads back to
// the same float64 (strconv 'g', -1). Write copies the step; it does not
// allocate, and it does not wait for the rows before it to be written.
type StepWriter struct{ q *rowQueue[Step] }

// NewStepWriter returns a StepWriter that writes to w.
func NewStepWriter(w io.Writer) *StepWriter {
	return &StepWriter{newRowQueue(new(pipe), w, "steps", StepHeader, appendStepFast)}
}

// NewWriters returns a RecordWriter that writes to records and a
// StepWriter that writes to steps whose rows are formatted and written by
// one goroutine at a time, in turn, rather than one each: a run's two
// files take one core beside the simulation's. Call both Flushes from one
// goroutine (or Discard).
func NewWriters(records, steps io.Writer) (*RecordWriter, *StepWriter) {
	p := new(pipe)
	return &RecordWriter{newRowQueue(p, records, "records", RecordHeader, appendRecordFast)},
		&StepWriter{newRowQueue(p, steps, "steps", StepHeader, appendStepFast)}
}

// Write queues s as one row. It returns the error of a write made for an
// earlier Write, if any.
func (sw *StepWriter) Write(s *Step) error { return sw.q.add(s) }

// Flush writes the rows held (the header alone if none was written),
// flushes the writer if it is a bufio.Writer, and returns the first write
// error.
func (sw *StepWriter) Flush() error { return sw.q.flush() }

// Discard is RecordWriter.Discard.
func (sw *StepWriter) Discard() { sw.q.p.discard() }

// appendStep appends s as one row of StepHeader.
func appendStep(b []byte, s *Step) []byte {
	b = appendInt(b, int64(s.Instance))
	b = append(b, ',')
	b = appendFixed(b, s.Start, 9)
	b = append(b, ',')
	b = appendFixed(b, s.Duration, 9)
	for _, v := range [...]int{s.Prefills, s.PrefillTokens, s.Decodes, s.KVBlocksUsed, s.KVBlocksTotal, s.Preempted} {
		b = append(b, ',')
		b = appendInt(b, int64(v))
	}
	b = append(b, ',')
	b = appendShortest(b, s.FLOPs)
	b = append(b, ',')
	b = appendShortest(b, s.Bytes)
	return append(b, '\n')
}

// appendCSVField appends s, quoted as encoding/csv would when it holds a
// comma, a quote, a line break, or begins with a space or tab.
func appendCSVField(b []byte, s string) []byte {
	need := len(s) > 0 && (s[0] == ' ' || s[0] == '\t')
	for i := 0; i < len(s) && !need; i++ {
		switch s[i] {
		case ',', '"', '\r', '\n':
			need = true
		}
	}
	if !need {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}
