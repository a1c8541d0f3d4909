package trace

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/sim/workload"
)

// TestCharacterize computes every statistic of a small servesim trace by hand.
func TestCharacterize(t *testing.T) {
	const text = `arrival_s,prompt_tokens,output_tokens,class,prefix,prefix_block_tokens
0,10,1,chat,1 2,5
30,20,2,chat,1 3,10
59,30,3,sum,,
60,40,4,chat,1 2 3 4,10
61,50,5,,,
150,60,0,,,
200,70,6,sum,9,100
`
	rd, err := NewReader(strings.NewReader(text), "t.csv", ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := Characterize(rd)
	if err != nil {
		t.Fatal(err)
	}
	// The row at 150 s has zero output tokens: dropped as failed, so 6
	// requests at 0, 30, 59, 60, 61, 200 s.
	want := Stats{
		Format:   Servesim,
		Counts:   Counts{Rows: 7, Failed: 1, Yielded: 6},
		Requests: 6,
		Timed:    true,
		// 200 − 0 s; 6 requests / 200 s = 0.03 req/s = 1.8 req/min.
		DurationS: 200, MeanRate: 0.03, MeanPerMin: 1.8,
		// Minutes from 0: [0,60) holds 0, 30, 59 → 3; [60,120) 60, 61 → 2; [180,240) 200 → 1.
		PeakPerMin: 3, PeakMinuteS: 0,
		// Input lengths 10 20 30 40 50 70: mean 220/6 = 36.67; p50 at position
		// 0.5·5 = 2.5 → 30 + 0.5·10 = 35; p90 at 4.5 → 50 + 0.5·20 = 60;
		// p99 at 4.95 → 50 + 0.95·20 = 69.
		Input: LengthStats{Mean: 220.0 / 6, Min: 10, P50: 35, P90: 60, P99: 69, Max: 70, Sum: 220},
		// Output lengths 1 2 3 4 5 6: mean 3.5; p50 at 2.5 → 3.5; p90 at 4.5
		// → 5.5; p99 at 4.95 → 5.95.
		Output: LengthStats{Mean: 3.5, Min: 1, P50: 3.5, P90: 5.5, P99: 5.95, Max: 6, Sum: 21},
		// Hashes in order: 1 2 | 1 3 | 1 2 3 4 | 9: 9 blocks, of which
		// 1 (2nd), 1, 2, 3 (3rd row) were seen before: 4/9.
		PrefixKnown: true, PrefixBlocks: 9, PrefixReused: 4, PrefixReuse: 4.0 / 9,
		Classes: map[string]int64{"chat": 3, "sum": 2},
	}
	// Gaps 30, 29, 1, 1, 139 s: mean 40; deviations −10, −11, −39, −39, 99;
	// squares 100 + 121 + 1521 + 1521 + 9801 = 13064; population variance
	// 13064/5 = 2612.8; CV = √2612.8 / 40 = 51.1155… / 40 = 1.27789.
	wantCV := math.Sqrt(2612.8) / 40
	if math.Abs(st.GapCV-wantCV) > 1e-12 {
		t.Errorf("GapCV = %v, want %v", st.GapCV, wantCV)
	}
	st.GapCV = 0
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	if st.Format != want.Format || st.Counts != want.Counts || st.Requests != want.Requests || st.Timed != want.Timed ||
		!close(st.DurationS, want.DurationS) || !close(st.MeanRate, want.MeanRate) || !close(st.MeanPerMin, want.MeanPerMin) ||
		st.PeakPerMin != want.PeakPerMin || st.PeakMinuteS != want.PeakMinuteS ||
		!closeLen(st.Input, want.Input) || !closeLen(st.Output, want.Output) ||
		st.PrefixKnown != want.PrefixKnown || st.PrefixBlocks != want.PrefixBlocks || st.PrefixReused != want.PrefixReused ||
		!close(st.PrefixReuse, want.PrefixReuse) || len(st.Classes) != 2 || st.Classes["chat"] != 3 || st.Classes["sum"] != 2 {
		t.Errorf("Characterize:\n got %+v\nwant %+v", st, want)
	}
	if names := st.ClassNames(); strings.Join(names, ",") != "chat,sum" {
		t.Errorf("ClassNames() = %v", names)
	}
}

func closeLen(a, b LengthStats) bool {
	c := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y)) }
	return c(a.Mean, b.Mean) && a.Min == b.Min && c(a.P50, b.P50) && c(a.P90, b.P90) && c(a.P99, b.P99) && a.Max == b.Max && a.Sum == b.Sum
}

// TestCharacterizeEdges: a length-only trace has no time statistics; one
// request has no gaps (CV undefined, written as null in JSON).
func TestCharacterizeEdges(t *testing.T) {
	rd, _ := NewReader(strings.NewReader("num_prefill_tokens,num_decode_tokens\n5,6\n7,8\n"), "l.csv", ReaderOptions{})
	st, err := Characterize(rd)
	if err != nil || st.Timed || st.DurationS != 0 || st.PeakPerMin != 0 || st.Requests != 2 || st.Input.Mean != 6 {
		t.Errorf("length-only: %+v, %v", st, err)
	}
	one, _ := NewReader(strings.NewReader("arrival_s,prompt_tokens,output_tokens\n5,1,1\n"), "o.csv", ReaderOptions{})
	st, err = Characterize(one)
	if err != nil || !st.Timed || !math.IsNaN(st.GapCV) || st.DurationS != 0 || st.MeanRate != 0 {
		t.Errorf("one request: %+v, %v", st, err)
	}
	b, err := json.Marshal(st)
	if err != nil || !strings.Contains(string(b), `"gap_cv":null`) {
		t.Errorf("JSON of an undefined CV: %s, %v", b, err)
	}
	st, _ = Characterize(at(0, 1, 2))
	b, _ = json.Marshal(st)
	if !strings.Contains(string(b), `"gap_cv":0}`) { // equal gaps: CV 0
		t.Errorf("JSON: %s", b)
	}
	empty, err := Characterize(&sliceSource{})
	if err != nil || empty.Requests != 0 {
		t.Errorf("empty: %+v, %v", empty, err)
	}
	// A source's error is returned.
	bad, _ := NewReader(strings.NewReader("num_prefill_tokens,num_decode_tokens\nx,1\n"), "l.csv", ReaderOptions{})
	if _, err := Characterize(bad); err == nil {
		t.Error("bad row not reported")
	}
	var _ workload.Source = bad
}
