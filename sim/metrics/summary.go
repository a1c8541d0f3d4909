package metrics

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// Summary is the result of a run, in the units its JSON names carry.
//
// Duration runs from the first arrival (of any request, rejected ones
// included) to the last completion; throughputs divide by it. Input and
// output tokens count served requests only, as vLLM's totals do. With no
// served request, Duration and every throughput are 0.
//
// Attainment is the fraction of all requests, served or rejected, that met
// every set SLO: a rejected request counts as not meeting them. Goodput is
// the number of requests meeting every set SLO per second of Duration (vLLM's
// "request goodput"). With no SLO set every served request meets it, so
// Attainment = Completed/(Completed+Rejected) and Goodput = RequestThroughput.
//
// The step figures sum over instances: BusyTime is the total of step
// durations (instance-seconds), MeanBatch the mean number of requests per
// step (prefills + decodes), MeanKVUse the step-duration-weighted mean of the
// fraction of KV blocks in use (idle time is not counted), PeakKVUse its
// largest value. Preemptions sums Record.Preemptions.
//
// AchievedFLOPS and AchievedBandwidth are per-GPU FLOP/s and HBM bytes/s
// over busy time: Σ FLOPs / Σ step durations (each step weighted by its
// duration, not by how many GPUs the instance has). MFU and MBU divide them
// by the peaks given to Collector.SetPeak, over the instances that have one
// (Σ FLOPs / Σ duration·peak); they are 0 when no peak was given.
type Summary struct {
	Completed  int            `json:"completed"`
	Rejected   int            `json:"rejected"`
	RejectedBy map[string]int `json:"rejected_by"`

	Duration     float64 `json:"duration_s"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`

	RequestThroughput float64 `json:"request_throughput_req_per_s"`
	OutputThroughput  float64 `json:"output_throughput_tok_per_s"`
	TotalThroughput   float64 `json:"total_throughput_tok_per_s"`

	TTFT Stats `json:"ttft_ms"`
	TPOT Stats `json:"tpot_ms"`
	ITL  Stats `json:"itl_ms"`
	E2E  Stats `json:"e2e_ms"`

	SLO        SLO     `json:"slo"`
	Attainment float64 `json:"slo_attainment"`
	Goodput    float64 `json:"request_goodput_req_per_s"`

	Steps       int     `json:"steps"`
	BusyTime    float64 `json:"busy_time_s"`
	MeanBatch   float64 `json:"mean_batch"`
	MeanKVUse   float64 `json:"mean_kv_use"`
	PeakKVUse   float64 `json:"peak_kv_use"`
	Preemptions int     `json:"preemptions"`
	// Saturation says whether the queue kept growing while requests
	// arrived (see Saturation).
	Saturation Saturation `json:"saturation"`

	AchievedFLOPS     float64 `json:"achieved_flop_per_s_per_gpu"`
	AchievedBandwidth float64 `json:"achieved_bytes_per_s_per_gpu"`
	MFU               float64 `json:"mfu"`
	MBU               float64 `json:"mbu"`

	// BusyByInstance is each instance's busy time in seconds (index =
	// instance), for utilization per instance or pool.
	BusyByInstance []float64 `json:"busy_by_instance_s"`
	// Phases splits each served request's latency (ms).
	Phases Phases `json:"phases_ms"`
	// ByClass holds per-class results when requests carry classes. Rejected
	// requests are counted in their class too.
	ByClass map[string]ClassSummary `json:"by_class,omitempty"`
}

// Phases are the stages of a request's latency in milliseconds. Queue and
// Prefill cover every served request (arrival → first scheduled → first
// token); TransferWait (first token → KV transfer start), Transfer and
// Decode (transfer end → last token) only disaggregated ones.
type Phases struct {
	Queue        Stats `json:"queue"`
	Prefill      Stats `json:"prefill"`
	TransferWait Stats `json:"transfer_wait"`
	Transfer     Stats `json:"transfer"`
	Decode       Stats `json:"decode"`
}

// ClassSummary is one request class's share of a Summary.
type ClassSummary struct {
	Completed  int     `json:"completed"`
	Rejected   int     `json:"rejected"`
	TTFT       Stats   `json:"ttft_ms"`
	TPOT       Stats   `json:"tpot_ms"`
	E2E        Stats   `json:"e2e_ms"`
	Attainment float64 `json:"slo_attainment"`
}

// WriteText writes s laid out like the result block of vLLM's `bench serve`
// (vllm/benchmarks/serve.py): a title line centered in 50 '=' (title ""
// means "Serving Benchmark Result"), lines formatted as Python's
// "{:<40} {:<10}" and "{:<40} {:<10.2f}" (trailing spaces included), then
// sections for TTFT, TPOT, ITL and E2EL with mean, median, P90, P95 and P99,
// then a servesim section (SLOs and attainment, rejections by reason in
// sorted order, preemptions, steps, KV use, achieved FLOP/s and bandwidth,
// MFU and MBU when known). "Failed requests" are the rejected ones. vLLM's
// peak output throughput and peak concurrency lines are not produced. The
// request goodput line appears only when an SLO is set, as in vLLM.
func (s *Summary) WriteText(w io.Writer, title string) error {
	if title == "" {
		title = "Serving Benchmark Result"
	}
	var b bytes.Buffer
	b.WriteString(center(" "+title+" ", '='))
	intLine(&b, "Successful requests:", int64(s.Completed))
	intLine(&b, "Failed requests:", int64(s.Rejected))
	floatLine(&b, "Benchmark duration (s):", s.Duration)
	intLine(&b, "Total input tokens:", s.InputTokens)
	intLine(&b, "Total generated tokens:", s.OutputTokens)
	floatLine(&b, "Request throughput (req/s):", s.RequestThroughput)
	if s.SLO.IsSet() {
		floatLine(&b, "Request goodput (req/s):", s.Goodput)
	}
	floatLine(&b, "Output token throughput (tok/s):", s.OutputThroughput)
	floatLine(&b, "Total token throughput (tok/s):", s.TotalThroughput)
	statsBlock(&b, "Time to First Token", "TTFT", &s.TTFT)
	statsBlock(&b, "Time per Output Token (excl. 1st token)", "TPOT", &s.TPOT)
	statsBlock(&b, "Inter-token Latency", "ITL", &s.ITL)
	statsBlock(&b, "End-to-end Latency", "E2EL", &s.E2E)

	b.WriteString(center("servesim", '-'))
	if s.SLO.IsSet() {
		for _, o := range []struct {
			name string
			v    float64
		}{{"TTFT", s.SLO.TTFT.Milliseconds()}, {"TPOT", s.SLO.TPOT.Milliseconds()}, {"E2EL", s.SLO.E2E.Milliseconds()}} {
			if o.v != 0 {
				floatLine(&b, "SLO "+o.name+" (ms):", o.v)
			}
		}
		floatLine(&b, "SLO attainment (%):", 100*s.Attainment)
	}
	reasons := make([]string, 0, len(s.RejectedBy))
	for k := range s.RejectedBy {
		reasons = append(reasons, k)
	}
	slices.Sort(reasons)
	for _, k := range reasons {
		intLine(&b, "Rejected ("+k+"):", int64(s.RejectedBy[k]))
	}
	strLine(&b, "Saturated:", s.Saturation.Line())
	if s.Saturation.Saturated {
		strLine(&b, "Offered load (req/s, output tok/s):", fmt.Sprintf("%.2f / %.2f", s.Saturation.OfferedRate, s.Saturation.OfferedOutputRate))
		strLine(&b, "Service capacity (req/s, output tok/s):", fmt.Sprintf("%.2f / %.2f", s.Saturation.CapacityRate, s.Saturation.CapacityOutput))
	}
	intLine(&b, "Preemptions:", int64(s.Preemptions))
	intLine(&b, "Model steps:", int64(s.Steps))
	floatLine(&b, "Busy time (instance-s):", s.BusyTime)
	floatLine(&b, "Mean batch size (requests):", s.MeanBatch)
	floatLine(&b, "Mean KV cache use (%):", 100*s.MeanKVUse)
	floatLine(&b, "Peak KV cache use (%):", 100*s.PeakKVUse)
	floatLine(&b, "Achieved TFLOP/s per GPU:", s.AchievedFLOPS/1e12)
	floatLine(&b, "Achieved HBM TB/s per GPU:", s.AchievedBandwidth/1e12)
	if s.MFU != 0 {
		floatLine(&b, "MFU (%):", 100*s.MFU)
	}
	if s.MBU != 0 {
		floatLine(&b, "MBU (%):", 100*s.MBU)
	}
	b.WriteString("==================================================\n")
	_, err := w.Write(b.Bytes())
	if err != nil {
		return fmt.Errorf("metrics: writing summary: %w", err)
	}
	return nil
}

// center is Python's "{s:{c}^50}": s centered in 50 columns of c, the odd
// column of padding on the right.
func center(s string, c byte) string {
	const width = 50
	n := utf8.RuneCountInString(s)
	if n >= width {
		return s + "\n"
	}
	left := (width - n) / 2
	return string(bytes.Repeat([]byte{c}, left)) + s + string(bytes.Repeat([]byte{c}, width-n-left)) + "\n"
}

// intLine is Python's "{:<40} {:<10}".format(label, v).
func intLine(b *bytes.Buffer, label string, v int64) { fmt.Fprintf(b, "%-40s %-10d\n", label, v) }

// strLine is Python's "{:<40} {:<10}".format(label, v) for a string v.
func strLine(b *bytes.Buffer, label, v string) { fmt.Fprintf(b, "%-40s %-10s\n", label, v) }

// floatLine is Python's "{:<40} {:<10.2f}".format(label, v).
func floatLine(b *bytes.Buffer, label string, v float64) {
	fmt.Fprintf(b, "%-40s %-10.2f\n", label, v)
}

func statsBlock(b *bytes.Buffer, header, name string, st *Stats) {
	b.WriteString(center(header, '-'))
	floatLine(b, "Mean "+name+" (ms):", st.Mean)
	floatLine(b, "Median "+name+" (ms):", st.Median)
	floatLine(b, "P90 "+name+" (ms):", st.P90)
	floatLine(b, "P95 "+name+" (ms):", st.P95)
	floatLine(b, "P99 "+name+" (ms):", st.P99)
}
