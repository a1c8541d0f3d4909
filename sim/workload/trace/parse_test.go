package trace

import (
	"encoding/csv"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseCount(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"0", 0, true},
		{"4808", 4808, true},
		{"512.0", 512, true},   // pandas writes integer columns holding a NaN as floats
		{"512.000", 512, true}, // any number of zeros
		{"2147483647", math.MaxInt32, true},
		{"2147483648", 0, false}, // 2³¹ overflows workload.MaxTokens
		{"99999999999999999999999", 0, false},
		{"", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"12x", 0, false},
		{"12.5", 0, false}, // a fraction of a token
		{"12.", 0, false},
		{".0", 0, false},
		{"1e3", 0, false},
		{" 1", 0, false}, // callers trim
	}
	for _, tt := range tests {
		got, ok := parseCount([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseCount(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in  string
		exp int
		ns  int64
		ok  bool
	}{
		{"0", 9, 0, true},
		{"12", 9, 12e9, true},
		{"12.5", 9, 12.5e9, true},
		{".5", 9, 5e8, true},
		{"5.", 9, 5e9, true},
		{"0.000000001", 9, 1, true},
		{"0.0000000019", 9, 1, true}, // below 1 ns: truncated
		{"1178625", 6, 1178625e6, true},
		{"40", 6, 40e6, true}, // Mooncake: 40 ms
		{"0.5", 6, 500e3, true},
		{"1.5e3", 9, 1500e9, true}, // exponent: the strconv path
		{"1E-3", 6, 1e3, true},
		{"9223372036", 9, 9223372036e9, true}, // 9223372036 s = 9.223372036e18 ns < 2⁶³−1 = 9.223372036854775807e18
		{"9223372037", 9, 0, false},           // past 2⁶³−1 ns
		{"9223372036.854775807", 9, math.MaxInt64, true},
		{"9223372036.854775808", 9, 0, false},
		{"9223372036854", 6, 9223372036854e6, true}, // ms: 9.223372036854e18 ns
		{"9223372036855", 6, 0, false},
		{"1e400", 9, 0, false},
		{"-1", 9, 0, false},
		{"", 9, 0, false},
		{".", 9, 0, false},
		{"1x", 9, 0, false},
		{"1e", 9, 0, false},
		{"inf", 9, 0, false},
		{"NaN", 9, 0, false},
		{"0x10", 9, 0, false},
	}
	for _, tt := range tests {
		ns, ok := parseDuration([]byte(tt.in), tt.exp)
		if ns != tt.ns || ok != tt.ok {
			t.Errorf("parseDuration(%q, %d) = %d, %v; want %d, %v", tt.in, tt.exp, ns, ok, tt.ns, tt.ok)
		}
	}
}

func TestParseWallTime(t *testing.T) {
	tests := []struct {
		in    string
		want  string // RFC 3339 with nanoseconds, UTC; "" for an error
		badAt int
	}{
		{"2023-11-16 18:17:03.9799600", "2023-11-16T18:17:03.97996Z", -1},
		{"2023-11-16T18:17:03", "2023-11-16T18:17:03Z", -1},
		{"2024-05-10 00:00:00.009930+00:00", "2024-05-10T00:00:00.00993Z", -1},
		{"2024-05-10 02:00:00.5+02:00", "2024-05-10T00:00:00.5Z", -1},
		{"2024-05-09 22:00:00-02:00", "2024-05-10T00:00:00Z", -1},
		{"2024-02-29 00:00:00Z", "2024-02-29T00:00:00Z", -1},
		{"1970-01-01 00:00:00.123456789", "1970-01-01T00:00:00.123456789Z", -1},
		{"1900-03-01 00:00:00", "1900-03-01T00:00:00Z", -1},
		{"0001-01-01 00:00:00", "0001-01-01T00:00:00Z", -1},
		{"2023-02-29 00:00:00", "", 8}, // not a leap year
		{"2100-02-29 00:00:00", "", 8}, // century, not leap
		{"2023-13-01 00:00:00", "", 5},
		{"2023-11-16 24:00:00", "", 11},
		{"2023-11-16 18:60:00", "", 14},
		{"2023-11-16 18:17:60", "", 17},
		{"2023-11-16 18:17:03.", "", 20},
		{"2023-11-16 18:17:03.1234567890", "", 29}, // a 10th fraction digit
		{"2023-11-16 18:17:03 ", "", 19},
		{"2023-11-16 18:17:03+0100", "", 19},
		{"2023/11/16 18:17:03", "", 4},
		{"23-11-16 18:17:03", "", 0},
		{"", "", 0},
	}
	for _, tt := range tests {
		got, at, _ := parseWallTime([]byte(tt.in))
		if at != tt.badAt {
			t.Errorf("parseWallTime(%q): error at %d, want %d", tt.in, at, tt.badAt)
			continue
		}
		if tt.want == "" {
			continue
		}
		want, err := time.Parse(time.RFC3339Nano, tt.want)
		if err != nil {
			t.Fatal(err)
		}
		if got.sec != want.Unix() || got.nsec != int64(want.Nanosecond()) {
			t.Errorf("parseWallTime(%q) = %d s %d ns, want %d s %d ns", tt.in, got.sec, got.nsec, want.Unix(), want.Nanosecond())
		}
	}
}

// FuzzParseWallTime checks the hand-written timestamp parser against the
// standard library's: whatever it accepts, time.Parse reads the same instant.
func FuzzParseWallTime(f *testing.F) {
	for _, s := range []string{"2023-11-16 18:17:03.9799600", "2024-05-10 00:00:00.009930+00:00", "2024-02-29T23:59:59Z", "1999-12-31 23:59:59.999999999-12:30"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, at, _ := parseWallTime([]byte(s))
		if at >= 0 {
			if at > len(s) {
				t.Fatalf("error offset %d past the end of %q", at, s)
			}
			return
		}
		layout := "2006-01-02 15:04:05.999999999Z07:00"
		norm := strings.Replace(s, "T", " ", 1)
		if !strings.ContainsAny(norm[19:], "Z+-") {
			norm += "Z"
		}
		want, err := time.Parse(layout, norm)
		if err != nil {
			t.Fatalf("parseWallTime accepted %q, time.Parse rejects %q: %v", s, norm, err)
		}
		if got.sec != want.Unix() || got.nsec != int64(want.Nanosecond()) {
			t.Fatalf("parseWallTime(%q) = %d.%09d, time.Parse: %d.%09d", s, got.sec, got.nsec, want.Unix(), want.Nanosecond())
		}
	})
}

// FuzzParseNumbers checks parseCount, parseUint64 and parseDuration
// against strconv on the inputs they accept.
func FuzzParseNumbers(f *testing.F) {
	for _, s := range []string{"0", "4808", "512.0", "12.5", "1.5e3", "18446744073709551615", "9223372036.854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, ok := parseCount([]byte(s)); ok {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v != float64(n) || n < 0 || n > math.MaxInt32 {
				t.Fatalf("parseCount(%q) = %d; strconv: %v, %v", s, n, v, err)
			}
		}
		if u, ok := parseUint64([]byte(s)); ok {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil || v != u {
				t.Fatalf("parseUint64(%q) = %d; strconv: %d, %v", s, u, v, err)
			}
		} else if v, err := strconv.ParseUint(s, 10, 64); err == nil && !strings.ContainsAny(s, "_+") {
			t.Fatalf("parseUint64(%q) rejects %d", s, v)
		}
		for _, exp := range []int{6, 9} {
			ns, ok := parseDuration([]byte(s), exp)
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || ns < 0 {
				t.Fatalf("parseDuration(%q) = %d; strconv: %v", s, ns, err)
			}
			want := v * math.Pow10(exp)
			// Exact decimal parsing truncates below 1 ns; float64 has 53
			// bits, so allow 1 ns plus float64's relative error.
			if math.Abs(float64(ns)-want) > 1+want*1e-15 {
				t.Fatalf("parseDuration(%q, %d) = %d ns, strconv gives %v", s, exp, ns, want)
			}
		}
	})
}

func TestSplitCSV(t *testing.T) {
	tests := []struct {
		in     string
		fields []string
		offs   []int
		errCol int
	}{
		{"a,b,c", []string{"a", "b", "c"}, []int{0, 2, 4}, 0},
		{"Timestamp,Model,Request tokens", []string{"Timestamp", "Model", "Request tokens"}, []int{0, 10, 16}, 0},
		{" a , b ", []string{"a", "b"}, []int{1, 5}, 0},
		{"a,,c", []string{"a", "", "c"}, []int{0, 2, 3}, 0},
		{",", []string{"", ""}, []int{0, 1}, 0},
		{"", []string{""}, []int{0}, 0},
		{`"x,y",2`, []string{"x,y", "2"}, []int{0, 6}, 0},
		{`"say ""hi""",2`, []string{`say "hi"`, "2"}, []int{0, 13}, 0},
		{`1,"a""b","c""d"`, []string{"1", `a"b`, `c"d`}, []int{0, 2, 9}, 0},
		{`"",1`, []string{"", "1"}, []int{0, 3}, 0},
		{`"open,1`, nil, nil, 1},
		{`"a"b,1`, nil, nil, 4},
		{`a"b,1`, nil, nil, 2},
	}
	for _, tt := range tests {
		f, o, e := splitCSV([]byte(tt.in), nil, nil, make([]byte, 0, len(tt.in)))
		if e.col != tt.errCol {
			t.Errorf("splitCSV(%q): error at column %d (%s), want %d", tt.in, e.col, e.msg, tt.errCol)
			continue
		}
		if tt.errCol != 0 {
			continue
		}
		got := make([]string, len(f))
		for i := range f {
			got[i] = string(f[i])
		}
		if !reflect.DeepEqual(got, tt.fields) || !reflect.DeepEqual(o, tt.offs) {
			t.Errorf("splitCSV(%q) = %q at %v, want %q at %v", tt.in, got, o, tt.fields, tt.offs)
		}
	}
}

// FuzzSplitCSV checks the hand-written CSV splitter against encoding/csv on
// one line without blanks (where the two agree on RFC 4180: the splitter
// also trims blanks, which encoding/csv keeps).
func FuzzSplitCSV(f *testing.F) {
	for _, s := range []string{"a,b", `"x,y",2`, `"a""b",c`, `"open`, `a"b`, `"a"b`, ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" || strings.ContainsAny(s, " \t\r\n") {
			return
		}
		got, _, e := splitCSV([]byte(s), nil, nil, make([]byte, 0, len(s)))
		r := csv.NewReader(strings.NewReader(s))
		r.FieldsPerRecord = -1
		want, err := r.Read()
		if (err != nil) != e.failed() {
			t.Fatalf("splitCSV(%q): error %v (col %d); encoding/csv: %v", s, e.msg, e.col, err)
		}
		if err != nil {
			if e.col < 1 || e.col > len(s)+1 {
				t.Fatalf("splitCSV(%q): error column %d out of range", s, e.col)
			}
			return
		}
		if len(got) != len(want) {
			t.Fatalf("splitCSV(%q) = %q, encoding/csv %q", s, got, want)
		}
		for i := range got {
			if string(got[i]) != want[i] {
				t.Fatalf("splitCSV(%q) = %q, encoding/csv %q", s, got, want)
			}
		}
	})
}
