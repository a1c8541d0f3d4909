package scenario

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware"
)

// loggedKVRun is a real vLLM run that logged its KV cache size in blocks.
type loggedKVRun struct {
	name       string // experiment id or run directory
	model, gpu string // catalog names
	tp         int
	weights    string
	seqs, toks int // max_num_seqs, max_num_batched_tokens
	modelLen   int // max_model_len (0: the model's)
	logged     int // blocks of 16 tokens the server logged
}

// sim2realModels maps the HF ids of ../shared/data/vllm-sim2real-runs to
// catalog models of the same architecture (instruct and base checkpoints
// share their config shapes; the FP8-dynamic Scout is the catalog Scout at
// FP8 weights).
var sim2realModels = map[string]string{
	"01-ai/Yi-34B":             "yi-34b",
	"Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b",
	"RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic": "llama-4-scout-17b-16e",
	"meta-llama/Llama-2-7b-hf":                            "llama-2-7b",
	"meta-llama/Llama-3.1-70B-Instruct":                   "llama-3.1-70b",
	"mistralai/Mistral-Nemo-Instruct-2407":                "mistral-nemo-12b",
}

// loggedKVRuns reads every real run of ../shared/data that logs its KV
// blocks: the twelve sim2real H100 runs (experiments.csv
// gpu_kv_blocks_logged, vLLM 0.15.1) and the LLMServingSim RTX 4090 run
// (meta.json kv_cache.num_gpu_blocks, vLLM 0.19.0; its RTX PRO 6000 run
// logs none). A GPU or model the catalogs lack is an error.
func loggedKVRuns(t *testing.T) []loggedKVRun {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "data")
	f, err := os.Open(filepath.Join(dir, "vllm-sim2real-runs", "experiments.csv"))
	if err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	atoi := func(r []string, k string) int {
		n, err := strconv.Atoi(r[col[k]])
		if err != nil {
			t.Fatalf("experiments.csv %s: %s: %v", r[0], k, err)
		}
		return n
	}
	var runs []loggedKVRun
	for _, r := range rows[1:] {
		m, ok := sim2realModels[r[col["model"]]]
		if !ok {
			t.Fatalf("experiments.csv %s: model %q has no catalog entry", r[0], r[col["model"]])
		}
		g, err := hardware.Builtin().Get(r[col["hardware"]])
		if err != nil {
			t.Fatalf("experiments.csv %s: %v", r[0], err)
		}
		runs = append(runs, loggedKVRun{r[0], m, g.Name, atoi(r, "tp"), strings.ToLower(r[col["precision"]]),
			atoi(r, "max_num_seqs"), atoi(r, "max_num_batched_tokens"), atoi(r, "max_model_len"), atoi(r, "gpu_kv_blocks_logged")})
	}
	b, err := os.ReadFile(filepath.Join(dir, "llmservingsim", "vllm-runs", "RTX4090", "Llama-3.1-8B", "vllm", "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Engine struct {
			TP       int `json:"tensor_parallel_size"`
			Seqs     int `json:"max_num_seqs"`
			Toks     int `json:"max_num_batched_tokens"`
			ModelLen int `json:"max_model_len"`
		} `json:"engine_kwargs"`
		KV struct {
			Blocks int     `json:"num_gpu_blocks"`
			Util   float64 `json:"gpu_memory_utilization"`
		} `json:"kv_cache"`
		HW struct {
			Device string `json:"device_name"`
		} `json:"hardware"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	g, err := hardware.Builtin().Get(meta.HW.Device)
	if err != nil {
		t.Fatalf("RTX4090 meta.json: %v", err)
	}
	if meta.KV.Util != 0.9 {
		t.Fatalf("RTX4090 meta.json: gpu_memory_utilization %v, the test assumes 0.9", meta.KV.Util)
	}
	return append(runs, loggedKVRun{"llmservingsim RTX4090 Llama-3.1-8B", "llama-3.1-8b", g.Name, meta.Engine.TP, "bf16",
		meta.Engine.Seqs, meta.Engine.Toks, meta.Engine.ModelLen, meta.KV.Blocks})
}

// plannedKVBlocks resolves the run's engine arguments under the default
// vllm-v1 engine (memory profile and CUDA graphs on, utilization 0.9, block
// size 16: vLLM's defaults, which the sim2real runs did not override) and
// returns the plan's blocks per GPU and its terms. The plan subtracts its
// CUDA-graph estimate (0.01–0.05 GiB here), as vLLM does by default from
// 0.21; the runs' vLLM 0.15 and 0.19 did not, which the 3 % absorbs.
func plannedKVBlocks(t *testing.T, r loggedKVRun) (int, string) {
	t.Helper()
	s := small()
	s.Model, s.GPU, s.TP, s.Weights = r.model, r.gpu, r.tp, r.weights
	s.Batch.MaxNumSeqs, s.Batch.MaxNumBatchedTokens, s.Batch.MaxModelLen = r.seqs, r.toks, r.modelLen
	p, err := s.Resolve()
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	if p.VLLMMemory == nil {
		t.Fatalf("%s: no vLLM memory plan", r.name)
	}
	return p.Memory.Blocks, p.VLLMMemory.String()
}

// kvKnownGaps are the runs on which the plan misses the logged blocks by
// more than 3 %, with the error (planned / logged − 1, %) docs/engine-model.md's
// table reports and what it is put down to. The test pins each to ±0.5
// point, so a change of the plan that moves them has to update the table.
var kvKnownGaps = map[string]struct {
	errPct float64
	cause  string
}{
	// FP8-dynamic Scout: the run leaves 12.09 GiB of KV where the plan
	// leaves 20.18, 8.1 GiB of non-KV memory the plan lacks. Counted at
	// 1 B a weight here, the checkpoint keeps (by RedHat's FP8-dynamic
	// recipe, unverified) attention, embeddings and the router in BF16,
	// ≈ 2.4 GiB per GPU by the shapes; the vision tower (≈ 0.8 GiB) and
	// its encoder profiling pass are not modelled; ≈ 5 GiB is unexplained.
	"17-llama-4-scout-17b-16e-tp2-general-lite-2-1":   {66.95, "FP8 checkpoint's BF16 layers, vision tower, unexplained rest"},
	"20-llama-4-scout-17b-16e-tp2-codegen-2":          {66.95, "as above"},
	"21-llama-4-scout-17b-16e-tp2-roleplay-2":         {66.95, "as above"},
	"48-llama-4-scout-17b-16e-tp2-reasoning-lite-2-1": {66.95, "as above"},
}

// TestPlannedVsLoggedKVBlocks compares vLLM's memory plan with the KV
// blocks every real run of ../shared/data logged. On a run that is not a
// known gap the plan must be within 3 %; a known gap must stay where the
// docs/engine-model.md reports it. Expected values are the logs' own numbers.
func TestPlannedVsLoggedKVBlocks(t *testing.T) {
	runs := loggedKVRuns(t)
	if len(runs) != 13 {
		t.Fatalf("%d runs log KV blocks, want 13 (12 sim2real + RTX 4090)", len(runs))
	}
	seen := map[string]bool{}
	for _, r := range runs {
		planned, terms := plannedKVBlocks(t, r)
		errPct := 100 * (float64(planned)/float64(r.logged) - 1)
		t.Logf("| %s | %s | %d | %d | %d | %d | %+.2f %% |", r.name, r.model, r.tp, r.toks, r.logged, planned, errPct)
		if gap, ok := kvKnownGaps[r.name]; ok {
			seen[r.name] = true
			if math.Abs(errPct-gap.errPct) > 0.5 {
				t.Errorf("%s: planned %d vs logged %d blocks (%+.2f %%), docs/engine-model.md reports %+.2f %% (%s): update the table (%s)", r.name, planned, r.logged, errPct, gap.errPct, gap.cause, terms)
			}
			continue
		}
		if math.Abs(errPct) > 3 {
			t.Errorf("%s: planned %d vs logged %d blocks (%+.2f %%), more than 3 %% (%s)", r.name, planned, r.logged, errPct, terms)
		}
	}
	for name := range kvKnownGaps {
		if !seen[name] {
			t.Errorf("known gap %q is no run that logs KV blocks", name)
		}
	}
}

// TestLlama70BTP2OnA100: Llama-3.1-70B in BF16 at TP 2 on two A100 80GB,
// which real servers run, plans a KV cache now that the plan starts from
// the driver's 79.14 GiB instead of the datasheet's 74.51 GiB (80e9 B):
//
//	requested   = ceil(79.14 GiB × 0.9)              = 71.23 GiB
//	weights     = 70.55e9 × 2 B / 2                  = 65.71 GiB
//	activation  = max(forward 2,048 tokens 0.21, hidden 0.03 + sampler 256 × 128,256 × 24 B 0.73) = 0.77 GiB
//	non-torch   = 0.32 GiB (NCCL outside the budget since vLLM 0.11)
//	CUDA graphs = forward at 512 tokens              =  0.05 GiB
//	KV          = 71.23 − 65.71 − 0.77 − 0.32 − 0.05 =  4.38 GiB
//	blocks      = 4.38 GiB / (16 × 80 × 8 × 128 × 2 × 2 B / 2) = 1,793
//
// (vLLM's A100 defaults 256 / 2048). With the datasheet figure KV would be
// 0.21 GiB (84 blocks, 21 times fewer), with the old TP non-torch term
// −1.58 GiB and the scenario would not resolve. It then serves requests.
func TestLlama70BTP2OnA100(t *testing.T) {
	s := small()
	s.Model, s.GPU, s.TP = "llama-3.1-70b", "a100", 2
	s.Workload.Requests = 20
	s.Batch.MaxNumSeqs, s.Batch.MaxNumBatchedTokens = 0, 0
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if p.Memory.Blocks != 1793 {
		t.Errorf("blocks = %d, want 1,793 (%s)", p.Memory.Blocks, p.VLLMMemory)
	}
	rep, err := Run(p, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Summary.Completed; got != 20 {
		t.Errorf("%d requests completed, want 20", got)
	}
}
