package validate

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// fakeRow is a simulated validation of model on gpu at TP tp, workload
// wl, whose TTFT and E2E means are off by ttft and e2e (signed fractions:
// real 100 ms, sim 100·(1+err)); fitted marks a run a parameter was fitted
// on, overlap a summary row whose stages are listed.
func fakeRow(name, model, gpu string, tp int, wl string, ttft, e2e float64, fitted, overlap bool) *Validation {
	v := &Validation{Run: &realrun.Run{Name: name}, Workload: wl, Overlap: overlap,
		Plan:    &scenario.Plan{Model: &models.Model{Name: model}, PoolPlan: scenario.PoolPlan{GPU: &hardware.GPU{Name: gpu}, Parallel: models.Parallel{TP: tp}}},
		Metrics: []MetricRow{{"ttft_mean", "ms", 100, 100 * (1 + ttft)}, {"e2e_mean", "ms", 100, 100 * (1 + e2e)}}}
	if fitted {
		v.Fitted = []string{"x = 1 (fitted here)"}
	}
	return v
}

// fakeSuite: three models. "a" has three runs on h100 (TP 1, 1, 2), none
// fitted; "b" two runs on h100 TP 4, one of them fitted (so b has no
// left-out rows, and its fitted run is not held out); "c" one run on
// rtx TP 1, plus an overlapping summary row that is never scored; and a
// row without a plan that is in no group.
func fakeSuite() []*Validation {
	return []*Validation{
		fakeRow("a1", "a", "h100", 1, "codegen", +0.10, -0.02, false, false),
		fakeRow("a2", "a", "h100", 1, "general", -0.30, +0.04, false, false),
		fakeRow("a3", "a", "h100", 2, "codegen", +0.20, +0.08, false, false),
		fakeRow("b1", "b", "h100", 4, "codegen", +0.01, +0.01, true, false),
		fakeRow("b2", "b", "h100", 4, "general", -0.05, -0.50, false, false),
		fakeRow("c1/summary", "c", "rtx", 1, "sharegpt", +0.90, +0.90, false, true),
		fakeRow("c1/stage_0", "c", "rtx", 1, "sharegpt", -0.06, +0.03, false, false),
		{Run: &realrun.Run{Name: "unsimulated"}, Status: "skipped"},
	}
}

// TestSuiteGroups: the groups, their rows and their medians on the fake
// suite, the arithmetic in the comments.
func TestSuiteGroups(t *testing.T) {
	gs := SuiteGroups(fakeSuite())
	type want struct {
		section, key string
		scored, rows int
		fittedOn     string
		ttft, e2e    float64 // median |err|; NaN: none scored
	}
	nan := math.NaN()
	wants := []want{
		// a: |ttft| 0.10, 0.30, 0.20 → 0.20; |e2e| 0.02, 0.04, 0.08 → 0.04.
		{SectionModel, "a", 3, 3, "", 0.20, 0.04},
		// b: b1 was fitted, so no row of b is scored (b2 neither).
		{SectionModel, "b", 0, 2, "b1", nan, nan},
		// c: the summary overlaps; c1/stage_0 alone: 0.06, 0.03.
		{SectionModel, "c", 1, 1, "", 0.06, 0.03},
		// held out = all but b1. h100: a1, a2, a3, b2: |ttft| 0.05 0.10
		// 0.20 0.30 → (0.10+0.20)/2 = 0.15; |e2e| 0.02 0.04 0.08 0.50 →
		// (0.04+0.08)/2 = 0.06.
		{SectionGPU, "h100", 4, 4, "", 0.15, 0.06},
		{SectionGPU, "rtx", 1, 1, "", 0.06, 0.03},
		// TP 1: a1, a2, c1/stage_0: |ttft| 0.06 0.10 0.30 → 0.10; |e2e|
		// 0.02 0.03 0.04 → 0.03. TP 2: a3. TP 4: b2 only (b1 fitted).
		{SectionTP, "TP 1", 3, 3, "", 0.10, 0.03},
		{SectionTP, "TP 2", 1, 1, "", 0.20, 0.08},
		{SectionTP, "TP 4", 1, 1, "", 0.05, 0.50},
		// codegen: a1, a3 (b1 fitted): (0.10+0.20)/2 = 0.15, (0.02+0.08)/2
		// = 0.05. general: a2, b2: (0.30+0.05)/2 = 0.175, (0.04+0.50)/2 =
		// 0.27.
		{SectionWorkload, "codegen", 2, 2, "", 0.15, 0.05},
		{SectionWorkload, "general", 2, 2, "", 0.175, 0.27},
		{SectionWorkload, "sharegpt", 1, 1, "", 0.06, 0.03},
	}
	if len(gs) != len(wants) {
		t.Fatalf("%d groups, want %d: %+v", len(gs), len(wants), gs)
	}
	close := func(a, b float64) bool { return (math.IsNaN(a) && math.IsNaN(b)) || math.Abs(a-b) < 1e-12 }
	for i, w := range wants {
		g := gs[i]
		_, med := MedianAbsErrors(g.Scored)
		ttft, ok := med["ttft_mean"]
		if !ok {
			ttft = nan
		}
		e2e, ok := med["e2e_mean"]
		if !ok {
			e2e = nan
		}
		if g.Section != w.section || g.Key != w.key || len(g.Scored) != w.scored || g.Rows != w.rows || strings.Join(g.FittedOn, ",") != w.fittedOn ||
			!close(ttft, w.ttft) || !close(e2e, w.e2e) {
			t.Errorf("group %d: %s %q scored %d of %d, fitted on %v, TTFT %.3f E2E %.3f; want %s %q %d of %d, %q, %.3f %.3f",
				i, g.Section, g.Key, len(g.Scored), g.Rows, g.FittedOn, ttft, e2e, w.section, w.key, w.scored, w.rows, w.fittedOn, w.ttft, w.e2e)
		}
	}
	// The median of the models counts each scored model once: a (0.20,
	// 0.04) and c (0.06, 0.03); b has none. TTFT (0.20+0.06)/2 = 0.13,
	// E2E (0.04+0.03)/2 = 0.035, over 2 models.
	med, n := MedianOfModels(gs)
	if !close(med["ttft_mean"], 0.13) || !close(med["e2e_mean"], 0.035) || n["e2e_mean"] != 2 {
		t.Errorf("median of the models: %v over %v; want TTFT 0.13, E2E 0.035 over 2", med, n)
	}
}

// TestSuiteGroupsPrinted: the suite table prints every section, the
// fitted model's line as — with its footnote, and the floor.
func TestSuiteGroupsPrinted(t *testing.T) {
	var b bytes.Buffer
	floor := &RepeatSpread{Configs: 12, Median: map[string]float64{"ttft_mean": 0.185, "e2e_mean": 0.06}}
	if err := WriteSuiteText(&b, fakeSuite(), floor); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"by model left out:\n", "by GPU, held out:\n", "by TP, held out:\n", "by workload, held out:\n",
		"  b (0 of 2) †", "  median of the models (2)", "repeat spread, floor (12)", "† = a parameter was fitted on a run of the model, so no row of it is scored here: b (b1)."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// validation.json carries the same groups and the median of the models.
	js, err := ValidationJSON(fakeSuite())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"section": "by model left out"`, `"key": "b"`, `"fitted_on": [`, `"median_abs_error_of_models_left_out": {`, `"ttft_mean": 0.13`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("validation.json lacks %s", want)
		}
	}
	// The floor row has E2E 6 % (0.06).
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "repeat spread, floor") && !strings.Contains(line, "6%") {
			t.Errorf("floor line %q lacks E2E 6%%", line)
		}
	}
}

// TestRepeatSpread: the floor is the median over configurations of
// |earlier − later|/later per metric, later being runs_long.csv's summary
// (seconds in the rows, milliseconds in the repeat table).
func TestRepeatSpread(t *testing.T) {
	row := func(exp string, ttft, e2e, itl float64) realrun.StageRow {
		return realrun.StageRow{Experiment: exp, Scope: "summary", TTFT: realrun.Quant{Mean: ttft, P90: ttft, P99: ttft},
			E2E: realrun.Quant{Mean: e2e, P90: e2e, P99: e2e}, ITLMean: itl, TPOTMean: 2 * itl} // the floor compares itl_mean with itl_mean, not TPOTMean
	}
	rep := func(ttft, e2e, itl float64) map[string]float64 {
		return map[string]float64{"ttft_mean": ttft, "ttft_p90": ttft, "ttft_p99": ttft, "e2e_mean": e2e, "e2e_p90": e2e, "e2e_p99": e2e, "itl_mean": itl}
	}
	rows := []realrun.StageRow{row("x", 0.050, 5.0, 0.020), row("y", 0.100, 4.0, 0.010), row("z", 0.040, 2.0, 0.030),
		{Experiment: "x", Scope: "stage_0"}} // a stage row is not compared
	// x: TTFT 60 vs 50 ms → 0.2; E2E 4,500 vs 5,000 → 0.1; ITL 21 vs 20 → 0.05.
	// y: TTFT 100 vs 100 → 0; E2E 4,400 vs 4,000 → 0.1; ITL 12 vs 10 → 0.2.
	// z: TTFT 20 vs 40 → 0.5; E2E 2,600 vs 2,000 → 0.3; ITL 30 vs 30 → 0.
	// Medians: TTFT 0.2, E2E 0.1, TPOT (itl_mean) 0.05.
	got, err := repeatSpread(rows, map[string]map[string]float64{"x": rep(60, 4500, 21), "y": rep(100, 4400, 12), "z": rep(20, 2600, 30)}, "r.csv")
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"ttft_mean": 0.2, "ttft_p99": 0.2, "e2e_mean": 0.1, "e2e_p90": 0.1, "tpot_mean": 0.05} {
		if math.Abs(got.Median[k]-want) > 1e-9 {
			t.Errorf("%s: %g, want %g", k, got.Median[k], want)
		}
	}
	if got.Configs != 3 {
		t.Errorf("%d configurations, want 3", got.Configs)
	}
	// A configuration on one side only is an error naming it.
	if _, err := repeatSpread(rows, map[string]map[string]float64{"x": rep(1, 1, 1), "y": rep(1, 1, 1)}, "r.csv"); err == nil || !strings.Contains(err.Error(), `"z"`) {
		t.Errorf("z without a repeat: %v", err)
	}
	if _, err := repeatSpread(rows, map[string]map[string]float64{"x": rep(1, 1, 1), "y": rep(1, 1, 1), "z": rep(1, 1, 1), "w": rep(1, 1, 1)}, "r.csv"); err == nil || !strings.Contains(err.Error(), `"w"`) {
		t.Errorf("w without a later run: %v", err)
	}
}
