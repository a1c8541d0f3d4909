package metrics

import (
	"fmt"
	"io"
)

// RecordHeader is the header line of the per-request CSV (records.csv).
const RecordHeader = "id,instance,arrival_s,first_token_s,finish_s,prompt_tokens,output_tokens,ttft_ms,tpot_ms,e2e_ms,preemptions,rejected"

// StepHeader is the header line of the per-step CSV (steps.csv).
const StepHeader = "instance,start_s,duration_s,prefills,prefill_tokens,decodes,kv_blocks_used,kv_blocks_total,preempted,flops_per_gpu,bytes_per_gpu"

// chunkRows is how many rows a writer holds before a goroutine of its own
// formats and writes them, while the simulation fills the next chunk: 2,048
// rows, about 200 KB of steps.csv (rows of about 98 bytes in the
// 100k-request default run: 60 MB for 613k steps), one write(2) a chunk.
// With GOMAXPROCS ≥ 2 formatting and writing the files (a fifth of a 100k
// run in one thread) then overlap the simulation.
const chunkRows = 2048

// rowQueue holds a CSV writer's rows and has each full chunk formatted and
// written by a goroutine. One chunk is in flight at a time and chunks reach
// w in order, whole: the bytes are those of formatting in line. A write
// error is returned by the next Write that hands over a chunk, or by Flush.
type rowQueue[T any] struct {
	w      io.Writer
	format func([]byte, *T) []byte
	header string // written before the first row
	what   string // "records" or "steps", for errors

	rows   []T        // the chunk being filled
	flying []T        // the chunk being formatted and written; nil when none
	kept   []T        // the chunk written before it, for reuse
	done   chan error // where the write of flying reports
	out    []byte     // the formatted bytes, owned by the goroutine in flight
	begun  bool       // the header is written (by the goroutine in flight)
	err    error      // the first write error
}

func newRowQueue[T any](w io.Writer, what, header string, format func([]byte, *T) []byte) rowQueue[T] {
	return rowQueue[T]{w: w, format: format, header: header, what: what, rows: make([]T, 0, chunkRows),
		done: make(chan error, 1)}
}

// add queues a copy of v and hands the chunk over once it is full.
func (q *rowQueue[T]) add(v *T) error {
	q.rows = append(q.rows, *v)
	if len(q.rows) < chunkRows {
		return q.err
	}
	if err := q.wait(); err != nil {
		return err
	}
	q.flying = q.rows
	if q.kept != nil {
		q.rows, q.kept = q.kept[:0], nil
	} else {
		q.rows = make([]T, 0, chunkRows)
	}
	go q.emit(q.flying)
	return nil
}

// emit formats rows (after the header if none was written) and writes them,
// and reports on done.
func (q *rowQueue[T]) emit(rows []T) {
	b := q.out[:0]
	if !q.begun {
		q.begun = true
		b = append(b, q.header+"\n"...)
	}
	for i := range rows {
		b = q.format(b, &rows[i])
	}
	q.out = b
	var err error
	if len(b) > 0 {
		_, err = q.w.Write(b)
	}
	q.done <- err
}

// wait waits for the chunk in flight, keeps it for reuse, and returns the
// first write error.
func (q *rowQueue[T]) wait() error {
	if q.flying != nil {
		if err := <-q.done; err != nil && q.err == nil {
			q.err = fmt.Errorf("metrics: writing %s: %w", q.what, err)
		}
		q.kept, q.flying = q.flying, nil
	}
	return q.err
}

// flush waits for the chunk in flight, writes the rows held (the header
// alone if no row was written), then flushes w if it has a Flush method (a
// bufio.Writer).
func (q *rowQueue[T]) flush() error {
	if err := q.wait(); err != nil {
		return err
	}
	q.emit(q.rows)
	q.rows = q.rows[:0]
	err := <-q.done
	if err == nil {
		if f, ok := q.w.(interface{ Flush() error }); ok {
			err = f.Flush()
		}
	}
	if err != nil {
		q.err = fmt.Errorf("metrics: writing %s: %w", q.what, err)
	}
	return q.err
}

// RecordWriter writes records as CSV rows under RecordHeader, one row per
// Write, buffered: call Flush at the end. Times are exact: seconds with 9
// decimals and milliseconds with 6 are whole nanoseconds, printed from
// integers; tpot_ms, a quotient, is rounded to 6 decimals (1 ns). A rejected
// request leaves first_token_s, finish_s, ttft_ms, tpot_ms and e2e_ms empty;
// a request with one output token leaves tpot_ms empty. The rejected reason
// is quoted as RFC 4180 requires when it holds a comma, quote or newline.
// Write copies the record; it does not allocate.
type RecordWriter struct{ q rowQueue[Record] }

// NewRecordWriter returns a RecordWriter that writes to w.
func NewRecordWriter(w io.Writer) *RecordWriter {
	return &RecordWriter{newRowQueue(w, "records", RecordHeader, appendRecordFast)}
}

// Write queues r as one row.
func (rw *RecordWriter) Write(r *Record) error { return rw.q.add(r) }

// Flush writes the rows held (the header alone if none was written) and
// flushes the writer if it is a bufio.Writer.
func (rw *RecordWriter) Flush() error { return rw.q.flush() }

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
// allocate.
type StepWriter struct{ q rowQueue[Step] }

// NewStepWriter returns a StepWriter that writes to w.
func NewStepWriter(w io.Writer) *StepWriter {
	return &StepWriter{newRowQueue(w, "steps", StepHeader, appendStepFast)}
}

// Write queues s as one row.
func (sw *StepWriter) Write(s *Step) error { return sw.q.add(s) }

// Flush writes the rows held (the header alone if none was written) and
// flushes the writer if it is a bufio.Writer.
func (sw *StepWriter) Flush() error { return sw.q.flush() }

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
