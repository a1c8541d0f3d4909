package plan

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/models"
)

var update = flag.Bool("update", false, "rewrite testdata/plan-pp1.md and place-pp1.md from the current code")

// pp1Golden are the planner's and placement's tables of a search without
// pipeline degrees, as main wrote them before pipelines were searched
// (testdata/plan-pp1.md and place-pp1.md were written by this test's
// -update on main's tree, then copied here unchanged).
func pp1Golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed:\n got\n%s\n want\n%s", name, got, want)
	}
}

// A search that leaves the pipeline degrees unset (PPs nil, PP 1) plans and
// places exactly what it did before pipelines were searched: the same
// deployments, names, GPUs, costs and measured figures, byte for byte.
func TestSearchPP1Unchanged(t *testing.T) {
	base := scenario.Default()
	base.Workload.Requests = 200
	opts, err := PlanCapacity(base, PlanOptions{Rate: 16, GPUs: []string{"a100", "h100"}, TPs: []int{1, 2}, Duration: 15, MaxGPUs: 8, Disagg: true})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WritePlan(&b, opts, 16, 0.9); err != nil {
		t.Fatal(err)
	}
	pp1Golden(t, "plan-pp1.md", b.Bytes())
	ps, err := Place(base, PlaceOptions{GPUs: 3, TPs: []int{1}, MinDuration: 10, Precision: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WritePlacements(&b, ps, 0.9); err != nil {
		t.Fatal(err)
	}
	pp1Golden(t, "place-pp1.md", b.Bytes())
}

// plan405b is docs/sweeps.md's planner example (experiments/examples/plan-405b.toml):
// Llama-3.1-405B in BF16, 810 GB of weights (405B parameters × 2 B), 94.5
// GiB per GPU at TP 8: more than an H100's 80 GB, so on H100 only a
// pipeline of two TP 8 stages (47.25 GiB per GPU) fits.
func plan405b(t *testing.T) scenario.Scenario {
	t.Helper()
	s, err := scenario.ExampleScenario("plan-405b")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The planner proposes a pipeline layout where only a pipeline fits: on
// H100 TP 8 is a row saying why it does not fit, PP 2 × TP 8 serves, its
// GPUs are replicas × 8 × 2, its $/hour those GPUs at the catalog's $3.00
// (hardware/gpus.toml), and its $/M output tokens the arrival-window
// throughput's, as a run of that deployment reports. Without PP 2 nothing
// serves. Disaggregated shapes are planned at PP 1 only.
func TestPlanProposesPipeline(t *testing.T) {
	base := plan405b(t)
	o := PlanOptions{Rate: 2, GPUs: []string{"h100"}, TPs: []int{8}, PPs: []int{1, 2}, Duration: 30, MaxGPUs: 32, Disagg: true}
	opts, err := PlanCapacity(base, o)
	if err != nil {
		t.Fatal(err)
	}
	var tp8, pp2 *Option
	for i, op := range opts {
		if op.Disagg && op.PP != 1 {
			t.Errorf("%s: a disaggregated option with pp %d", op.Name, op.PP)
		}
		switch {
		case !op.Disagg && op.PP == 1:
			tp8 = &opts[i]
		case !op.Disagg && op.PP == 2:
			pp2 = &opts[i]
		}
	}
	if len(opts) != 3 || tp8 == nil || pp2 == nil {
		t.Fatalf("options %+v: want colocated TP8, colocated PP2×TP8 and disagg TP8", opts)
	}
	if !strings.Contains(tp8.Err, "for the KV cache") {
		t.Errorf("TP8 on h100: error %q, want the memory plan's (the weights do not fit)", tp8.Err)
	}
	if pp2.Err != "" {
		t.Fatalf("PP2×TP8 on h100: %s", pp2.Err)
	}
	if pp2.GPUs != pp2.Replicas*16 || pp2.Name != "colocated "+strconv.Itoa(pp2.Replicas)+"×PP2×TP8" {
		t.Errorf("PP2×TP8: %d replicas, %d GPUs, %q: want replicas × 16 GPUs", pp2.Replicas, pp2.GPUs, pp2.Name)
	}
	if pp2.CostPerHour != 3.00*float64(pp2.GPUs) {
		t.Errorf("PP2×TP8: $%.2f/hour for %d H100s at $3.00", pp2.CostPerHour, pp2.GPUs)
	}
	rep, err := evaluateRun(base, PlanOptions{Rate: o.Rate, Duration: o.Duration}, &Placement{Replicas: pp2.Replicas, TP: 8, PP: 2, GPUs: pp2.GPUs})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Plan.Pipeline == nil || rep.CostPerHour() != pp2.CostPerHour {
		t.Errorf("the run of %s: pipeline %v, $%.2f/hour", pp2.Name, rep.Plan.Pipeline != nil, rep.CostPerHour())
	}
	if want := scenario.PerMillion(rep.CostPerHour(), rep.SteadyOutputThroughput()); pp2.CostPerMOutTok != want || !(want > 0) {
		t.Errorf("PP2×TP8: $%.4f/M output tokens, the run's arrival window gives $%.4f/M", pp2.CostPerMOutTok, want)
	}
	var csv bytes.Buffer
	if err := WritePlanCSV(&csv, opts); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(csv.String(), "\n")
	if !strings.HasPrefix(lines[0], "gpu,deployment,disaggregated,replicas,tp,pp,dp,ep,max_num_seqs,") {
		t.Errorf("CSV header %q: want pp, dp and ep columns after tp", lines[0])
	}
	if want := "h100," + pp2.Name + ",false," + strconv.Itoa(pp2.Replicas) + ",8,2,1,1,0,0,0," + strconv.Itoa(pp2.GPUs) + ","; !strings.HasPrefix(lines[1], want) {
		t.Errorf("CSV first row %q: want it to start %q", lines[1], want)
	}
	t.Logf("%s: %d GPUs, $%.2f/h, attainment %.3f, $%.3f/M", pp2.Name, pp2.GPUs, pp2.CostPerHour, pp2.Attainment, pp2.CostPerMOutTok)

	o.PPs = []int{1}
	if _, err := PlanCapacity(base, o); err == nil || !strings.Contains(err.Error(), "no deployment of up to 32 GPUs") || !strings.Contains(err.Error(), "h100 colocated TP8") {
		t.Errorf("without PP 2: error %v, want none serving, naming h100 colocated TP8", err)
	}
}

// Place searches colocated pipelines too: with an H100 budget of 16 only
// 1 × PP2×TP8 serves the 405B (TP 8 does not fit, nor does the only
// disaggregated split, 1×TP8 + 1×TP8); its goodput per GPU is its rate over
// 16 GPUs. Without PP 2 none of the deployments serves.
func TestPlacePipelineLayouts(t *testing.T) {
	base := plan405b(t)
	o := PlaceOptions{GPUs: 16, TPs: []int{8}, PPs: []int{1, 2}, MinDuration: 10, Precision: 0.1}
	ps, err := Place(base, o)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
		if p.Disagg && p.PP > 1 {
			t.Errorf("%s: a disaggregated candidate with pp %d", p.Name, p.PP)
		}
	}
	// 1×TP8, 2×TP8, 1×PP2×TP8 colocated; disagg 1×TP8 + 1×TP8.
	if len(ps) != 4 {
		t.Fatalf("candidates %v: want 4", names)
	}
	top := ps[0]
	if top.Name != "colocated 1×PP2×TP8" || top.Err != "" || top.GPUs != 16 || top.PP != 2 {
		t.Fatalf("first %+v: want colocated 1×PP2×TP8 on 16 GPUs serving", top)
	}
	if !(top.Rate > 0) || math.Abs(top.PerGPU-top.Rate/16) > 1e-12 {
		t.Errorf("PP2×TP8: rate %g, per GPU %g: want rate / 16", top.Rate, top.PerGPU)
	}
	for _, p := range ps[1:] {
		if p.Err == "" {
			t.Errorf("%s serves (%g req/s): its weights do not fit an H100 at TP 8", p.Name, p.Rate)
		}
	}
	var csv bytes.Buffer
	if err := WritePlacementsCSV(&csv, ps); err != nil {
		t.Fatal(err)
	}
	if want := "deployment,disaggregated,replicas,tp,pp,dp,ep,decode_replicas,decode_tp,gpus,max_goodput_rate,"; !strings.HasPrefix(csv.String(), want+"per_gpu,attainment,cost_per_m_output_tokens,error\ncolocated 1×PP2×TP8,false,1,8,2,1,1,0,0,16,") {
		t.Errorf("CSV %q: want pp, dp and ep columns, the PP2×TP8 row first", firstLine(csv.String()))
	}
	t.Logf("%s: %.3f req/s, %.4f per GPU, $%.3f/M", top.Name, top.Rate, top.PerGPU, top.CostPerMTok)
	o.PPs = nil
	if _, err := Place(base, o); err == nil || !strings.Contains(err.Error(), "none of the 3 deployments can serve") {
		t.Errorf("without PP 2: %v, want none of 3 serving", err)
	}
}

// The capacity bound of a pipeline layout keeps its lone-request floors
// and gives up its rate bound (see capacityBound): Llama-3.1-8B on H100 at
// PP 2 × TP 1. The floors hold: a lone request's round from idle (one
// micro-batch through both stages, plus the send) is at least the whole
// model's step the floors are priced on, and a run's fastest TTFT and TPOT
// are at least them. The rate bound would not hold: a round of two
// budget-sized prefills (two micro-batches, one in each stage at a time)
// computes more prompt tokens per second than the best single step of the
// whole model, the bound's prefill rate, so pruning by it could drop a
// layout that serves.
func TestPipelineBound(t *testing.T) {
	s := scenario.Default()
	s.PP = 2
	s.Workload.Rate, s.Workload.Requests = 200, 600
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	b := boundOf(p)
	if b.ratePrunes || !math.IsInf(b.Rate, 1) || b.cannotServe(1e12) {
		t.Errorf("bound %+v: a pipeline must not prune by rate", b)
	}
	ps := p.Pipeline
	lonePrefill, _ := ps.Round(modelsBatch(1, 1, 0), false)
	loneDecode, _ := ps.Round(modelsBatch(0, 0, 1), false)
	lonePrefill += ps.IterOverhead()
	loneDecode += ps.IterOverhead()
	if !(b.TTFT > 0 && b.TTFT <= lonePrefill && b.TPOT > 0 && b.TPOT <= loneDecode) {
		t.Errorf("floors TTFT %.6f s, TPOT %.6f s; a lone round takes %.6f s (prefill), %.6f s (decode)", b.TTFT, b.TPOT, lonePrefill, loneDecode)
	}
	rep, err := scenario.Run(p, "")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.TTFT.Min < b.TTFT*1e3 || rep.Summary.TPOT.Min < b.TPOT*1e3 {
		t.Errorf("min TTFT %.4f ms, TPOT %.4f ms below the floors %.4f, %.4f ms", rep.Summary.TTFT.Min, rep.Summary.TPOT.Min, b.TTFT*1e3, b.TPOT*1e3)
	}
	// What the rate bound of one step would say: the whole model's best
	// prompt tokens per second in one step of up to the token budget.
	one := p.PoolPlan
	one.Pipeline = nil
	stepBound := poolBoundOf(&one).prefillTokPerS
	n := p.Limits.MaxNumBatchedTokens // one micro-batch's budget (the round's is pp × it)
	round, micro := ps.Round(modelsBatch(2, 2*n, 0), true)
	round += ps.IterOverhead()
	if micro != 2 {
		t.Fatalf("a round of two prefills splits into %d micro-batches, want 2", micro)
	}
	if got := float64(2*n) / round; !(got > stepBound) {
		t.Errorf("a pipelined round of 2 × %d prompt tokens: %.0f tok/s, not above one step's best %.0f tok/s: the case shows nothing", n, got, stepBound)
	} else {
		t.Logf("pipelined round of 2 × %d prompt tokens: %.0f tok/s > one step's bound %.0f tok/s (×%.2f)", n, got, stepBound, got/stepBound)
	}
}

// modelsBatch is prefills prompt chunks of tokens in all (no prior
// context, each token attending to itself and those before it in its own
// chunk, split evenly) and decodes at context 1.
func modelsBatch(prefills, tokens, decodes int) models.Batch {
	b := models.Batch{Prefills: prefills, PrefillTokens: tokens, Decodes: decodes, DecodeCtx: int64(decodes)}
	if prefills > 0 {
		per := float64(tokens) / float64(prefills)
		b.PrefillPairs = float64(prefills) * per * (per + 1) / 2
	}
	return b
}

// Pruning and the memo change no pipeline plan: planned with and without
// them (NoPrune), PP 1 and PP 2 layouts of Llama-3.1-8B on H100 rank alike
// with the same figures. The memo's key names PP: without it the first
// PP2×TP1 point would be served the report of 1×TP1 at the same rate (one
// GPU, not two), and the pipelines' rows would differ.
func TestPlanPipelinePruningKeepsRanking(t *testing.T) {
	base := scenario.Default()
	base.Workload.Requests = 200
	o := PlanOptions{Rate: 16, GPUs: []string{"h100"}, TPs: []int{1, 2}, PPs: []int{1, 2}, Duration: 15, MaxGPUs: 8}
	pruned, err := PlanCapacity(base, o)
	if err != nil {
		t.Fatal(err)
	}
	o.NoPrune = true
	full, err := PlanCapacity(base, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(pruned) != 4 || len(full) != 4 {
		t.Fatalf("%d options pruned, %d full: want TP1, TP2, PP2×TP1, PP2×TP2", len(pruned), len(full))
	}
	pipelines := 0
	for i := range full {
		if a, b := optionRow(pruned[i]), optionRow(full[i]); a != b {
			t.Errorf("option %d:\n pruned %s\n full   %s", i, a, b)
		}
		if full[i].PP == 2 && full[i].Err == "" {
			pipelines++
			if full[i].GPUs != full[i].Replicas*full[i].TP*2 {
				t.Errorf("%s: %d GPUs", full[i].Name, full[i].GPUs)
			}
		}
		t.Log(optionRow(full[i]))
	}
	if pipelines == 0 {
		t.Error("no pipeline layout serves: the test compares none")
	}
}
