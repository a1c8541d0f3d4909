package realrun

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/servesim/servesim/internal/bounded"
)

// The sim2real long format (../shared/data/vllm-sim2real-runs/SOURCE.md):
// experiments.csv, one row per experiment (engine arguments, the
// inference-perf shared_prefix profile, the logged KV blocks), and
// runs_long.csv, one measured value in milliseconds per (experiment,
// scope, metric).
const (
	Sim2RealExperiments = "experiments.csv"
	Sim2RealLong        = "runs_long.csv"
	// Sim2RealVLLM is the vLLM version of every run of the format
	// (SOURCE.md: "the vLLM v0.15.1 runs of its train/validation split").
	Sim2RealVLLM = "0.15.1"
	// sim2RealBlockSize is the runs' KV block size (SOURCE.md: "block
	// size 16"), the unit of gpu_kv_blocks_logged.
	sim2RealBlockSize = 16
	// MaxSim2RealBytes bounds each file: 1 MiB, 60× the larger of the
	// real ones (runs_long.csv, 16,554 bytes).
	MaxSim2RealBytes = 1 << 20
	// maxSim2RealPrompts bounds num_groups × prompts_per_group: 10,000,
	// 200× the largest real profile (general-lite, 9 × 5 = 45; the
	// others 44, 50, 23).
	maxSim2RealPrompts = 10000
)

// sim2RealMetrics are runs_long.csv's metrics, each needed in every scope.
var sim2RealMetrics = []string{"ttft_mean", "ttft_p90", "ttft_p99", "e2e_mean", "e2e_p90", "e2e_p99", "itl_mean"}

// ReadSim2Real reads the sim2real long format: exps is experiments.csv
// (named expName in errors), long is runs_long.csv (longName). It returns
// one StageRow per experiment and measured scope, in the experiments'
// order and, within one, summary first and then stage_0, stage_1, ...
// Latencies are seconds, as ReadStageRows gives them. What the format does
// not record is NaN (TTFT and E2E medians, throughputs, the measured
// prompt length) or −1 (successes, failures). TPOTMean is (E2E mean −
// TTFT mean)/(output_len − 1), as ReadStageRows has it: every request
// generates output_len tokens (ignore_eos, SOURCE.md). ITLMean is the
// table's itl_mean, (E2E mean − TTFT mean)/(mean output length − 1) with
// the load generator's re-tokenized count of the output (StageRow.ITLMean):
// within 2 % of output_len on 30 of the 32 rows, 22.7 % short on
// Llama-2-7b-hf reasoning-lite (1,119.8 of 1,448), where it would make the
// mean TPOT 15.20 ms for the 11.75 ms a generated token took.
//
// Each file is read up to MaxSim2RealBytes. Errors start with "realrun:"
// and name the file, the line and the column: a missing column or metric,
// a value that is not a number in range, stages that do not parse, an
// experiment twice, a measured row of an unknown experiment or of a stage
// the experiment does not have, a (experiment, scope, metric) twice, a
// TTFT quantile above E2E's, a prompt plus output longer than
// max_model_len.
func ReadSim2Real(exps io.Reader, expName string, long io.Reader, longName string) ([]StageRow, error) {
	rows, err := readSim2RealExperiments(exps, expName)
	if err != nil {
		return nil, err
	}
	at := map[string]int{}
	for i := range rows {
		at[rows[i].Experiment] = i
	}
	type key struct{ exp, scope, metric string }
	seen := map[key]int{} // line
	vals := make([]map[string]map[string]float64, len(rows))
	p, col, err := openCSV(long, longName, []string{"experiment", "scope", "metric", "value_ms"})
	if err != nil {
		return nil, err
	}
	err = eachRow(p, longName, col, func(rp *rowParser) error {
		line := rp.line
		exp, scope, metric := rp.str("experiment"), rp.str("scope"), rp.str("metric")
		v := rp.float("value_ms")
		if rp.err != nil {
			return rp.err
		}
		i, ok := at[exp]
		if !ok {
			return fmt.Errorf("realrun: %s line %d: column \"experiment\": %q is not in %s", longName, line, exp, expName)
		}
		if !validScope(scope, len(rows[i].Stages)) {
			return fmt.Errorf("realrun: %s line %d: column \"scope\": %q: want summary or stage_0 … stage_%d (%s has %d stages)", longName, line, scope, len(rows[i].Stages)-1, exp, len(rows[i].Stages))
		}
		if !contains(sim2RealMetrics, metric) {
			return fmt.Errorf("realrun: %s line %d: column \"metric\": %q: want one of %s", longName, line, metric, strings.Join(sim2RealMetrics, ", "))
		}
		k := key{exp, scope, metric}
		if l, dup := seen[k]; dup {
			return fmt.Errorf("realrun: %s line %d: experiment %q, scope %q, metric %q again (first at line %d)", longName, line, exp, scope, metric, l)
		}
		seen[k] = line
		if vals[i] == nil {
			vals[i] = map[string]map[string]float64{}
		}
		if vals[i][scope] == nil {
			vals[i][scope] = map[string]float64{}
		}
		vals[i][scope][metric] = v / 1e3
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []StageRow
	for i := range rows {
		if vals[i] == nil {
			return nil, fmt.Errorf("realrun: %s: experiment %q (%s line %d) has no measured rows", longName, rows[i].Experiment, expName, rows[i].Line)
		}
		scopes := []string{"summary"}
		for k := range rows[i].Stages {
			scopes = append(scopes, fmt.Sprintf("stage_%d", k))
		}
		for k, scope := range scopes {
			m, ok := vals[i][scope]
			if !ok {
				continue
			}
			for _, name := range sim2RealMetrics {
				if _, ok := m[name]; !ok {
					return nil, fmt.Errorf("realrun: %s: experiment %q, scope %q: metric %q missing", longName, rows[i].Experiment, scope, name)
				}
			}
			r := rows[i]
			r.Scope = scope
			if k > 0 {
				r.StageRate = r.Stages[k-1].Rate
			}
			nan := math.NaN()
			r.TTFT = Quant{Mean: m["ttft_mean"], Median: nan, P90: m["ttft_p90"], P99: m["ttft_p99"]}
			r.E2E = Quant{Mean: m["e2e_mean"], Median: nan, P90: m["e2e_p90"], P99: m["e2e_p99"]}
			r.ITLMean = m["itl_mean"]
			if r.OutputLen > 1 {
				r.TPOTMean = (r.E2E.Mean - r.TTFT.Mean) / float64(r.OutputLen-1)
			}
			for _, q := range []struct {
				name      string
				ttft, e2e float64
			}{{"mean", r.TTFT.Mean, r.E2E.Mean}, {"p90", r.TTFT.P90, r.E2E.P90}, {"p99", r.TTFT.P99, r.E2E.P99}} {
				if q.ttft > q.e2e {
					return nil, fmt.Errorf("realrun: %s: experiment %q, scope %q: metric \"ttft_%s\": %g ms is above e2e_%s %g ms (a request's first token cannot come after its last)", longName, r.Experiment, scope, q.name, 1e3*q.ttft, q.name, 1e3*q.e2e)
				}
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func validScope(s string, stages int) bool {
	if s == "summary" {
		return true
	}
	k, ok := strings.CutPrefix(s, "stage_")
	n, err := strconv.Atoi(k)
	return ok && err == nil && n >= 0 && n < stages && strconv.Itoa(n) == k
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// openCSV reads r whole (up to MaxSim2RealBytes) and returns a CSV reader
// past its header, with the columns by name; each of need must be there.
func openCSV(r io.Reader, name string, need []string) (*csv.Reader, map[string]int, error) {
	b, err := bounded.ReadAll(r, MaxSim2RealBytes)
	if err != nil {
		if bounded.IsTooLarge(err) {
			return nil, nil, fmt.Errorf("realrun: %s: larger than %s, far past any sim2real table (the real ones are under 20 KB)", name, bounded.Size(MaxSim2RealBytes))
		}
		return nil, nil, fmt.Errorf("realrun: %s: %v", name, err)
	}
	cr := csv.NewReader(bytes.NewReader(stripBOM(b)))
	head, err := readHead(cr, name)
	if err != nil {
		return nil, nil, err
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range need {
		if _, ok := col[c]; !ok {
			return nil, nil, fmt.Errorf("realrun: %s line 1: column %q missing", name, c)
		}
	}
	return cr, col, nil
}

// readSim2RealExperiments reads experiments.csv: one StageRow per row,
// with its engine arguments and workload and no scope or metrics yet.
func readSim2RealExperiments(r io.Reader, name string) ([]StageRow, error) {
	cr, col, err := openCSV(r, name, []string{"experiment", "model", "hardware", "tp", "precision", "max_num_seqs", "max_num_batched_tokens",
		"max_model_len", "workload", "stages", "system_prompt_len", "question_len", "output_len", "num_groups", "prompts_per_group",
		"gpu_kv_blocks_logged", "cpu_kv_blocks_logged"})
	if err != nil {
		return nil, err
	}
	var rows []StageRow
	first := map[string]int{}
	err = eachRow(cr, name, col, func(p *rowParser) error {
		line := p.line
		nan := math.NaN()
		row := StageRow{Line: line, Experiment: p.str("experiment"), Model: p.str("model"), Hardware: p.str("hardware"),
			Precision: p.str("precision"), Workload: p.str("workload"), LoadType: "constant", DataType: "shared_prefix",
			Successes: -1, Failures: -1, PromptLenMean: nan, RequestsPerSec: nan, InputTokensPS: nan, OutputTokensPS: nan}
		p.stageInts(&row, intCol{"num_groups", &row.Groups, 1}, intCol{"prompts_per_group", &row.PromptsPerGroup, 1},
			intCol{"gpu_kv_blocks_logged", &row.GPUKVBlocks, 0}, intCol{"cpu_kv_blocks_logged", &row.CPUKVBlocks, 0})
		row.Stages = p.stages("stages")
		for _, c := range []struct{ c, v string }{{"experiment", row.Experiment}, {"model", row.Model}, {"hardware", row.Hardware}, {"workload", row.Workload}} {
			if c.v == "" {
				p.fail(c.c, "empty")
			}
		}
		if p.err != nil {
			return p.err
		}
		if _, _, err := sim2RealPrecision(row.Precision); err != nil {
			return fmt.Errorf("realrun: %s line %d: column \"precision\": %v", name, line, err)
		}
		switch {
		case row.SystemPromptLen+row.QuestionLen < 1:
			return fmt.Errorf("realrun: %s line %d: columns \"system_prompt_len\", \"question_len\": 0 + 0: a prompt needs a token", name, line)
		case row.Groups > maxSim2RealPrompts || row.PromptsPerGroup > maxSim2RealPrompts || row.Groups*row.PromptsPerGroup > maxSim2RealPrompts:
			return fmt.Errorf("realrun: %s line %d: columns \"num_groups\" × \"prompts_per_group\": %d × %d: more than %d prompts (the real profiles have up to 50)", name, line, row.Groups, row.PromptsPerGroup, maxSim2RealPrompts)
		case row.SystemPromptLen+row.QuestionLen+row.OutputLen > row.MaxModelLen:
			return fmt.Errorf("realrun: %s line %d: column \"max_model_len\": %d, but a request is %d + %d + %d = %d tokens (system prompt, question, output): vLLM would refuse every request", name, line, row.MaxModelLen, row.SystemPromptLen, row.QuestionLen, row.OutputLen, row.SystemPromptLen+row.QuestionLen+row.OutputLen)
		}
		if l, dup := first[row.Experiment]; dup {
			return fmt.Errorf("realrun: %s line %d: column \"experiment\": %q again (first at line %d)", name, line, row.Experiment, l)
		}
		first[row.Experiment] = line
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("realrun: %s: no rows", name)
	}
	return rows, nil
}

// sim2RealPrecision maps the precision column to the engine's dtype and
// quantization: FP16 and BF16 are the model dtype; FP8 is an FP8-weight
// checkpoint (RedHatAI's FP8-dynamic, compressed-tensors), whose KV cache
// keeps the model dtype (vLLM's --kv-cache-dtype auto: "will use model
// data type").
func sim2RealPrecision(p string) (dtype, quant string, err error) {
	switch strings.ToUpper(p) {
	case "FP16":
		return "float16", "", nil
	case "BF16":
		return "bfloat16", "", nil
	case "FP8":
		return "", "fp8", nil
	}
	return "", "", fmt.Errorf("%q: want FP16, BF16 or FP8", p)
}

// sim2RealRun is the Run of one row of ReadSim2Real: the row's engine
// arguments (chunked prefill and prefix caching on, vLLM 0.15.1, block size
// 16, the logged GPU KV blocks).
func sim2RealRun(row *StageRow, path string) *Run {
	dtype, quant, _ := sim2RealPrecision(row.Precision) // checked by the reader
	r := &Run{Name: row.Experiment + "/" + row.Scope, Path: fmt.Sprintf("%s, experiment at line %d", path, row.Line),
		Format: FormatStages, Stage: row,
		Engine: Engine{Model: row.Model, GPU: row.Hardware, TP: row.TP, MaxNumSeqs: row.MaxNumSeqs,
			MaxNumBatchedTokens: row.MaxNumBatchedTokens, MaxModelLen: row.MaxModelLen, DType: dtype, Quantization: quant,
			PrefixCaching: ptr(true), ChunkedPrefill: ptr(true), VLLMVersion: Sim2RealVLLM, KVBlocks: row.GPUKVBlocks,
			BlockSize: sim2RealBlockSize, CPUKVBlocks: row.CPUKVBlocks}}
	if quant != "" {
		r.Notes = append(r.Notes, fmt.Sprintf("precision %s: FP8 weights, KV cache in the model dtype (vLLM's --kv-cache-dtype auto)", row.Precision))
	}
	return r
}

// Sim2RealRepeats is the sim2real directory's earlier measurement of the
// same configurations (SOURCE.md), summary scope only.
const Sim2RealRepeats = "repeat_measurements.csv"

// ReadRepeats reads repeat_measurements.csv (columns experiment, metric,
// value_ms): experiment → metric → milliseconds. A metric must be one of
// runs_long.csv's, its value a finite number ≥ 0, and (experiment,
// metric) appear once; errors name the file, the line and the column.
// The file is read up to MaxSim2RealBytes.
func ReadRepeats(r io.Reader, name string) (map[string]map[string]float64, error) {
	cr, col, err := openCSV(r, name, []string{"experiment", "metric", "value_ms"})
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]float64{}
	seen := map[[2]string]int{}
	err = eachRow(cr, name, col, func(p *rowParser) error {
		line := p.line
		exp, metric := p.str("experiment"), p.str("metric")
		v := p.float("value_ms")
		if exp == "" {
			p.fail("experiment", "empty")
		}
		if p.err != nil {
			return p.err
		}
		if !contains(sim2RealMetrics, metric) {
			return fmt.Errorf("realrun: %s line %d: column \"metric\": %q: want one of %s", name, line, metric, strings.Join(sim2RealMetrics, ", "))
		}
		k := [2]string{exp, metric}
		if l, dup := seen[k]; dup {
			return fmt.Errorf("realrun: %s line %d: experiment %q, metric %q again (first at line %d)", name, line, exp, metric, l)
		}
		seen[k] = line
		if out[exp] == nil {
			out[exp] = map[string]float64{}
		}
		out[exp][metric] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("realrun: %s: no rows", name)
	}
	return out, nil
}
