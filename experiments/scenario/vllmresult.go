package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/servesim/servesim/sim/metrics"
)

// The result file of `vllm bench serve --save-result`, so that notebooks
// built for vLLM's results read servesim's unchanged. Its keys are those
// vllm/benchmarks/serve.py writes (main_async's result_json: date, backend,
// model_id, num_prompts, request_rate, burstiness, max_concurrency, merged
// with benchmark()'s result: duration, completed, failed, token totals,
// throughputs, request_goodput, and process_one_metric's mean_, median_,
// std_ and pNN_ keys of each --percentile-metrics metric in ms).
//
// Left out: the per-request arrays (latencies, queue_times, and with
// --save-detailed input_lens, output_lens, ttfts, itls, start_times,
// generated_texts, errors; servesim writes them per request to
// requests.csv) and the peaks computed from them (max_output_tokens_per_s,
// max_concurrent_requests). VLLMResultOmitted lists them.

// VLLMResultOmitted are the keys of vLLM's result file that servesim does
// not write, each with the reason.
var VLLMResultOmitted = map[string]string{
	"latencies":               "per request: requests.csv's e2e column",
	"queue_times":             "per request: client queue time, requests.csv",
	"max_output_tokens_per_s": "needs every token's time (steps.csv)",
	"max_concurrent_requests": "needs every request's interval (requests.csv)",
}

// VLLMResultOptions are the benchmark arguments recorded in the file.
type VLLMResultOptions struct {
	Date    string // "20060102-150405", as vLLM's datetime.now().strftime("%Y%m%d-%H%M%S")
	Backend string // default "servesim"
	Label   string // "" writes null
	// Metrics are --percentile-metrics (default ttft, tpot, itl, vLLM's
	// for generation); Percentiles are --metric-percentiles (default 99).
	Metrics     []string
	Percentiles []float64
}

// VLLMPercentileMetrics are the metrics --percentile-metrics may name.
var VLLMPercentileMetrics = []string{"ttft", "tpot", "itl", "e2el"}

// ParseVLLMPercentiles parses --metric-percentiles ("25,50,99"). servesim
// keeps exact order statistics for 0 (min), 50 (median), 90, 95, 99 and
// 100 (max), computed as numpy.percentile's default; others are errors.
func ParseVLLMPercentiles(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("scenario: --metric-percentiles: %q is not a number", f)
		}
		if _, ok := statAt(metrics.Stats{}, p); !ok {
			return nil, fmt.Errorf("scenario: --metric-percentiles: %v: servesim keeps the percentiles 0, 50, 90, 95, 99 and 100 only", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// ParseVLLMMetrics parses --percentile-metrics ("ttft,tpot,itl").
func ParseVLLMMetrics(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		m := strings.TrimSpace(f)
		ok := false
		for _, k := range VLLMPercentileMetrics {
			ok = ok || k == m
		}
		if !ok {
			return nil, fmt.Errorf("scenario: --percentile-metrics: %q: want a list of %s", m, strings.Join(VLLMPercentileMetrics, ", "))
		}
		out = append(out, m)
	}
	return out, nil
}

func statAt(s metrics.Stats, p float64) (float64, bool) {
	switch p {
	case 0:
		return s.Min, true
	case 50:
		return s.Median, true
	case 90:
		return s.P90, true
	case 95:
		return s.P95, true
	case 99:
		return s.P99, true
	case 100:
		return s.Max, true
	}
	return 0, false
}

// vllmResult is the file's content: keys in vLLM's order, values JSON.
type vllmResult struct {
	keys []string
	vals map[string]any
}

func (r *vllmResult) set(k string, v any) {
	if _, ok := r.vals[k]; !ok {
		r.keys = append(r.keys, k)
	}
	r.vals[k] = v
}

// MarshalJSON writes the keys in the order vLLM writes them.
func (r *vllmResult) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range r.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(r.vals[k])
		if err != nil {
			return nil, fmt.Errorf("scenario: vLLM result key %q: %w", k, err)
		}
		b.Write(kb)
		b.WriteString(": ")
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// VLLMResult returns the run's results as `vllm bench serve --save-result`
// writes them (JSON, one object).
func (r *Report) VLLMResult(o VLLMResultOptions) ([]byte, error) {
	if o.Backend == "" {
		o.Backend = "servesim"
	}
	if o.Metrics == nil {
		o.Metrics = []string{"ttft", "tpot", "itl"}
	}
	if o.Percentiles == nil {
		o.Percentiles = []float64{99}
	}
	p, s := r.Plan, r.Summary
	wl := p.Scenario.Workload
	model := p.Scenario.Model
	if model == "" {
		model = p.Model.Name
	}
	res := &vllmResult{vals: map[string]any{}}
	res.set("date", o.Date)
	res.set("endpoint_type", o.Backend)
	res.set("backend", o.Backend)
	var label any
	if o.Label != "" {
		label = o.Label
	}
	res.set("label", label)
	res.set("model_id", model)
	res.set("tokenizer_id", model)
	res.set("num_prompts", r.Result.Arrived)
	var rate any = wl.Rate
	if math.IsInf(wl.Rate, 1) || wl.Rate == 0 {
		rate = "inf"
	}
	if t := p.Trace; t != nil {
		rate = "inf"
		if t.Rate > 0 {
			rate = t.Rate
		}
	}
	res.set("request_rate", rate)
	burst := wl.Burstiness
	if burst == 0 {
		burst = 1
	}
	res.set("burstiness", burst)
	var mc any
	if p.MaxConcurrency > 0 {
		mc = p.MaxConcurrency
	}
	res.set("max_concurrency", mc)
	res.set("duration", s.Duration)
	res.set("completed", s.Completed)
	res.set("failed", s.Rejected)
	res.set("total_input_tokens", s.InputTokens)
	res.set("total_output_tokens", s.OutputTokens)
	res.set("request_throughput", s.RequestThroughput)
	var goodput any
	if s.SLO.IsSet() {
		goodput = s.Goodput
	}
	res.set("request_goodput", goodput)
	res.set("output_throughput", s.OutputThroughput)
	res.set("total_token_throughput", s.TotalThroughput)
	res.set("rtfx", 0.0)
	stats := map[string]metrics.Stats{"ttft": s.TTFT, "tpot": s.TPOT, "itl": s.ITL, "e2el": s.E2E}
	for _, m := range VLLMPercentileMetrics { // vLLM's order: ttft, tpot, itl, e2el
		want := false
		for _, x := range o.Metrics {
			want = want || x == m
		}
		if !want {
			continue
		}
		st := stats[m]
		res.set("mean_"+m+"_ms", st.Mean)
		res.set("median_"+m+"_ms", st.Median)
		res.set("std_"+m+"_ms", st.Std)
		for _, q := range o.Percentiles {
			v, ok := statAt(st, q)
			if !ok {
				return nil, fmt.Errorf("scenario: percentile %v: servesim keeps 0, 50, 90, 95, 99 and 100 only", q)
			}
			res.set("p"+percentileWord(q)+"_"+m+"_ms", v)
		}
	}
	b, err := res.MarshalJSON()
	return append(b, '\n'), err
}

// percentileWord is vLLM's p_word: "99" for 99.0, "99.9" for 99.9.
func percentileWord(p float64) string {
	if p == math.Trunc(p) {
		return strconv.Itoa(int(p))
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// VLLMResultFileName is vLLM's default result file name,
// {backend or label}-{rate}qps[-concurrency{N}]-{model}-{date}.json, with
// the rate as Python prints a float ("8.0", "inf") and the model id's last
// path element.
func (r *Report) VLLMResultFileName(o VLLMResultOptions) string {
	label := o.Label
	if label == "" {
		label = o.Backend
	}
	if label == "" {
		label = "servesim"
	}
	p := r.Plan
	rate := "inf"
	wl := p.Scenario.Workload
	switch {
	case p.Trace != nil && p.Trace.Rate > 0:
		rate = pyFloat(p.Trace.Rate)
	case p.Trace == nil && wl.Rate > 0 && !math.IsInf(wl.Rate, 1):
		rate = pyFloat(wl.Rate)
	}
	mc := ""
	if p.MaxConcurrency > 0 {
		mc = fmt.Sprintf("-concurrency%d", p.MaxConcurrency)
	}
	model := p.Scenario.Model
	if model == "" {
		model = p.Model.Name
	}
	model = model[strings.LastIndex(model, "/")+1:]
	return fmt.Sprintf("%s-%sqps%s-%s-%s.json", label, rate, mc, model, o.Date)
}

// pyFloat formats v as Python's str(float) does for ordinary values.
func pyFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}
