package realrun

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// StageRow is one row of an inference-perf results table (runs.csv in
// ../shared/data/vllm-h100-runs; its SOURCE.md gives the columns): one
// experiment and scope (summary, stage_0, stage_1) with its engine limits,
// workload description and aggregate metrics. Latencies are seconds.
type StageRow struct {
	Line                                    int // line in the file
	Experiment, Model, Scope                string
	TP, MaxNumSeqs, MaxNumBatchedTokens     int
	MaxModelLen                             int
	LoadType, DataType                      string
	Stages                                  []Stage
	StageRate                               float64 // 0 for the summary scope
	SystemPromptLen, QuestionLen, OutputLen int
	Successes, Failures                     int // −1: not recorded (the sim2real tables)
	TTFT, E2E                               Quant
	// TPOTMean is (E2E mean − TTFT mean)/(output_len − 1): every request
	// generates output_len tokens (ignore_eos), so it equals the mean of
	// the per-request TPOTs. The table's own TPOT and ITL columns count
	// streamed chunks, about two per token, and are not used (SOURCE.md).
	TPOTMean float64
	// ITLMean is the sim2real tables' itl_mean (0 for runs.csv): (E2E mean
	// − TTFT mean)/(mean output length − 1) with the load generator's
	// output length, which inference-perf counted by re-tokenizing the
	// streamed text (inference_perf/apis/completion.py process_response,
	// tokenizer.count_tokens(output_text), at fc877d3, 2026-02: before PR
	// #577 let it read the server's usage.completion_tokens), not the
	// tokens the server generated. It is kept for the repeat spread (the
	// earlier campaign records only itl_mean) and the header note; TPOT is
	// TPOTMean, as for runs.csv.
	ITLMean                                       float64
	PromptLenMean                                 float64
	RequestsPerSec, InputTokensPS, OutputTokensPS float64
	// Notes are what the reader did with the row (an identical duplicate
	// dropped), for the report.
	Notes []string
	// The sim2real tables' fields (ReadSim2Real; zero for runs.csv):
	// the GPU, the weight precision, the workload profile's name, its
	// shared_prefix groups × prompts per group (runs.csv: 0, the load
	// generator's defaults ran; experiments.StageScenario), and the KV
	// blocks the server logged on the GPU and in a CPU offload tier.
	Hardware, Precision, Workload string
	Groups, PromptsPerGroup       int
	GPUKVBlocks, CPUKVBlocks      int
	// Args are the row's other columns that name a modelled engine
	// argument (EngineArgs), name → cell, for Open to apply.
	Args map[string]string

	index int // in the rows read, for the duplicate check
}

// Stage is one constant-rate load stage.
type Stage struct{ Rate, Seconds float64 }

// Quant holds a metric's mean, median, p90 and p99.
type Quant struct{ Mean, Median, P90, P99 float64 }

// ReadStageRows reads an inference-perf results table. Columns are found by
// name (order free, extra columns ignored); each needed one must be there.
// CRLF line endings are fine. Errors name the file, the line and the column.
func ReadStageRows(r io.Reader, name string) ([]StageRow, error) {
	cr := csv.NewReader(r)
	head, err := readHead(cr, name)
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimPrefix(strings.TrimSpace(h), "\ufeff")] = i
	}
	need := []string{"experiment", "model", "tp", "max_num_seqs", "max_num_batched_tokens", "max_model_len", "load_type",
		"stages", "scope", "stage_rate", "data_type", "system_prompt_len", "question_len", "output_len", "successes", "failures",
		"ttft_s_mean", "ttft_s_median", "ttft_s_p90", "ttft_s_p99", "e2e_s_mean", "e2e_s_median", "e2e_s_p90", "e2e_s_p99",
		"prompt_len_mean", "requests_per_sec", "input_tokens_per_sec", "output_tokens_per_sec"}
	for _, c := range need {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("realrun: %s line 1: column %q missing", name, c)
		}
	}
	// Columns beyond the ones parsed below that name an engine argument
	// go through the table, row by row.
	parsed := map[string]bool{"model": true, "tp": true, "max_num_seqs": true, "max_num_batched_tokens": true, "max_model_len": true}
	var argCols []string
	for _, h := range sortedKeys(col) {
		if _, ok := EngineArgs[h]; ok && !parsed[h] {
			argCols = append(argCols, h)
		}
	}
	var rows []StageRow
	var cells []string // each row's cells, joined, for the duplicate check
	err = eachRow(cr, name, col, func(p *rowParser) error {
		line := p.line
		row := StageRow{Line: line, Experiment: p.str("experiment"), Model: p.str("model"), Scope: p.str("scope"),
			LoadType: p.str("load_type"), DataType: p.str("data_type")}
		p.stageInts(&row, intCol{"successes", &row.Successes, 0}, intCol{"failures", &row.Failures, 0})
		for _, f := range []struct {
			c   string
			dst *float64
		}{
			{"ttft_s_mean", &row.TTFT.Mean}, {"ttft_s_median", &row.TTFT.Median}, {"ttft_s_p90", &row.TTFT.P90}, {"ttft_s_p99", &row.TTFT.P99},
			{"e2e_s_mean", &row.E2E.Mean}, {"e2e_s_median", &row.E2E.Median}, {"e2e_s_p90", &row.E2E.P90}, {"e2e_s_p99", &row.E2E.P99},
			{"prompt_len_mean", &row.PromptLenMean}, {"requests_per_sec", &row.RequestsPerSec},
			{"input_tokens_per_sec", &row.InputTokensPS}, {"output_tokens_per_sec", &row.OutputTokensPS},
		} {
			*f.dst = p.float(f.c)
		}
		if s := p.str("stage_rate"); s != "" {
			row.StageRate = p.float("stage_rate")
		}
		row.Stages = p.stages("stages")
		if p.err != nil {
			return p.err
		}
		args := &argChecker{file: name, line: line}
		for _, c := range argCols {
			v := p.str(c)
			args.check("column "+strconv.Quote(c), c, v)
			if EngineArgs[c].Effect == Modelled {
				if row.Args == nil {
					row.Args = map[string]string{}
				}
				row.Args[c] = v
			}
		}
		if p.err != nil {
			return p.err
		}
		if err := args.err(); err != nil {
			return err
		}
		if row.OutputLen > 1 {
			row.TPOTMean = (row.E2E.Mean - row.TTFT.Mean) / float64(row.OutputLen-1)
		}
		rows = append(rows, row)
		cells = append(cells, strings.Join(p.rec, "\x00"))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("realrun: %s: no rows", name)
	}
	return checkStageRows(name, rows, cells, head)
}

// checkStageRows refuses rows that contradict themselves or each other:
// a TTFT quantile above the same quantile of E2E (each request's TTFT is
// at most its E2E, so every order statistic is too), a stage row whose
// stage_rate is not its stage's rate in stages, one (experiment, scope)
// twice with different cells, and an experiment's rows split by another's.
// A row repeated cell for cell is dropped with a note on the first.
func checkStageRows(name string, rows []StageRow, cells, head []string) ([]StageRow, error) {
	type key struct{ exp, scope string }
	seen := map[key]int{} // index in kept
	lastLine := map[string]int{}
	var kept []StageRow
	prev := ""
	for i := range rows {
		r := &rows[i]
		for _, q := range []struct {
			name      string
			ttft, e2e float64
		}{{"mean", r.TTFT.Mean, r.E2E.Mean}, {"median", r.TTFT.Median, r.E2E.Median}, {"p90", r.TTFT.P90, r.E2E.P90}, {"p99", r.TTFT.P99, r.E2E.P99}} {
			if q.ttft > q.e2e {
				return nil, fmt.Errorf("realrun: %s line %d: column \"ttft_s_%s\": %g s is above e2e_s_%s %g s (a request's first token cannot come after its last)", name, r.Line, q.name, q.ttft, q.name, q.e2e)
			}
		}
		var k int
		if _, err := fmt.Sscanf(r.Scope, "stage_%d", &k); err == nil && k >= 0 && k < len(r.Stages) && r.StageRate != 0 && r.StageRate != r.Stages[k].Rate {
			return nil, fmt.Errorf("realrun: %s line %d: column \"stage_rate\": %g req/s, but stages gives stage %d %g req/s (%s)", name, r.Line, r.StageRate, k, r.Stages[k].Rate, stagesText(r.Stages))
		}
		if r.Experiment != prev {
			if l, ok := lastLine[r.Experiment]; ok {
				return nil, fmt.Errorf("realrun: %s line %d: column \"experiment\": %q again after line %d, with %q between: an experiment's rows must be consecutive (it is simulated once)", name, r.Line, r.Experiment, l, prev)
			}
			prev = r.Experiment
		}
		lastLine[r.Experiment] = r.Line
		if j, ok := seen[key{r.Experiment, r.Scope}]; ok {
			first := &kept[j]
			if cells[i] != cells[first.index] {
				a, b := strings.Split(cells[first.index], "\x00"), strings.Split(cells[i], "\x00")
				c := 0
				for c < len(a) && c < len(b) && a[c] == b[c] {
					c++
				}
				col := "?"
				if c < len(head) {
					col = head[c]
				}
				return nil, fmt.Errorf("realrun: %s line %d: experiment %q, scope %q again (first at line %d) with different numbers: column %q %q there, %q here", name, r.Line, r.Experiment, r.Scope, first.Line, col, at(a, c), at(b, c))
			}
			first.Notes = append(first.Notes, fmt.Sprintf("%s line %d repeats this row cell for cell: dropped", name, r.Line))
			continue
		}
		r.index = i
		seen[key{r.Experiment, r.Scope}] = len(kept)
		kept = append(kept, *r)
	}
	return kept, nil
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

func stagesText(st []Stage) string {
	parts := make([]string, len(st))
	for i, g := range st {
		parts[i] = fmt.Sprintf("%grps x %gs", g.Rate, g.Seconds)
	}
	return strings.Join(parts, ";")
}

// eachRow reads cr's records to the end, calling f with a rowParser for
// each (its line the record's first field's); it returns the first error
// f returns, or a read error naming the file and line.
func eachRow(cr *csv.Reader, name string, col map[string]int, f func(*rowParser) error) error {
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return csvErr(name, err)
		}
		line, _ := cr.FieldPos(0)
		if err := f(&rowParser{name: name, line: line, rec: rec, col: col}); err != nil {
			return err
		}
	}
}

// rowParser parses one row's cells, keeping the first error.
type rowParser struct {
	name string
	line int
	rec  []string
	col  map[string]int
	err  error
}

func (p *rowParser) fail(c, format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("realrun: %s line %d: column %q: %s", p.name, p.line, c, fmt.Sprintf(format, args...))
	}
}

func (p *rowParser) str(c string) string {
	i := p.col[c]
	if i >= len(p.rec) {
		p.fail(c, "missing (the row has %d cells)", len(p.rec))
		return ""
	}
	return strings.TrimSpace(p.rec[i])
}

func (p *rowParser) int(c string, min int) int {
	s := p.str(c)
	v, err := strconv.Atoi(s)
	if err != nil || v < min {
		p.fail(c, "%q: want a whole number ≥ %d", s, min)
	}
	return v
}

// intCol is an integer column, the field it fills and its least value.
type intCol struct {
	c   string
	dst *int
	min int
}

// stageInts parses the integer columns both stage formats have (the
// launch and the workload shape) into row, then the format's own, in
// order (the first bad one is the error).
func (p *rowParser) stageInts(row *StageRow, own ...intCol) {
	for _, f := range append([]intCol{
		{"tp", &row.TP, 1}, {"max_num_seqs", &row.MaxNumSeqs, 1}, {"max_num_batched_tokens", &row.MaxNumBatchedTokens, 1},
		{"max_model_len", &row.MaxModelLen, 1}, {"system_prompt_len", &row.SystemPromptLen, 0}, {"question_len", &row.QuestionLen, 0},
		{"output_len", &row.OutputLen, 1},
	}, own...) {
		*f.dst = p.int(f.c, f.min)
	}
}

func (p *rowParser) float(c string) float64 {
	s := p.str(c)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !finite(v) || v < 0 {
		p.fail(c, "%q: want a finite number ≥ 0", s)
		return 0
	}
	return v
}

// stages parses "5rps x 600s;10rps x 600s".
func (p *rowParser) stages(c string) []Stage {
	s := p.str(c)
	var out []Stage
	for _, part := range strings.Split(s, ";") {
		rate, dur, ok := strings.Cut(strings.TrimSpace(part), "x")
		r, err1 := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rate), "rps"), 64)
		d, err2 := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(dur), "s"), 64)
		if !ok || err1 != nil || err2 != nil || !(r > 0) || !(d > 0) || math.IsInf(r, 0) || math.IsInf(d, 0) {
			p.fail(c, "%q: want stages like \"5rps x 600s;10rps x 600s\"", s)
			return nil
		}
		out = append(out, Stage{r, d})
	}
	return out
}
