package realrun

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each reader either fails with a "realrun:" error or returns values that
// hold its invariants; it never panics. Seeds: the testdata fixtures and
// the corpus in testdata/fuzz/.

func seed(f *testing.F, name string) {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
}

func checkErr(t *testing.T, err error) {
	if err != nil && !strings.HasPrefix(err.Error(), "realrun: ") {
		t.Fatalf("error without the package name: %v", err)
	}
}

func FuzzReadRequests(f *testing.F) {
	seed(f, "run/requests.jsonl")
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ReadRequests(strings.NewReader(s), "f.jsonl")
		checkErr(t, err)
		for i, q := range rs {
			if q.Input < 1 || q.Output < 1 || q.Arrival < 0 || q.TTFT() < 0 || q.E2E() < q.TTFT() || (i > 0 && q.Arrival < rs[i-1].Arrival) {
				t.Fatalf("request %d breaks an invariant: %+v", i, q)
			}
		}
	})
}

func FuzzReadMeta(f *testing.F) {
	seed(f, "run/meta.json")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ReadMeta(strings.NewReader(s), "meta.json")
		checkErr(t, err)
		if err == nil && (e.Model == "" || e.TP < 0 || e.MaxNumSeqs < 0 || e.KVBlocks < 0) {
			t.Fatalf("engine %+v", e)
		}
	})
}

func FuzzReadTimeseries(f *testing.F) {
	seed(f, "run/timeseries.csv")
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := ReadTimeseries(strings.NewReader(s), "ts.csv")
		checkErr(t, err)
		for i, k := range ts {
			if k.Running < 0 || k.Waiting < 0 || k.PromptTPS < 0 || (i > 0 && k.T <= ts[i-1].T) || math.IsInf(k.T, 0) {
				t.Fatalf("tick %d: %+v", i, k)
			}
		}
	})
}

func FuzzReadBench(f *testing.F) {
	seed(f, "bench.json")
	f.Fuzz(func(t *testing.T, s string) {
		r, _, err := ReadBench(strings.NewReader(s), "b.json")
		checkErr(t, err)
		if err != nil {
			return
		}
		for i, q := range r.Requests {
			if q.Input < 1 || q.Output < 1 || q.TTFT() < 0 || q.E2E() < q.TTFT() || (i > 0 && q.Arrival < r.Requests[i-1].Arrival) {
				t.Fatalf("request %d: %+v", i, q)
			}
		}
	})
}

func FuzzReadStageRows(f *testing.F) {
	seed(f, "stages.csv")
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := ReadStageRows(strings.NewReader(s), "s.csv")
		checkErr(t, err)
		for _, r := range rows {
			if r.TP < 1 || r.OutputLen < 1 || len(r.Stages) == 0 || math.IsNaN(r.TPOTMean) {
				t.Fatalf("row %+v", r)
			}
		}
	})
}

func FuzzReadSim2Real(f *testing.F) {
	f.Add(readFixture(f, "experiments.csv"), readFixture(f, "runs_long.csv"))
	f.Fuzz(func(t *testing.T, exps, long string) {
		rows, err := ReadSim2Real(strings.NewReader(exps), "e.csv", strings.NewReader(long), "l.csv")
		checkErr(t, err)
		for _, r := range rows {
			if r.TP < 1 || r.OutputLen < 1 || len(r.Stages) == 0 || r.Groups < 1 || r.PromptsPerGroup < 1 || r.Groups*r.PromptsPerGroup > maxSim2RealPrompts ||
				r.SystemPromptLen+r.QuestionLen+r.OutputLen > r.MaxModelLen || r.CPUKVBlocks < 0 || r.GPUKVBlocks < 0 ||
				!(r.TTFT.Mean <= r.E2E.Mean) || !(r.TPOTMean >= 0) || math.IsInf(r.E2E.P99, 0) {
				t.Fatalf("row %+v", r)
			}
			if _, _, err := sim2RealPrecision(r.Precision); err != nil {
				t.Fatalf("row with precision %q", r.Precision)
			}
		}
	})
}

func FuzzReadRepeats(f *testing.F) {
	f.Add(readFixture(f, "repeat_measurements.csv"))
	f.Fuzz(func(t *testing.T, s string) {
		rep, err := ReadRepeats(strings.NewReader(s), "r.csv")
		checkErr(t, err)
		for exp, m := range rep {
			for k, v := range m {
				if !(v >= 0) || math.IsInf(v, 0) || !contains(sim2RealMetrics, k) {
					t.Fatalf("%s %s = %g", exp, k, v)
				}
			}
		}
	})
}
