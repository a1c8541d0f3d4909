package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGoodputOnlyNamedSLOs: with --goodput, exactly the SLOs it names
// count, as in vLLM (serve.py's calculate_metrics): --goodput e2el:MS over
// the embedded default (TTFT 500 ms, TPOT 50 ms) gives request goodput =
// (requests with E2E ≤ MS) / duration, counted here from requests.csv, and
// summary.json carries that number. A --slo-* flag beside it still counts.
func TestGoodputOnlyNamedSLOs(t *testing.T) {
	for _, c := range []struct {
		args        string
		e2e, ttft   float64 // the bounds a good request meets, ms (0: none)
		wantSLO     map[string]float64
		headerWords string
	}{
		// 3000 ms sits inside the E2E distribution at 40 req/s (so neither
		// all nor none pass); TTFT and TPOT are dropped.
		{"--goodput e2el:3000", 3000, 0, map[string]float64{"ttft_ms": 0, "tpot_ms": 0, "e2e_ms": 3000}, "e2el ≤ 3000 ms only (as vLLM; the scenario's ttft 500 ms, tpot 50 ms dropped)"},
		{"--goodput e2el:3000 --slo-ttft 400", 3000, 400, map[string]float64{"ttft_ms": 400, "tpot_ms": 0, "e2e_ms": 3000}, "ttft ≤ 400 ms, e2el ≤ 3000 ms only (as vLLM; the scenario's tpot 50 ms dropped)"},
	} {
		dir := t.TempDir()
		var out bytes.Buffer
		args := append(strings.Fields("run --model llama-3.1-8b --rate 40 -n 300 "+c.args), "-o", dir)
		if err := dispatch(args, &out, &out); err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if !strings.Contains(out.String(), c.headerWords) {
			t.Errorf("%s: the header lacks %q:\n%s", c.args, c.headerWords, out.String())
		}
		f, err := os.Open(filepath.Join(dir, "requests.csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		good := 0
		for _, r := range rows[1:] {
			e2e, _ := strconv.ParseFloat(r[col["e2e_ms"]], 64)
			ttft, _ := strconv.ParseFloat(r[col["ttft_ms"]], 64)
			if r[col["rejected"]] == "" && e2e <= c.e2e && (c.ttft == 0 || ttft <= c.ttft) {
				good++
			}
		}
		data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Scenario struct{ SLO map[string]float64 }
			Metrics  struct {
				Duration float64 `json:"duration_s"`
				Goodput  float64 `json:"request_goodput_req_per_s"`
			}
		}
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
		if good == 0 || good == len(rows)-1 {
			t.Fatalf("%s: %d of %d requests good: the bound does not split them", c.args, good, len(rows)-1)
		}
		if want := float64(good) / s.Metrics.Duration; s.Metrics.Goodput != want {
			t.Errorf("%s: goodput %v req/s, want %d good / %v s = %v", c.args, s.Metrics.Goodput, good, s.Metrics.Duration, want)
		}
		for k, v := range c.wantSLO {
			if s.Scenario.SLO[k] != v {
				t.Errorf("%s: summary.json slo.%s = %v, want %v", c.args, k, s.Scenario.SLO[k], v)
			}
		}
	}
}
