package metrics

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/servesim/servesim/sim"
)

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
// Write does not allocate.
type RecordWriter struct {
	w      *bufio.Writer
	buf    []byte
	header bool
}

// NewRecordWriter returns a RecordWriter that writes to w.
func NewRecordWriter(w io.Writer) *RecordWriter {
	return &RecordWriter{w: bufio.NewWriter(w), buf: make([]byte, 0, 256)}
}

// Write writes r as one row, after the header if this is the first.
func (rw *RecordWriter) Write(r *Record) error {
	b := rw.buf[:0]
	if !rw.header {
		b = append(b, RecordHeader+"\n"...)
		rw.header = true
	}
	served := r.Rejected == ""
	b = strconv.AppendInt(b, r.ID, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Instance), 10)
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
	b = strconv.AppendInt(b, int64(r.PromptTokens), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.OutputTokens), 10)
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
	b = strconv.AppendInt(b, int64(r.Preemptions), 10)
	b = append(b, ',')
	b = appendCSVField(b, r.Rejected)
	b = append(b, '\n')
	rw.buf = b
	if _, err := rw.w.Write(b); err != nil {
		return fmt.Errorf("metrics: writing records: %w", err)
	}
	return nil
}

// Flush writes the header if no row was written, then flushes the buffer.
func (rw *RecordWriter) Flush() error {
	if !rw.header {
		rw.header = true
		if _, err := rw.w.WriteString(RecordHeader + "\n"); err != nil {
			return fmt.Errorf("metrics: writing records: %w", err)
		}
	}
	if err := rw.w.Flush(); err != nil {
		return fmt.Errorf("metrics: writing records: %w", err)
	}
	return nil
}

// StepWriter writes steps as CSV rows under StepHeader, buffered: call
// Flush at the end. start_s and duration_s are exact (9 decimals);
// flops_per_gpu and bytes_per_gpu use the shortest form that reads back to
// the same float64 (strconv 'g', -1). Write does not allocate.
type StepWriter struct {
	w      *bufio.Writer
	buf    []byte
	header bool
}

// NewStepWriter returns a StepWriter that writes to w.
func NewStepWriter(w io.Writer) *StepWriter {
	return &StepWriter{w: bufio.NewWriter(w), buf: make([]byte, 0, 256)}
}

// Write writes s as one row, after the header if this is the first.
func (sw *StepWriter) Write(s *Step) error {
	b := sw.buf[:0]
	if !sw.header {
		b = append(b, StepHeader+"\n"...)
		sw.header = true
	}
	b = strconv.AppendInt(b, int64(s.Instance), 10)
	b = append(b, ',')
	b = appendFixed(b, s.Start, 9)
	b = append(b, ',')
	b = appendFixed(b, s.Duration, 9)
	for _, v := range [...]int{s.Prefills, s.PrefillTokens, s.Decodes, s.KVBlocksUsed, s.KVBlocksTotal, s.Preempted} {
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(v), 10)
	}
	b = append(b, ',')
	b = strconv.AppendFloat(b, s.FLOPs, 'g', -1, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, s.Bytes, 'g', -1, 64)
	b = append(b, '\n')
	sw.buf = b
	if _, err := sw.w.Write(b); err != nil {
		return fmt.Errorf("metrics: writing steps: %w", err)
	}
	return nil
}

// Flush writes the header if no row was written, then flushes the buffer.
func (sw *StepWriter) Flush() error {
	if !sw.header {
		sw.header = true
		if _, err := sw.w.WriteString(StepHeader + "\n"); err != nil {
			return fmt.Errorf("metrics: writing steps: %w", err)
		}
	}
	if err := sw.w.Flush(); err != nil {
		return fmt.Errorf("metrics: writing steps: %w", err)
	}
	return nil
}

// appendFixed appends t in seconds (digits 9) or milliseconds (digits 6)
// with exactly that many decimals, from integer nanoseconds, so no float
// rounding is involved. The decimals are written from the right by
// constant divisions (multiplications once compiled), not a division by a
// varying power of ten per digit.
func appendFixed(b []byte, t sim.Time, digits int) []byte {
	u := uint64(t)
	if t < 0 {
		b = append(b, '-')
		u = -u // two's complement: right for MinInt64 too
	}
	unit := uint64(1e9)
	if digits == 6 {
		unit = 1e6
	}
	b = strconv.AppendUint(b, u/unit, 10)
	frac := u % unit
	var d [10]byte // '.' and up to 9 decimals
	d[0] = '.'
	for i := digits; i > 0; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(b, d[:digits+1]...)
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
