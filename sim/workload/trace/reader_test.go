package trace

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// row is the part of a request a reader sets, for table comparisons.
type row struct {
	id        int64
	at        sim.Time
	in, out   int
	class     string
	ttft      sim.Time
	tpot      sim.Time
	prefix    []uint64
	blockToks int
}

func toRow(r *workload.Request) row {
	return row{r.ID, r.Arrival, r.PromptTokens, r.OutputTokens, r.Class, r.TTFTSLO, r.TPOTSLO, slices.Clone(r.Prefix), r.PrefixBlockTokens}
}

// readAll drains a reader over text, copying each request (Prefix is reused).
func readAll(t *testing.T, text string, o ReaderOptions) ([]row, *Reader, error) {
	t.Helper()
	rd, err := NewReader(strings.NewReader(text), "t.csv", o)
	if err != nil {
		return nil, nil, err
	}
	var out []row
	var r workload.Request
	for rd.Next(&r) {
		out = append(out, toRow(&r))
	}
	return out, rd, rd.Err()
}

func readFile(t *testing.T, path string, o ReaderOptions) ([]row, *Reader) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, rd, err := readAll(t, string(b), o)
	if err != nil {
		t.Fatal(err)
	}
	return rows, rd
}

const ms = sim.Millisecond

// readCase is one file TestReadFormats reads: its options, the format it
// detects, whether its rows are timed, the rows and the counts.
type readCase struct {
	file   string
	o      ReaderOptions
	format Format
	timed  bool
	want   []row
	counts Counts
}

func TestReadFormats(t *testing.T) {
	tests := []readCase{
		{
			// Azure 2024 layout (offset +00:00, 6 fraction digits): times
			// relative to the first row; the zero-output row is dropped.
			file: "testdata/azure2024.csv", format: Azure, timed: true,
			want: []row{
				{id: 0, at: 0, in: 2162, out: 5},
				{id: 1, at: 10 * ms, in: 100, out: 20},                   // .019930 − .009930
				{id: 2, at: 1990070 * sim.Microsecond, in: 400, out: 40}, // 2.000000 − 0.009930 s
			},
			counts: Counts{Rows: 4, Failed: 1, Yielded: 3},
		},
		{
			file: "testdata/azure2024.csv", o: ReaderOptions{Failed: FailedOne}, format: Azure, timed: true,
			want: []row{
				{id: 0, at: 0, in: 2162, out: 5},
				{id: 1, at: 10 * ms, in: 100, out: 20},
				{id: 2, at: sim.Second, in: 300, out: 1}, // the failed row, replayed with 1 output token
				{id: 3, at: 1990070 * sim.Microsecond, in: 400, out: 40},
			},
			counts: Counts{Rows: 4, Failed: 1, Yielded: 4},
		},
		{
			// BurstGPT: seconds since the first row (5 s); the zero-response row is a failure.
			file: "testdata/burstgpt.csv", format: BurstGPT, timed: true,
			want: []row{
				{id: 0, at: 0, in: 472, out: 18},
				{id: 1, at: 113 * sim.Second, in: 417, out: 276}, // 118 − 5
				{id: 2, at: 120500 * ms, in: 288, out: 33},       // 125.5 − 5
				{id: 3, at: 125 * sim.Second, in: 1000, out: 10}, // 130 − 5
			},
			counts: Counts{Rows: 5, Failed: 1, Yielded: 4},
		},
		{
			file: "testdata/burstgpt.csv", o: ReaderOptions{Model: "chatgpt", LogType: "Conversation log"}, format: BurstGPT, timed: true,
			want: []row{
				{id: 0, at: 0, in: 472, out: 18},
			},
			// Rows 3 and 5 (GPT-4) and row 4 (API log) are filtered; row 2 is a failure.
			counts: Counts{Rows: 5, Filtered: 3, Failed: 1, Yielded: 1},
		},
		{
			file: "testdata/burstgpt.csv", o: ReaderOptions{Model: "GPT-4"}, format: BurstGPT, timed: true,
			want: []row{
				{id: 0, at: 113 * sim.Second, in: 417, out: 276}, // times stay relative to the file's first row
				{id: 1, at: 125 * sim.Second, in: 1000, out: 10},
			},
			counts: Counts{Rows: 5, Filtered: 3, Yielded: 2}, // the failed row is ChatGPT's: filtered first
		},
		{
			file: "testdata/mooncake.jsonl", format: Mooncake, timed: true,
			want: []row{
				{id: 0, at: 0, in: 1000, out: 10, prefix: []uint64{0, 1}, blockToks: 512},
				{id: 1, at: 0, in: 1100, out: 20, prefix: []uint64{0, 2, 3}, blockToks: 512},
				{id: 2, at: 1500 * ms, in: 100, out: 5, prefix: []uint64{4}, blockToks: 512},
			},
			counts: Counts{Rows: 3, Yielded: 3},
		},
		{
			file: "testdata/lengths.csv", format: Lengths, timed: false,
			want: []row{
				{id: 0, in: 74, out: 918},
				{id: 1, in: 290, out: 905},
				{id: 2, in: 3772, out: 54},
			},
			counts: Counts{Rows: 3, Yielded: 3},
		},
	}
	native := []row{
		{id: 0, at: 500 * ms, in: 100, out: 10, class: "chat", ttft: 500 * ms, tpot: 50 * ms},
		{id: 1, at: 1250 * ms, in: 2000, out: 200, class: "summarize", ttft: 2 * sim.Second, tpot: 100 * ms, prefix: []uint64{7, 8, 9}, blockToks: 16},
		{id: 2, at: 1250 * ms, in: 30, out: 3},
	}
	for _, f := range []string{"testdata/servesim.csv", "testdata/servesim.jsonl"} {
		tests = append(tests, readCase{file: f, format: Servesim, timed: true, want: native, counts: Counts{Rows: 3, Yielded: 3}})
	}
	for _, tt := range tests {
		for _, named := range []bool{false, true} {
			o := tt.o
			if named {
				o.Format = tt.format
			}
			got, rd := readFile(t, tt.file, o)
			if rd.Format() != tt.format || rd.Timed() != tt.timed {
				t.Errorf("%s: format %s timed %v, want %s %v", tt.file, rd.Format(), rd.Timed(), tt.format, tt.timed)
			}
			if len(got) != len(tt.want) {
				t.Errorf("%s %+v: %d requests, want %d: %+v", tt.file, o, len(got), len(tt.want), got)
				continue
			}
			for i := range got {
				w := tt.want[i]
				if w.prefix == nil {
					w.prefix = []uint64{}
				}
				g := got[i]
				if g.prefix == nil {
					g.prefix = []uint64{}
				}
				if !equalRow(g, w) {
					t.Errorf("%s %+v: request %d = %+v, want %+v", tt.file, o, i, g, w)
				}
			}
			if rd.Counts() != tt.counts {
				t.Errorf("%s %+v: counts %+v, want %+v", tt.file, o, rd.Counts(), tt.counts)
			}
		}
	}
}

func equalRow(a, b row) bool {
	return a.id == b.id && a.at == b.at && a.in == b.in && a.out == b.out && a.class == b.class &&
		a.ttft == b.ttft && a.tpot == b.tpot && slices.Equal(a.prefix, b.prefix) && a.blockToks == b.blockToks
}

// TestBadRows checks that each malformed row stops the reader with an error
// naming file, line, column and field, and that with SkipBadRows the same
// row is skipped and counted.
func TestBadRows(t *testing.T) {
	const azHead = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	const azOK = "2023-11-16 18:17:03.9799600,4808,10\n"
	const mcOK = `{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}` + "\n"
	const bgHead = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
	const nativeHead = "arrival_s,prompt_tokens,output_tokens,class,prefix,prefix_block_tokens\n"
	tests := []struct {
		name, text string
		want       string // the error text
	}{
		{"azure bad count", azHead + azOK + "2023-11-16 18:17:04.0319600,12x,8\n",
			`trace: t.csv:3:29: field "ContextTokens": "12x" is not a whole number of tokens in 0..2147483647`},
		{"azure bad time", azHead + azOK + "2023-11-16 18:71:04.0,1,8\n",
			`trace: t.csv:3:15: field "TIMESTAMP": "2023-11-16 18:71:04.0": want minutes 00-59 (timestamps look like 2023-11-16 18:17:03.9799600)`},
		{"azure backwards", azHead + azOK + "2023-11-16 18:17:03.0,1,8\n",
			`trace: t.csv:3:1: field "TIMESTAMP": time goes backwards: "2023-11-16 18:17:03.0" is before the first row`},
		{"azure backwards later", azHead + azOK + "2023-11-16 18:17:05,1,8\n2023-11-16 18:17:04,1,8\n",
			`trace: t.csv:4:1: field "TIMESTAMP": time goes backwards: 0.020040000s after 1.020040000s (rows must be in arrival order)`},
		{"azure short row", azHead + azOK + "2023-11-16 18:17:05,1\n",
			`trace: t.csv:3:22: 2 fields, the header has 3`},
		{"azure zero prompt", azHead + azOK + "2023-11-16 18:17:05,0,8\n",
			`trace: t.csv:3:21: field "ContextTokens": a request needs at least 1 prompt token`},
		{"azure open quote", azHead + azOK + "\"2023-11-16 18:17:05,1,8\n",
			`trace: t.csv:3:1: quoted field not closed (line breaks inside quotes are not supported)`},
		{"mooncake not json", mcOK + "timestamp: 5\n",
			`trace: t.csv:2:1: want '{' (one JSON object per line), found "t"`},
		{"mooncake missing", mcOK + `{"timestamp": 5, "input_length": 10, "hash_ids": []}` + "\n",
			`trace: t.csv:2:53: field "output_length": missing`},
		{"mooncake negative", mcOK + `{"timestamp": -5, "input_length": 10, "output_length": 1, "hash_ids": [1]}` + "\n",
			`trace: t.csv:2:15: field "timestamp": "-5" is not a number of milliseconds ≥ 0`},
		{"mooncake bad hash", mcOK + `{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1, -2]}` + "\n",
			`trace: t.csv:2:74: field "hash_ids": "-2" is not an unsigned 64-bit integer`},
		{"mooncake duplicate", mcOK + `{"timestamp": 5, "timestamp": 6, "input_length": 10, "output_length": 1, "hash_ids": [1]}` + "\n",
			`trace: t.csv:2:18: field "timestamp": key appears twice`},
		{"mooncake trailing", mcOK + `{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1]} x` + "\n",
			`trace: t.csv:2:75: want the end of the line after the object, found "x"`},
		{"mooncake too many blocks", mcOK + `{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1, 2]}` + "\n",
			`trace: t.csv:2:1: field "hash_ids": 2 prefix blocks of 512 tokens are more than a 10-token prompt holds`},
		{"mooncake backwards", mcOK + `{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1]}` + "\n" +
			`{"timestamp": 4.5, "input_length": 10, "output_length": 1, "hash_ids": [1]}` + "\n",
			`trace: t.csv:3:1: field "timestamp": time goes backwards: 0.004500000s after 0.005000000s (rows must be in arrival order)`},
		{"burstgpt bad time", bgHead + "5,ChatGPT,1,1,2,API log\nx,ChatGPT,1,1,2,API log\n",
			`trace: t.csv:3:1: field "Timestamp": "x" is not a number of seconds ≥ 0`},
		{"native unknown key", `{"arrival_s": 0, "prompt_tokens": 1, "output_tokens": 1, "priority": 3}` + "\n",
			`trace: t.csv:1:58: field "priority": unknown key (known: arrival_s, prompt_tokens, output_tokens, class, ttft_slo_ms, tpot_slo_ms, prefix, prefix_block_tokens)`},
		{"native prefix without block", `{"arrival_s": 0, "prompt_tokens": 100, "output_tokens": 1, "prefix": [1]}` + "\n",
			`trace: t.csv:1:74: field "prefix_block_tokens": a row with a prefix needs prefix_block_tokens ≥ 1`},
		{"native csv bad prefix", nativeHead + "0,100,1,chat,1 x 3,16\n",
			`trace: t.csv:2:16: field "prefix": "x" is not an unsigned 64-bit integer (prefix hashes are separated by spaces)`},
		{"lengths bad", "num_prefill_tokens,num_decode_tokens\n5,5\n5,five\n",
			`trace: t.csv:3:3: field "num_decode_tokens": "five" is not a whole number of tokens in 0..2147483647`},
	}
	for _, tt := range tests {
		_, _, err := readAll(t, tt.text, ReaderOptions{})
		var re *RowError
		if !errors.As(err, &re) {
			t.Errorf("%s: error %v, want a *RowError", tt.name, err)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, err, tt.want)
		}
		// Skipped: the good rows come through, the bad one is counted.
		rows, rd, err := readAll(t, tt.text, ReaderOptions{SkipBadRows: true})
		if err != nil {
			t.Errorf("%s: with SkipBadRows: %v", tt.name, err)
			continue
		}
		c := rd.Counts()
		if c.Bad != 1 || c.Rows != c.Bad+c.Yielded || int64(len(rows)) != c.Yielded {
			t.Errorf("%s: with SkipBadRows: counts %+v, %d requests", tt.name, c, len(rows))
		}
		if len(rd.BadRows()) != 1 || rd.BadRows()[0].Error() != tt.want {
			t.Errorf("%s: BadRows() = %v", tt.name, rd.BadRows())
		}
	}
}

func TestHeaderErrors(t *testing.T) {
	tests := []struct {
		text string
		o    ReaderOptions
		want string
	}{
		{"", ReaderOptions{}, "trace: t.csv: empty file (no header)"},
		{"\n\n", ReaderOptions{}, "trace: t.csv: empty file (no header)"},
		{"a,b,c\n1,2,3\n", ReaderOptions{}, `trace: t.csv:1: cannot tell the format from the header "a,b,c"`},
		{"TIMESTAMP,ContextTokens\n", ReaderOptions{Format: Azure}, `trace: t.csv:1: header has no column "generatedtokens", which format azure needs`},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n", ReaderOptions{Format: Mooncake}, "trace: t.csv:1: format mooncake is JSONL"},
		{`{"x": 1}` + "\n", ReaderOptions{}, "trace: t.csv:1: cannot tell the format from the first JSON object"},
		{`{"timestamp": 1}` + "\n", ReaderOptions{Format: Azure}, "trace: t.csv:1: format azure is CSV but the file holds JSON objects"},
		{"a,a\n", ReaderOptions{}, `trace: t.csv:1: header: column "a" appears twice`},
		{"arrival_s,prompt_tokens,output_tokens,prio\n", ReaderOptions{}, `trace: t.csv:1: header: unknown column "prio" for format servesim`},
		{"arrival_s,prompt_tokens,output_tokens,prefix\n", ReaderOptions{}, `trace: t.csv:1: header: columns prefix and prefix_block_tokens go together`},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n", ReaderOptions{Model: "GPT-4"}, "trace: t.csv: a model or log-type filter applies to BurstGPT traces only (this is azure)"},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n", ReaderOptions{Failed: "keep"}, `trace: t.csv: failed rows "keep": want "drop" or "one"`},
		{"TIMESTAMP,ContextTokens,GeneratedTokens\n", ReaderOptions{Format: "csv"}, `trace: unknown format "csv"`},
	}
	for _, tt := range tests {
		_, err := NewReader(strings.NewReader(tt.text), "t.csv", tt.o)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("NewReader(%q, %+v) = %v, want %q…", tt.text, tt.o, err, tt.want)
		}
	}
}

// TestLineHandling: CRLF endings, a byte-order mark, blank lines, a last
// line without a newline, a quoted header, and a line longer than the read
// buffer all read as plain rows.
func TestLineHandling(t *testing.T) {
	long := `{"timestamp": 0, "input_length": 70000000, "output_length": 1, "hash_ids": [` // 136719 blocks of 512 = 70000000/512 rounded up
	var b strings.Builder
	b.WriteString(long)
	n := (70000000 + 511) / 512
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("123456")
	}
	b.WriteString("]}\n")
	tests := []struct {
		text string
		n    int
	}{
		{"TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03,1,2\r\n\r\n2023-11-16 18:17:04,3,4", 2},
		{"\xef\xbb\xbf\"TIMESTAMP\",\"ContextTokens\",\"GeneratedTokens\"\n2023-11-16 18:17:03,1,2\n", 1},
		{"\n  \nnum_prefill_tokens,num_decode_tokens\n\n1,2\n \t \n3,4\n", 2},
		{b.String(), 1},
	}
	for _, tt := range tests {
		rows, rd, err := readAll(t, tt.text, ReaderOptions{})
		if err != nil || len(rows) != tt.n || rd.Counts().Rows != int64(tt.n) {
			t.Errorf("%.60q: %d rows, %v, counts %+v; want %d", tt.text, len(rows), err, rd, tt.n)
		}
	}
	// The long line's hashes all arrived.
	rows, _, _ := readAll(t, b.String(), ReaderOptions{})
	if len(rows) == 1 && len(rows[0].prefix) != n {
		t.Errorf("long line: %d hashes, want %d", len(rows[0].prefix), n)
	}
}

// TestReaderNoAlloc: reading a well-formed row allocates nothing, in every
// format (the hot path of a 10-million-row replay).
func TestReaderNoAlloc(t *testing.T) {
	for _, f := range Formats {
		data := genTrace(f, 2000)
		rd, err := NewReader(strings.NewReader(string(data)), "gen", ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var r workload.Request
		for i := 0; i < 10; i++ { // warm up: buffers reach their size
			rd.Next(&r)
		}
		allocs := testing.AllocsPerRun(1000, func() {
			if !rd.Next(&r) {
				t.Fatalf("%s: trace ended early: %v", f, rd.Err())
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per row, want 0", f, allocs)
		}
	}
}

// TestLineTooLong: a line over 16 MiB is an error naming its line, not an
// unbounded buffer.
func TestLineTooLong(t *testing.T) {
	text := "num_prefill_tokens,num_decode_tokens\n1,2\n" + strings.Repeat("9", maxLine+1) + ",1\n"
	rows, _, err := readAll(t, text, ReaderOptions{SkipBadRows: true})
	if len(rows) != 1 || err == nil || err.Error() != "trace: t.csv: line 3: line longer than 16 MiB" {
		t.Errorf("%d rows, %v", len(rows), err)
	}
}
