package validate

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// The suite ablation on one entry (the RTX 4090 run: 300 requests): one
// row per AblationEngines variant, in order; "all off" equals "ideal"
// (metamorphic: vllm-v1 with every mechanism off is the ideal engine);
// the vllm-v1 row equals the plain validation's medians of the same run;
// and the table prints every row.
func TestSuiteAblation(t *testing.T) {
	dir, err := scenario.FindDataDir(filepath.Join("..", "..", "..", "shared", "data"))
	if err != nil {
		t.Skip(err)
	}
	entries, err := Suite()
	if err != nil {
		t.Fatal(err)
	}
	var one []SuiteEntry
	for _, e := range entries {
		if strings.Contains(e.File, "rtx4090") {
			one = append(one, e)
		}
	}
	if len(one) != 1 {
		t.Fatalf("want one rtx4090 suite file, got %d", len(one))
	}
	steps := 0
	rows, err := SuiteAblation(one, dir, scenario.Scenario{}, nil, func() { steps++ })
	if err != nil {
		t.Fatal(err)
	}
	variants := scenario.AblationEngines(nil)
	if len(rows) != len(variants) || steps != len(variants) {
		t.Fatalf("%d rows, %d steps; want %d of each", len(rows), steps, len(variants))
	}
	byName := map[string]SuiteAblationRow{}
	for i, r := range rows {
		if r.Variant != variants[i].Variant {
			t.Errorf("row %d: %q, want %q", i, r.Variant, variants[i].Variant)
		}
		if r.Runs != 1 {
			t.Errorf("%s: over %d held-out rows, want 1", r.Variant, r.Runs)
		}
		byName[r.Variant] = r
	}
	if a, b := byName["all off"], byName["ideal"]; a.TTFT != b.TTFT || a.TPOT != b.TPOT || a.E2E != b.E2E {
		t.Errorf("all off %+v ≠ ideal %+v", a, b)
	}
	got, err := one[0].Validate(dir, scenario.Scenario{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, med := MedianAbsErrors(HeldOut(got))
	if v := byName["vllm-v1"]; v.TTFT != med["ttft_mean"] || v.TPOT != med["tpot_mean"] || v.E2E != med["e2e_mean"] {
		t.Errorf("vllm-v1 row %+v; the plain validation's medians: TTFT %g, TPOT %g, E2E %g", v, med["ttft_mean"], med["tpot_mean"], med["e2e_mean"])
	}
	if byName["vllm-v1"].TTFT == byName["ideal"].TTFT {
		t.Error("vllm-v1 and ideal give the same TTFT error: the variants did not reach the simulation")
	}
	var buf bytes.Buffer
	if err := WriteSuiteAblation(&buf, rows); err != nil {
		t.Fatal(err)
	}
	for _, v := range variants {
		if !strings.Contains(buf.String(), "| "+v.Variant+" | ") {
			t.Errorf("table lacks %q:\n%s", v.Variant, buf.String())
		}
	}
}
