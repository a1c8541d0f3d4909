package plots

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"
)

func TestParseSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"1.500000000", 1_500_000_000, false},
		{"0.000000001", 1, false},
		{"152.062421802", 152_062_421_802, false},
		{"7.5", 7_500_000_000, false}, // fewer decimals: padded
		{".5", 500_000_000, false},
		{"12", 12_000_000_000, false},          // no point: strconv path
		{"1e3", 1_000_000_000_000, false},      // exponent: strconv path
		{"1.0000000004", 1_000_000_000, false}, // 10 decimals: rounded to the ns
		{"1.0000000006", 1_000_000_001, false}, //
		{"-1.0", 0, true},                      // negative
		{"NaN", 0, true},                       //
		{"+Inf", 0, true},                      //
		{"", 0, true},                          //
		{"1.2.3", 0, true},                     //
		{"99999999999.0", 0, true},             // 11 integer digits: strconv path, beyond maxSeconds (≈ 2.3e9 s)
		{"3000000000.000000000", 0, true},      // 10 digits but above maxSeconds
		{"2000000000.000000000", 2e18, false},  // 2e9 s ≤ maxSeconds = 9.22e18/4/1e9 ≈ 2.31e9 s
		{"0x1p3", 8_000_000_000, false},        // strconv accepts hex floats; harmless
		{"١.٥", 0, true},                       // non-ASCII digits
		{"1.5 ", 0, true},                      // trailing space
		{"0.", 0, false},                       // "0." is zero seconds
		{".", 0, true},                         // no digits at all
		{"00000000001.000000000", 1e9, false},  // 11 digits: strconv path
		{"4.000000000", 4_000_000_000, false},  //
		{"0.999999999", 999_999_999, false},    //
		{"123456789.123456789", 123456789123456789, false},
	} {
		got, err := parseSeconds(tc.in)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("parseSeconds(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestReadRequests(t *testing.T) {
	h := RequestsHeader + "\n"
	for _, tc := range []struct {
		name, csv string
		n         int
		err       string
	}{
		{"served", h + "5,0,0.684387246,0.698769654,1.719324386,56,94,14.382408,10.973707,1034.937140,0,\n", 1, ""},
		{"one token: empty tpot", h + "1,1,2.862274496,2.883846463,2.883846463,629,1,21.571967,,21.571967,0,\n", 1, ""},
		{"rejected", h + "2,0,1.0,,,9000,5,,,,0,exceeds-kv-capacity\n", 1, ""},
		{"rejected reason quoted", h + "2,0,1.0,,,9000,5,,,,0,\"a, b\"\n", 1, ""},
		{"header only", h, 0, ""},
		{"empty file", "", 0, "empty file"},
		{"wrong header", "id,instance\n", 0, `line 1: header has 2 columns, want 12`},
		{"renamed column", strings.Replace(h, "ttft_ms", "ttft", 1), 0, `line 1, column 8: header "ttft", want "ttft_ms"`},
		{"extra column", strings.TrimSuffix(h, "\n") + ",x\n", 0, "line 1: header has 13 columns, want 12"},
		{"short row", h + "5,0,0.6\n", 0, "line 2: 3 fields, want 12"},
		{"bad id", h + "x,0,0.6,0.7,1.7,56,94,14.3,10.9,1034.9,0,\n", 0, `line 2, column 1 (id): invalid integer "x"`},
		{"negative tokens", h + "1,0,0.6,0.7,1.7,-5,94,14.3,10.9,1034.9,0,\n", 0, `line 2, column 6 (prompt_tokens): -5 out of range`},
		{"bad time", h + "1,0,0.6,abc,1.7,56,94,14.3,10.9,1034.9,0,\n", 0, `line 2, column 4 (first_token_s): invalid time "abc"`},
		{"served without ttft", h + "1,0,0.6,0.7,1.7,56,94,,10.9,1034.9,0,\n", 0, `line 2, column 8 (ttft_ms): invalid number ""`},
		{"served, no tpot for 2 tokens", h + "1,0,0.6,0.7,1.7,56,2,14.3,,1034.9,0,\n", 0, `line 2, column 9 (tpot_ms)`},
		{"finish before first token", h + "1,0,0.6,0.7,0.65,56,94,14.3,10.9,1034.9,0,\n", 0, `line 2, column 5 (finish_s): finish 0.65 before first token`},
		{"rejected with a ttft", h + "1,0,0.6,,,56,94,14.3,,,0,too-long\n", 0, `line 2, column 8 (ttft_ms): a rejected request`},
		{"NaN latency", h + "1,0,0.6,0.7,1.7,56,94,NaN,10.9,1034.9,0,\n", 0, `column 8 (ttft_ms): invalid number "NaN"`},
		{"error on line 4", h + "5,0,0.6,0.7,1.7,56,94,14.3,10.9,1034.9,0,\n5,0,0.6,0.7,1.7,56,94,14.3,10.9,1034.9,0,\n5,0,0.6,0.7,1.7,56,94,14.3,10.9,1034.9,z,\n", 0, "line 4, column 11 (preemptions)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qs, err := ReadRequests(strings.NewReader(tc.csv), "requests.csv")
			if wantError(t, err, "plots: requests.csv", tc.err) {
				return
			}
			if len(qs) != tc.n {
				t.Fatalf("%d requests, want %d", len(qs), tc.n)
			}
		})
	}
}

func TestReadRequestsValues(t *testing.T) {
	qs, err := ReadRequests(strings.NewReader(RequestsHeader+"\n"+
		"5,1,0.684387246,0.698769654,1.719324386,56,94,14.382408,10.973707,1034.937140,2,\n"+
		"6,0,1.0,,,9000,1,,,,0,exceeds-kv-capacity\n"), "requests.csv")
	if err != nil {
		t.Fatal(err)
	}
	q := qs[0]
	// first_token − arrival = 0.698769654 − 0.684387246 s = 14,382,408 ns
	// = the row's ttft_ms 14.382408.
	if q.ID != 5 || q.Instance != 1 || q.Arrival != 684_387_246 || q.FirstToken-q.Arrival != 14_382_408 || q.Finish != 1_719_324_386 ||
		q.PromptTokens != 56 || q.Output != 94 || q.TTFTms != 14.382408 || q.TPOTms != 10.973707 || q.Preemptions != 2 || !q.Served() || q.Line != 2 {
		t.Errorf("served row %+v", q)
	}
	r := qs[1]
	if r.Served() || r.Rejected != "exceeds-kv-capacity" || r.FirstToken != -1 || r.Finish != -1 || !math.IsNaN(r.TTFTms) || !math.IsNaN(r.TPOTms) || !math.IsNaN(r.E2Ems) {
		t.Errorf("rejected row %+v", r)
	}
}

func TestReadSteps(t *testing.T) {
	h := StepsHeader + "\n"
	row := "0,0.088203551,0.021954705,1,901,0,57,25138,0,1.2794538868736e+13,2.5195883008e+10\n"
	for _, tc := range []struct {
		name, csv string
		n         int
		err       string
	}{
		{"ok", h + row + row, 2, ""},
		{"header only", h, 0, ""},
		{"empty", "", 0, "empty file"},
		{"wrong header", RequestsHeader + "\n", 0, "line 1, column 1: header \"id\", want \"instance\""},
		{"bad start", h + "0,x,0.02,1,901,0,57,25138,0,1,1\n", 0, `line 2, column 2 (start_s): invalid time "x"`},
		{"negative instance", h + "-1,0.1,0.02,1,901,0,57,25138,0,1,1\n", 0, `line 2, column 1 (instance): -1 out of range`},
		{"kv over capacity", h + "0,0.1,0.02,1,901,0,57,50,0,1,1\n", 0, `line 2, column 7 (kv_blocks_used): 57 blocks used of 50`},
		{"bad flops", h + "0,0.1,0.02,1,901,0,57,25138,0,Inf,1\n", 0, `line 2, column 10 (flops_per_gpu): invalid number "Inf"`},
		{"too many fields", h + "0,0.1,0.02,1,901,0,57,25138,0,1,1,1\n", 0, "line 2: 12 fields, want 11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss, err := ReadSteps(strings.NewReader(tc.csv), "steps.csv")
			if wantError(t, err, "plots: steps.csv", tc.err) {
				return
			}
			if len(ss) != tc.n {
				t.Fatalf("%d steps, want %d", len(ss), tc.n)
			}
		})
	}
	ss, _ := ReadSteps(strings.NewReader(h+row), "steps.csv")
	s := ss[0]
	if s.Instance != 0 || s.Start != 88_203_551 || s.Duration != 21_954_705 || s.Prefills != 1 || s.PrefillTokens != 901 ||
		s.Decodes != 0 || s.KVUsed != 57 || s.KVTotal != 25138 || s.FLOPs != 1.2794538868736e+13 || s.Bytes != 2.5195883008e+10 {
		t.Errorf("step %+v", s)
	}
}

func TestReadSummary(t *testing.T) {
	ok := `{"scenario": {"name": "s"}, "instance": {"model": "m", "gpu": "h100", "tp": 2, "policy": "chunked"},
 "metrics": {"completed": 3, "rejected": 1, "duration_s": 2.5, "slo": {"ttft_ms": 500, "tpot_ms": 50, "e2e_ms": 0},
 "slo_attainment": 0.75, "ttft_ms": {"n": 3, "median": 12.5, "p99": 40}, "busy_by_instance_s": [1, 2], "other": [1]}}`
	for _, tc := range []struct {
		name, json string
		err        string
	}{
		{"ok", ok, ""},
		// Files written before the SLO was in milliseconds: 500,000,000 ns = 500 ms; 50,000,000 ns = 50 ms.
		{"legacy ns", strings.Replace(ok, `"ttft_ms": 500, "tpot_ms": 50, "e2e_ms": 0`, `"ttft_ns": 500000000, "tpot_ns": 50000000, "e2e_ns": 0`, 1), ""},
		// Line 3 is `    "completed": 3,,`: the second comma, the bad byte, is column 20.
		{"syntax error", "{\n  \"metrics\": {\n    \"completed\": 3,,\n", "summary.json line 3, column 20: invalid character ','"},
		// encoding/json reports a type error at the end of the value: `"completed": "three"` ends in column 20.
		{"type error", "{\"metrics\": {\n\"completed\": \"three\"}}", `summary.json line 2, column 20: field "metrics.completed": string value where int is wanted`},
		{"no metrics", `{"scenario": {}}`, `no "metrics" object`},
		{"negative slo", `{"metrics": {"slo": {"ttft_ms": -5}}}`, "metrics.slo: SLO ttft"},
		{"attainment above 1", `{"metrics": {"slo_attainment": 1.5}}`, "slo_attainment 1.5"},
		{"empty", "", "unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ReadSummary(strings.NewReader(tc.json), "summary.json")
			if wantError(t, err, "plots: summary.json", tc.err) {
				return
			}
			if s.Name != "s" || s.Model != "m" || s.GPU != "h100" || s.TP != 2 || s.Policy != "chunked" || s.SLO != (SLO{TTFTms: 500, TPOTms: 50}) ||
				s.Attainment != 0.75 || s.Completed != 3 || s.Rejected != 1 || s.Duration != 2.5 || s.TTFT.Median != 12.5 || s.TTFT.P99 != 40 || s.Instances != 2 {
				t.Errorf("summary %+v", s)
			}
		})
	}
}

func TestLoadRun(t *testing.T) {
	r, err := LoadRun("testdata/run-chunked")
	if err != nil {
		t.Fatal(err)
	}
	if r.Label != "run-chunked" || len(r.Requests) != 200 || len(r.Steps) == 0 || r.Summary == nil {
		t.Fatalf("run %s: label %q, %d requests, %d steps, summary %v", r.Dir, r.Label, len(r.Requests), len(r.Steps), r.Summary)
	}
	// The fixture's summary says 194 served and 6 rejected of 200.
	served := 0
	for i := range r.Requests {
		if r.Requests[i].Served() {
			served++
		}
	}
	if served != r.Summary.Completed || len(r.Requests)-served != r.Summary.Rejected {
		t.Errorf("%d served, %d rejected; summary.json says %d, %d", served, len(r.Requests)-served, r.Summary.Completed, r.Summary.Rejected)
	}
	noSteps, err := LoadRun("testdata/run-prefill-first")
	if err != nil {
		t.Fatal(err)
	}
	if noSteps.Steps != nil {
		t.Errorf("run without steps.csv has %d steps", len(noSteps.Steps))
	}
	if _, err := LoadRun("testdata/nonexistent"); err == nil || !strings.Contains(err.Error(), "requests.csv") {
		t.Errorf("missing run: error %v", err)
	}
}

// BenchmarkReadSteps reads the fixture's steps.csv (about 900 rows); a
// 100,000-request run writes about 1.5 M rows.
func BenchmarkReadSteps(b *testing.B) {
	data, err := os.ReadFile("testdata/run-chunked/steps.csv")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadSteps(bytes.NewReader(data), "steps.csv"); err != nil {
			b.Fatal(err)
		}
	}
}
