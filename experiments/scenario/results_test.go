package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// summary.json names every SLO in milliseconds, in the scenario and in the
// metrics, and has no untagged (Go-named) key.
func TestSummarySLOInMilliseconds(t *testing.T) {
	s := small()
	s.Workload.Requests = 20
	s.SLO.TTFTms, s.SLO.TPOTms, s.SLO.E2Ems = 300, 25.5, 4000
	_, _, dir := runDir(t, s)
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

// A run removes the temporaries an earlier, killed run left in its output
// directory (servesim's names only, older than StaleAge), and nothing else.
func TestRunSweepsStaleTemporaries(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * time.Hour)
	files := []struct {
		name string
		old  bool
		gone bool
	}{
		{".servesim-tmp-requests.csv-123", true, true},
		{".servesim-tmp-summary.json-9", true, true},
		{".requests-4567.csv", true, true}, // earlier versions' names
		{".steps-4567.csv", true, true},
		{".summary.json-88", true, true},
		{".servesim-tmp-steps.csv-5", false, false}, // young: may be another servesim's
		{".requests-notes.csv", true, false},        // not a servesim name
		{"requests-1.csv", true, false},
		{"notes.txt", true, false},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if f.old {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := small()
	s.Workload.Requests = 10
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(p, dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.name))
		if gone := os.IsNotExist(err); gone != f.gone {
			t.Errorf("%s: removed %v, want %v", f.name, gone, f.gone)
		}
	}
}

// BenchmarkSimulate100kCancellable is BenchmarkSimulate100k under a
// cancellable context, as `servesim run` runs: the run looks at ctx.Done()
// every serve.StopCheckEvents events. Compare the two for the check's cost.
func BenchmarkSimulate100kCancellable(b *testing.B) {
	s := Default()
	s.Workload.Rate = 17
	s.Workload.Requests = 100_000
	p, err := s.Resolve()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := b.TempDir()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := RunContext(ctx, p, dir); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*100_000/b.Elapsed().Seconds(), "req/s")
}

// A cancelled context stops a run, which leaves nothing in its output
// directory and says it was interrupted; the sweep's side is
// sweep.TestSweepContextCancelled (RunContext is what the CLI's signal
// handler cancels).
func TestRunContextCancelled(t *testing.T) {
	s := small()
	s.Workload.Requests = 1_000_000 // far more events than it gets to fire
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel once the run's temporary set directory exists (runset.go).
	go func() {
		defer cancel()
		for deadline := time.Now().Add(20 * time.Second); len(tempsIn(dir)) < 1 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}()
	_, err = RunContext(ctx, p, dir)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("error %v, want an interruption wrapping context.Canceled", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("output directory holds %d entries after the interrupt, want 0", len(ents))
	}

}

func tempsIn(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if IsTempName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}
