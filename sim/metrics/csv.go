package metrics

import (
	"fmt"
	"io"
	"strconv"
)

// RecordHeader is the header line of the per-request CSV (records.csv).
const RecordHeader = "id,instance,arrival_s,first_token_s,finish_s,prompt_tokens,output_tokens,ttft_ms,tpot_ms,e2e_ms,preemptions,rejected"

// StepHeader is the header line of the per-step CSV (steps.csv).
const StepHeader = "instance,start_s,duration_s,prefills,prefill_tokens,decodes,kv_blocks_used,kv_blocks_total,preempted,flops_per_gpu,bytes_per_gpu"

// flushAt is how many bytes of rows a writer holds before it hands them to
// its io.Writer in one Write: 128 KiB, so a file gets few, large write(2)
// calls (steps.csv of the 100k-request default run is 60 MB: 460 calls),
// and a bufio.Writer of up to 128 KiB in between passes them through
// without copying (bufio writes a chunk larger than its free space
// straight to its writer when it holds nothing).
const flushAt = 128 << 10

// rowBuf is the buffer a CSV writer appends its rows to. A full buffer is
// written by a goroutine of its own while the rows that follow go into a
// second buffer, so the simulation does not wait for the file system (with
// GOMAXPROCS ≥ 2 the write(2) calls of steps.csv, a tenth of a 100k run,
// overlap the simulation). One write is in flight at a time and the chunks
// reach w in order, whole: the bytes are those of writing in line. A write
// error is returned by the next Write or by Flush.
type rowBuf struct {
	w      io.Writer
	buf    []byte
	flying []byte     // the chunk being written; nil when none
	kept   []byte     // the chunk written before it, for reuse
	done   chan error // where the write of flying reports
	err    error      // the first write error
	header bool
	what   string // "records" or "steps", for errors
}

func newRowBuf(w io.Writer, what string) rowBuf {
	return rowBuf{w: w, buf: make([]byte, 0, flushAt+1024), done: make(chan error, 1), what: what}
}

// start returns the buffer to append a row to, after the header if this is
// the first row.
func (rb *rowBuf) start(header string) []byte {
	if !rb.header {
		rb.header = true
		return append(rb.buf, header+"\n"...)
	}
	return rb.buf
}

// end keeps b, the buffer with a row appended, and hands it to a writing
// goroutine once it holds flushAt bytes.
func (rb *rowBuf) end(b []byte) error {
	rb.buf = b
	if len(b) < flushAt {
		return nil
	}
	if err := rb.wait(); err != nil {
		return err
	}
	rb.flying = b
	go rb.write(b)
	rb.buf = rb.spare()
	return nil
}

// spare returns an empty buffer for the next rows: the one written before
// the chunk now in flight, kept by wait, or a new one.
func (rb *rowBuf) spare() []byte {
	if rb.kept != nil {
		b := rb.kept[:0]
		rb.kept = nil
		return b
	}
	return make([]byte, 0, flushAt+1024)
}

func (rb *rowBuf) write(b []byte) {
	_, err := rb.w.Write(b)
	rb.done <- err
}

// wait waits for the write in flight, keeps its buffer for reuse, and
// returns the first write error.
func (rb *rowBuf) wait() error {
	if rb.flying != nil {
		if err := <-rb.done; err != nil && rb.err == nil {
			rb.err = fmt.Errorf("metrics: writing %s: %w", rb.what, err)
		}
		rb.kept, rb.flying = rb.flying, nil
	}
	return rb.err
}

// flush writes the header if no row was written, waits for the write in
// flight, writes the rows held, then flushes w if it has a Flush method (a
// bufio.Writer).
func (rb *rowBuf) flush(header string) error {
	rb.buf = rb.start(header)
	if err := rb.wait(); err != nil {
		return err
	}
	_, err := rb.w.Write(rb.buf)
	rb.buf = rb.buf[:0]
	if err == nil {
		if f, ok := rb.w.(interface{ Flush() error }); ok {
			err = f.Flush()
		}
	}
	if err != nil {
		rb.err = fmt.Errorf("metrics: writing %s: %w", rb.what, err)
	}
	return rb.err
}

// RecordWriter writes records as CSV rows under RecordHeader, one row per
// Write, buffered: call Flush at the end. Times are exact: seconds with 9
// decimals and milliseconds with 6 are whole nanoseconds, printed from
// integers; tpot_ms, a quotient, is rounded to 6 decimals (1 ns). A rejected
// request leaves first_token_s, finish_s, ttft_ms, tpot_ms and e2e_ms empty;
// a request with one output token leaves tpot_ms empty. The rejected reason
// is quoted as RFC 4180 requires when it holds a comma, quote or newline.
// Write does not allocate.
type RecordWriter struct{ rb rowBuf }

// NewRecordWriter returns a RecordWriter that writes to w.
func NewRecordWriter(w io.Writer) *RecordWriter {
	return &RecordWriter{newRowBuf(w, "records")}
}

// Write writes r as one row, after the header if this is the first.
func (rw *RecordWriter) Write(r *Record) error {
	b := rw.rb.start(RecordHeader)
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
		b = strconv.AppendFloat(b, ms, 'f', 6, 64)
	}
	b = append(b, ',')
	if served {
		b = appendFixed(b, r.E2E(), 6)
	}
	b = append(b, ',')
	b = appendInt(b, int64(r.Preemptions))
	b = append(b, ',')
	b = appendCSVField(b, r.Rejected)
	b = append(b, '\n')
	return rw.rb.end(b)
}

// Flush writes the header if no row was written, then the rows held, and
// flushes the writer if it is a bufio.Writer.
func (rw *RecordWriter) Flush() error { return rw.rb.flush(RecordHeader) }

// StepWriter writes steps as CSV rows under StepHeader, buffered: call
// Flush at the end. start_s and duration_s are exact (9 decimals);
// flops_per_gpu and bytes_per_gpu use the shortest form that reads back to
// the same float64 (strconv 'g', -1). Write does not allocate.
type StepWriter struct{ rb rowBuf }

// NewStepWriter returns a StepWriter that writes to w.
func NewStepWriter(w io.Writer) *StepWriter {
	return &StepWriter{newRowBuf(w, "steps")}
}

// Write writes s as one row, after the header if this is the first.
func (sw *StepWriter) Write(s *Step) error {
	b := sw.rb.start(StepHeader)
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
	b = append(b, '\n')
	return sw.rb.end(b)
}

// Flush writes the header if no row was written, then the rows held, and
// flushes the writer if it is a bufio.Writer.
func (sw *StepWriter) Flush() error { return sw.rb.flush(StepHeader) }

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
