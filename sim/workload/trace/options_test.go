package trace

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		o    Options
		want string
	}{
		{Options{}, `trace: option "file": missing`},
		{Options{File: "f", Format: "xml"}, `trace: option "format": unknown format "xml"`},
		{Options{File: "f", Failed: "keep"}, `trace: option "failed": "keep": want "drop" or "one"`},
		{Options{File: "f", StartS: -1}, `trace: option "start_s": -1 must be a number ≥ 0`},
		{Options{File: "f", EndS: math.NaN()}, `trace: option "end_s": NaN must be a number ≥ 0`},
		{Options{File: "f", StartS: 5, EndS: 5}, `trace: option "end_s": 5 must be after start_s 5`},
		{Options{File: "f", EndS: 1e12}, `trace: option "end_s": past what simulated time holds`},
		{Options{File: "f", Sample: 1.5}, `trace: option "sample": 1.5 must be in (0, 1]`},
		{Options{File: "f", First: -1}, `trace: option "first": -1 must be ≥ 0`},
		{Options{File: "f", Rate: math.Inf(1)}, `trace: option "rate": +Inf must be a number > 0`},
		{Options{File: "f", Scale: -2}, `trace: option "scale": -2 must be a number > 0`},
		{Options{File: "f", Rate: 2, Scale: 2}, `trace: option "scale": give a target rate or a scale factor, not both`},
		{Options{File: "f", MaxContext: 1}, `trace: option "max_context": 1 must be ≥ 2`},
		{Options{File: "f", Repeat: -1}, `trace: option "repeat": -1 must be ≥ 0`},
		{Options{File: "f", Arrival: "gamma", Rate: 2, Burstiness: -1}, `trace: option "arrival": arrival burstiness -1`},
		{Options{File: "f", Arrival: "bursty", Rate: 2}, `trace: option "arrival": arrival process "bursty"`},
		{Options{File: "f", Arrival: "poisson", Scale: 2}, `trace: option "scale": applies to a trace's own timestamps`},
		{Options{File: "f", Burstiness: 2}, `trace: option "burstiness": applies to a synthetic arrival process`},
	}
	for _, tt := range tests {
		err := tt.o.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q…", tt.o, err, tt.want)
		}
	}
	if err := (Options{File: "f", Format: "auto", StartS: 1, EndS: 2, Sample: 0.5, First: 3, Rate: 4, MaxContext: 2, Repeat: 2}).Validate(); err != nil {
		t.Errorf("valid options rejected: %v", err)
	}
}

// writeTrace writes a generated n-row trace (row i at i·100 ms) to a file.
func writeTrace(t *testing.T, f Format, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trace."+string(f))
	if err := os.WriteFile(p, genTrace(f, n), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func openAll(t *testing.T, o Options, seed uint64) ([]workload.Request, *Trace) {
	t.Helper()
	tr, err := Open(o, seed)
	if err != nil {
		t.Fatal(err)
	}
	reqs := drainAll(t, tr)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil { // twice is fine
		t.Fatal(err)
	}
	return reqs, tr
}

func TestOpen(t *testing.T) {
	az := writeTrace(t, Azure, 1000) // rows at 0, 0.1, ..., 99.9 s
	tests := []struct {
		name string
		o    Options
		n    int
		want []sim.Time // the first arrivals, or all when n ≤ len
		str  string
	}{
		{"plain", Options{File: az}, 1000, secs(0, 0.1, 0.2), "(azure)"},
		// Window [10, 20) s: rows 100..199, shifted to 0, 0.1, ...
		{"window", Options{File: az, StartS: 10, EndS: 20}, 100, secs(0, 0.1), "window [10 s, 20 s)"},
		{"first", Options{File: az, First: 3}, 3, secs(0, 0.1, 0.2), "first 3"},
		// Scale 2: every time halved.
		{"scale", Options{File: az, Scale: 2}, 1000, secs(0, 0.05, 0.1), "rate ×2.0000"},
		// Three copies of the window, period = the window's 10 s.
		{"repeat window", Options{File: az, StartS: 10, EndS: 20, Repeat: 3}, 300, nil, "3 repeats"},
		// The same scaled by 2: the period shrinks to 5 s.
		{"repeat scaled", Options{File: az, StartS: 10, EndS: 20, Repeat: 3, Scale: 2}, 300, nil, "rate ×2.0000"},
		// Synthetic constant arrivals at 4 req/s replace the trace's times.
		{"arrival override", Options{File: az, First: 3, Arrival: "constant", Rate: 4}, 3, secs(0.25, 0.5, 0.75), "arrivals constant rate=4"},
	}
	for _, tt := range tests {
		reqs, tr := openAll(t, tt.o, 1)
		if len(reqs) != tt.n {
			t.Errorf("%s: %d requests, want %d", tt.name, len(reqs), tt.n)
			continue
		}
		if got := arrivalsOf(reqs[:len(tt.want)]); !slices.Equal(got, tt.want) {
			t.Errorf("%s: arrivals %v, want %v", tt.name, got, tt.want)
		}
		if !strings.Contains(tr.String(), tt.str) {
			t.Errorf("%s: String() = %q, want …%s…", tt.name, tr.String(), tt.str)
		}
		if tr.Format() != Azure {
			t.Errorf("%s: format %s", tt.name, tr.Format())
		}
	}
	// Repeat periods: copy k of the window starts at k·10 s (k·5 s scaled ×2).
	for _, c := range []struct {
		scale  float64
		period float64
	}{{0, 10}, {2, 5}} {
		reqs, tr := openAll(t, Options{File: az, StartS: 10, EndS: 20, Repeat: 3, Scale: c.scale}, 1)
		if reqs[100].Arrival != sim.FromSeconds(c.period) || reqs[200].Arrival != sim.FromSeconds(2*c.period) {
			t.Errorf("scale %v: copies start at %v and %v, want %v s apart", c.scale, reqs[100].Arrival, reqs[200].Arrival, c.period)
		}
		// Each copy read the whole file up to 20 s: rows 0..200 (the one at
		// 20 s ends the window), 201 rows per copy, 3 copies.
		if cn := tr.Counts(); cn.Rows != 3*201 {
			t.Errorf("scale %v: counts %+v, want 603 rows over 3 copies", c.scale, cn)
		}
	}
}

// TestOpenRate: a target rate rescales the trace so that Characterize
// measures exactly that mean rate (requests over first-to-last span).
// The generated trace has 1000 requests over 99.9 s: 10.01 req/s.
func TestOpenRate(t *testing.T) {
	az := writeTrace(t, Azure, 1000)
	for _, target := range []float64{25, 3.5} {
		tr, err := Open(Options{File: az, Rate: target}, 1)
		if err != nil {
			t.Fatal(err)
		}
		st, err := Characterize(tr)
		if err != nil {
			t.Fatal(err)
		}
		tr.Close()
		// The scaled span is rounded to 1 ns: relative error ≤ 1e-9/25 s.
		if math.Abs(st.MeanRate-target) > 1e-9*target {
			t.Errorf("target %v req/s: replay has %v", target, st.MeanRate)
		}
		if want := target / (1000 / 99.9); math.Abs(tr.ScaleFactor()-want) > 1e-12*want {
			t.Errorf("scale factor %v, want %v", tr.ScaleFactor(), want)
		}
		if tr.Counts().Rows != 1000 {
			t.Errorf("the measuring pass was counted: %+v", tr.Counts())
		}
	}
	// A target rate for a window with one request is an error.
	if _, err := Open(Options{File: az, First: 1, Rate: 5}, 1); err == nil || !strings.Contains(err.Error(), "no mean rate to scale") {
		t.Errorf("one request, target rate: %v", err)
	}
}

func TestOpenLengthOnly(t *testing.T) {
	lp := writeTrace(t, Lengths, 100)
	if _, err := Open(Options{File: lp}, 1); err == nil || !strings.Contains(err.Error(), "the trace has no timestamps (format lengths)") {
		t.Errorf("length-only trace without a rate: %v", err)
	}
	reqs, tr := openAll(t, Options{File: lp, Rate: 5, First: 50}, 9)
	syn, _ := workload.Synthetic{Arrival: workload.Arrival{Rate: 5}, Prompt: workload.Constant{Value: 1}, Output: workload.Constant{Value: 1}, Count: 50, Seed: 9}.Source()
	if len(reqs) != 50 || !slices.Equal(arrivalsOf(reqs), arrivalsOf(drainAll(t, syn))) || tr.Timed() {
		t.Errorf("length-only with Poisson arrivals: %d requests, timed %v", len(reqs), tr.Timed())
	}
	if reqs[3].PromptTokens != genPrompt(3) || reqs[3].OutputTokens != genOutput(3) {
		t.Errorf("lengths not from the file: %+v", reqs[3])
	}
	// Repeat cycles the file: 3 × 100 requests, arrivals still increasing.
	reqs, _ = openAll(t, Options{File: lp, Rate: 5, Repeat: 3, Arrival: "gamma", Burstiness: 0.5}, 9)
	if len(reqs) != 300 || !slices.IsSortedFunc(reqs, func(a, b workload.Request) int { return int(a.Arrival - b.Arrival) }) {
		t.Errorf("repeated length-only trace: %d requests", len(reqs))
	}
}

func TestOpenCountsAndClip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(p, []byte("arrival_s,prompt_tokens,output_tokens\n0,5000,100\n1,x,1\n2,100,0\n3,10,10\n"), 0o644)
	if _, err := Open(Options{File: p}, 1); err != nil {
		t.Fatal(err) // the bad row surfaces when read, not at Open
	}
	tr, _ := Open(Options{File: p}, 1)
	n := drainN(tr)
	if n != 1 || tr.Err() == nil || !strings.Contains(tr.Err().Error(), "bad.csv:3:3") {
		t.Errorf("strict: %d requests, %v", n, tr.Err())
	}
	tr.Close()
	reqs, tr := openAll(t, Options{File: p, SkipBadRows: true, MaxContext: 2048}, 1)
	// Rows: 5000+100 clipped to 2047+1; x skipped; zero output dropped; 10+10 kept.
	if len(reqs) != 2 || reqs[0].PromptTokens != 2047 || reqs[0].OutputTokens != 1 || tr.Clipped() != 1 || tr.Skipped() != 1 ||
		tr.Counts() != (Counts{Rows: 4, Bad: 1, Failed: 1, Yielded: 2}) || len(tr.BadRows()) != 1 {
		t.Errorf("lenient: %+v, clipped %d, counts %+v, bad %v", reqs, tr.Clipped(), tr.Counts(), tr.BadRows())
	}
	if !strings.Contains(tr.String(), "clipped to 2048 tokens, skipping bad rows") {
		t.Errorf("String() = %q", tr.String())
	}
	if _, err := Open(Options{File: filepath.Join(t.TempDir(), "none.csv")}, 1); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

// TestOptionsTOML: the scenario's [workload.trace] table decodes into
// Options by its toml tags, every key known.
func TestOptionsTOML(t *testing.T) {
	const doc = `
file = "traces/conv.csv"
format = "azure"
skip_bad_rows = true
model_filter = "GPT-4"
log_type_filter = "API log"
failed = "one"
start_s = 600
end_s = 1200
sample = 0.5
first = 1000
rate = 8
max_context = 8192
repeat = 2
arrival = "gamma"
burstiness = 0.5
`
	var o Options
	md, err := toml.Decode(doc, &o)
	if err != nil {
		t.Fatal(err)
	}
	if u := md.Undecoded(); len(u) != 0 {
		t.Errorf("keys without a field: %v", u)
	}
	want := Options{File: "traces/conv.csv", Format: "azure", SkipBadRows: true, ModelFilter: "GPT-4", LogTypeFilter: "API log",
		Failed: "one", StartS: 600, EndS: 1200, Sample: 0.5, First: 1000, Rate: 8, MaxContext: 8192, Repeat: 2, Arrival: "gamma", Burstiness: 0.5}
	if o != want {
		t.Errorf("decoded %+v\nwant %+v", o, want)
	}
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
}
