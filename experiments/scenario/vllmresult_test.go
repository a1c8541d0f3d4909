package scenario

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// smallReport runs the default scenario with a few requests.
func smallReport(t *testing.T, edit func(*Scenario)) *Report {
	t.Helper()
	s := Default()
	s.Workload.Requests = 20
	s.Workload.DurationS = 0
	if edit != nil {
		edit(&s)
	}
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(p, "")
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestVLLMResultKeys compares the result file's keys with vLLM's (the
// fixture testdata/vllm-bench-serve-result.json, written from serve.py;
// see its .md): every key vLLM writes is written, except those
// VLLMResultOmitted names, and no other key; each value has the type
// vLLM's has.
func TestVLLMResultKeys(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "vllm-bench-serve-result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	rep := smallReport(t, func(s *Scenario) { s.SLO.TTFTms = 500 })
	b, err := rep.VLLMResult(VLLMResultOptions{Date: "20250101-120000"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	var missing, extra []string
	for k, v := range want {
		g, ok := got[k]
		switch _, omitted := VLLMResultOmitted[k]; {
		case omitted && ok:
			extra = append(extra, k+" (listed as omitted)")
		case omitted:
		case !ok:
			missing = append(missing, k)
		case v != nil && g != nil && jsonType(v) != jsonType(g) && k != "request_rate":
			t.Errorf("%s: %T %v, vLLM writes %T", k, g, g, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing)+len(extra) > 0 {
		t.Errorf("keys missing: %v; keys vLLM does not write: %v", missing, extra)
	}
	if got["request_goodput"] == nil {
		t.Error("request_goodput is null with an SLO set")
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "bool"
	case []any:
		return "array"
	}
	return "other"
}

// TestVLLMResultValues checks values against the summary and vLLM's
// formats: the percentiles chosen by --metric-percentiles, e2el only when
// asked, "inf" for an infinite rate, null goodput with no SLO.
func TestVLLMResultValues(t *testing.T) {
	rep := smallReport(t, func(s *Scenario) { s.Workload.Rate = math.Inf(1); s.SLO = SLO{} })
	b, err := rep.VLLMResult(VLLMResultOptions{Date: "d", Metrics: []string{"e2el", "ttft"}, Percentiles: []float64{50, 99.0, 100}})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	s := rep.Summary
	for _, c := range []struct {
		key  string
		want any
	}{
		{"request_rate", "inf"},
		{"request_goodput", nil},
		{"completed", float64(20)},
		{"num_prompts", float64(20)},
		{"mean_ttft_ms", s.TTFT.Mean},
		{"p50_ttft_ms", s.TTFT.Median},
		{"p99_e2el_ms", s.E2E.P99},
		{"p100_e2el_ms", s.E2E.Max},
		{"mean_tpot_ms", nil}, // not in --percentile-metrics
	} {
		if g := got[c.key]; g != c.want {
			t.Errorf("%s = %v, want %v", c.key, g, c.want)
		}
	}
	// vLLM writes the metrics in its own order, ttft before e2el.
	if i, j := strings.Index(string(b), "mean_ttft_ms"), strings.Index(string(b), "mean_e2el_ms"); i < 0 || j < i {
		t.Errorf("ttft at %d, e2el at %d: want ttft first", i, j)
	}
}

func TestVLLMResultFileName(t *testing.T) {
	rep := smallReport(t, func(s *Scenario) {
		s.Workload.Rate = 8
		n := 16
		s.Workload.MaxConcurrency = &n
	})
	// vLLM: f"{label}-{request_rate}qps-concurrency{N}-{model}-{date}.json", str(8.0) = "8.0".
	want := "servesim-8.0qps-concurrency16-" + rep.Plan.Model.Name + "-20250101-120000.json"
	if got := rep.VLLMResultFileName(VLLMResultOptions{Date: "20250101-120000"}); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestParseVLLMPercentiles(t *testing.T) {
	for _, c := range []struct {
		in  string
		ok  bool
		out int
	}{
		{"99", true, 1}, {"50,90,95,99", true, 4}, {"0,100", true, 2},
		{"99.9", false, 0}, {"x", false, 0}, {"", false, 0},
	} {
		got, err := ParseVLLMPercentiles(c.in)
		if (err == nil) != c.ok || len(got) != c.out {
			t.Errorf("%q: %v, %v", c.in, got, err)
		}
	}
	if _, err := ParseVLLMMetrics("ttft,latency"); err == nil || !strings.Contains(err.Error(), "latency") {
		t.Errorf("latency: %v", err)
	}
}
