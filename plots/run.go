package plots

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Run is one run's output directory: requests.csv, and when present
// steps.csv and summary.json.
type Run struct {
	Dir      string
	Label    string    // legend label: the directory's base name unless set
	Requests []Request //
	Steps    []Step    // nil when the directory has no steps.csv
	Summary  *Summary  // nil when the directory has no summary.json
}

// Request is one row of requests.csv. Times are integer nanoseconds of
// simulated time, read exactly from the 9-decimal seconds the simulator
// writes. A rejected request has no first token or finish (both -1) and NaN
// latencies; a request with one output token has a NaN TPOT.
type Request struct {
	Line                  int
	ID                    int64
	Instance              int
	Arrival               int64 // ns
	FirstToken, Finish    int64 // ns; -1 when rejected
	PromptTokens, Output  int
	TTFTms, TPOTms, E2Ems float64
	Preemptions           int
	Rejected              string // reason; "" when served
}

// Served reports whether the request was served (not rejected).
func (q *Request) Served() bool { return q.Rejected == "" }

// RequestsHeader is the header requests.csv must have
// (sim/metrics.RecordHeader).
const RequestsHeader = "id,instance,arrival_s,first_token_s,finish_s,prompt_tokens,output_tokens,ttft_ms,tpot_ms,e2e_ms,preemptions,rejected"

// StepsHeader is the header steps.csv must have (sim/metrics.StepHeader).
const StepsHeader = "instance,start_s,duration_s,prefills,prefill_tokens,decodes,kv_blocks_used,kv_blocks_total,preempted,flops_per_gpu,bytes_per_gpu"

// Step is one row of steps.csv: one model iteration of one instance.
type Step struct {
	Instance        int
	Start, Duration int64 // ns
	Prefills        int
	PrefillTokens   int
	Decodes         int
	KVUsed, KVTotal int64
	Preempted       int
	FLOPs, Bytes    float64 // per GPU
}

// Summary is what the plots need of summary.json.
type Summary struct {
	Name       string  // scenario name
	Model, GPU string  //
	TP         int     //
	Policy     string  // batching policy
	SLO        SLO     // metrics.slo
	Attainment float64 // metrics.slo_attainment
	Completed  int
	Rejected   int
	Duration   float64 // s
	TTFT, TPOT Stats   // ms
	Instances  int     // len(metrics.busy_by_instance_s)
	// Saturation is metrics.saturation: nil in a file written before the
	// simulator judged it.
	Saturation *Saturation
}

// Saturation is summary.json's verdict on whether the run's queue kept
// growing while requests arrived (sim/metrics.Saturation), with the offered
// load and the service capacity measured in the arrival window's second
// half, and the span (s after the first arrival) the queue grew.
type Saturation struct {
	Judged          bool    `json:"judged"`
	Saturated       bool    `json:"saturated"`
	WindowS         float64 `json:"arrival_window_s"`
	OfferedRate     float64 `json:"offered_req_per_s"`
	OfferedOutput   float64 `json:"offered_output_tok_per_s"`
	CapacityRate    float64 `json:"capacity_req_per_s"`
	CapacityOutput  float64 `json:"capacity_output_tok_per_s"`
	OutstandingPeak int     `json:"outstanding_peak"`
	GrowthStart     float64 `json:"growth_start_s"`
	GrowthEnd       float64 `json:"growth_end_s"`
}

// Stats are the percentiles summary.json gives for a latency (ms).
type Stats struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
}

// LoadRun reads a run directory: requests.csv is required; steps.csv and
// summary.json are read when present.
func LoadRun(dir string) (*Run, error) {
	run := &Run{Dir: dir, Label: filepath.Base(filepath.Clean(dir))}
	var err error
	if run.Requests, err = readFile(filepath.Join(dir, "requests.csv"), ReadRequests); err != nil {
		return nil, err
	}
	steps, err := readFile(filepath.Join(dir, "steps.csv"), ReadSteps)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	run.Steps = steps
	sum, err := readFile(filepath.Join(dir, "summary.json"), ReadSummary)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	run.Summary = sum
	return run, nil
}

func readFile[T any](path string, read func(io.Reader, string) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("plots: %w", err)
	}
	defer f.Close()
	return read(f, path)
}

// ReadRequests reads a requests.csv (sim/metrics.RecordWriter's format):
// the header must be RequestsHeader. Served rows need every time and
// latency except tpot_ms, which is empty for a one-token output; rejected
// rows (a reason in the last field) leave first_token_s, finish_s and the
// latencies empty. Errors name the file, line and column.
func ReadRequests(r io.Reader, name string) ([]Request, error) {
	cr := newCSVReader(r)
	if err := readHeader(cr, name, RequestsHeader); err != nil {
		return nil, err
	}
	cols := strings.Split(RequestsHeader, ",")
	var out []Request
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(cols) {
			return nil, fmt.Errorf("plots: %s line %d: %d fields, want %d as in the header", name, line, len(rec), len(cols))
		}
		p := fieldParser{file: name, line: line, cols: cols, rec: rec}
		q := Request{Line: line, Rejected: rec[11]}
		q.ID = p.int(0)
		q.Instance = int(p.intRange(1, 0, math.MaxInt32))
		q.Arrival = p.seconds(2)
		q.PromptTokens = int(p.intRange(5, 0, math.MaxInt32))
		q.Output = int(p.intRange(6, 0, math.MaxInt32))
		q.Preemptions = int(p.intRange(10, 0, math.MaxInt32))
		if q.Served() {
			q.FirstToken = p.seconds(3)
			q.Finish = p.seconds(4)
			q.TTFTms = p.float(7)
			q.TPOTms = math.NaN()
			if rec[8] != "" || q.Output > 1 {
				q.TPOTms = p.float(8)
			}
			q.E2Ems = p.float(9)
			if p.err == nil && (q.FirstToken < q.Arrival || q.Finish < q.FirstToken) {
				p.fail(4, "finish %s before first token %s or arrival %s", rec[4], rec[3], rec[2])
			}
		} else {
			q.FirstToken, q.Finish = -1, -1
			q.TTFTms, q.TPOTms, q.E2Ems = math.NaN(), math.NaN(), math.NaN()
			for _, c := range []int{3, 4, 7, 8, 9} {
				if rec[c] != "" {
					p.fail(c, "a rejected request (reason %q) has no %s, got %q", q.Rejected, cols[c], rec[c])
					break
				}
			}
		}
		if p.err != nil {
			return nil, p.err
		}
		out = append(out, q)
	}
}

// ReadSteps reads a steps.csv (sim/metrics.StepWriter's format): the
// header must be StepsHeader. Errors name the file, line and column.
func ReadSteps(r io.Reader, name string) ([]Step, error) {
	var out []Step
	err := ScanSteps(r, name, func(s Step) error {
		out = append(out, s)
		return nil
	})
	return out, err
}

// ScanSteps reads a steps.csv row by row, calling fn for each step; an
// error from fn stops the scan and is returned.
func ScanSteps(r io.Reader, name string, fn func(Step) error) error {
	cr := newCSVReader(r)
	if err := readHeader(cr, name, StepsHeader); err != nil {
		return err
	}
	cols := strings.Split(StepsHeader, ",")
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(cols) {
			return fmt.Errorf("plots: %s line %d: %d fields, want %d as in the header", name, line, len(rec), len(cols))
		}
		p := fieldParser{file: name, line: line, cols: cols, rec: rec}
		s := Step{
			Instance:      int(p.intRange(0, 0, math.MaxInt32)),
			Start:         p.seconds(1),
			Duration:      p.seconds(2),
			Prefills:      int(p.intRange(3, 0, math.MaxInt32)),
			PrefillTokens: int(p.intRange(4, 0, math.MaxInt32)),
			Decodes:       int(p.intRange(5, 0, math.MaxInt32)),
			KVUsed:        p.intRange(6, 0, math.MaxInt64),
			KVTotal:       p.intRange(7, 0, math.MaxInt64),
			Preempted:     int(p.intRange(8, 0, math.MaxInt32)),
			FLOPs:         p.float(9),
			Bytes:         p.float(10),
		}
		if p.err == nil && s.Duration < 0 {
			p.fail(2, "negative duration %q", rec[2])
		}
		if p.err == nil && s.KVUsed > s.KVTotal {
			p.fail(6, "%d blocks used of %d", s.KVUsed, s.KVTotal)
		}
		if p.err != nil {
			return p.err
		}
		if err := fn(s); err != nil {
			return err
		}
	}
}

func readHeader(cr interface{ Read() ([]string, error) }, name, want string) error {
	h, err := cr.Read()
	if err == io.EOF {
		return fmt.Errorf("plots: %s: empty file (want the header %q)", name, want)
	}
	if err != nil {
		return csvError(name, err)
	}
	wantCols := strings.Split(want, ",")
	for i, c := range wantCols {
		if i >= len(h) {
			return fmt.Errorf("plots: %s line 1: header has %d columns, want %d: %s", name, len(h), len(wantCols), want)
		}
		if h[i] != c {
			return fmt.Errorf("plots: %s line 1, column %d: header %q, want %q (header %s)", name, i+1, h[i], c, want)
		}
	}
	if len(h) != len(wantCols) {
		return fmt.Errorf("plots: %s line 1: header has %d columns, want %d: %s", name, len(h), len(wantCols), want)
	}
	return nil
}

// fieldParser parses the fields of one CSV record, keeping the first error.
type fieldParser struct {
	file string
	line int
	cols []string
	rec  []string
	err  error
}

func (p *fieldParser) fail(col int, format string, args ...any) {
	if p.err == nil {
		p.err = fieldError(p.file, p.line, col, p.cols[col], format, args...)
	}
}

func (p *fieldParser) int(col int) int64 {
	v, err := strconv.ParseInt(p.rec[col], 10, 64)
	if err != nil {
		p.fail(col, "invalid integer %q", p.rec[col])
	}
	return v
}

func (p *fieldParser) intRange(col int, lo, hi int64) int64 {
	v := p.int(col)
	if p.err == nil && (v < lo || v > hi) {
		p.fail(col, "%d out of range [%d, %d]", v, lo, hi)
	}
	return v
}

func (p *fieldParser) float(col int) float64 {
	v, err := parseNumber(p.rec[col])
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		p.fail(col, "invalid number %q", p.rec[col])
	}
	return v
}

func (p *fieldParser) seconds(col int) int64 {
	v, err := parseSeconds(p.rec[col])
	if err != nil {
		p.fail(col, "invalid time %q (want seconds, e.g. 1.250000000)", p.rec[col])
	}
	return v
}

// maxSeconds bounds times so that nanoseconds fit an int64 with room to add
// them (about 292 years / 4).
const maxSeconds = math.MaxInt64 / 4 / 1e9

// parseSeconds reads seconds as integer nanoseconds: exactly for the
// fixed-point form the simulator writes ("12.345678901", up to 9
// decimals), by rounding for any other form strconv accepts. Negative,
// NaN, infinite and huge times are errors.
func parseSeconds(s string) (int64, error) {
	if ip, fp, ok := strings.Cut(s, "."); ok && len(fp) <= 9 && isDigits(ip) && isDigits(fp) && len(ip) <= 10 && len(ip)+len(fp) > 0 {
		var ns int64
		for _, c := range ip {
			ns = ns*10 + int64(c-'0')
		}
		for i := range 9 {
			ns *= 10
			if i < len(fp) {
				ns += int64(fp[i] - '0')
			}
		}
		if ns > maxSeconds*1e9 {
			return 0, errors.New("too large")
		}
		return ns, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if !(v >= 0 && v <= maxSeconds) { // also catches NaN
		return 0, errors.New("out of range")
	}
	return int64(math.Round(v * 1e9)), nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// summaryFile is the part of summary.json the plots read.
type summaryFile struct {
	Scenario struct {
		Name string `json:"name"`
	} `json:"scenario"`
	Instance struct {
		Model  string `json:"model"`
		GPU    string `json:"gpu"`
		TP     int    `json:"tp"`
		Policy string `json:"policy"`
	} `json:"instance"`
	Metrics *struct {
		Completed  int     `json:"completed"`
		Rejected   int     `json:"rejected"`
		Duration   float64 `json:"duration_s"`
		TTFT       Stats   `json:"ttft_ms"`
		TPOT       Stats   `json:"tpot_ms"`
		Attainment float64 `json:"slo_attainment"`
		SLO        struct {
			TTFT float64 `json:"ttft_ms"`
			TPOT float64 `json:"tpot_ms"`
			E2E  float64 `json:"e2e_ms"`
			// Files written before the SLO was in milliseconds.
			TTFTns *int64 `json:"ttft_ns"`
			TPOTns *int64 `json:"tpot_ns"`
			E2Ens  *int64 `json:"e2e_ns"`
		} `json:"slo"`
		Busy       []float64   `json:"busy_by_instance_s"`
		Saturation *Saturation `json:"saturation"`
	} `json:"metrics"`
}

// ReadSummary reads what the plots need of a run's summary.json: the
// scenario name, the instance (model, GPU, TP, policy), and from "metrics"
// the SLO, the attainment, the counts and the TTFT and TPOT statistics.
// Other fields are ignored (the file is the simulator's full record).
// Errors name the file and, for malformed JSON, the line and column.
func ReadSummary(r io.Reader, name string) (*Summary, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("plots: %s: %v", name, err)
	}
	var f summaryFile
	if err := json.Unmarshal(data, &f); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line, col := lineCol(data, se.Offset)
			return nil, fmt.Errorf("plots: %s line %d, column %d: %v", name, line, col, se)
		case errors.As(err, &te):
			line, col := lineCol(data, te.Offset)
			return nil, fmt.Errorf("plots: %s line %d, column %d: field %q: %s value where %s is wanted", name, line, col, te.Field, te.Value, te.Type)
		}
		return nil, fmt.Errorf("plots: %s: %v", name, err)
	}
	if f.Metrics == nil {
		return nil, fmt.Errorf("plots: %s: no \"metrics\" object", name)
	}
	m := f.Metrics
	for _, l := range []struct {
		ns *int64
		ms *float64
	}{{m.SLO.TTFTns, &m.SLO.TTFT}, {m.SLO.TPOTns, &m.SLO.TPOT}, {m.SLO.E2Ens, &m.SLO.E2E}} {
		if l.ns != nil && *l.ms == 0 {
			*l.ms = float64(*l.ns) / 1e6
		}
	}
	s := &Summary{
		Name: f.Scenario.Name, Model: f.Instance.Model, GPU: f.Instance.GPU, TP: f.Instance.TP, Policy: f.Instance.Policy,
		SLO:        SLO{TTFTms: m.SLO.TTFT, TPOTms: m.SLO.TPOT, E2Ems: m.SLO.E2E},
		Attainment: m.Attainment, Completed: m.Completed, Rejected: m.Rejected, Duration: m.Duration,
		TTFT: m.TTFT, TPOT: m.TPOT, Instances: len(m.Busy), Saturation: m.Saturation,
	}
	if err := s.SLO.validate(); err != nil {
		return nil, fmt.Errorf("plots: %s: metrics.slo: %v", name, err)
	}
	if !(s.Attainment >= 0 && s.Attainment <= 1) {
		return nil, fmt.Errorf("plots: %s: metrics.slo_attainment %v: want a fraction in [0, 1]", name, s.Attainment)
	}
	return s, nil
}

// lineCol converts a byte offset (1-based, as encoding/json reports the
// offset after the bad byte) into a line and column.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte{'\n'})
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}
