package scenario

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/servesim/servesim/experiments"
	"github.com/servesim/servesim/internal/bounded"
	"github.com/servesim/servesim/sim/workload"
	"github.com/servesim/servesim/sim/workload/trace"
)

// Scenario is one simulation as a user writes it: a TOML file, flags, or
// both (flags override the file). Zero values mean "default"; Resolve
// fills defaults and checks every field once, at the edge. A zero the user
// wrote (Parse and SetByFlag record which fields were written) is an error
// where zero is not a legal value, and means zero where it is.
// Durations are at most MaxDurationS.
type Scenario struct {
	Name       string `toml:"name" json:"name"`
	Model      string `toml:"model" json:"model"`             // catalog name, e.g. "llama-3.1-8b"
	GPU        string `toml:"gpu" json:"gpu"`                 // catalog name, e.g. "h100"
	TP         int    `toml:"tp" json:"tp"`                   // tensor-parallel degree
	Weights    string `toml:"weights" json:"weights"`         // bf16 | fp8 | fp4
	KV         string `toml:"kv" json:"kv"`                   // bf16 | fp8 | fp4
	Seed       uint64 `toml:"seed" json:"seed"`               // one seed; each random stream derives its own source from it
	ModelsFile string `toml:"models_file" json:"models_file"` // extra models (TOML), relative to the scenario file
	GPUsFile   string `toml:"gpus_file" json:"gpus_file"`     // extra GPUs (TOML), relative to the scenario file
	// ModelConfig is a HuggingFace config.json, or a directory holding one,
	// imported as the model (models.ReadHFConfig) instead of a catalog name;
	// relative to the scenario file. Set it or Model, not both.
	ModelConfig string `toml:"model_config" json:"model_config,omitempty"`

	Replicas int `toml:"replicas" json:"replicas"` // identical instances behind the router
	// PP is the pipeline-parallel degree (vLLM --pipeline-parallel-size),
	// 1 when omitted; PPLayers a layer partition (vLLM's
	// VLLM_PP_LAYER_PARTITION), vLLM's even split when omitted; PPChunked
	// SGLang's chunked pipelining of long prefills (see pipeline.go).
	PP        int   `toml:"pp,omitzero" json:"pp,omitempty"`
	PPLayers  []int `toml:"pp_layers,omitempty" json:"pp_layers,omitempty"`
	PPChunked bool  `toml:"pp_chunked,omitempty" json:"pp_chunked,omitempty"`
	// DP is the data-parallel ranks of each replica (vLLM
	// --data-parallel-size), 1 when omitted; ExpertParallel shards an MoE
	// model's routed experts over the DP × TP GPUs (vLLM
	// --enable-expert-parallel); EPLB, RedundantExperts, ExpertSkew and
	// All2All are its load balancer, redundant experts, the busiest rank's
	// load over the mean, and the all-to-all backend (see expert.go).
	DP               int     `toml:"dp,omitzero" json:"dp,omitempty"`
	ExpertParallel   bool    `toml:"expert_parallel,omitempty" json:"expert_parallel,omitempty"`
	EPLB             bool    `toml:"eplb,omitempty" json:"eplb,omitempty"`
	RedundantExperts int     `toml:"eplb_redundant_experts,omitzero" json:"eplb_redundant_experts,omitempty"`
	ExpertSkew       float64 `toml:"expert_skew,omitzero" json:"expert_skew,omitempty"`
	All2All          string  `toml:"all2all_backend,omitempty" json:"all2all_backend,omitempty"`
	// ExpertSkewLayers gives each MoE layer its own skew (one value a MoE
	// layer, in order) and ExpertSkewFile reads them from a CSV
	// (expertskew.go); either replaces ExpertSkew's one value.
	ExpertSkewLayers []float64 `toml:"expert_skew_layers,omitempty" json:"expert_skew_layers,omitempty"`
	ExpertSkewFile   string    `toml:"expert_skew_file,omitempty" json:"expert_skew_file,omitempty"`
	// TwoBatchOverlap splits an expert-parallel step in two micro-batches
	// whose all-to-all overlaps the other's compute (SGLang
	// --enable-two-batch-overlap, vLLM --enable-dbo), for batches above
	// TBODecodeThreshold tokens (decodes only) or TBOPrefillThreshold
	// (with a prefill); the defaults are vLLM's 32 and 512, SGLang's rule
	// is 1 and 1 (hardware.TBO).
	TwoBatchOverlap     bool `toml:"two_batch_overlap,omitempty" json:"two_batch_overlap,omitempty"`
	TBODecodeThreshold  int  `toml:"tbo_decode_token_threshold,omitzero" json:"tbo_decode_token_threshold,omitempty"`
	TBOPrefillThreshold int  `toml:"tbo_prefill_token_threshold,omitzero" json:"tbo_prefill_token_threshold,omitempty"`
	// TBOSchedule is the engine whose stage schedule the overlap follows:
	// "vllm" (the default) or "sglang" (hardware/tbo_stages.go).
	TBOSchedule string `toml:"tbo_schedule,omitempty" json:"tbo_schedule,omitempty"`
	// TBOCommSMs is the SMs the all-to-all kernels hold beside the other
	// micro-batch's compute under two-batch overlap (SGLang --deepep-config
	// num_sms, vLLM VLLM_DBO_COMM_SMS); omitted: the backend's default
	// (hardware.DefaultCommSMs: 20 for DeepEP normal, 0 for low-latency).
	TBOCommSMs *int `toml:"tbo_comm_sms,omitempty" json:"tbo_comm_sms,omitempty"`

	Workload  Workload  `toml:"workload" json:"workload"`
	Batch     Batch     `toml:"batch" json:"batch"`
	Scheduler Scheduler `toml:"scheduler" json:"scheduler"`
	Admission Admission `toml:"admission" json:"admission"`
	Router    Router    `toml:"router" json:"router"`
	SLO       SLO       `toml:"slo" json:"slo"`
	Hardware  Hardware  `toml:"hardware" json:"hardware"`
	Disagg    Disagg    `toml:"disagg" json:"disagg"`
	Engine    *Engine   `toml:"engine,omitempty" json:"engine,omitempty"` // the serving stack (engine.go); nil: DefaultEngine
	// Speculative is speculative decoding (speculative.go); nil: off.
	Speculative *Speculative `toml:"speculative,omitempty" json:"speculative,omitempty"`
	// Offload is the KV offload tiers (offload.go); nil: none.
	Offload *Offload `toml:"offload,omitempty" json:"offload,omitempty"`

	dir  string         // directory of the scenario file, for relative paths
	file string         // the scenario file's name in errors
	set  map[string]int // the keys given explicitly and where (see fields.go)
}

// Workload is a synthetic workload.
type Workload struct {
	Arrival    string  `toml:"arrival" json:"arrival"`       // poisson | gamma | constant
	Rate       float64 `toml:"rate" json:"rate"`             // requests per second; inf = all at t = 0 (offline)
	Burstiness float64 `toml:"burstiness" json:"burstiness"` // gamma shape (vLLM --burstiness); 1 = Poisson
	Requests   int     `toml:"requests" json:"requests"`     // number of requests
	DurationS  float64 `toml:"duration_s" json:"duration_s"` // or (not both): arrivals within this many seconds
	// Stages replace rate, requests and duration_s with a rate schedule
	// ([[workload.stages]]); Drain makes each stage wait for every request
	// of the one before to finish, and GapS idles between stages.
	Stages []Stage `toml:"stages" json:"stages,omitempty"`
	Drain  bool    `toml:"drain" json:"drain,omitempty"`
	GapS   float64 `toml:"gap_s" json:"gap_s,omitempty"`
	// Rescale scales each stage's gaps to fill it exactly: int(rate ×
	// duration) requests, the last at its end (inference-perf's constant
	// load type); with requests, the last at requests/rate (vLLM bench).
	Rescale bool `toml:"rescale" json:"rescale,omitempty"`
	// MaxConcurrency caps the requests in flight, as vLLM bench's
	// --max-concurrency (requests wait at the client for a slot; TTFT
	// counts from the send); ThinkTimeS holds a freed slot that long.
	MaxConcurrency *int    `toml:"max_concurrency" json:"max_concurrency,omitempty"`
	ThinkTimeS     float64 `toml:"think_time_s" json:"think_time_s,omitempty"`
	// SharedPrefixData is inference-perf's shared_prefix generator
	// ([workload.shared_prefix]): it sets every prompt and output length.
	SharedPrefixData *workload.SharedPrefixData `toml:"shared_prefix" json:"shared_prefix,omitempty"`
	Prompt           string                     `toml:"prompt" json:"prompt"` // length distribution, e.g. "lognormal:6.5,0.8"
	Output           string                     `toml:"output" json:"output"`
	// Shared system prompts: each request starts with one of PrefixGroups
	// prefixes of SharedPrefix tokens (for prefix caching).
	SharedPrefix int `toml:"shared_prefix_tokens" json:"shared_prefix_tokens"`
	PrefixGroups int `toml:"prefix_groups" json:"prefix_groups"`
	// Multi-turn conversations: each request is the next turn of one of
	// Conversations conversations in flight, its prompt the conversation's
	// history plus a new message of the prompt length (Turns ≥ 2 enables).
	Turns         int `toml:"turns" json:"turns"`
	Conversations int `toml:"conversations" json:"conversations"`
	// Trace replays a request trace instead of the synthetic workload
	// (rate, requests and lengths above are then the trace's concern).
	Trace *trace.Options `toml:"trace" json:"trace,omitempty"`
	// Classes mixes synthetic traffic classes, each with its own lengths
	// and SLOs, at the rate above (prompt and output above are unused).
	Classes []Class `toml:"classes" json:"classes,omitempty"`
}

// Stage is one stage of a rate schedule.
type Stage struct {
	Rate      float64 `toml:"rate" json:"rate"`             // requests per second
	DurationS float64 `toml:"duration_s" json:"duration_s"` // seconds
}

// Class is one traffic class of a synthetic mix.
type Class struct {
	Name   string  `toml:"name" json:"name"`
	Weight float64 `toml:"weight" json:"weight"`
	Prompt string  `toml:"prompt" json:"prompt"` // as workload.prompt, plus zipf:S,LO,HI and empirical:FILE:prompt|output
	Output string  `toml:"output" json:"output"`
	TTFTms float64 `toml:"ttft_ms" json:"ttft_ms"` // the class's own SLOs (0 = the scenario's)
	TPOTms float64 `toml:"tpot_ms" json:"tpot_ms"`
}

// Batch holds the batching policy and its limits (vLLM's names).
type Batch struct {
	Policy              string  `toml:"policy" json:"policy"` // chunked | prefill-first
	MaxNumSeqs          int     `toml:"max_num_seqs" json:"max_num_seqs"`
	MaxNumBatchedTokens int     `toml:"max_num_batched_tokens" json:"max_num_batched_tokens"`
	MaxModelLen         int     `toml:"max_model_len" json:"max_model_len"` // 0: the model's context length
	BlockSize           int     `toml:"block_size" json:"block_size"`
	GPUMemUtil          float64 `toml:"gpu_memory_utilization" json:"gpu_memory_utilization"`
	Refill              int     `toml:"refill" json:"refill"`                 // decode-first: admit below this many decodes
	MaxWaitMs           float64 `toml:"max_wait_ms" json:"max_wait_ms"`       // dynamic: batch-formation delay
	PrefixCaching       bool    `toml:"prefix_caching" json:"prefix_caching"` // reuse cached KV of shared prefixes
	Preemption          string  `toml:"preemption" json:"preemption"`         // recompute | swap
	Victim              string  `toml:"victim" json:"victim"`                 // newest | lowest-priority
	SwapSpaceGB         float64 `toml:"swap_space_gb" json:"swap_space_gb"`   // host memory for swapped KV per GPU (default 4 GiB, vLLM's; an explicit 0: none)
	// vLLM's cache_config overrides of the memory plan (0 = not set):
	// kv_cache_memory_bytes replaces the KV budget per GPU,
	// num_gpu_blocks_override the block count.
	KVCacheMemoryBytes   float64 `toml:"kv_cache_memory_bytes" json:"kv_cache_memory_bytes,omitempty"`
	NumGPUBlocksOverride int     `toml:"num_gpu_blocks_override" json:"num_gpu_blocks_override,omitempty"`
}

// Scheduler orders each instance's waiting queue.
type Scheduler struct {
	Policy       string         `toml:"policy" json:"policy"`               // fcfs | sjf | sjf-predicted | edf | priority
	PredictError float64        `toml:"predict_error" json:"predict_error"` // σ of the output-length predictor's lognormal error
	Priorities   map[string]int `toml:"priorities" json:"priorities"`       // class → priority (lower first)
}

// Admission is admission control at each instance.
type Admission struct {
	Policy   string  `toml:"policy" json:"policy"` // none | queue-cap | token-bucket | slo-aware
	QueueCap int     `toml:"queue_cap" json:"queue_cap"`
	Rate     float64 `toml:"rate" json:"rate"` // token bucket: requests/s
	Burst    float64 `toml:"burst" json:"burst"`
	Defer    bool    `toml:"defer" json:"defer"` // hold back instead of rejecting
}

// Router spreads requests over the replicas.
type Router struct {
	Policy      string  `toml:"policy" json:"policy"` // round-robin | least-outstanding | least-kv | power-of-two | prefix-affinity
	StalenessMs float64 `toml:"staleness_ms" json:"staleness_ms"`
}

// SLO holds latency objectives in milliseconds; 0 means not set.
type SLO struct {
	TTFTms float64 `toml:"ttft_ms" json:"ttft_ms"`
	TPOTms float64 `toml:"tpot_ms" json:"tpot_ms"`
	E2Ems  float64 `toml:"e2e_ms" json:"e2e_ms"`
}

// Disagg makes the deployment prefill/decode-disaggregated when
// decode_replicas > 0: the scenario's gpu, tp, batch and replicas then
// describe the prefill pool, and these fields the decode pool and the KV
// link between them.
type Disagg struct {
	DecodeReplicas int     `toml:"decode_replicas" json:"decode_replicas"`
	DecodeGPU      string  `toml:"decode_gpu" json:"decode_gpu"` // default: the prefill GPU
	DecodeTP       int     `toml:"decode_tp" json:"decode_tp"`   // default: the prefill TP
	DecodeBatch    Batch   `toml:"decode_batch" json:"decode_batch"`
	Link           string  `toml:"link" json:"link"`                       // nvlink | ib (default) | roce | pcie
	LinkGBps       float64 `toml:"link_gb_per_s" json:"link_gb_per_s"`     // per GPU, per direction; overrides the preset
	LinkLatencyUs  float64 `toml:"link_latency_us" json:"link_latency_us"` // overrides the preset (an explicit 0: an instant link)
	Streaming      bool    `toml:"streaming" json:"streaming"`             // layer-wise KV streaming during prefill
	MaxPending     int     `toml:"max_pending" json:"max_pending"`         // finished prefills held before backpressure (default max_num_seqs)
	// The decode pool's own data- and expert-parallel layout: DecodeDP
	// ranks a decode replica (default 1), each of decode_tp GPUs;
	// DecodeExpertParallel, DecodeAll2All and DecodeTwoBatchOverlap default
	// to the prefill pool's expert_parallel, all2all_backend and
	// two_batch_overlap (eplb, expert_skew and the TBO thresholds are
	// shared). DecodePP is the decode pool's pipeline stages (default 1;
	// the top-level pp, pp_layers and pp_chunked are the prefill pool's).
	DecodeDP              int    `toml:"decode_dp,omitzero" json:"decode_dp,omitempty"`
	DecodeExpertParallel  bool   `toml:"decode_expert_parallel,omitempty" json:"decode_expert_parallel,omitempty"`
	DecodeAll2All         string `toml:"decode_all2all_backend,omitempty" json:"decode_all2all_backend,omitempty"`
	DecodeTwoBatchOverlap bool   `toml:"decode_two_batch_overlap,omitempty" json:"decode_two_batch_overlap,omitempty"`
	DecodePP              int    `toml:"decode_pp,omitzero" json:"decode_pp,omitempty"`
}

// Hardware holds kernel-time model settings.
type Hardware struct {
	// Profile chooses the kernel-time model: "builtin" (default: the GPU's
	// calibrated profile, roofline for GPUs without one), "roofline", or a
	// profile file written by servesim calibrate.
	Profile        string  `toml:"profile" json:"profile"`
	IterOverheadMs float64 `toml:"iteration_overhead_ms" json:"iteration_overhead_ms"` // per-iteration CPU/scheduling time (omitted: the profile's, or 0.5 ms for the roofline; an explicit 0: none)
	// GPUsPerNode is the NVLink domain pipeline stages are placed in (a
	// stage boundary between domains sends over the scale-out network):
	// omitted, 72 on GB200 (NVL72) and 8 on the others (HGX / DGX nodes).
	GPUsPerNode int `toml:"gpus_per_node,omitzero" json:"gpus_per_node,omitempty"`
}

// Default returns the embedded default scenario: the one `servesim` runs
// with no arguments.
func Default() Scenario {
	s, err := Parse(bytes.NewReader(experiments.DefaultFile), "default.toml")
	if err != nil {
		panic("scenario: embedded default.toml is invalid: " + err.Error())
	}
	// Its values are defaults, not the user's choices: a flag that changes
	// the batch policy re-derives the token budget (see Explicit).
	s.set, s.file = nil, ""
	return s
}

// DefaultTOML returns the text of the embedded default scenario.
func DefaultTOML() string { return string(experiments.DefaultFile) }

// LoadScenario reads a scenario file.
func LoadScenario(path string) (Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	defer f.Close()
	s, err := Parse(f, path)
	if err != nil {
		return s, err
	}
	s.dir = filepath.Dir(path)
	return s, nil
}

// Parse decodes a scenario strictly: unknown keys and wrong types are
// errors naming the file, the line where toml knows it, and the key.
func Parse(r io.Reader, name string) (Scenario, error) {
	var s Scenario
	data, err := bounded.ReadAll(r, bounded.TOML) // /dev/zero fails at 4 MiB, not never
	if err != nil {
		return s, fmt.Errorf("scenario: %s: %w", name, err)
	}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&s)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return s, fmt.Errorf("scenario: %s line %d: %s", name, pe.Position.Line, pe.Message)
		}
		return s, fmt.Errorf("scenario: %s: %v", name, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		where := name
		if line := KeyLine(data, k); line > 0 {
			where = fmt.Sprintf("%s line %d", name, line)
		}
		return s, fmt.Errorf("scenario: %s: unknown field %q (the fields are listed in docs/scenario.md and `servesim run --help`)", where, k.String())
	}
	s.file = name
	s.RecordKeys(md, data)
	if s.Explicit("seed") {
		// The toml package converts a negative integer into the uint64
		// field by wrapping it (-1 becomes 2^64 − 1); read it signed.
		var raw struct {
			Seed int64 `toml:"seed"`
		}
		if _, err := toml.Decode(string(data), &raw); err == nil && raw.Seed < 0 {
			return s, s.fieldError("seed", "seed", "%d must be ≥ 0", raw.Seed)
		}
	}
	return s, nil
}

// KeyLine finds the line of a dotted key in a TOML document by a plain scan
// (the toml package does not expose key positions): the line that assigns
// the key's last part inside the table named by the rest. 0 if not found.
func KeyLine(data []byte, k toml.Key) int {
	if len(k) == 0 {
		return 0
	}
	table, leaf := strings.Join(k[:len(k)-1], "."), k[len(k)-1]
	cur := ""
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			cur = strings.TrimSpace(strings.Trim(t, "[]"))
			if cur == strings.Join(k, ".") {
				return i + 1 // an unknown table
			}
			continue
		}
		if cur != table {
			continue
		}
		if key, _, ok := strings.Cut(t, "="); ok && strings.Trim(strings.TrimSpace(key), `"'`) == leaf {
			return i + 1
		}
	}
	return 0
}
