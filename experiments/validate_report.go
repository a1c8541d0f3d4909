package experiments

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MedianAbsErrors returns, per metric, the median of |error| over the
// validations where it is defined, in the metric order of the rows; a
// metric defined nowhere is left out.
func MedianAbsErrors(vs []*Validation) ([]string, map[string]float64) {
	var order []string
	errs := map[string][]float64{}
	for _, v := range vs {
		for _, m := range v.Metrics {
			if _, seen := errs[m.Metric]; !seen {
				order = append(order, m.Metric)
				errs[m.Metric] = nil
			}
			if e := m.Err(); !math.IsNaN(e) {
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

// WriteValidationText prints each run's header (scenario, kernel model,
// notes) and one table: metric, then measured, simulated and signed error
// per simulated run, and with several the median absolute error over them;
// runs not simulated are listed with their measured means.
func WriteValidationText(w io.Writer, vs []*Validation) error {
	var b bytes.Buffer
	for _, v := range vs {
		fmt.Fprintf(&b, "Run %s (%s, %d requests): %s\n", v.Run.Name, v.Run.Format, len(v.Run.Requests), v.Run.Path)
		if v.Plan != nil {
			p := v.Plan
			fmt.Fprintf(&b, "  scenario: %s on %s, TP %d, %s weights, %s KV; max_num_seqs %d, max_num_batched_tokens %d, max_model_len %d, %d KV blocks\n",
				p.Model.Name, p.GPU.Name, p.Parallel.TP, p.Parallel.Weights, p.Parallel.KV, p.Limits.MaxNumSeqs, p.Limits.MaxNumBatchedTokens, p.MaxModelLen, p.Memory.Blocks)
			fmt.Fprintf(&b, "  kernel times: %s\n", p.Kernel)
		}
		if v.Status != "" {
			fmt.Fprintf(&b, "  not simulated: %s\n", v.Status)
		}
		for _, n := range v.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
	}
	var simd, listed []*Validation
	for _, v := range vs {
		if v.Plan != nil {
			simd = append(simd, v)
		} else {
			listed = append(listed, v)
		}
	}
	if len(listed) > 0 {
		fmt.Fprintf(&b, "\nMeasured only (%d runs; every metric is in validation.csv):\n", len(listed))
		fmt.Fprintf(&b, "  %-58s %11s %11s %11s %9s\n", "run", "TTFT ms", "TPOT ms", "E2E ms", "req/s")
		for _, v := range listed {
			get := func(name string) string {
				for _, m := range v.Metrics {
					if m.Metric == name {
						return numStr(m.Real)
					}
				}
				return "—"
			}
			fmt.Fprintf(&b, "  %-58s %11s %11s %11s %9s\n", trunc(v.Run.Name, 58), get("ttft_mean"), get("tpot_mean"), get("e2e_mean"), get("request_throughput"))
		}
		b.WriteString("  (means; TPOT = (E2E − TTFT)/(output_len − 1))\n")
	}
	if len(simd) == 0 {
		_, err := w.Write(b.Bytes())
		return err
	}
	vs = simd
	b.WriteByte('\n')
	fmt.Fprintf(&b, "%-26s", "metric")
	for _, v := range vs {
		fmt.Fprintf(&b, " | %-36s", trunc(v.Run.Name, 36))
	}
	if len(vs) > 1 {
		fmt.Fprintf(&b, " | %s", "median |err|")
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "%-26s", "")
	for range vs {
		fmt.Fprintf(&b, " | %11s %11s %12s", "real", "sim", "error")
	}
	b.WriteByte('\n')
	order, med := MedianAbsErrors(vs)
	_ = order
	for i, m := range vs[0].Metrics {
		fmt.Fprintf(&b, "%-26s", m.Metric+" ("+m.Unit+")")
		for _, v := range vs {
			r := v.Metrics[i]
			fmt.Fprintf(&b, " | %11s %11s %12s", numStr(r.Real), numStr(r.Sim), pctStr(r.Err()))
		}
		if len(vs) > 1 {
			if e, ok := med[m.Metric]; ok {
				fmt.Fprintf(&b, " | %11.1f %%", 100*e)
			} else {
				fmt.Fprintf(&b, " | %13s", "—")
			}
		}
		b.WriteByte('\n')
	}
	b.WriteString("error = (sim − real)/real; — = not measured or not simulated.\n")
	_, err := w.Write(b.Bytes())
	return err
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
}

type validationRunJSON struct {
	Name     string          `json:"name"`
	Path     string          `json:"path"`
	Format   string          `json:"format"`
	Requests int             `json:"requests"`
	Status   string          `json:"status,omitempty"`
	Scenario *Scenario       `json:"scenario,omitempty"`
	Kernel   string          `json:"kernel,omitempty"`
	KVBlocks int             `json:"kv_blocks,omitempty"`
	Notes    []string        `json:"notes"`
	Metrics  []metricRowJSON `json:"metrics"`
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
		r := validationRunJSON{Name: v.Run.Name, Path: v.Run.Path, Format: v.Run.Format, Requests: len(v.Run.Requests), Status: v.Status, Notes: v.Notes}
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
	}
	js, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("experiments: validation.json: %w", err)
	}
	return append(js, '\n'), nil
}
