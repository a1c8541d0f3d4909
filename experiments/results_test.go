package experiments

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// summary.json names every SLO in milliseconds, in the scenario and in the
// metrics, and has no untagged (Go-named) key.
func TestSummarySLOInMilliseconds(t *testing.T) {
	s := small()
	s.Workload.Requests = 20
	s.SLO.TTFTms, s.SLO.TPOTms, s.SLO.E2Ems = 300, 25.5, 4000
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Run(p, dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Scenario struct {
			SLO map[string]float64 `json:"slo"`
		} `json:"scenario"`
		Metrics struct {
			SLO map[string]float64 `json:"slo"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"ttft_ms": 300, "tpot_ms": 25.5, "e2e_ms": 4000}
	for where, got := range map[string]map[string]float64{"scenario.slo": f.Scenario.SLO, "metrics.slo": f.Metrics.SLO} {
		if len(got) != len(want) {
			t.Errorf("%s = %v, want %v", where, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s.%s = %v, want %v", where, k, got[k], v)
			}
		}
	}
	for _, bad := range []string{`"E2Ems"`, `_ns"`} {
		if strings.Contains(string(data), bad) {
			t.Errorf("summary.json holds %s", bad)
		}
	}
}
