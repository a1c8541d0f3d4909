package realrun

import (
	"fmt"
	"math"
)

// Run is one real serving run.
type Run struct {
	Name   string // short name for tables, e.g. "RTX4090/Llama-3.1-8B"
	Path   string // what was opened
	Format string // FormatRequests, FormatBench or FormatStages
	Engine Engine
	// Requests are the served requests in arrival order (nil for
	// aggregate-only runs).
	Requests []Request
	// Duration is the measured benchmark duration in seconds when the
	// format reports one (vLLM bench); 0 = compute it from the requests.
	Duration float64
	Series   []Tick    // per-second engine stats; nil when absent
	Stage    *StageRow // inference-perf: the row (aggregate metrics and workload)
	Notes    []string  // what was left out or assumed, for the report
	// MaxConcurrency > 0 is the client's slot count the replay must apply:
	// vLLM bench's max_concurrency when the file has no start_times (the
	// recorded start times already hold the waits for a slot). At most the
	// number of requests (more slots than requests is no limit).
	MaxConcurrency int
}

// Formats.
const (
	FormatRequests = "vllm-requests" // requests.jsonl + meta.json (+ timeseries.csv)
	FormatBench    = "vllm-bench"    // vllm bench serve --save-detailed JSON
	FormatStages   = "inference-perf"
)

// Engine holds the engine arguments a run records; zero = not recorded.
type Engine struct {
	Model       string  // Hugging Face id, e.g. "meta-llama/Llama-3.1-8B"
	GPU         string  // device name or hardware label, e.g. "NVIDIA GeForce RTX 4090"
	GPUMemBytes float64 // device memory the driver reported
	TP, DP      int
	PP          int // pipeline_parallel_size (0: not recorded, one stage)
	// ExpertParallel and EPLB are enable_expert_parallel and enable_eplb.
	ExpertParallel, EPLB bool
	// DBO is enable_dbo (dual batch overlap), with its thresholds
	// dbo_decode_token_threshold and dbo_prefill_token_threshold (0: not
	// recorded, vLLM's defaults).
	DBO                                     bool
	DBODecodeThreshold, DBOPrefillThreshold int
	MaxNumSeqs                              int
	MaxNumBatchedTokens                     int
	MaxModelLen                             int
	DType, KVDType                          string
	PrefixCaching                           *bool
	KVBlocks, BlockSize                     int
	// CPUKVBlocks > 0 is a CPU KV-cache offload tier the run configured
	// (the sim2real tables' cpu_kv_blocks_logged, vLLM's count of
	// block_size-token blocks of the whole model's KV), replayed as a host
	// tier of as many blocks unless OpenOptions.IgnoreKVOffload.
	CPUKVBlocks  int
	GPUMemUtil   float64
	VLLMVersion  string
	Quantization string // vLLM's --quantization ("" = none)
	// ChunkedPrefill and AsyncScheduling are nil when not recorded
	// (vLLM's default: on).
	ChunkedPrefill, AsyncScheduling *bool
	EnforceEager, NoCustomAllReduce bool
	// Speculative is speculative_config's JSON ("" none): vLLM's
	// SpeculativeConfig (method, num_speculative_tokens, model, ...).
	Speculative string
	// Notes are what the reader assumed about the arguments (those not in
	// the engine-argument table), for the report.
	Notes []string
}

// Request is one served request. Arrival is the replay schedule: seconds
// since the run's first arrival. Start, FirstToken and Finish are the
// measured times on the measurement clock, in seconds since the first
// Start; Scheduled is NaN when not recorded. ITLs are the measured gaps
// between tokens in seconds (nil when not recorded).
type Request struct {
	ID                                   string
	Input, Output                        int
	Arrival                              float64
	Start, Scheduled, FirstToken, Finish float64
	ITLs                                 []float64
}

// TTFT, E2E and TPOT in seconds (TPOT: ok false with one output token).
func (r *Request) TTFT() float64 { return r.FirstToken - r.Start }
func (r *Request) E2E() float64  { return r.Finish - r.Start }
func (r *Request) TPOT() (float64, bool) {
	if r.Output <= 1 {
		return 0, false
	}
	return (r.Finish - r.FirstToken) / float64(r.Output-1), true
}

// Tick is one row of the engine's per-second stats, T seconds (the tick's
// end) after the first arrival.
type Tick struct {
	T                 float64
	PromptTPS, GenTPS float64 // tokens/s processed in the tick
	Running, Waiting  int
	KVPct             float64 // GPU KV-cache use, % (NaN when not recorded)
}

// TokenTotals sums the requests' input and output tokens.
func (r *Run) TokenTotals() (in, out int64) {
	for _, q := range r.Requests {
		in += int64(q.Input)
		out += int64(q.Output)
	}
	return in, out
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// where formats "file line N" (line 0: just the file).
func where(file string, line int) string {
	if line <= 0 {
		return file
	}
	return fmt.Sprintf("%s line %d", file, line)
}

func fieldErr(file string, line int, field, format string, args ...any) error {
	return fmt.Errorf("realrun: %s: field %q: %s", where(file, line), field, fmt.Sprintf(format, args...))
}
