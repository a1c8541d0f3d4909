package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/sim/workload"
)

// checkReader runs a reader over data twice, stopping at the first bad row
// and skipping bad rows, and checks what every reader promises whatever the
// input: no panic; errors are *RowError with a line and column inside the
// input; requests are numbered 0, 1, 2, ..., arrive in order and have at
// least one prompt and one output token and no more prefix blocks than the
// prompt holds; skipping yields the same requests up to the bad row and
// accounts for every row.
func checkReader(t *testing.T, data string, o ReaderOptions) {
	o.SkipBadRows = false
	rd, err := NewReader(strings.NewReader(data), "fuzz", o)
	if err != nil {
		if !strings.HasPrefix(err.Error(), "trace: ") {
			t.Fatalf("NewReader error without the package name: %v", err)
		}
		return
	}
	lines := strings.Split(data, "\n")
	drain := func(rd *Reader) []row {
		var out []row
		var r workload.Request
		prev := int64(-1)
		for rd.Next(&r) {
			if r.ID != int64(len(out)) {
				t.Fatalf("request %d has ID %d", len(out), r.ID)
			}
			if int64(r.Arrival) < prev || r.Arrival < 0 {
				t.Fatalf("request %d arrives at %v, before %v", r.ID, r.Arrival, prev)
			}
			prev = int64(r.Arrival)
			if r.PromptTokens < 1 || r.OutputTokens < 1 {
				t.Fatalf("request %d has %d prompt and %d output tokens", r.ID, r.PromptTokens, r.OutputTokens)
			}
			if b := r.PrefixBlockTokens; len(r.Prefix) > 0 && (b < 1 || len(r.Prefix) > (r.PromptTokens+b-1)/b) {
				t.Fatalf("request %d: %d prefix blocks of %d tokens for a %d-token prompt", r.ID, len(r.Prefix), b, r.PromptTokens)
			}
			if !rd.Timed() && r.Arrival != 0 {
				t.Fatalf("length-only trace gave request %d a time", r.ID)
			}
			out = append(out, toRow(&r))
		}
		return out
	}
	strict := drain(rd)
	var re *RowError
	if err := rd.Err(); err != nil {
		if !errors.As(err, &re) {
			t.Fatalf("stopped with %v, not a *RowError", err)
		}
		if re.Line < 1 || re.Line > len(lines) {
			t.Fatalf("error on line %d of %d: %v", re.Line, len(lines), err)
		}
		if l := strings.TrimSuffix(lines[re.Line-1], "\r"); re.Col < 1 || re.Col > len(l)+1 {
			t.Fatalf("error at column %d of a %d-byte line %q: %v", re.Col, len(l), l, err)
		}
		if re.Msg == "" || re.File != "fuzz" {
			t.Fatalf("incomplete error %+v", re)
		}
	}
	o.SkipBadRows = true
	rd2, err := NewReader(strings.NewReader(data), "fuzz", o)
	if err != nil {
		t.Fatalf("header accepted once, then rejected: %v", err)
	}
	lenient := drain(rd2)
	if err := rd2.Err(); err != nil {
		t.Fatalf("with SkipBadRows: %v", err)
	}
	c := rd2.Counts()
	dropped := int64(0)
	if o.Failed != FailedOne {
		dropped = c.Failed
	}
	if c.Rows != c.Bad+c.Filtered+dropped+c.Yielded || c.Yielded != int64(len(lenient)) {
		t.Fatalf("counts do not add up: %+v, %d requests", c, len(lenient))
	}
	if re != nil && c.Bad == 0 {
		t.Fatalf("a bad row stopped the strict reader but the lenient one skipped none")
	}
	if re == nil && (c.Bad != 0 || len(lenient) != len(strict)) {
		t.Fatalf("no bad row, yet SkipBadRows changed the result: %+v", c)
	}
	if len(lenient) < len(strict) {
		t.Fatalf("skipping yielded %d requests, strict %d", len(lenient), len(strict))
	}
	for i := range strict {
		if !equalRow(strict[i], lenient[i]) {
			t.Fatalf("request %d differs when skipping: %+v vs %+v", i, strict[i], lenient[i])
		}
	}
	if len(rd2.BadRows()) != int(min(c.Bad, maxBadKept)) {
		t.Fatalf("%d bad rows kept of %d", len(rd2.BadRows()), c.Bad)
	}
}

func addFileSeeds(f *testing.F, files ...string) {
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

func FuzzAzure(f *testing.F) {
	addFileSeeds(f, "testdata/azure2024.csv")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,3180,8\n")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:05,1,8\n2023-11-16 18:17:04,1,8\n")
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\r\n\"2023-11-16 18:17:05\",\"1\",8\r\n2023-02-29 00:00:00,1,1\n")
	f.Fuzz(func(t *testing.T, data string) {
		checkReader(t, data, ReaderOptions{Format: Azure})
	})
}

func FuzzBurstGPT(f *testing.F) {
	addFileSeeds(f, "testdata/burstgpt.csv")
	f.Add("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Session ID,Elapsed time\n1,GPT-4,5,0,5,API log,s1,0.5\n2,GPT-4,5,6,11,API log,s1,1.5\n")
	f.Fuzz(func(t *testing.T, data string) {
		checkReader(t, data, ReaderOptions{Format: BurstGPT})
		checkReader(t, data, ReaderOptions{Format: BurstGPT, Model: "ChatGPT", LogType: "Conversation log", Failed: FailedOne})
	})
}

func FuzzLengths(f *testing.F) {
	addFileSeeds(f, "testdata/lengths.csv")
	f.Add("arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,10,20\n0.25,1,1\n")
	f.Fuzz(func(t *testing.T, data string) {
		checkReader(t, data, ReaderOptions{Format: Lengths})
	})
}

func FuzzServesimCSV(f *testing.F) {
	addFileSeeds(f, "testdata/servesim.csv")
	f.Add("arrival_s,prompt_tokens,output_tokens\n0,1,1\n1e-3,2,2\n")
	f.Fuzz(func(t *testing.T, data string) {
		checkReader(t, data, ReaderOptions{Format: Servesim})
	})
}

// FuzzDetect runs the reader on any input with the format detected.
func FuzzDetect(f *testing.F) {
	addFileSeeds(f, "testdata/azure2024.csv", "testdata/burstgpt.csv", "testdata/lengths.csv", "testdata/servesim.csv", "testdata/servesim.jsonl", "testdata/mooncake.jsonl")
	f.Fuzz(func(t *testing.T, data string) {
		checkReader(t, data, ReaderOptions{})
	})
}

// FuzzMooncake also checks the hand-written JSON scanner against
// encoding/json: a line it accepts is valid JSON whose timestamp,
// input_length, output_length and hash_ids encoding/json reads the same.
func FuzzMooncake(f *testing.F) {
	addFileSeeds(f, "testdata/mooncake.jsonl")
	f.Add(`{"timestamp": 1.5e3, "input_length": 10, "output_length": 2, "hash_ids": [], "extra": {"a": [1, "x", null, true]}}` + "\n")
	f.Add(`{"timest\u0061mp": 1, "input_length": 10, "output_length": 2, "hash_ids": [18446744073709551615]}`)
	f.Fuzz(func(t *testing.T, data string) {
		checkReader(t, data, ReaderOptions{Format: Mooncake})
		rd := &Reader{format: Mooncake}
		for _, line := range strings.Split(data, "\n") {
			var r workload.Request
			ts, e := rd.parseMooncake([]byte(line), &r)
			if e.failed() {
				continue
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("accepted %q, encoding/json: %v", line, err)
			}
			num := func(k string) float64 {
				v, err := strconv.ParseFloat(string(m[k]), 64)
				if err != nil {
					t.Fatalf("accepted %q, but %s = %s", line, k, m[k])
				}
				return v
			}
			if ms := num("timestamp"); math.Abs(float64(ts)-ms*1e6) > 1+ms*1e6*1e-15 {
				t.Fatalf("%q: timestamp %d ns, encoding/json %v ms", line, ts, ms)
			}
			if float64(r.PromptTokens) != num("input_length") || float64(r.OutputTokens) != num("output_length") {
				t.Fatalf("%q: lengths %d, %d", line, r.PromptTokens, r.OutputTokens)
			}
			var h []uint64
			if err := json.Unmarshal(m["hash_ids"], &h); err != nil || !slices.Equal(h, r.Prefix) {
				t.Fatalf("%q: hash_ids %v, encoding/json %v (%v)", line, r.Prefix, h, err)
			}
		}
	})
}

// FuzzServesimJSONL checks the servesim JSONL reader, and its values against
// encoding/json's on every line it accepts.
func FuzzServesimJSONL(f *testing.F) {
	addFileSeeds(f, "testdata/servesim.jsonl")
	f.Add(`{"arrival_s": 0, "prompt_tokens": 1, "output_tokens": 1, "class": "a\"b\u00e9", "ttft_slo_ms": null}`)
	f.Fuzz(func(t *testing.T, data string) {
		checkReader(t, data, ReaderOptions{Format: Servesim})
		rd := &Reader{format: Servesim, classes: map[string]string{}}
		for _, line := range strings.Split(data, "\n") {
			var r workload.Request
			ts, e := rd.parseNativeJSON([]byte(line), &r)
			if e.failed() {
				continue
			}
			var v struct {
				Arrival float64  `json:"arrival_s"`
				Prompt  int      `json:"prompt_tokens"`
				Output  int      `json:"output_tokens"`
				Class   *string  `json:"class"`
				TTFT    *float64 `json:"ttft_slo_ms"`
				Prefix  []uint64 `json:"prefix"`
			}
			dec := json.NewDecoder(bytes.NewReader([]byte(line)))
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("accepted %q, encoding/json: %v", line, err)
			}
			if math.Abs(float64(ts)-v.Arrival*1e9) > 1+v.Arrival*1e9*1e-15 || r.PromptTokens != v.Prompt || r.OutputTokens != v.Output {
				t.Fatalf("%q: read %d ns %d %d; encoding/json %+v", line, ts, r.PromptTokens, r.OutputTokens, v)
			}
			if v.Class != nil && *v.Class != r.Class {
				t.Fatalf("%q: class %q, encoding/json %q", line, r.Class, *v.Class)
			}
			if v.TTFT != nil && math.Abs(float64(r.TTFTSLO)-*v.TTFT*1e6) > 1+*v.TTFT*1e6*1e-15 {
				t.Fatalf("%q: ttft %v, encoding/json %v ms", line, r.TTFTSLO, *v.TTFT)
			}
			if len(v.Prefix) > 0 && !slices.Equal(v.Prefix, r.Prefix) {
				t.Fatalf("%q: prefix %v, encoding/json %v", line, r.Prefix, v.Prefix)
			}
		}
	})
}
