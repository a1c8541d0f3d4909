package realrun

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// TestOpenRequestsDir reads the fixture run (three lines of the RTX 4090
// run's requests.jsonl, its meta.json, and a time series).
func TestOpenRequestsDir(t *testing.T) {
	runs, err := Open(filepath.Join("testdata", "run"))
	if err != nil {
		t.Fatal(err)
	}
	r := runs[0]
	e := r.Engine
	if e.Model != "meta-llama/Llama-3.1-8B" || e.GPU != "NVIDIA GeForce RTX 4090" || e.TP != 1 || e.MaxNumSeqs != 256 ||
		e.KVBlocks != 2588 || e.BlockSize != 16 || e.GPUMemBytes != 25250627584 || e.PrefixCaching == nil || !*e.PrefixCaching {
		t.Errorf("engine = %+v", e)
	}
	in, out := r.TokenTotals()
	// 2358 + 1034 + 1320 = 4712; 531 + 769 + 769 = 2069.
	if len(r.Requests) != 3 || in != 4712 || out != 2069 {
		t.Fatalf("%d requests, %d/%d tokens", len(r.Requests), in, out)
	}
	q := r.Requests[1]
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"arrival", q.Arrival, 1787267980.3478317 - 1787267980.0827403}, // wall clock − first arrival
		{"start", q.Start, 27537.047603549 - 27536.660701067},           // engine clock − first queued
		{"ttft", q.TTFT(), 27537.350135653 - 27537.047603549},           // first_token_ts − queued_ts
		{"e2e", q.E2E(), 27562.279894586 - 27537.047603549},             // last_token_ts − queued_ts
		{"scheduled", q.Scheduled, 27537.047613531 - 27536.660701067},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// The first row (no prompt throughput) is dropped; the first active
	// tick ends at t = 1, so it becomes T = 1 − (1 − 1) = 1.
	if len(r.Series) != 2 || r.Series[0].T != 1 || r.Series[1].Running != 16 || r.Series[0].KVPct != 13.22 {
		t.Errorf("series = %+v", r.Series)
	}
}

// TestReadBench reads a hand-made result in the layout vLLM writes
// (vllm/benchmarks/serve.py: benchmark() builds "duration", "input_lens",
// "output_lens", "ttfts", "itls", "latencies", "start_times", "errors";
// main_async adds "request_rate", "burstiness", "max_concurrency").
func TestReadBench(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, b, err := ReadBench(f, "bench.json")
	if err != nil {
		t.Fatal(err)
	}
	// The third request failed (errors[2] set, output 0) and is left out.
	if len(r.Requests) != 2 || b.Burstiness != 1 || r.Duration != 2.5 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "1 failed") {
		t.Fatalf("run = %+v", r)
	}
	q := r.Requests[1]
	// start 10.25 − 10.0; ttft 0.08; latency 0.18; 4 gaps.
	if !near(q.Arrival, 0.25) || !near(q.TTFT(), 0.08) || !near(q.E2E(), 0.18) || len(q.ITLs) != 4 {
		t.Errorf("request = %+v", q)
	}
	if tp, _ := q.TPOT(); !near(tp, (0.18-0.08)/4) { // (E2E − TTFT)/(5 − 1)
		t.Errorf("tpot = %v", tp)
	}
}

// TestReadBenchMaxConcurrency: without start_times the replay must apply
// max_concurrency (capped at the requests: 5 slots for 2 requests is no
// limit beyond 2); with them it is in the recorded start times already.
func TestReadBenchMaxConcurrency(t *testing.T) {
	const arrays = `"input_lens": [10, 20], "output_lens": [2, 2], "ttfts": [0.1, 0.1], "latencies": [0.2, 0.2]`
	for _, c := range []struct {
		name, extra string
		want        int
		note        string
	}{
		{"no start_times", `"max_concurrency": 1`, 1, ""},
		{"capped", `"max_concurrency": 5`, 2, ""},
		{"start_times", `"max_concurrency": 1, "start_times": [3.0, 3.5]`, 0, "already in the recorded start times"},
		{"no limit", `"max_concurrency": null`, 0, ""},
	} {
		in := `{"model_id": "m", "request_rate": "inf", ` + c.extra + `, ` + arrays + `}`
		r, _, err := ReadBench(strings.NewReader(in), "b.json")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.MaxConcurrency != c.want || c.note != "" && !strings.Contains(strings.Join(r.Notes, "\n"), c.note) {
			t.Errorf("%s: MaxConcurrency %d, notes %q; want %d and a note %q", c.name, r.MaxConcurrency, r.Notes, c.want, c.note)
		}
	}
}

func TestReadStageRows(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "stages.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := ReadStageRows(f, "stages.csv")
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	// TPOT = (1.81 − 0.025)/(247 − 1) = 7.256 ms.
	if len(rows) != 1 || r.TP != 1 || len(r.Stages) != 2 || r.Stages[1] != (Stage{10, 600}) || !near(r.TPOTMean, (1.81-0.025)/246) {
		t.Errorf("row = %+v", r)
	}
}

// TestReadErrors: each bad input names the file, the line and the field.
func TestReadErrors(t *testing.T) {
	good := `{"input_toks": 10, "output_toks": 2, "arrival_time": 1.0, "queued_ts": 5.0, "first_token_ts": 5.1, "last_token_ts": 5.5}`
	for _, c := range []struct {
		name, in, want string
		read           func(string) error
	}{
		{"malformed line", good + "\n{\"input_toks\": 3,\n", "r.jsonl line 2: malformed JSON", jsonl},
		{"wrong type", `{"input_toks": "x"}`, `r.jsonl line 1: field "input_toks"`, jsonl},
		{"missing", `{"input_toks": 1, "output_toks": 2}`, `r.jsonl line 1: field "arrival_time": missing`, jsonl},
		{"clock order", strings.Replace(good, `"last_token_ts": 5.5`, `"last_token_ts": 5.0`, 1), `field "last_token_ts"`, jsonl},
		{"empty", "\n\n", "r.jsonl: no requests", jsonl},
		{"meta no kwargs", `{"model": "m"}`, `field "engine_kwargs": missing`, meta},
		{"meta negative", `{"engine_kwargs": {"model": "m", "max_num_seqs": -1}}`, `field "engine_kwargs.max_num_seqs"`, meta},
		{"ts header", "a,b,c,d,e,f\n", "ts.csv line 1: header", series},
		{"ts value", TimeseriesHeader + "\n1,x,0,0,0,0\n", `ts.csv line 2: field "prompt_throughput"`, series},
		{"ts order", TimeseriesHeader + "\n2,1,0,0,0,0\n1,1,0,0,0,0\n", `ts.csv line 3: field "t"`, series},
		{"bench rate", `{"model_id": "m", "input_lens": [1]}`, `field "request_rate": missing`, bench},
		{"bench arrays", `{"model_id": "m", "request_rate": 1, "input_lens": [1, 2], "output_lens": [1], "ttfts": [0.1, 0.1], "latencies": [0.2, 0.2]}`, `field "output_lens": 1 entries`, bench},
		{"bench concurrency", `{"model_id": "m", "request_rate": 1, "max_concurrency": 0, "input_lens": [1], "output_lens": [1], "ttfts": [0.1], "latencies": [0.2]}`, `field "max_concurrency": 0: want ≥ 1`, bench},
		{"stages column", "experiment\r\nx\r\n", `column "model" missing`, stages},
		{"stages value", "experiment,model,tp,max_num_seqs,max_num_batched_tokens,max_model_len,load_type,stages,scope,stage_rate,data_type,system_prompt_len,question_len,output_len,successes,failures,ttft_s_mean,ttft_s_median,ttft_s_p90,ttft_s_p99,e2e_s_mean,e2e_s_median,e2e_s_p90,e2e_s_p99,prompt_len_mean,requests_per_sec,input_tokens_per_sec,output_tokens_per_sec\r\ne,m,zero,1,1,1,c,1rps x 1s,summary,,d,1,1,2,1,0,1,1,1,1,1,1,1,1,1,1,1,1\r\n", `s.csv line 2: column "tp"`, stages},
		// Contradictions (issue 21): each names both sides.
		{"meta second object", `{"engine_kwargs": {"model": "m"}} {"engine_kwargs": {"model": "n"}}`, "meta.json: a second JSON value after the first (at byte 33)", meta},
		{"meta model", `{"model": "a", "engine_kwargs": {"model": "b"}}`, `field "model": "a", but engine_kwargs.model is "b"`, meta},
		{"meta kv_cache block size", `{"engine_kwargs": {"model": "m", "block_size": 32}, "kv_cache": {"block_size": 16}}`, `field "kv_cache.block_size": 16, but engine_kwargs.block_size is 32`, meta},
		{"bench completed", `{"model_id": "m", "request_rate": 1, "completed": 4000, "input_lens": [1], "output_lens": [1], "ttfts": [0.1], "latencies": [0.2]}`, `field "completed": 4000, but the per-request arrays hold 1 requests, 1 of them successful`, bench},
		{"bench failed", `{"model_id": "m", "request_rate": 1, "failed": 3, "input_lens": [1], "output_lens": [1], "ttfts": [0.1], "latencies": [0.2]}`, `field "failed": 3, but the per-request arrays hold 1 requests, 0 of them failed`, bench},
		{"bench latency span", `{"model_id": "m", "request_rate": 1, "input_lens": [1], "output_lens": [1], "ttfts": [0.1], "latencies": [2e6]}`, `field "latencies[0]": 2e+06 s`, bench},
		{"jsonl clocks", good + "\n" + strings.Replace(good, `"arrival_time": 1.0`, `"arrival_time": 3.0`, 1), `r.jsonl line 2: field "first_token_ts": 5.1 puts the first token 0.1 s after the first queued_ts (line 1) but arrival_time 3 is 2 s after the first arrival (line 1)`, jsonl},
		{"jsonl span", good + "\n" + strings.Replace(good, `"last_token_ts": 5.5`, `"last_token_ts": 2e6`, 1), `r.jsonl line 2: field "last_token_ts": 2e+06 is 1.999995e+06 s after the first queued_ts (line 1, 5)`, jsonl},
	} {
		err := c.read(c.in)
		if err == nil || !strings.HasPrefix(err.Error(), "realrun: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

func jsonl(s string) error { _, err := ReadRequests(strings.NewReader(s), "r.jsonl"); return err }
func meta(s string) error  { _, err := ReadMeta(strings.NewReader(s), "meta.json"); return err }
func series(s string) error {
	_, err := ReadTimeseries(strings.NewReader(s), "ts.csv")
	return err
}
func bench(s string) error  { _, _, err := ReadBench(strings.NewReader(s), "b.json"); return err }
func stages(s string) error { _, err := ReadStageRows(strings.NewReader(s), "s.csv"); return err }

// TestSharedRuns reads the visible runs: the LLMServingSim runs replay the
// workload's totals, 257,239 input and 195,753 output tokens (SOURCE.md).
func TestSharedRuns(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "data")
	if _, err := os.Stat(root); err != nil {
		t.Skip("../shared/data not found")
	}
	for _, hw := range []string{"RTXPRO6000", "RTX4090"} {
		runs, err := Open(filepath.Join(root, "llmservingsim", "vllm-runs", hw, "Llama-3.1-8B"))
		if err != nil {
			t.Fatal(err)
		}
		if in, out := runs[0].TokenTotals(); in != 257239 || out != 195753 || len(runs[0].Requests) != 300 {
			t.Errorf("%s: %d requests, %d/%d tokens", hw, len(runs[0].Requests), in, out)
		}
	}
	runs, err := Open(filepath.Join(root, "vllm-h100-runs", "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 14 { // 14 rows plus a header (SOURCE.md)
		t.Errorf("%d stage rows, want 14", len(runs))
	}
}

// TestOpenRequestsDirNoMeta: a run directory without meta.json is an error
// that names the file and says why it is needed.
func TestOpenRequestsDirNoMeta(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "requests.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	want := "realrun: open " + filepath.Join(dir, "meta.json") + ": no such file or directory (a run needs its engine arguments)"
	if _, err := Open(dir); err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// TestCSVEmptyFile: each CSV reader (one readHead) calls an empty file so,
// naming it.
func TestCSVEmptyFile(t *testing.T) {
	_, err1 := ReadStageRows(strings.NewReader(""), "s.csv")
	_, err2 := ReadTimeseries(strings.NewReader(""), "ts.csv")
	for _, c := range []struct {
		err  error
		want string
	}{{err1, "realrun: s.csv: empty file"}, {err2, "realrun: ts.csv: empty file"}} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("error %v, want %s", c.err, c.want)
		}
	}
}
