package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/sim/workload"
)

// A replay that would run zero requests is an error naming the file and
// the step that left nothing (issue 11), whether the pipeline finds out
// while streaming (Next) or while measuring a target rate (Open).
func TestOpenEmpty(t *testing.T) {
	az := writeTrace(t, Azure, 1000) // rows at 0, 0.1, ..., 99.9 s
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	header := write("header.csv", genHeader(Azure))
	failed := write("failed.csv", genHeader(Azure)+"2023-11-16 18:00:00.0000000,100,0\n2023-11-16 18:00:01.0000000,200,0\n")
	burst := write("burst.csv", string(genTrace(BurstGPT, 8)))
	lengths := write("lengths.csv", string(genTrace(Lengths, 10)))
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"header only", Options{File: header}, "header.csv: no requests: the file has no data rows"},
		{"header only, repeated", Options{File: header, Repeat: 3}, "header.csv: no requests: the file has no data rows"},
		{"header only, target rate", Options{File: header, Rate: 5}, "header.csv: no requests: the file has no data rows"},
		{"all failed", Options{File: failed}, `failed.csv: no requests: all 2 rows were left out: 2 failed (zero output tokens) and dropped (failed = "one" keeps them with one)`},
		// Rows 3 and 7 of 8 are GPT-4: none is "Claude".
		{"filter keeps none", Options{File: burst, ModelFilter: "Claude"}, `burst.csv: no requests: all 8 rows were left out: 8 left out by the filter (model "Claude"`},
		// The trace spans 0–99.9 s.
		{"window past the end", Options{File: az, StartS: 3600, EndS: 7200}, "no requests in window [3600 s, 7200 s) (start_s, end_s); the trace spans 0–99.9 s (1000 requests)"},
		{"window past the end, open", Options{File: az, StartS: 100}, "no requests in window [100 s, the end)"},
		{"window past the end, target rate", Options{File: az, StartS: 3600, Rate: 5}, "no requests in window [3600 s, the end)"},
		{"window past the end, repeated", Options{File: az, StartS: 3600, EndS: 3700, Repeat: 2}, "no requests in window [3600 s, 3700 s)"},
		// 10 length-only rows at constant 1 req/s arrive at 1..10 s.
		{"window past synthetic arrivals", Options{File: lengths, Rate: 1, Arrival: "constant", StartS: 60}, "the synthetic arrivals span 1–10 s (10 requests)"},
		// Each of 1000 rows kept with probability 1e-9: none, for seed 1.
		{"sample keeps none", Options{File: az, Sample: 1e-9}, `sample 1e-09 kept none of the 1000 requests (option "sample")`},
		// Rows 100..109 in [10 s, 11 s).
		{"sample keeps none of a window", Options{File: az, StartS: 10, EndS: 11, Sample: 1e-9}, "kept none of the 10 requests"},
		{"one request, target rate", Options{File: az, First: 1, Rate: 5}, `trace.azure: option "rate": the replay (after window, sample and first) has 1 requests`},
		// Errors of transforms that do not know the file get its name.
		{"scale past the clock", Options{File: az, Scale: 1e-300}, "trace.azure: rate scaling puts request 1 at 1e+299 s, past what simulated time holds"},
		// 2^63 ns = 9.22e9 s = 92.2 periods of 1e8 s: copy 93 would start past it.
		{"repeat past the clock", Options{File: az, EndS: 1e8, Repeat: 1 << 30}, "trace.azure: repeat 93 starts past what simulated time holds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := Open(tt.o, 1)
			if err == nil {
				for tr.Next(new(workload.Request)) {
				}
				err = tr.Err()
				tr.Close()
			}
			if err == nil || !strings.HasPrefix(err.Error(), "trace: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want trace: …%s…", err, tt.want)
			}
		})
	}
	// Windows and samples that keep something are not errors.
	for _, o := range []Options{{File: az, StartS: 99.9}, {File: az, Sample: 0.01}, {File: az, First: 1}, {File: az, MaxContext: 2}} {
		if reqs, _ := openAll(t, o, 1); len(reqs) == 0 {
			t.Errorf("%+v: no requests", o)
		}
	}
}
