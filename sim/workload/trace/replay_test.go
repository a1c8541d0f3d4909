package trace_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/serve"
	"github.com/servesim/servesim/sim/workload"
	"github.com/servesim/servesim/sim/workload/trace"
)

// traces is ../shared/data/traces from this package's directory.
var traces = filepath.Join("..", "..", "..", "..", "shared", "data", "traces")

// shared returns the path of a shared trace, or skips the test when
// ../shared/data is absent.
func shared(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(traces, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared trace data absent (%v): these tests need ../shared/data beside the checkout", err)
	}
	return p
}

// replay serves src with the embedded default scenario (Llama-3.1-8B in
// BF16 on one H100, chunked prefill, max_model_len 131072), optionally with
// prefix caching.
func replay(t *testing.T, src workload.Source, prefixCaching bool) (serve.Result, metrics.Summary) {
	t.Helper()
	s := scenario.Default()
	s.Batch.PrefixCaching = prefixCaching
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	coll := metrics.NewCollector(p.SLO)
	cfg := p.Serve
	cfg.Source, cfg.Collector = src, coll
	res, err := serve.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res, coll.Summary()
}

// TestReplaySharedTraces replays the Azure code and conversation traces and
// the Mooncake conversation trace end to end, at their own timestamps.
// Every row becomes a request and none is rejected: the longest request,
// Mooncake's, has at most 126,195 + 2,000 = 128,195 tokens (SOURCE.md
// maxima), under Llama-3.1-8B's 131,072-token context and the 402,208-token
// KV cache of the default plan.
func TestReplaySharedTraces(t *testing.T) {
	tests := []struct {
		file     string
		rows     int64   // SOURCE.md
		spanS    float64 // SOURCE.md, rounded there to 1 s (Mooncake: 0.1 s)
		prefixes bool
	}{
		{"azure-llm-2023/AzureLLMInferenceTrace_code.csv", 8819, 3436, false},
		{"azure-llm-2023/AzureLLMInferenceTrace_conv.csv", 19366, 3502, false},
		{"mooncake-fast25/conversation_trace.jsonl", 12031, 3537.0, true},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			path := shared(t, tt.file)
			st, err := trace.StatsFile(path, trace.ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tr, err := trace.Open(trace.Options{File: path}, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			res, sum := replay(t, tr, tt.prefixes)
			if res.Arrived != tt.rows || res.Finished != tt.rows || res.Rejected != 0 || tr.Counts().Yielded != tt.rows {
				t.Errorf("arrived %d, finished %d, rejected %d, read %+v; want %d served", res.Arrived, res.Finished, res.Rejected, tr.Counts(), tt.rows)
			}
			if sum.InputTokens != st.Input.Sum || sum.OutputTokens != st.Output.Sum {
				t.Errorf("served %d input and %d output tokens, the trace holds %d and %d", sum.InputTokens, sum.OutputTokens, st.Input.Sum, st.Output.Sum)
			}
			// The run lasts at least from the first to the last arrival.
			if math.Abs(st.DurationS-tt.spanS) > 0.5 || sum.Duration < st.DurationS {
				t.Errorf("trace span %v s (SOURCE.md %v), run %v s", st.DurationS, tt.spanS, sum.Duration)
			}
		})
	}
}

// TestStatsMatchSource checks `trace stats` against the numbers each
// SOURCE.md gives: rows, span and mean rate (rows / span), and the length
// means, medians, p99 and maxima. SOURCE.md rounds the span to 1 s (0.1 s
// for Mooncake), rates to 0.01 req/s and means to 0.1 token, so those
// compare within half a unit of the last digit. Its p99 is the
// nearest-rank order statistic x[⌈0.99·n⌉−1] (checked here on the sorted
// lengths), while Stats interpolates at 0.99·(n−1) as numpy does: Stats'
// p99 lies between the two order statistics around that position, the
// upper being SOURCE.md's.
func TestStatsMatchSource(t *testing.T) {
	type col struct {
		mean        float64
		p50, p99, m int
	}
	tests := []struct {
		file          string
		rows          int64
		spanS, rate   float64 // 0: length-only
		spanPrec      float64
		input, output col
	}{
		{"azure-llm-2023/AzureLLMInferenceTrace_code.csv", 8819, 3436, 2.57, 1, col{2047.8, 1469, 7436, 7437}, col{27.9, 13, 252, 1899}},
		{"azure-llm-2023/AzureLLMInferenceTrace_conv.csv", 19366, 3502, 5.53, 1, col{1154.7, 1020, 4142, 14050}, col{211.1, 129, 601, 1000}},
		{"mooncake-fast25/conversation_trace.jsonl", 12031, 3537.0, 3.40, 0.1, col{12035.1, 6909, 85401, 126195}, col{342.6, 350, 1120, 2000}},
		{"mooncake-fast25/synthetic_trace.jsonl", 3993, 1022.0, 3.91, 0.1, col{15325.5, 11587, 66458, 191378}, col{149.1, 69, 769, 893}},
		{"sharegpt/sharegpt_8k_filtered_stats_llama2_tokenizer.csv", 30731, 0, 0, 0, col{2340.0, 1730, 7434, 8141}, col{438.7, 415, 998, 1024}},
		{"arxiv-summarization/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv", 28257, 0, 0, 0, col{2588.1, 2730, 3934, 4054}, col{291.4, 167, 3273, 4056}},
	}
	for _, tt := range tests {
		path := shared(t, tt.file)
		st, err := trace.StatsFile(path, trace.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Requests != tt.rows || st.Counts.Rows != tt.rows {
			t.Errorf("%s: %d requests from %d rows, SOURCE.md %d", tt.file, st.Requests, st.Counts.Rows, tt.rows)
		}
		if st.Timed != (tt.spanS > 0) {
			t.Errorf("%s: timed %v", tt.file, st.Timed)
		}
		if tt.spanS > 0 && (math.Abs(st.DurationS-tt.spanS) > tt.spanPrec/2 || math.Abs(st.MeanRate-tt.rate) > 0.005) {
			t.Errorf("%s: span %v s at %v req/s, SOURCE.md %v s at %v", tt.file, st.DurationS, st.MeanRate, tt.spanS, tt.rate)
		}
		in, out := lengths(t, path)
		for _, c := range []struct {
			name string
			got  trace.LengthStats
			want col
			x    []int
		}{{"input", st.Input, tt.input, in}, {"output", st.Output, tt.output, out}} {
			n := len(c.x)
			pos := 0.99 * float64(n-1)
			lo, hi := c.x[int(math.Floor(pos))], c.x[int(math.Ceil(pos))]
			if math.Abs(c.got.Mean-c.want.mean) > 0.05 || c.got.P50 != float64(c.want.p50) || c.got.Max != c.want.m ||
				c.x[int(math.Ceil(0.99*float64(n)))-1] != c.want.p99 || hi != c.want.p99 ||
				c.got.P99 < float64(lo) || c.got.P99 > float64(hi) {
				t.Errorf("%s %s: %+v; SOURCE.md mean %v median %d p99 %d max %d (order statistics around p99: %d, %d)",
					tt.file, c.name, c.got, c.want.mean, c.want.p50, c.want.p99, c.want.m, lo, hi)
			}
		}
	}
}

// lengths reads a trace's sorted prompt and output lengths.
func lengths(t *testing.T, path string) (in, out []int) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := trace.NewReader(f, path, trace.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var r workload.Request
	for rd.Next(&r) {
		in, out = append(in, r.PromptTokens), append(out, r.OutputTokens)
	}
	slices.Sort(in)
	slices.Sort(out)
	return in, out
}

// TestReplayMix serves a 70 % chat / 30 % summarization mix whose lengths
// are fitted from the ShareGPT and arXiv-summarization traces, each class
// with its own SLOs, and reads the results per class. 3,000 requests with
// P(chat) = 0.7 give 2,100 chat requests ± 5σ, σ = √(3000·0.7·0.3) = 25.1.
func TestReplayMix(t *testing.T) {
	chatIn, err := trace.ParseDist("empirical:"+shared(t, "sharegpt/sharegpt_8k_filtered_stats_llama2_tokenizer.csv")+":prompt", "")
	if err != nil {
		t.Fatal(err)
	}
	chatOut, _ := trace.ParseDist("empirical:"+shared(t, "sharegpt/sharegpt_8k_filtered_stats_llama2_tokenizer.csv")+":output", "")
	sumIn, _ := trace.ParseDist("empirical:"+shared(t, "arxiv-summarization/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv")+":prompt", "")
	sumOut, _ := trace.ParseDist("empirical:"+shared(t, "arxiv-summarization/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv")+":output", "")
	mix := trace.Mix{
		Arrival: workload.Arrival{Rate: 4},
		Classes: []trace.Class{
			{Name: "chat", Weight: 0.7, Prompt: chatIn, Output: chatOut, TTFTSLO: 500 * sim.Millisecond, TPOTSLO: 50 * sim.Millisecond},
			{Name: "summarize", Weight: 0.3, Prompt: sumIn, Output: sumOut, TTFTSLO: 5 * sim.Second, TPOTSLO: 100 * sim.Millisecond},
		},
		Count: 3000,
		Seed:  1,
	}
	src, err := mix.Source()
	if err != nil {
		t.Fatal(err)
	}
	res, sum := replay(t, src, false)
	chat, summ := sum.ByClass["chat"], sum.ByClass["summarize"]
	if res.Arrived != 3000 || chat.Completed+chat.Rejected+summ.Completed+summ.Rejected != 3000 || len(sum.ByClass) != 2 {
		t.Fatalf("arrived %d; by class %+v", res.Arrived, sum.ByClass)
	}
	if n := chat.Completed + chat.Rejected; math.Abs(float64(n)-2100) > 5*25.1 {
		t.Errorf("%d chat requests, want 2100 ± 126", n)
	}
	// Each class has its own latencies and attainment against its own SLOs.
	if chat.TTFT.Mean <= 0 || summ.TTFT.Mean <= 0 || chat.Attainment < 0 || chat.Attainment > 1 || summ.Attainment < 0 || summ.Attainment > 1 {
		t.Errorf("per-class results: chat %+v, summarize %+v", chat, summ)
	}
	// The same mix characterized: the class counts agree with the run's.
	src2, _ := mix.Source()
	st, err := trace.Characterize(src2)
	if err != nil {
		t.Fatal(err)
	}
	if st.Classes["chat"] != int64(chat.Completed+chat.Rejected) || st.Classes["summarize"] != int64(summ.Completed+summ.Rejected) {
		t.Errorf("stats classes %v, run %d/%d", st.Classes, chat.Completed+chat.Rejected, summ.Completed+summ.Rejected)
	}
}
