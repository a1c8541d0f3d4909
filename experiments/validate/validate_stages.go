package validate

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/workload"
)

// The inference-perf runs (../shared/data/vllm-h100-runs/SOURCE.md) ran
// shared_prefix data with the generator's defaults: the table's
// num_unique_system_prompts × num_users_per_system_prompt are what
// profile.yaml asked for, not what ran.
const (
	inferencePerfGroups  = 10
	inferencePerfPrompts = 10
)

// StageScenario builds the scenario of an inference-perf run
// (realrun.FormatStages) from its row: the engine limits as RunScenario
// reads them (model by Hugging Face id, H100, TP, max_num_seqs,
// max_num_batched_tokens, max_model_len, chunked prefill and prefix
// caching on), and the workload inference-perf generated: its constant
// load type (each stage's exponential gaps rescaled to fill it,
// int(rate × duration) requests per stage) with a drain between stages,
// and its shared_prefix data, 10 groups × 10 prompts of a system prompt
// and a question (the sim2real tables: their own num_groups ×
// prompts_per_group), output_len tokens each, seed 1.
//
// Prompt lengths: the row's system_prompt_len and question_len are
// tokenizer-free targets; the load generator counted prompts about 5 %
// longer (prompt_len_mean, from the served text). The scenario scales both
// parts by prompt_len_mean / (system_prompt_len + question_len), rounding
// so that they sum to round(prompt_len_mean), because the measured length
// is what vLLM prefilled and what the table's input throughput counts.
func StageScenario(run *realrun.Run, base scenario.Scenario) (scenario.Scenario, error) {
	s, err := RunScenario(run, base)
	if err != nil {
		return s, err
	}
	r := run.Stage
	if r == nil {
		return s, fmt.Errorf("validate: run %s: not an inference-perf row", run.Name)
	}
	if r.LoadType != "constant" || r.DataType != "shared_prefix" {
		return s, fmt.Errorf("validate: %s: load_type %q, data_type %q: only inference-perf's constant load with shared_prefix data is replayed", run.Path, r.LoadType, r.DataType)
	}
	if len(r.Stages) == 0 {
		return s, fmt.Errorf("validate: %s: column \"stages\": no stages", run.Path)
	}
	sys, q := scaledPrompt(r)
	groups, prompts := inferencePerfGroups, inferencePerfPrompts
	if r.Groups > 0 && r.PromptsPerGroup > 0 { // the sim2real tables record the profile that ran
		groups, prompts = r.Groups, r.PromptsPerGroup
	}
	s.Seed = 1
	s.Workload = scenario.Workload{Rescale: true, Drain: len(r.Stages) > 1, SharedPrefixData: &workload.SharedPrefixData{
		Groups: groups, PromptsPerGroup: prompts, SystemPromptLen: sys, QuestionLen: q, OutputLen: r.OutputLen}}
	for _, st := range r.Stages {
		s.Workload.Stages = append(s.Workload.Stages, scenario.Stage{Rate: st.Rate, DurationS: st.Seconds})
	}
	return s, nil
}

// scaledPrompt returns the system prompt and question lengths scaled to
// the measured mean prompt length (see StageScenario); unscaled when the
// row has no measured length.
func scaledPrompt(r *realrun.StageRow) (sys, q int) {
	n := r.SystemPromptLen + r.QuestionLen
	if !(r.PromptLenMean > 0) || n == 0 {
		return r.SystemPromptLen, r.QuestionLen
	}
	total := int(math.Round(r.PromptLenMean))
	sys = int(math.Round(float64(r.SystemPromptLen) * r.PromptLenMean / float64(n)))
	return sys, max(total-sys, 0)
}

// StageCounts returns the requests of each stage, int(rate × duration), as
// inference-perf's constant load type sends them (and as the simulated
// workload, with rescale, generates them).
func StageCounts(st []realrun.Stage) []int64 {
	out := make([]int64, len(st))
	for i, g := range st {
		out[i] = int64(g.Rate * g.Seconds)
	}
	return out
}

// StageOf returns the stage in which request id (0-based, in arrival
// order) arrived, given the stages' request counts; -1 past the last.
// With drained stages of fixed counts the arrival order is the stage
// order: request id belongs to stage k when the counts before k sum to at
// most id and the counts up to k to more.
func StageOf(counts []int64, id int64) int {
	for k, n := range counts {
		if id < n {
			return k
		}
		id -= n
	}
	return -1
}

// ValidateStages simulates one inference-perf experiment once and compares
// each of its rows (runs, all of the same experiment: summary, stage_0,
// stage_1) with the simulated requests of that scope: those that arrived in
// the stage, or all of them for the summary. The scenario s comes from
// StageScenario (on the summary row when there is one) with the user's
// overrides applied.
func ValidateStages(runs []*realrun.Run, s scenario.Scenario) ([]*Validation, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	first := runs[0]
	for _, r := range runs {
		if r.Stage == nil || r.Stage.Experiment != first.Stage.Experiment {
			return nil, fmt.Errorf("validate: ValidateStages: run %s is not a row of experiment %s", r.Name, first.Stage.Experiment)
		}
	}
	p, err := s.Resolve()
	if err != nil {
		return nil, fmt.Errorf("%w (run %s)", err, first.Name)
	}
	kvNote := fmt.Sprintf("KV cache: servesim's plan, %d blocks (the table does not record vLLM's)", p.Memory.Blocks)
	if first.Engine.KVBlocks > 0 { // the sim2real tables' gpu_kv_blocks_logged
		if kvNote, err = applyLoggedKV(first, p); err != nil {
			return nil, err
		}
	}
	sink := &validateSink{}
	all, err := runWithSink(p, sink)
	if err != nil {
		return nil, fmt.Errorf("%w (run %s)", err, first.Name)
	}
	counts := StageCounts(first.Stage.Stages)
	hasStages := false
	for _, r := range runs {
		hasStages = hasStages || r.Stage.Scope != "summary"
	}
	sys, q := 0, 0
	if d := p.Workload.Data; d != nil {
		sys, q = d.SystemPromptLen, d.QuestionLen
	}
	var out []*Validation
	for _, run := range runs {
		row := run.Stage
		v := &Validation{Run: run, Plan: p, Notes: append([]string(nil), run.Notes...)}
		if row.Groups > 0 { // the sim2real tables
			v.Notes = append(v.Notes, kvNote,
				fmt.Sprintf("prompts: system %d + question %d tokens, %d groups × %d prompts, the profile's (the table records no measured prompt length)", sys, q, row.Groups, row.PromptsPerGroup),
				"TPOT = (E2E − TTFT)/(output_len − 1) on the means, measured and simulated alike (the server generates output_len tokens: ignore_eos); the table's itl_mean divides by the load generator's re-tokenized output count instead (inference-perf's process_response) and is not compared; medians and throughputs not recorded")
			if out, ok := impliedOutputLen(row); ok && math.Abs(out-float64(row.OutputLen)) > 0.01*float64(row.OutputLen) {
				v.Notes = append(v.Notes, fmt.Sprintf("the load generator counted %.1f output tokens a request, (E2E − TTFT)/itl_mean + 1, of the %d the server generated: the table's itl_mean, %.2f ms, is %.2f ms a generated token", out, row.OutputLen, 1e3*row.ITLMean, 1e3*row.TPOTMean))
			}
		} else {
			v.Notes = append(v.Notes, kvNote,
				fmt.Sprintf("prompts: system %d + question %d tokens, the table's %d + %d scaled to the measured mean prompt length (the load generator counts ~5 %% more tokens: tokenization; SOURCE.md)", sys, q, row.SystemPromptLen, row.QuestionLen),
				"TPOT = (E2E − TTFT)/(output_len − 1) on the means, measured and simulated alike; ITL not compared (the load generator's ITL counts streamed chunks, about two per token)")
		}
		if p.VLLMMemory != nil {
			v.Notes = append(v.Notes, "vLLM memory plan: "+p.VLLMMemory.String())
		}
		if n := scenario.TierNote(p, sink.res); n != "" {
			v.Notes = append(v.Notes, n)
		}
		stage := -1
		if row.Scope != "summary" {
			if _, err := fmt.Sscanf(row.Scope, "stage_%d", &stage); err != nil || stage < 0 || stage >= len(counts) {
				return nil, fmt.Errorf("validate: %s: column \"scope\": %q: want summary or stage_0 … stage_%d", run.Path, row.Scope, len(counts)-1)
			}
		} else if hasStages && len(runs) > 1 {
			v.Overlap = true
		}
		c := metrics.NewCollector(metrics.SLO{})
		for i := range sink.recs {
			rec := &sink.recs[i]
			if stage < 0 || StageOf(counts, rec.ID) == stage {
				c.Add(rec)
				v.SimRecs = append(v.SimRecs, *rec)
			}
		}
		if stage < 0 {
			v.Sim = all
		} else {
			v.Sim = c.Summary()
		}
		if v.Sim.Rejected > 0 {
			failures := strconv.Itoa(row.Failures)
			if row.Failures < 0 {
				failures = "not recorded"
			}
			v.Notes = append(v.Notes, fmt.Sprintf("simulated: %d requests rejected in this scope (measured failures: %s)", v.Sim.Rejected, failures))
		}
		v.Metrics = stageCompare(row, v.Sim)
		out = append(out, v)
	}
	return out, nil
}

// impliedOutputLen is the mean output length the sim2real table's means
// imply, the load generator's count: itl_mean = (E2E mean − TTFT
// mean)/(mean output length − 1) (SOURCE.md), solved for the length; ok
// false when itl_mean is not above 0.
func impliedOutputLen(r *realrun.StageRow) (float64, bool) {
	if !(r.ITLMean > 0) {
		return 0, false
	}
	return (r.E2E.Mean-r.TTFT.Mean)/r.ITLMean + 1, true
}

// stageCompare lists a row's measured metrics beside the simulated
// summary of its scope, in compareSummaries' order. TPOT's mean is
// (E2E − TTFT)/(output_len − 1) on the means on both sides (every request
// has output_len tokens, so it is also the mean per-request TPOT); its
// percentiles are not measured (the simulated ones are listed). ITL is not
// compared. Output throughput counts output_len per request on both sides
// (the table's own undercounts; SOURCE.md); total throughput adds the
// table's input throughput, over the measured prompt lengths.
func stageCompare(r *realrun.StageRow, sm metrics.Summary) []MetricRow {
	nan := math.NaN()
	ms := func(v float64) float64 { return v * 1e3 }
	q := func(name string, real realrun.Quant, sim metrics.Stats) []MetricRow {
		return []MetricRow{
			{name + "_mean", "ms", ms(real.Mean), statOrNaN(sim, func(s metrics.Stats) float64 { return s.Mean })},
			{name + "_median", "ms", ms(real.Median), statOrNaN(sim, func(s metrics.Stats) float64 { return s.Median })},
			{name + "_p90", "ms", ms(real.P90), statOrNaN(sim, func(s metrics.Stats) float64 { return s.P90 })},
			{name + "_p99", "ms", ms(real.P99), statOrNaN(sim, func(s metrics.Stats) float64 { return s.P99 })},
		}
	}
	simTPOT := nan
	if r.OutputLen > 1 && sm.E2E.N > 0 {
		simTPOT = (sm.E2E.Mean - sm.TTFT.Mean) / float64(r.OutputLen-1)
	}
	rows := q("ttft", r.TTFT, sm.TTFT)
	rows = append(rows,
		MetricRow{"tpot_mean", "ms", ms(r.TPOTMean), simTPOT},
		MetricRow{"tpot_median", "ms", nan, statOrNaN(sm.TPOT, func(s metrics.Stats) float64 { return s.Median })},
		MetricRow{"tpot_p90", "ms", nan, statOrNaN(sm.TPOT, func(s metrics.Stats) float64 { return s.P90 })},
		MetricRow{"tpot_p99", "ms", nan, statOrNaN(sm.TPOT, func(s metrics.Stats) float64 { return s.P99 })})
	for _, k := range []string{"mean", "median", "p90", "p99"} {
		rows = append(rows, MetricRow{"itl_" + k, "ms", nan, nan})
	}
	rows = append(rows, q("e2e", r.E2E, sm.E2E)...)
	out := float64(r.OutputLen)
	simRPS, simIn := nan, nan
	if sm.Duration > 0 {
		simRPS, simIn = sm.RequestThroughput, float64(sm.InputTokens)/sm.Duration
	}
	return append(rows,
		MetricRow{"request_throughput", "req/s", r.RequestsPerSec, simRPS},
		MetricRow{"output_throughput", "tok/s", r.RequestsPerSec * out, simRPS * out},
		MetricRow{"total_throughput", "tok/s", r.InputTokensPS + r.RequestsPerSec*out, simIn + simRPS*out})
}

// ShortRunName drops an inference-perf experiment's timestamp prefix
// ("20260217-231439-llama-2-7b-tp1-general/stage_0" →
// "llama-2-7b-tp1-general/stage_0") for tables.
func ShortRunName(s string) string {
	if len(s) > 16 && s[8] == '-' && s[15] == '-' && strings.Trim(s[:8]+s[9:15], "0123456789") == "" {
		return s[16:]
	}
	return s
}
