package validate

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
)

func TestScaledPrompt(t *testing.T) {
	for _, c := range []struct {
		sys, q     int
		mean       float64
		wantSys, n int
	}{
		{100, 466, 591.63, 105, 592}, // codegen: 100 × 591.63/566 = 104.5 → 105; round(591.63) = 592
		{150, 600, 785.8, 157, 786},  // roleplay: 150 × 785.8/750 = 157.2 → 157
		{100, 447, 575.5, 105, 576},  // general: 100 × 575.5/547 = 105.2 → 105; 575.5 rounds to 576
		{100, 447, 0, 100, 547},      // no measured length: unscaled
	} {
		sys, q := scaledPrompt(&realrun.StageRow{SystemPromptLen: c.sys, QuestionLen: c.q, PromptLenMean: c.mean})
		if sys != c.wantSys || sys+q != c.n {
			t.Errorf("%d+%d at %g: %d+%d, want %d + %d", c.sys, c.q, c.mean, sys, q, c.wantSys, c.n-c.wantSys)
		}
	}
}

func TestStageOf(t *testing.T) {
	counts := StageCounts([]realrun.Stage{{Rate: 8, Seconds: 600}, {Rate: 20, Seconds: 600}}) // 4,800 and 12,000
	if counts[0] != 4800 || counts[1] != 12000 {
		t.Fatalf("counts %v, want [4800 12000]", counts)
	}
	for _, c := range []struct {
		id   int64
		want int
	}{{0, 0}, {4799, 0}, {4800, 1}, {16799, 1}, {16800, -1}} { // 4,800 + 12,000 = 16,800
		if got := StageOf(counts, c.id); got != c.want {
			t.Errorf("StageOf(%d) = %d, want %d", c.id, got, c.want)
		}
	}
}

// stageRun is a small two-stage inference-perf experiment: 2 req/s × 5 s
// then 4 req/s × 5 s (10 + 20 requests), light enough that nothing queues
// long.
func stageRuns() []*realrun.Run {
	var runs []*realrun.Run
	for _, scope := range []string{"summary", "stage_0", "stage_1"} {
		row := &realrun.StageRow{Line: 2, Experiment: "x-llama-2-7b", Model: "meta-llama/Llama-2-7b-hf", Scope: scope, TP: 1,
			MaxNumSeqs: 128, MaxNumBatchedTokens: 2048, MaxModelLen: 4096, LoadType: "constant", DataType: "shared_prefix",
			Stages: []realrun.Stage{{Rate: 2, Seconds: 5}, {Rate: 4, Seconds: 5}}, SystemPromptLen: 100, QuestionLen: 447, OutputLen: 32,
			PromptLenMean: 575.5, RequestsPerSec: 1, InputTokensPS: 1}
		row.TTFT = realrun.Quant{Mean: 0.03, Median: 0.03, P90: 0.04, P99: 0.05}
		row.E2E = realrun.Quant{Mean: 0.3, Median: 0.3, P90: 0.35, P99: 0.4}
		row.TPOTMean = (row.E2E.Mean - row.TTFT.Mean) / 31
		runs = append(runs, &realrun.Run{Name: row.Experiment + "/" + scope, Path: "runs.csv line 2", Format: realrun.FormatStages, Stage: row,
			Engine: realrun.Engine{Model: row.Model, GPU: "h100", TP: 1, MaxNumSeqs: 128, MaxNumBatchedTokens: 2048, MaxModelLen: 4096}})
	}
	return runs
}

// TestValidateStagesAttribution: each simulated request is counted in the
// stage it arrived in: 10 in stage_0, 20 in stage_1, 30 in the summary;
// stage 1 starts after stage 0 drained; TPOT is (E2E − TTFT)/(32 − 1) on
// the means.
func TestValidateStagesAttribution(t *testing.T) {
	runs := stageRuns()
	s, err := StageScenario(runs[0], scenario.Scenario{})
	if err != nil {
		t.Fatal(err)
	}
	if w := s.Workload; len(w.Stages) != 2 || !w.Drain || !w.Rescale || w.SharedPrefixData.SystemPromptLen != 105 || w.SharedPrefixData.QuestionLen != 471 {
		t.Fatalf("workload %+v", w)
	}
	vs, err := ValidateStages(runs, s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"summary": 30, "stage_0": 10, "stage_1": 20} // 2 × 5, 4 × 5
	var lastFinish0, firstArrival1 int64 = 0, 1 << 62
	for _, v := range vs {
		if v.Sim.Completed != want[v.Run.Stage.Scope] || len(v.SimRecs) != want[v.Run.Stage.Scope] {
			t.Errorf("%s: %d completed, %d records; want %d", v.Run.Name, v.Sim.Completed, len(v.SimRecs), want[v.Run.Stage.Scope])
		}
		if v.Overlap != (v.Run.Stage.Scope == "summary") {
			t.Errorf("%s: overlap %v", v.Run.Name, v.Overlap)
		}
		for _, r := range v.SimRecs {
			switch v.Run.Stage.Scope {
			case "stage_0":
				lastFinish0 = max(lastFinish0, int64(r.Finish))
			case "stage_1":
				firstArrival1 = min(firstArrival1, int64(r.Arrival))
			}
		}
		m := metricOf(v, "tpot_mean")
		if d := (v.Sim.E2E.Mean - v.Sim.TTFT.Mean) / 31; m.Sim != d || m.Sim-v.Sim.TPOT.Mean > 1e-9 || v.Sim.TPOT.Mean-m.Sim > 1e-9 {
			t.Errorf("%s: sim TPOT %v, (E2E − TTFT)/31 = %v, per-request mean %v", v.Run.Name, m.Sim, d, v.Sim.TPOT.Mean)
		}
	}
	if firstArrival1 < lastFinish0 {
		t.Errorf("stage 1's first arrival %d before stage 0's last finish %d: not drained", firstArrival1, lastFinish0)
	}
}

func TestStageScenarioErrors(t *testing.T) {
	r := stageRuns()[0]
	r.Stage.LoadType = "poisson"
	if _, err := StageScenario(r, scenario.Scenario{}); err == nil || !strings.Contains(err.Error(), `load_type "poisson"`) || !strings.Contains(err.Error(), "runs.csv line 2") {
		t.Errorf("err = %v", err)
	}
	r = stageRuns()[1]
	r.Stage.Scope = "stage_7"
	s, _ := StageScenario(r, scenario.Scenario{})
	if _, err := ValidateStages([]*realrun.Run{r}, s); err == nil || !strings.Contains(err.Error(), `"stage_7"`) {
		t.Errorf("err = %v", err)
	}
}

// TestStageScenarioH100Rows builds every row of the five H100 runs: the
// model by its Hugging Face id, H100, the row's TP and limits, and stages
// of int(rate × duration) requests that add up to the summary's successes.
func TestStageScenarioH100Rows(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "data", "vllm-h100-runs", "runs.csv")
	runs, err := realrun.Open(path)
	if err != nil {
		t.Skipf("data not here: %v", err)
	}
	want := map[string]struct {
		model  string
		tp     int
		counts []int64
	}{
		"20260217-155451-llama-2-7b-tp1-codegen":    {"llama-2-7b", 1, []int64{3000, 6000}},     // 5 × 600, 10 × 600
		"20260217-162547-llama-2-7b-tp1-roleplay":   {"llama-2-7b", 1, []int64{7200}},           // 6 × 1200
		"20260217-231439-llama-2-7b-tp1-general":    {"llama-2-7b", 1, []int64{4800, 12000}},    // 8 × 600, 20 × 600
		"20260217-202857-llama-2-70b-tp4-general":   {"llama-2-70b", 4, []int64{4800, 12000}},   // as above
		"20260218-150304-codellama-34b-tp2-general": {"codellama-34b", 2, []int64{4800, 12000}}, // as above
	}
	if len(runs) != 14 {
		t.Errorf("%d rows, want 14", len(runs))
	}
	for _, r := range runs {
		w, ok := want[r.Stage.Experiment]
		if !ok {
			t.Errorf("%s: unexpected experiment", r.Name)
			continue
		}
		s, err := StageScenario(r, scenario.Scenario{})
		if err != nil {
			t.Errorf("%s: %v", r.Name, err)
			continue
		}
		p, err := s.Resolve()
		if err != nil {
			t.Errorf("%s: %v", r.Name, err)
			continue
		}
		counts := StageCounts(r.Stage.Stages)
		var total int64
		for i, n := range counts {
			total += n
			if i >= len(w.counts) || n != w.counts[i] {
				t.Errorf("%s: stage counts %v, want %v", r.Name, counts, w.counts)
			}
		}
		if p.Model.Name != w.model || p.GPU.Name != "h100" || p.Parallel.TP != w.tp || p.Limits.MaxNumSeqs != 128 ||
			p.Limits.MaxNumBatchedTokens != 2048 || p.MaxModelLen != 4096 || !p.Scenario.Batch.PrefixCaching {
			t.Errorf("%s: %s on %s TP %d, limits %+v, max_model_len %d", r.Name, p.Model.Name, p.GPU.Name, p.Parallel.TP, p.Limits, p.MaxModelLen)
		}
		if r.Stage.Scope == "summary" && int64(r.Stage.Successes) != total {
			t.Errorf("%s: %d successes, stages send %d", r.Name, r.Stage.Successes, total)
		}
	}
}
