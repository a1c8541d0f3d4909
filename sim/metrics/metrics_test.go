package metrics

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/servesim/servesim/sim"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const ms = sim.Millisecond

// threeRequests is the hand-worked example:
//
//	id  arrival  first token  finish  prompt  output  TTFT  E2E  TPOT
//	0   0 s      0.1 s        0.5 s   10      5       100   500  (500−100)/4 = 100 ms
//	1   1 s      1.2 s        1.8 s   20      3       200   800  (800−200)/2 = 300 ms
//	2   2 s      2.3 s        2.3 s   30      1       300   300  none (one token)
//
// Inter-token gaps: request 0 has four of 100 ms, request 1 two, 250 and 350 ms.
func threeRequests() []Record {
	return []Record{
		{ID: 0, Instance: 0, Arrival: 0, FirstToken: 100 * ms, Finish: 500 * ms, PromptTokens: 10, OutputTokens: 5},
		{ID: 1, Instance: 1, Arrival: 1000 * ms, FirstToken: 1200 * ms, Finish: 1800 * ms, PromptTokens: 20, OutputTokens: 3, Preemptions: 2},
		{ID: 2, Instance: 0, Arrival: 2000 * ms, FirstToken: 2300 * ms, Finish: 2300 * ms, PromptTokens: 30, OutputTokens: 1},
	}
}

func addThree(c *Collector) {
	for _, r := range threeRequests() {
		c.Add(&r)
	}
	for range 4 {
		c.AddITL(100*ms, 1) // merges into one (100 ms, 4) pair
	}
	c.AddITL(250*ms, 1)
	c.AddITL(350*ms, 1)
}

func statsNear(t *testing.T, name string, got, want Stats) {
	t.Helper()
	g := []float64{float64(got.N), got.Mean, got.Std, got.Min, got.Median, got.P90, got.P95, got.P99, got.Max}
	w := []float64{float64(want.N), want.Mean, want.Std, want.Min, want.Median, want.P90, want.P95, want.P99, want.Max}
	for i := range g {
		if !near(g[i], w[i], 1e-12) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
			return
		}
	}
}

func TestThreeRequests(t *testing.T) {
	c := NewCollector(SLO{TTFT: 250 * ms})
	addThree(c)
	s := c.Summary()
	// Duration: first arrival 0 to last completion 2.3 s.
	// Tokens: input 10+20+30 = 60, output 5+3+1 = 9.
	// Throughput: 3/2.3 = 1.3043 req/s, 9/2.3 = 3.9130 tok/s, 69/2.3 = 30 tok/s.
	// SLO TTFT ≤ 250 ms: requests 0 and 1 meet it: attainment 2/3, goodput 2/2.3.
	checks := []struct {
		name      string
		got, want float64
	}{
		{"completed", float64(s.Completed), 3},
		{"rejected", float64(s.Rejected), 0},
		{"duration", s.Duration, 2.3},
		{"input", float64(s.InputTokens), 60},
		{"output", float64(s.OutputTokens), 9},
		{"req/s", s.RequestThroughput, 3 / 2.3},
		{"out tok/s", s.OutputThroughput, 9 / 2.3},
		{"total tok/s", s.TotalThroughput, 30},
		{"attainment", s.Attainment, 2.0 / 3},
		{"goodput", s.Goodput, 2 / 2.3},
		{"preemptions", float64(s.Preemptions), 2},
	}
	for _, c := range checks {
		if !near(c.got, c.want, 1e-12) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// TTFT [100,200,300]: mean 200; std √((100²+0+100²)/3) = 81.6497;
	// p90: h = 0.9·2 = 1.8 → 200 + 0.8·100 = 280; p95 290; p99 298.
	statsNear(t, "TTFT", s.TTFT, Stats{3, 200, 81.64965809277261, 100, 200, 280, 290, 298, 300})
	// TPOT [100,300]: mean 200, std 100; p90: h = 0.9 → 100 + 0.9·200 = 280; p95 290; p99 298.
	statsNear(t, "TPOT", s.TPOT, Stats{2, 200, 100, 100, 200, 280, 290, 298, 300})
	// E2E [300,500,800]: mean 1600/3 = 533.33; std √((233.3²+33.3²+266.7²)/3) = 205.4805;
	// p90: h = 1.8 → 500 + 0.8·300 = 740; p95 770; p99 794.
	statsNear(t, "E2E", s.E2E, Stats{3, 1600.0 / 3, 205.48046676563257, 300, 500, 740, 770, 794, 800})
	// ITL [100,100,100,100,250,350]: mean 1000/6 = 166.67; std √(58333.3/6) = 98.6013;
	// median (100+100)/2 = 100; p90: h = 0.9·5 = 4.5 → 250 + 0.5·100 = 300; p95 325; p99 345.
	statsNear(t, "ITL", s.ITL, Stats{6, 1000.0 / 6, 98.60132971832694, 100, 100, 300, 325, 345, 350})
	if c.itl.n != 3 || len(c.itl.b) != 1 || len(c.itl.wide) != 0 {
		t.Errorf("ITL kept %d runs in %d blocks and %d wide, want 3 in one (equal gaps merged)", c.itl.n, len(c.itl.b), len(c.itl.wide))
	}
	// Summary is repeatable and insensitive to insertion order.
	c2 := NewCollector(SLO{TTFT: 250 * ms})
	rs := threeRequests()
	for i := len(rs) - 1; i >= 0; i-- {
		c2.Add(&rs[i])
	}
	c2.AddITL(350*ms, 1)
	c2.AddITL(100*ms, 2)
	c2.AddITL(250*ms, 1)
	c2.AddITL(100*ms, 2)
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(c.Summary())
	d, _ := json.Marshal(c2.Summary())
	if !bytes.Equal(a, b) || !bytes.Equal(a, d) {
		t.Errorf("summaries differ:\n%s\n%s\n%s", a, b, d)
	}
}

func TestAttainmentSubsets(t *testing.T) {
	// Per request (see threeRequests), against TTFT ≤ 250, TPOT ≤ 200, E2E ≤ 600 ms:
	//   0: TTFT 100 ✓  TPOT 100 ✓   E2E 500 ✓
	//   1: TTFT 200 ✓  TPOT 300 ✗   E2E 800 ✗
	//   2: TTFT 300 ✗  TPOT skipped E2E 300 ✓
	// plus one rejected request, which never meets: 4 requests in all.
	tests := []struct {
		slo  SLO
		good int
	}{
		{SLO{}, 3}, // nothing set: every served request meets
		{SLO{TTFT: 250 * ms}, 2},
		{SLO{TPOT: 200 * ms}, 2}, // 0, and 2 whose TPOT is skipped
		{SLO{E2E: 600 * ms}, 2},  // 0, 2
		{SLO{TTFT: 250 * ms, TPOT: 200 * ms}, 1},
		{SLO{TTFT: 250 * ms, E2E: 600 * ms}, 1},
		{SLO{TPOT: 200 * ms, E2E: 600 * ms}, 2},
		{SLO{TTFT: 250 * ms, TPOT: 200 * ms, E2E: 600 * ms}, 1},
		// Boundaries are inclusive (vLLM: slo >= value).
		{SLO{TTFT: 200 * ms}, 2},
		{SLO{TTFT: 200*ms - 1}, 1},
		{SLO{TPOT: 300 * ms}, 3},     // request 1: 600 ms ≤ 300 ms·2
		{SLO{TPOT: 300*ms - 1}, 2},   // 600 ms > (300 ms − 1 ns)·2
		{SLO{E2E: 800 * ms}, 3},      // all served
		{SLO{TPOT: sim.Forever}, 3},  // TPOT·(n−1) overflows: met
		{SLO{TTFT: 1, E2E: 1e18}, 0}, // 1 ns TTFT: nobody
	}
	for _, tt := range tests {
		c := NewCollector(tt.slo)
		addThree(c)
		c.Add(&Record{ID: 3, Arrival: 2500 * ms, PromptTokens: 9, Rejected: "queue-full"})
		s := c.Summary()
		// Duration is still 0 → 2.3 s: the rejected request neither starts nor ends it.
		if want := float64(tt.good) / 4; !near(s.Attainment, want, 1e-15) {
			t.Errorf("%+v: attainment %v, want %d/4", tt.slo, s.Attainment, tt.good)
		}
		if want := float64(tt.good) / 2.3; !near(s.Goodput, want, 1e-12) {
			t.Errorf("%+v: goodput %v, want %d/2.3", tt.slo, s.Goodput, tt.good)
		}
	}
}

func TestRejected(t *testing.T) {
	c := NewCollector(SLO{})
	r := []Record{
		{ID: 0, Arrival: 0, PromptTokens: 100000, Rejected: "too-long"},
		{ID: 1, Arrival: 1 * sim.Second, FirstToken: 1100 * ms, Finish: 2 * sim.Second, PromptTokens: 5, OutputTokens: 10},
		{ID: 2, Arrival: 3 * sim.Second, PromptTokens: 7, Rejected: "queue-full", Preemptions: 1},
		{ID: 3, Arrival: 4 * sim.Second, PromptTokens: 200000, Rejected: "too-long"},
	}
	for i := range r {
		c.Add(&r[i])
	}
	s := c.Summary()
	if s.Completed != 1 || s.Rejected != 3 || len(s.RejectedBy) != 2 || s.RejectedBy["too-long"] != 2 || s.RejectedBy["queue-full"] != 1 {
		t.Errorf("completed %d rejected %d by %v", s.Completed, s.Rejected, s.RejectedBy)
	}
	// Duration: first arrival 0 (the rejected request 0) to last completion 2 s.
	// Tokens count the served request only: 5 in, 10 out. Attainment 1/4.
	if s.Duration != 2 || s.InputTokens != 5 || s.OutputTokens != 10 || s.Attainment != 0.25 || s.Preemptions != 1 {
		t.Errorf("duration %v tokens %d/%d attainment %v preemptions %d", s.Duration, s.InputTokens, s.OutputTokens, s.Attainment, s.Preemptions)
	}
	// The Summary's map is a copy.
	s.RejectedBy["too-long"] = 99
	if c.Summary().RejectedBy["too-long"] != 2 {
		t.Error("Summary shares its RejectedBy map with the collector")
	}
}

func TestEmpty(t *testing.T) {
	s := NewCollector(SLO{TTFT: ms}).Summary()
	b, err := json.Marshal(s) // would fail on a NaN
	if err != nil {
		t.Fatal(err)
	}
	if s.Duration != 0 || s.RequestThroughput != 0 || s.Attainment != 0 || s.TTFT != (Stats{}) || s.ITL != (Stats{}) {
		t.Errorf("empty summary %s", b)
	}
	if !strings.Contains(string(b), `"rejected_by":{}`) {
		t.Errorf("rejected_by not an empty object: %s", b)
	}
	// All rejected: still no NaN.
	c := NewCollector(SLO{})
	c.Add(&Record{Arrival: sim.Second, Rejected: "x"})
	if _, err := json.Marshal(c.Summary()); err != nil {
		t.Fatal(err)
	}
}

func TestSteps(t *testing.T) {
	c := NewCollector(SLO{})
	c.SetPeak(1, 1e15, 4e12) // instance 1: 1 PFLOP/s, 4 TB/s; instance 0 has none
	steps := []Step{
		{Instance: 0, Start: 0, Duration: 10 * ms, Prefills: 2, PrefillTokens: 1000, Decodes: 0, KVBlocksUsed: 10, KVBlocksTotal: 100, FLOPs: 5e12, Bytes: 2e10},
		{Instance: 1, Start: 0, Duration: 30 * ms, Prefills: 0, Decodes: 8, KVBlocksUsed: 50, KVBlocksTotal: 100, Preempted: 1, FLOPs: 3e12, Bytes: 6e10},
		{Instance: 0, Start: 20 * ms, Duration: 0, Decodes: 3, KVBlocksUsed: 90, KVBlocksTotal: 100},
		{Instance: 2, Start: 5 * ms, Duration: 10 * ms, Decodes: 1}, // no KV cache reported
	}
	for i := range steps {
		c.AddStep(&steps[i])
	}
	s := c.Summary()
	// Steps 4; busy 10+30+0+10 = 50 ms; mean batch (2+8+3+1)/4 = 3.5.
	// KV use weighted by duration over steps with a cache: (0.1·10 + 0.5·30 + 0.9·0)/(10+30+0) = 16/40 = 0.4; peak 0.9.
	// Achieved: FLOPs 8e12 / 0.05 s = 1.6e14 FLOP/s; bytes 8e10 / 0.05 s = 1.6e12 B/s.
	// MFU over instance 1 only: 3e12 / (1e15 · 0.03) = 0.1; MBU 6e10 / (4e12 · 0.03) = 0.5.
	checks := []struct {
		name      string
		got, want float64
	}{
		{"steps", float64(s.Steps), 4},
		{"busy", s.BusyTime, 0.05},
		{"batch", s.MeanBatch, 3.5},
		{"mean kv", s.MeanKVUse, 0.4},
		{"peak kv", s.PeakKVUse, 0.9},
		{"flops", s.AchievedFLOPS, 1.6e14},
		{"bw", s.AchievedBandwidth, 1.6e12},
		{"mfu", s.MFU, 0.1},
		{"mbu", s.MBU, 0.5},
	}
	for _, c := range checks {
		if !near(c.got, c.want, 1e-12) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestPanics(t *testing.T) {
	tests := []struct {
		name string
		f    func(c *Collector)
	}{
		{"first token before arrival", func(c *Collector) { c.Add(&Record{Arrival: 5, FirstToken: 4, Finish: 6, OutputTokens: 1}) }},
		{"finish before first token", func(c *Collector) { c.Add(&Record{Arrival: 1, FirstToken: 4, Finish: 3, OutputTokens: 1}) }},
		{"no output", func(c *Collector) { c.Add(&Record{Arrival: 1, FirstToken: 4, Finish: 5}) }},
		{"negative gap", func(c *Collector) { c.AddITL(-1, 1) }},
		{"negative count", func(c *Collector) { c.AddITL(1, -1) }},
		{"kv over capacity", func(c *Collector) { c.AddStep(&Step{KVBlocksUsed: 11, KVBlocksTotal: 10}) }},
		{"negative duration", func(c *Collector) { c.AddStep(&Step{Duration: -1}) }},
		{"NaN flops", func(c *Collector) { c.AddStep(&Step{FLOPs: nan()}) }},
		{"negative SLO", func(*Collector) { NewCollector(SLO{TPOT: -1}) }},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tt.name)
				}
			}()
			tt.f(NewCollector(SLO{}))
		}()
	}
	if err := (SLO{E2E: -ms}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "metrics: SLO e2e") {
		t.Errorf("Validate: %v", err)
	}
}

func nan() float64 { var z float64; return z / z }

// goldenSummary is the three-request run plus two rejections, an SLO, steps
// and peaks: every line WriteText can print. By hand:
//   - SLO TTFT ≤ 250 ms and TPOT ≤ 200 ms: only request 0 meets both (1 fails
//     TPOT 300, 2 fails TTFT 300): attainment 1/5 = 20 %, goodput 1/2.3 = 0.43;
//   - steps: busy 0.2 s, batch (4+2)/2 = 3, KV (0.75·0.1 + 0.25·0.1)/0.2 = 50 %,
//     peak 75 %; 3e13 FLOPs / 0.2 s = 150 TFLOP/s, 3e11 B / 0.2 s = 1.5 TB/s;
//     MFU 3e13/(989e12·0.2) = 15.17 %, MBU 3e11/(4.8e12·0.2) = 31.25 %.
func goldenSummary() Summary {
	c := NewCollector(SLO{TTFT: 250 * ms, TPOT: 200 * ms})
	c.SetPeak(0, 989e12, 4.8e12) // H200 SXM dense BF16 and HBM3e (DESIGN §6)
	addThree(c)
	c.Add(&Record{ID: 3, Arrival: 2500 * ms, PromptTokens: 9, Rejected: "too-long"})
	c.Add(&Record{ID: 4, Arrival: 2600 * ms, PromptTokens: 9, Rejected: "queue-full"})
	c.AddStep(&Step{Instance: 0, Duration: 100 * ms, Prefills: 1, PrefillTokens: 10, Decodes: 3, KVBlocksUsed: 30, KVBlocksTotal: 40, FLOPs: 2e13, Bytes: 2e11})
	c.AddStep(&Step{Instance: 0, Start: 100 * ms, Duration: 100 * ms, Decodes: 2, KVBlocksUsed: 10, KVBlocksTotal: 40, FLOPs: 1e13, Bytes: 1e11})
	return c.Summary()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestWriteTextGolden(t *testing.T) {
	s := goldenSummary()
	var a, b bytes.Buffer
	if err := s.WriteText(&a, ""); err != nil {
		t.Fatal(err)
	}
	s2 := goldenSummary()
	if err := s2.WriteText(&b, ""); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two identical runs print differently")
	}
	golden(t, "summary.txt", a.Bytes())
	// vLLM's layout: "{:<40} {:<10.2f}" pads the value to 10 columns.
	if !strings.Contains(a.String(), "\nSuccessful requests:                     3         \n") ||
		!strings.HasPrefix(a.String(), "============ Serving Benchmark Result ============\n") ||
		!strings.Contains(a.String(), "\n-----Time per Output Token (excl. 1st token)------\n") {
		t.Errorf("layout differs from vLLM's:\n%s", a.String())
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.json", buf.Bytes())
	var back Summary
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if b1, _ := json.Marshal(back); !bytes.Equal(b1, mustJSON(t, s)) {
		t.Error("JSON does not round-trip")
	}
	var titled bytes.Buffer
	if err := (&Summary{}).WriteText(&titled, "chunked-prefill"); err != nil {
		t.Fatal(err)
	}
	// Python: "{s:=^50}".format(s=" chunked-prefill ") pads 50−17 = 33: 16 left, 17 right.
	if first, _, _ := strings.Cut(titled.String(), "\n"); first != "================ chunked-prefill =================" {
		t.Errorf("title line %q", first)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMemoryPerRequest: a collector holds three float64s per served request
// (24 bytes, plus slack from slice growth) and, for Saturation, its arrival,
// finish and output length (24 bytes, in blocks that never grow by
// copying): about 50 bytes, never the record. Keeping each Record (80
// bytes: 8 eight-byte fields and a 16-byte string header), or a pointer to
// a fresh one, would exceed the 64-byte bound.
func TestMemoryPerRequest(t *testing.T) {
	const n = 200_000
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	c := NewCollector(SLO{TTFT: ms})
	for i := range n {
		r := new(Record)
		r.ID = int64(i)
		r.Arrival = sim.Time(i) * ms
		r.FirstToken = r.Arrival + sim.Time(i%97)*ms
		r.Finish = r.FirstToken + 50*ms
		r.PromptTokens, r.OutputTokens = 100, 20
		c.Add(r)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	per := (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / n
	runtime.KeepAlive(c)
	if per > 64 {
		t.Errorf("%.1f bytes per request held, want ≤ 64", per)
	}
	t.Logf("%.1f bytes per request", per)
}

func TestRecordWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewRecordWriter(&buf)
	rs := threeRequests()
	rs = append(rs, Record{ID: 3, Instance: 2, Arrival: 2500*ms + 1, PromptTokens: 9, Rejected: `queue "full", retry`})
	for i := range rs {
		if err := w.Write(&rs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := RecordHeader + "\n" +
		"0,0,0.000000000,0.100000000,0.500000000,10,5,100.000000,100.000000,500.000000,0,\n" +
		"1,1,1.000000000,1.200000000,1.800000000,20,3,200.000000,300.000000,800.000000,2,\n" +
		"2,0,2.000000000,2.300000000,2.300000000,30,1,300.000000,,300.000000,0,\n" +
		`3,2,2.500000001,,,9,0,,,,0,"queue ""full"", retry"` + "\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	var empty bytes.Buffer
	if err := NewRecordWriter(&empty).Flush(); err != nil || empty.String() != RecordHeader+"\n" {
		t.Errorf("empty writer wrote %q, %v", empty.String(), err)
	}
}

func TestStepWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewStepWriter(&buf)
	s := Step{Instance: 1, Start: 1500 * ms, Duration: 12345678, Prefills: 2, PrefillTokens: 512, Decodes: 30,
		KVBlocksUsed: 700, KVBlocksTotal: 1000, Preempted: 1, FLOPs: 1.25e13, Bytes: 3e10}
	if err := w.Write(&s); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := StepHeader + "\n1,1.500000000,0.012345678,2,512,30,700,1000,1,1.25e+13,3e+10\n"
	if buf.String() != want {
		t.Errorf("got %q\nwant %q", buf.String(), want)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestWriterErrors(t *testing.T) {
	rw := NewRecordWriter(failWriter{})
	r := threeRequests()[0]
	_ = rw.Write(&r)
	if err := rw.Flush(); err == nil || !strings.HasPrefix(err.Error(), "metrics: writing records") {
		t.Errorf("record writer: %v", err)
	}
	sw := NewStepWriter(failWriter{})
	_ = sw.Write(&Step{})
	if err := sw.Flush(); err == nil || !strings.HasPrefix(err.Error(), "metrics: writing steps") {
		t.Errorf("step writer: %v", err)
	}
	s := goldenSummary()
	if err := s.WriteText(failWriter{}, ""); err == nil || !strings.HasPrefix(err.Error(), "metrics: writing summary") {
		t.Errorf("WriteText: %v", err)
	}
}

// truncate empties c's samples, so the benchmarks below measure
// steady-state cost over a bounded heap.
func (c *Collector) truncate() {
	c.keys, c.itl, c.sort = [nKeys]blocks[uint64]{}, itlSamples{}, nil
}

func BenchmarkAdd(b *testing.B) {
	c := NewCollector(SLO{TTFT: 200 * ms, TPOT: 50 * ms})
	r := Record{Arrival: sim.Second, FirstToken: sim.Second + 150*ms, Finish: 3 * sim.Second, PromptTokens: 1000, OutputTokens: 200}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i++; i%(1<<16) == 0 {
			c.truncate()
		}
		c.Add(&r)
	}
}

func BenchmarkAddITL(b *testing.B) {
	c := NewCollector(SLO{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i++; i%(1<<16) == 0 {
			c.truncate()
		}
		c.AddITL(20*ms+sim.Time(i%1000), 64) // a new gap each call: no merging
	}
}

func BenchmarkAddStep(b *testing.B) {
	c := NewCollector(SLO{})
	c.SetPeak(0, 989e12, 4.8e12)
	s := Step{Duration: 20 * ms, Decodes: 64, KVBlocksUsed: 500, KVBlocksTotal: 1000, FLOPs: 1e12, Bytes: 2e10}
	b.ReportAllocs()
	for b.Loop() {
		c.AddStep(&s)
	}
}

func BenchmarkStepWriter(b *testing.B) {
	w := NewStepWriter(discard{})
	s := Step{Instance: 3, Start: 123456789, Duration: 20 * ms, Decodes: 64, KVBlocksUsed: 500, KVBlocksTotal: 1000, FLOPs: 1.2345e12, Bytes: 2e10}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(&s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRecordWriter(b *testing.B) {
	w := NewRecordWriter(discard{})
	r := threeRequests()[1]
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(&r); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Per-class results, per-request SLOs and phases. Two served requests:
//
//	a (class chat, own TTFT SLO 50 ms): arrival 0 ms, scheduled 10, first 40, finish 140, 11 tokens
//	b (class batch): arrival 100 ms, scheduled 100, first 300, transfer 300→320, finish 620, 11 tokens
//
// a meets its own 50 ms TTFT SLO (TTFT 40); b misses the collector's 100 ms
// (TTFT 200). Phases: queue 10 and 0 ms, prefill 30 and 200 ms; b alone is
// disaggregated: transfer wait 0, transfer 20, decode 300 ms.
func TestClassesSLOOverrideAndPhases(t *testing.T) {
	ms := sim.Millisecond
	c := NewCollector(SLO{TTFT: 100 * ms})
	c.Add(&Record{ID: 1, Class: "chat", SLO: SLO{TTFT: 50 * ms}, Arrival: 0, Scheduled: 10 * ms, FirstToken: 40 * ms, Finish: 140 * ms, PromptTokens: 5, OutputTokens: 11})
	c.Add(&Record{ID: 2, Class: "batch", Arrival: 100 * ms, Scheduled: 100 * ms, FirstToken: 300 * ms, TransferStart: 300 * ms, TransferEnd: 320 * ms, Finish: 620 * ms, PromptTokens: 5, OutputTokens: 11})
	c.Add(&Record{ID: 3, Class: "batch", Arrival: 150 * ms, PromptTokens: 5, OutputTokens: 11, Rejected: "queue-full"})
	s := c.Summary()
	if s.Attainment != 1.0/3 {
		t.Errorf("attainment %v, want 1/3 (a met; b missed; the rejection misses)", s.Attainment)
	}
	chat, batch := s.ByClass["chat"], s.ByClass["batch"]
	if chat.Completed != 1 || chat.Attainment != 1 || chat.TTFT.Mean != 40 {
		t.Errorf("chat %+v: want 1 completed, attainment 1, TTFT 40 ms", chat)
	}
	if batch.Completed != 1 || batch.Rejected != 1 || batch.Attainment != 0 || batch.TTFT.Mean != 200 {
		t.Errorf("batch %+v: want 1 completed, 1 rejected, attainment 0, TTFT 200 ms", batch)
	}
	ph := s.Phases
	if ph.Queue.N != 2 || ph.Queue.Mean != 5 || ph.Prefill.Mean != 115 || ph.Transfer.N != 1 || ph.Transfer.Mean != 20 || ph.Decode.Mean != 300 || ph.TransferWait.Mean != 0 {
		t.Errorf("phases %+v", ph)
	}
}
