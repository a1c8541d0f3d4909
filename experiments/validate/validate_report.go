package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
)

// MedianAbsErrors returns, per metric, the median of |error| over the
// validations where it is defined, in the metric order of the rows; a
// metric defined nowhere is left out. Summary rows whose stages are listed
// too (Overlap) are left out: their requests are counted in the stages.
func MedianAbsErrors(vs []*Validation) ([]string, map[string]float64) {
	var order []string
	errs := map[string][]float64{}
	for _, v := range vs {
		for _, m := range v.Metrics {
			if _, seen := errs[m.Metric]; !seen {
				order = append(order, m.Metric)
				errs[m.Metric] = nil
			}
			if e := m.Err(); !math.IsNaN(e) && !v.Overlap {
				errs[m.Metric] = append(errs[m.Metric], math.Abs(e))
			}
		}
	}
	out := map[string]float64{}
	var kept []string
	for _, k := range order {
		x := errs[k]
		if len(x) == 0 {
			continue
		}
		slices.Sort(x)
		n := len(x)
		med := x[n/2]
		if n%2 == 0 {
			med = (x[n/2-1] + x[n/2]) / 2
		}
		out[k] = med
		kept = append(kept, k)
	}
	return kept, out
}

// HeldOut returns the validations of runs on which nothing was fitted.
func HeldOut(vs []*Validation) []*Validation {
	var out []*Validation
	for _, v := range vs {
		if len(v.Fitted) == 0 {
			out = append(out, v)
		}
	}
	return out
}

// scored counts the validations the medians use (not Overlap).
func scored(vs []*Validation) int {
	n := 0
	for _, v := range vs {
		if !v.Overlap {
			n++
		}
	}
	return n
}

// WriteValidationText prints each run's header (scenario, kernel model,
// workload, notes; once per simulation for an inference-perf experiment's
// rows) and the comparison. Up to three runs: one table of metric, then
// measured, simulated and signed error per run, and with several the
// median absolute error. More runs: a table of means, measured beside
// simulated, one row per run, and a table of signed errors per run and
// metric with the median absolute errors under it, over all runs and over
// the held-out ones (every value is in validation.csv).
func WriteValidationText(w io.Writer, vs []*Validation) error {
	return WriteSuiteText(w, vs, nil)
}

// WriteSuiteText is WriteValidationText with, under the error table of
// more than three runs, the grouped medians (SuiteGroups: by model left
// out, by GPU, TP and workload) and, when floor is not nil, the
// repeat-measurement spread of the real system.
func WriteSuiteText(w io.Writer, vs []*Validation, floor *RepeatSpread) error {
	var b bytes.Buffer
	for i, v := range vs {
		if v.Plan != nil && i > 0 && vs[i-1].Plan == v.Plan {
			continue
		}
		if v.Run.Format == realrun.FormatStages {
			var scopes []string
			for _, u := range vs[i:] {
				if u.Plan != v.Plan {
					break
				}
				scopes = append(scopes, u.Run.Stage.Scope)
			}
			fmt.Fprintf(&b, "Run %s (%s; rows %s): %s\n", v.Run.Stage.Experiment, v.Run.Format, strings.Join(scopes, ", "), v.Run.Path)
		} else {
			fmt.Fprintf(&b, "Run %s (%s, %d requests): %s\n", v.Run.Name, v.Run.Format, len(v.Run.Requests), v.Run.Path)
		}
		if v.Plan != nil {
			p := v.Plan
			par := fmt.Sprintf("TP %d", p.Parallel.TP)
			if n := len(p.Stages); n > 1 {
				par += fmt.Sprintf(" × PP %d (layers %v)", n, p.Pipeline.Stages())
			}
			if dp := p.Scenario.Ranks(); dp > 1 {
				par += fmt.Sprintf(", DP %d ranks", dp)
			}
			if ep := p.Parallel.EP; ep.On() {
				par += fmt.Sprintf(", EP %d (%d experts a GPU, skew %.3f)", ep.Size, p.Model.LocalExperts(p.Parallel), ep.Skew)
			}
			fmt.Fprintf(&b, "  scenario: %s on %s, %s, %s weights, %s KV; max_num_seqs %d, max_num_batched_tokens %d, max_model_len %d, %d KV blocks\n",
				p.Model.Name, p.GPU.Name, par, p.Parallel.Weights, p.Parallel.KV, p.Limits.MaxNumSeqs, p.Limits.MaxNumBatchedTokens, p.MaxModelLen, p.Memory.Blocks)
			fmt.Fprintf(&b, "  kernel times: %s\n", p.Kernel)
			if p.Replay == nil {
				fmt.Fprintf(&b, "  workload: %s; %s\n", p.DescribeShape(), p.DescribeLengths())
			}
		}
		if len(v.Fitted) > 0 {
			fmt.Fprintf(&b, "  fitted on this run: %s\n", strings.Join(v.Fitted, ", "))
		}
		if v.Status != "" {
			fmt.Fprintf(&b, "  not simulated: %s\n", v.Status)
		}
		for _, n := range v.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
	}
	var simd []*Validation
	for _, v := range vs {
		if v.Plan != nil {
			simd = append(simd, v)
		}
	}
	switch {
	case len(simd) > 3:
		writeSuiteTables(&b, simd, floor)
	case len(simd) > 0:
		writeWideTable(&b, simd)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeWideTable is the table for a few runs: a row per metric, measured,
// simulated and error per run.
func writeWideTable(b *bytes.Buffer, vs []*Validation) {
	b.WriteByte('\n')
	fmt.Fprintf(b, "%-26s", "metric")
	for _, v := range vs {
		fmt.Fprintf(b, " | %-36s", trunc(ShortRunName(v.Run.Name), 36))
	}
	if len(vs) > 1 {
		fmt.Fprintf(b, " | %s", "median |err|")
	}
	b.WriteByte('\n')
	fmt.Fprintf(b, "%-26s", "")
	for range vs {
		fmt.Fprintf(b, " | %11s %11s %12s", "real", "sim", "error")
	}
	b.WriteByte('\n')
	_, med := MedianAbsErrors(vs)
	for i, m := range vs[0].Metrics {
		fmt.Fprintf(b, "%-26s", m.Metric+" ("+m.Unit+")")
		for _, v := range vs {
			r := v.Metrics[i]
			fmt.Fprintf(b, " | %11s %11s %12s", numStr(r.Real), numStr(r.Sim), pctStr(r.Err()))
		}
		if len(vs) > 1 {
			if e, ok := med[m.Metric]; ok {
				fmt.Fprintf(b, " | %11.1f %%", 100*e)
			} else {
				fmt.Fprintf(b, " | %13s", "—")
			}
		}
		b.WriteByte('\n')
	}
	b.WriteString("error = (sim − real)/real; — = not measured or not simulated.\n")
}

// suiteColumns are the metrics of the suite's error table (the token
// throughputs follow the request throughput: the same tokens are replayed;
// they and ITL are in validation.csv).
var suiteColumns = []struct{ metric, head string }{
	{"ttft_mean", "TTFT"}, {"ttft_median", "p50"}, {"ttft_p90", "p90"}, {"ttft_p99", "p99"},
	{"tpot_mean", "TPOT"}, {"tpot_median", "p50"}, {"tpot_p90", "p90"}, {"tpot_p99", "p99"},
	{"e2e_mean", "E2E"}, {"e2e_median", "p50"}, {"e2e_p90", "p90"}, {"e2e_p99", "p99"},
	{"request_throughput", "req/s"},
}

func metricOf(v *Validation, name string) MetricRow {
	for _, m := range v.Metrics {
		if m.Metric == name {
			return m
		}
	}
	return MetricRow{Metric: name, Real: math.NaN(), Sim: math.NaN()}
}

// writeSuiteTables writes the means table and the error table, its
// names in a column of 36 characters or as wide as the longest name.
func writeSuiteTables(b *bytes.Buffer, vs []*Validation, floor *RepeatSpread) {
	nameW := 36
	for _, v := range vs {
		nameW = max(nameW, len([]rune(ShortRunName(v.Run.Name)))+3)
	}
	fmt.Fprintf(b, "\nMeans, measured|simulated:\n%-*s %19s %17s %21s %15s\n", nameW, "run", "TTFT ms     ", "TPOT ms    ", "E2E ms      ", "req/s   ")
	for _, v := range vs {
		fmt.Fprintf(b, "%-*s", nameW, trunc(ShortRunName(v.Run.Name), nameW))
		for _, c := range []struct {
			m string
			w int
		}{{"ttft_mean", 9}, {"tpot_mean", 8}, {"e2e_mean", 10}, {"request_throughput", 7}} {
			r := metricOf(v, c.m)
			fmt.Fprintf(b, " %*s|%-*s", c.w, numStr(r.Real), c.w, numStr(r.Sim))
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(b, "\nSigned error (sim − real)/real:\n%-*s", nameW, "run")
	for _, c := range suiteColumns {
		fmt.Fprintf(b, " %7s", c.head)
	}
	b.WriteByte('\n')
	overlap := false
	for _, v := range vs {
		name := ShortRunName(v.Run.Name)
		if v.Overlap {
			name, overlap = name+" *", true
		}
		fmt.Fprintf(b, "%-*s", nameW, trunc(name, nameW))
		for _, c := range suiteColumns {
			fmt.Fprintf(b, " %7s", pctShort(metricOf(v, c.metric).Err()))
		}
		b.WriteByte('\n')
	}
	held := HeldOut(vs)
	for _, g := range []struct {
		label string
		vs    []*Validation
	}{{fmt.Sprintf("median |err|, all (%d)", scored(vs)), vs}, {fmt.Sprintf("median |err|, held out (%d)", scored(held)), held}} {
		_, med := MedianAbsErrors(g.vs)
		fmt.Fprintf(b, "%-*s", nameW, g.label)
		for _, c := range suiteColumns {
			if e, ok := med[c.metric]; ok {
				fmt.Fprintf(b, " %6.0f%%", 100*e)
			} else {
				fmt.Fprintf(b, " %7s", "—")
			}
		}
		b.WriteByte('\n')
	}
	writeGroups(b, nameW, vs, floor)
	b.WriteString("— = not measured (inference-perf rows: only TPOT's mean, from the means; ITL not compared; sim2real rows: no medians or throughput).\n")
	if overlap {
		b.WriteString("* = a summary row whose stages are listed: left out of the medians (its requests are in the stages).\n")
	}
	b.WriteString("held out = nothing fitted on the run (experiments/validation/*.toml, field fitted).\n")
	b.WriteString("by model left out = a model's rows, none scored where a parameter was fitted on a run of that model; median of the models: each model's median once.\n")
	if floor != nil {
		b.WriteString("repeat spread = the real system's own: median |earlier − later|/later over the configurations measured twice (vllm-sim2real-runs/repeat_measurements.csv against runs_long.csv, summary scope; TPOT = itl_mean).\n")
	}
}

// pctShort is a signed percentage in at most 7 characters.
func pctShort(e float64) string {
	if math.IsNaN(e) {
		return "—"
	}
	return fmt.Sprintf("%+.0f%%", 100*e)
}

func trunc(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return "…" + string(r[len(r)-n+1:])
	}
	return s
}

func numStr(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func pctStr(e float64) string {
	if math.IsNaN(e) {
		return "—"
	}
	return fmt.Sprintf("%+.1f %%", 100*e)
}

// ValidationCSV is validation.csv: one row per run and metric, then one
// "median" row per metric (run "(median |error|)", error only) when there
// are several runs. Missing values are empty cells.
func ValidationCSV(vs []*Validation) []byte {
	var b bytes.Buffer
	b.WriteString("run,format,metric,unit,real,sim,error\n")
	cell := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 10, 64)
	}
	for _, v := range vs {
		for _, m := range v.Metrics {
			fmt.Fprintf(&b, "%s,%s,%s,%s,%s,%s,%s\n", csvQuote(v.Run.Name), v.Run.Format, m.Metric, m.Unit, cell(m.Real), cell(m.Sim), cell(m.Err()))
		}
	}
	if len(vs) > 1 {
		order, med := MedianAbsErrors(vs)
		for _, k := range order {
			fmt.Fprintf(&b, "(median |error|),,%s,,,,%s\n", k, cell(med[k]))
		}
		order, med = MedianAbsErrors(HeldOut(vs))
		for _, k := range order {
			fmt.Fprintf(&b, "(median |error| held out),,%s,,,,%s\n", k, cell(med[k]))
		}
	}
	return b.Bytes()
}

func csvQuote(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

type validationJSON struct {
	Runs           []validationRunJSON `json:"runs"`
	MedianAbsError map[string]float64  `json:"median_abs_error,omitempty"`
	// MedianAbsErrorHeldOut is over the runs on which nothing was fitted.
	MedianAbsErrorHeldOut map[string]float64 `json:"median_abs_error_held_out,omitempty"`
	// Groups are the suite's grouped medians (SuiteGroups), with more
	// than three simulated runs, as the text prints them.
	Groups []suiteGroupJSON `json:"groups,omitempty"`
	// MedianOfModels is the median over the models of their left-out
	// medians (MedianOfModels).
	MedianOfModels map[string]float64 `json:"median_abs_error_of_models_left_out,omitempty"`
}

type suiteGroupJSON struct {
	Section        string             `json:"section"`
	Key            string             `json:"key"`
	Scored         int                `json:"scored"`
	Rows           int                `json:"rows"`
	FittedOn       []string           `json:"fitted_on,omitempty"`
	MedianAbsError map[string]float64 `json:"median_abs_error"`
}

type validationRunJSON struct {
	Name     string             `json:"name"`
	Path     string             `json:"path"`
	Format   string             `json:"format"`
	Requests int                `json:"requests"`
	Status   string             `json:"status,omitempty"`
	Fitted   []string           `json:"fitted"`
	Overlap  bool               `json:"overlap,omitempty"`
	Scenario *scenario.Scenario `json:"scenario,omitempty"`
	Kernel   string             `json:"kernel,omitempty"`
	KVBlocks int                `json:"kv_blocks,omitempty"`
	Notes    []string           `json:"notes"`
	Metrics  []metricRowJSON    `json:"metrics"`
}

type metricRowJSON struct {
	Metric string   `json:"metric"`
	Unit   string   `json:"unit"`
	Real   *float64 `json:"real"`
	Sim    *float64 `json:"sim"`
	Error  *float64 `json:"error"`
}

func ptrOrNil(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// ValidationJSON is validation.json: per run its scenario, kernel model,
// notes and metrics (null = missing), and the median absolute errors.
func ValidationJSON(vs []*Validation) ([]byte, error) {
	var out validationJSON
	for _, v := range vs {
		r := validationRunJSON{Name: v.Run.Name, Path: v.Run.Path, Format: v.Run.Format, Requests: len(v.Run.Requests), Status: v.Status,
			Fitted: v.Fitted, Overlap: v.Overlap, Notes: v.Notes}
		if r.Fitted == nil {
			r.Fitted = []string{}
		}
		if r.Notes == nil {
			r.Notes = []string{}
		}
		if v.Plan != nil {
			sc := v.Plan.Scenario
			r.Scenario, r.Kernel, r.KVBlocks = &sc, v.Plan.Kernel, v.Plan.Memory.Blocks
		}
		for _, m := range v.Metrics {
			r.Metrics = append(r.Metrics, metricRowJSON{m.Metric, m.Unit, ptrOrNil(m.Real), ptrOrNil(m.Sim), ptrOrNil(m.Err())})
		}
		out.Runs = append(out.Runs, r)
	}
	if len(vs) > 1 {
		_, out.MedianAbsError = MedianAbsErrors(vs)
		_, out.MedianAbsErrorHeldOut = MedianAbsErrors(HeldOut(vs))
	}
	simd := 0
	for _, v := range vs {
		if v.Plan != nil {
			simd++
		}
	}
	if simd > 3 {
		gs := SuiteGroups(vs)
		for _, g := range gs {
			_, med := MedianAbsErrors(g.Scored)
			out.Groups = append(out.Groups, suiteGroupJSON{g.Section, g.Key, len(g.Scored), g.Rows, g.FittedOn, med})
		}
		out.MedianOfModels, _ = MedianOfModels(gs)
	}
	js, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("validate: validation.json: %w", err)
	}
	return append(js, '\n'), nil
}
