package experiments

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// engineFitRow is one measured H100 run of vllm-h100-runs/runs.csv.
type engineFitRow struct {
	experiment, scope, model string
	tp                       int
	rate                     float64
	requests                 int
	prefix, tail             int // shared-prefix tokens (whole blocks) + the rest: the measured prompt_len_mean
	output                   int
	ttftMs, e2eS             float64
}

// engineFitScenario is the scenario of a measured run: the model at its
// TP on H100 with the run's vLLM limits, chunked prefill and prefix
// caching; Poisson arrivals at the stage's rate; the measured mean prompt
// length as a cached prefix of whole blocks shared by 100 groups (the
// workload cycles through 10 × 10 = 100 prompts, so after the first cycle
// every prompt's full blocks are cached) plus a tail; the set output.
func engineFitScenario(r engineFitRow, engine *Engine) Scenario {
	s := Default()
	s.Name, s.Model, s.GPU, s.TP = r.experiment, r.model, "h100", r.tp
	s.Batch = Batch{MaxNumSeqs: 128, MaxNumBatchedTokens: 2048, MaxModelLen: 4096, PrefixCaching: true}
	s.Workload = Workload{Arrival: "poisson", Rate: r.rate, Requests: r.requests,
		Prompt: "constant:" + strconv.Itoa(r.tail), Output: "constant:" + strconv.Itoa(r.output),
		SharedPrefix: r.prefix, PrefixGroups: 100}
	s.Engine = engine
	return s
}

func readEngineFitRows(t *testing.T) []engineFitRow {
	path := filepath.Join("..", "..", "shared", "data", "vllm-h100-runs", "runs.csv")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("measured runs not found (%v): skipping", err)
	}
	rows, col, err := readCSVColumns(path)
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]string{"meta-llama/Llama-2-7b-hf": "llama-2-7b", "meta-llama/Llama-2-70b-hf": "llama-2-70b", "codellama/CodeLlama-34b-Instruct-hf": "codellama-34b"}
	var out []engineFitRow
	for _, row := range rows[1:] {
		get := func(c string) string { return row[col[c]] }
		num := func(c string) float64 {
			v, err := strconv.ParseFloat(get(c), 64)
			if err != nil {
				t.Fatalf("%s: column %s: %v", path, c, err)
			}
			return v
		}
		if get("scope") != "stage_0" {
			continue
		}
		pl := int(math.Round(num("prompt_len_mean")))
		out = append(out, engineFitRow{
			experiment: get("experiment"), scope: get("scope"), model: models[get("model")], tp: int(num("tp")),
			rate: num("stage_rate"), requests: int(num("successes")),
			prefix: (pl - 1) / 16 * 16, tail: pl - (pl-1)/16*16, output: int(num("output_len")),
			ttftMs: num("ttft_s_mean") * 1e3, e2eS: num("e2e_s_mean"),
		})
	}
	return out
}

// TestEngineFit refits the front-end constant on the fitted run and prints
// measured against simulated mean TTFT and E2E for every stage_0 run
// (the others are held out). Run with -v to see the table.
func TestEngineFit(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates five measured runs")
	}
	rows := readEngineFitRows(t)
	mean := func(s Scenario) (ttftMs, e2eS float64) {
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(p, "")
		if err != nil {
			t.Fatal(err)
		}
		return rep.Summary.TTFT.Mean, rep.Summary.E2E.Mean / 1e3
	}
	fitted := false
	for _, r := range rows {
		ideal, ie2e := mean(engineFitScenario(r, &Engine{Name: "ideal"}))
		nofe, _ := mean(engineFitScenario(r, &Engine{Name: "vllm-v1", NoFrontEnd: true}))
		full, fe2e := mean(engineFitScenario(r, &Engine{Name: "vllm-v1"}))
		role := "held out"
		if strings.HasSuffix(r.experiment, "llama-2-7b-tp1-codegen") {
			role = "fitted"
			fitted = true
			if fit := max(0, r.ttftMs-nofe); math.Abs(fit-DefaultFrontEndRequestMs) > 0.05 {
				t.Errorf("refit front end %.3f ms, DefaultFrontEndRequestMs %g: update it and its doc", fit, DefaultFrontEndRequestMs)
			}
		}
		t.Logf("%-45s %-8s TTFT measured %5.1f ms, ideal %5.1f (%+4.0f%%), vllm-v1 no front end %5.1f, vllm-v1 %5.1f (%+4.0f%%); E2E measured %.3f s, ideal %.3f (%+4.1f%%), vllm-v1 %.3f (%+4.1f%%)",
			r.experiment, role, r.ttftMs, ideal, 100*(ideal/r.ttftMs-1), nofe, full, 100*(full/r.ttftMs-1),
			r.e2eS, ie2e, 100*(ie2e/r.e2eS-1), fe2e, 100*(fe2e/r.e2eS-1))
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
