package experiments

import (
	"fmt"
	"io"

	"github.com/servesim/servesim/sim/metrics"
)

// SummaryFile is the layout of summary.json.
type SummaryFile struct {
	Scenario Scenario        `json:"scenario"`
	Instance InstanceInfo    `json:"instance"`
	Counts   Counts          `json:"counts"`
	Metrics  metrics.Summary `json:"metrics"`
}

// InstanceInfo describes the resolved instance.
type InstanceInfo struct {
	Model           string  `json:"model"`
	GPU             string  `json:"gpu"`
	TP              int     `json:"tp"`
	Weights         string  `json:"weights"`
	KV              string  `json:"kv"`
	Policy          string  `json:"policy"`
	WeightGBPerGPU  float64 `json:"weight_gb_per_gpu"`
	KVGBPerGPU      float64 `json:"kv_gb_per_gpu"`
	KVBlocks        int     `json:"kv_blocks"`
	BlockSize       int     `json:"block_size"`
	KVTokens        int     `json:"kv_tokens"`
	MaxModelLen     int     `json:"max_model_len"`
	PricePerGPUHour float64 `json:"price_per_gpu_hour"`
}

// Counts are the run's conservation counts.
type Counts struct {
	Arrived     int64   `json:"arrived"`
	Finished    int64   `json:"finished"`
	Rejected    int64   `json:"rejected"`
	Preemptions int64   `json:"preemptions"`
	Steps       int64   `json:"steps"`
	Events      uint64  `json:"events"`
	EndS        float64 `json:"end_s"`
}

func (r *Report) instanceInfo() InstanceInfo {
	p := r.Plan
	return InstanceInfo{
		Model: p.Model.Name, GPU: p.GPU.Name, TP: p.Parallel.TP,
		Weights: p.Parallel.Weights.String(), KV: p.Parallel.KV.String(), Policy: p.Batcher.Name(),
		WeightGBPerGPU: p.Memory.WeightBytesPerGPU / 1e9, KVGBPerGPU: p.Memory.KVBytesPerGPU / 1e9,
		KVBlocks: p.Memory.Blocks, BlockSize: p.Memory.BlockSize, KVTokens: p.Memory.Blocks * p.Memory.BlockSize,
		MaxModelLen: p.MaxModelLen, PricePerGPUHour: p.GPU.PricePerHour,
	}
}

func (r *Report) summaryJSON() SummaryFile {
	return SummaryFile{
		Scenario: r.Plan.Scenario,
		Instance: r.instanceInfo(),
		Counts: Counts{
			Arrived: r.Result.Arrived, Finished: r.Result.Finished, Rejected: r.Result.Rejected,
			Preemptions: r.Result.Preemptions, Steps: r.Result.Steps, Events: r.Result.Events, EndS: r.Result.End.Seconds(),
		},
		Metrics: r.Summary,
	}
}

// Describe writes what the plan runs, in one paragraph.
func (p *Plan) Describe(w io.Writer) error {
	s := p.Scenario
	wl := s.Workload
	n := fmt.Sprintf("%d requests", wl.Requests)
	if wl.Requests == 0 {
		n = fmt.Sprintf("%g s of requests", wl.DurationS)
	}
	_, err := fmt.Fprintf(w,
		"Scenario %q: %s (%s weights, %s KV) on %d× %s, TP %d; %s batching, max_num_seqs %d, max_num_batched_tokens %d.\n"+
			"KV cache: %d blocks of %d tokens (%d tokens, %.1f GB per GPU; weights %.1f GB per GPU).\n"+
			"Workload: %s, %s arrivals at %g req/s, prompt %s, output %s, seed %d.\n",
		s.Name, p.Model.Name, p.Parallel.Weights, p.Parallel.KV, p.Parallel.TP, p.GPU.Name, p.Parallel.TP,
		p.Batcher.Name(), p.Limits.MaxNumSeqs, p.Limits.MaxNumBatchedTokens,
		p.Memory.Blocks, p.Memory.BlockSize, p.Memory.Blocks*p.Memory.BlockSize, p.Memory.KVBytesPerGPU/1e9, p.Memory.WeightBytesPerGPU/1e9,
		n, wl.Arrival, wl.Rate, wl.Prompt, wl.Output, s.Seed)
	return err
}

// WriteText writes the run's summary, laid out like vLLM's bench serve.
func (r *Report) WriteText(w io.Writer) error {
	return r.Summary.WriteText(w, fmt.Sprintf("%s on %d× %s", r.Plan.Model.Name, r.Plan.Parallel.TP, r.Plan.GPU.Name))
}
