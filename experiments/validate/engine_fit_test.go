package validate

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
)

// TestEngineFit fits the one engine constant fitted on a measured run,
// DefaultFrontEndRequestMs, the way the validation suite simulates the
// runs: each H100 experiment of runs.csv replayed from its workload
// description (StageScenario: its stages, shared_prefix prompts cycled as
// inference-perf sends them), its stage_0 rows compared. The fit is the
// codegen stage_0 mean TTFT minus vllm-v1's with the front end off (the
// front end adds its constant to every request's TTFT); the other runs
// are logged held out, next to the ideal engine.
func TestEngineFit(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates five measured runs")
	}
	path := filepath.Join("..", "..", "..", "shared", "data", "vllm-h100-runs", "runs.csv")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("measured runs not found (%v): skipping", err)
	}
	runs, err := realrun.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	stage0 := func(e *scenario.Engine) map[string]*Validation {
		vs, err := ValidateRuns(runs, scenario.Scenario{}, func(s *scenario.Scenario) { s.Engine = e })
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*Validation{}
		for _, v := range vs {
			if v.Run.Stage != nil && v.Run.Stage.Scope == "stage_0" {
				out[v.Run.Stage.Experiment] = v
			}
		}
		return out
	}
	ideal, nofe, full := stage0(&scenario.Engine{Name: "ideal"}), stage0(&scenario.Engine{Name: "vllm-v1", NoFrontEnd: true}), stage0(&scenario.Engine{Name: "vllm-v1"})
	if len(full) == 0 {
		t.Fatal("runs.csv: no stage_0 rows")
	}
	exps := make([]string, 0, len(full))
	for e := range full {
		exps = append(exps, e)
	}
	sort.Strings(exps)
	fitted := false
	for _, e := range exps {
		row := full[e].Run.Stage
		ttft, e2e := row.TTFT.Mean*1e3, row.E2E.Mean
		sim := func(v *Validation) (float64, float64) { return v.Sim.TTFT.Mean, v.Sim.E2E.Mean / 1e3 }
		it, ie := sim(ideal[e])
		nt, _ := sim(nofe[e])
		ft, fe := sim(full[e])
		role := "held out"
		if strings.HasSuffix(e, "llama-2-7b-tp1-codegen") {
			role = "fitted"
			fitted = true
			if fit := max(0, ttft-nt); math.Abs(fit-scenario.DefaultFrontEndRequestMs) > 0.05 {
				t.Errorf("refit front end %.3f ms, DefaultFrontEndRequestMs %g: update it and its doc", fit, scenario.DefaultFrontEndRequestMs)
			}
		}
		t.Logf("%-45s %-8s TTFT measured %5.1f ms, ideal %5.1f (%+4.0f%%), vllm-v1 no front end %5.1f, vllm-v1 %5.1f (%+4.0f%%); E2E measured %.3f s, ideal %.3f (%+4.1f%%), vllm-v1 %.3f (%+4.1f%%)",
			e, role, ttft, it, 100*(it/ttft-1), nt, ft, 100*(ft/ttft-1), e2e, ie, 100*(ie/e2e-1), fe, 100*(fe/e2e-1))
	}
	if !fitted {
		t.Fatal("the fitted run (llama-2-7b-tp1-codegen stage_0) is not in runs.csv")
	}
}

// readCSVColumns reads a whole CSV file with a header row: the records
// (header first) and each column's index by name.
func readCSVColumns(path string) ([][]string, map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, nil, err
	}
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("%s: empty", path)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	return recs, col, nil
}
