package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// summaryOf runs `servesim run ARGS -o DIR -q` and returns summary.json's
// scenario and metrics.
func summaryOf(t *testing.T, args string) map[string]any {
	t.Helper()
	dir := t.TempDir()
	var out bytes.Buffer
	if err := dispatch(append(strings.Fields(args), "-q", "-o", dir), &out, &out); err != nil {
		t.Fatalf("%s: %v\n%s", args, err, out.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "servesim")
	return m
}

// sameSummary checks that `servesim run BASE+A` and `run BASE+B` write
// the same summary.json (scenario and metrics, summaryOf): two spellings
// of one setting. A difference names A and B and shows both scenarios.
func sameSummary(t *testing.T, base, a, b string) {
	t.Helper()
	sa, sb := summaryOf(t, base+a), summaryOf(t, base+b)
	if !reflect.DeepEqual(sa, sb) {
		t.Errorf("%q and %q differ:\n%v\n%v", a, b, sa["scenario"], sb["scenario"])
	}
}

// TestVLLMAliases: each vLLM spelling is the same flag as servesim's: the
// two command lines give identical summary.json files.
//
// Both run on the embedded default written to a --config file, so that
// vLLM's defaults (TestVLLMDefaultsBySpelling) stay out of the comparison.
func TestVLLMAliases(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "default.toml")
	if err := os.WriteFile(cfg, []byte(scenario.DefaultTOML()), 0o644); err != nil {
		t.Fatal(err)
	}
	base := "--config " + cfg + " --model llama-3.1-8b --prompt-len constant:200 --output-len constant:20 "
	for _, c := range []struct{ servesim, vllm string }{
		{"--tp 2 --rate 4 -n 30", "-tp 2 --request-rate 4 --num-prompts 30"},
		{"--tp 2 -n 30", "-tp=2 -n 30"},
		{"--tp 2 -n 30", "--tensor-parallel-size 2 -n 30"},
		{"--pp 2 -n 30", "-pp 2 -n 30"},
		{"--pp 2 -n 30", "-pp=2 -n 30"},
		{"--pp 2 --tp 2 -n 30", "--pipeline-parallel-size 2 -tp 2 -n 30"},
		{"--rate inf -n 30", "--request-rate inf --num-prompts 30"},
		{"--prefix-caching -n 30", "--enable-prefix-caching -n 30"},
		{"--prefix-caching=false -n 30", "--no-enable-prefix-caching -n 30"},
		{"--chunked-prefill=false -n 30", "--no-enable-chunked-prefill -n 30"},
		{"--chunked-prefill -n 30", "--enable-chunked-prefill -n 30"},
		{"--kv fp8 -n 30", "--kv-cache-dtype fp8_e4m3 -n 30"},
		{"--kv bf16 -n 30", "--kv-cache-dtype auto -n 30"},
		{"--weights bf16 -n 30", "--dtype bfloat16 -n 30"},
		{"--weights fp8 -n 30", "--quantization fp8 -n 30"},
		{"--slo-ttft 500 --slo-tpot 50 -n 30", "--goodput ttft:500 tpot:50 -n 30"},
		{"--slo-e2e 2000 --slo-ttft 0 --slo-tpot 0 -n 30", "--goodput=e2el:2000 -n 30"}, // only the SLOs --goodput names
		// random dataset: 1024·(1 ± 0.5) = [512, 1536] → uniform:511.5,1536.5; 128·(1 ± 0.5) = [64, 192].
		{"--prompt-len uniform:511.5,1536.5 --output-len uniform:63.5,192.5 -n 30", "--dataset-name random --random-range-ratio 0.5 -n 30"},
		{"--prompt-len constant:300 --output-len constant:40 -n 30", "--random-input-len 300 --random-output-len 40 -n 30"},
		{"--prompt-len constant:300 --output-len constant:40 -n 30", "--input-len 300 --output-len 40 -n 30"},
		{"--prompt-len constant:300 --output-len constant:40 -n 30", "--dataset-name random --prompt-len 300 --output-len 40 -n 30"},
		// 300·(1 ± 0.1) = [270, 330]; 40·(1 ± 0.1) = [36, 44].
		{"--prompt-len uniform:269.5,330.5 --output-len uniform:35.5,44.5 -n 30", "--dataset-name random --input-len 300 --output-len 40 --random-range-ratio 0.1 -n 30"},
		{"--no-custom-all-reduce --tp 2 -n 30", "--disable-custom-all-reduce -tp 2 -n 30"},
		{"--enforce-eager=false -n 30", "--no-enforce-eager -n 30"},
		{"--no-async-scheduling=false -n 30", "--async-scheduling -n 30"},
		{"--scheduler fcfs -n 30", "--scheduling-policy fcfs -n 30"},
	} {
		b0 := base
		if strings.Contains(c.vllm, "random") || strings.Contains(c.vllm, "input-len") {
			// The random dataset draws the lengths: --prompt-len beside it
			// is a contradiction (TestDatasetLengthFlags).
			b0 = "--config " + cfg + " --model llama-3.1-8b "
		}
		sameSummary(t, b0, c.servesim, c.vllm)
	}
}

func TestVLLMArgs(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"-tp 4 --rate 2", "--tensor-parallel-size 4 --rate 2"},
		{"-tp=4", "--tensor-parallel-size=4"},
		{"-pp 2 -tp 4", "--pipeline-parallel-size 2 --tensor-parallel-size 4"},
		{"-pp=2", "--pipeline-parallel-size=2"},
		{"--goodput ttft:500 tpot:50 --rate 2", "--goodput=ttft:500,tpot:50 --rate 2"},
		{"--goodput=ttft:500 e2el:9", "--goodput=ttft:500,e2el:9"},
		{"--goodput --rate 2", "--goodput= --rate 2"},
		{"--goodput ttft=500 --rate 2", "--goodput=ttft=500 --rate 2"}, // argparse takes every word to the next flag
		{"-- -tp 4", "-- -tp 4"},
	} {
		if got := strings.Join(vllmArgs(strings.Fields(c.in)), " "); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRandomLengths(t *testing.T) {
	for _, c := range []struct {
		in, out        int
		r              float64
		prompt, output string
		wantErr        bool
	}{
		{1024, 128, 0, "constant:1024", "constant:128", false},
		// ⌊1000·0.9⌋ = 900, ⌈1000·1.1⌉ = 1100; ⌊10·0.9⌋ = 9, ⌈10·1.1⌉ = 11.
		{1000, 10, 0.1, "uniform:899.5,1100.5", "uniform:8.5,11.5", false},
		// output ⌊1·0.5⌋ = 0 → 1 (vLLM's max(output_low, 1)), ⌈1·1.5⌉ = 2.
		{10, 1, 0.5, "uniform:4.5,15.5", "uniform:0.5,2.5", false},
		{1, 10, 0.5, "", "", true}, // ⌊1·0.5⌋ = 0 prompt tokens
		{10, 10, 1, "", "", true},
		{0, 10, 0, "", "", true},
	} {
		p, o, err := randomLengths(c.in, c.out, c.r)
		if (err != nil) != c.wantErr || p != c.prompt || o != c.output {
			t.Errorf("%d, %d, %v: %q %q %v", c.in, c.out, c.r, p, o, err)
		}
	}
}

func TestSampleShareGPT(t *testing.T) {
	path := filepath.Join("testdata", "vllm", "sharegpt.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sampleShareGPT(path, data, 10, 0, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	// Kept: a (49 characters → round(49/4) = 12 tokens; reply 75 → round(18.75) = 19) and d
	// (600, 300 from num_tokens). b's prompt "hi" is 1 < 4 tokens, c has one
	// turn, e's prompt 1025 > 1024, f's total 2049 > 2048.
	kept := map[lengths]bool{{12, 19}: true, {600, 300}: true}
	if len(got) != 10 {
		t.Fatalf("%d requests, want 10 (oversampled)", len(got))
	}
	for _, g := range got {
		if !kept[g] {
			t.Errorf("sampled %v, want one of %v", g, kept)
		}
	}
	fixed, err := sampleShareGPT(path, data, 2, 7, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	// --sharegpt-output-len 7: b's output check is skipped but its prompt is still short.
	for _, g := range fixed {
		if g.output != 7 {
			t.Errorf("%v: output %d, want 7", g, g.output)
		}
	}
}

func TestSampleBurstGPT(t *testing.T) {
	path := filepath.Join("testdata", "vllm", "burstgpt.csv")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sampleBurstGPT(path, data, 2, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	// GPT-4 rows with Response tokens > 0: (200, 80) and (400, 90).
	slices.SortFunc(got, func(a, b lengths) int { return a.prompt - b.prompt })
	if want := []lengths{{200, 80}, {400, 90}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestDatasetRun runs the ShareGPT and BurstGPT datasets end to end, with
// the save-result file.
func TestDatasetRun(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"--dataset-name sharegpt --dataset-path testdata/vllm/sharegpt.json --num-prompts 8 --request-rate 2", "Successful requests:                     8"},
		{"--dataset-name burstgpt --dataset-path testdata/vllm/burstgpt.csv --num-prompts 5", "Successful requests:                     5"},
		{"--dataset-name sharegpt --dataset-path testdata/vllm/sharegpt.json -n 4 --max-concurrency 2", "Successful requests:                     4"},
	} {
		dir := t.TempDir()
		res := filepath.Join(dir, "r.json")
		var out bytes.Buffer
		args := append(strings.Fields(c.args), "-o", dir, "--save-result", "--result-filename", res)
		if err := dispatch(append([]string{"run"}, args...), &out, &out); err != nil {
			t.Fatalf("%s: %v\n%s", c.args, err, out.String())
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%s: output lacks %q:\n%s", c.args, c.want, out.String())
		}
		for _, f := range []string{"dataset.csv", "r.json"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestRunPipelineParallel: `servesim run --pipeline-parallel-size 2` runs
// and prints the stages' memory, stage times and the bubble share; an
// explicit 0 is an error naming the field.
func TestRunPipelineParallel(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	args := []string{"run", "-o", dir, "--model", "llama-3.1-70b", "--gpu", "h100", "-tp", "2", "--pipeline-parallel-size", "2", "--requests", "100"}
	if err := dispatch(vllmArgs(args), &out, &out); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, out.String(),
		"Pipeline: pp 2 × tp 2 = 4 GPUs per instance",
		"stage 0: layers 0–39 (40), 35.28 GB weights/GPU, KV 81920 B/token/GPU", // 80 layers split 40/40; 2·40·8 KV heads/2·128·2 B
		"stage 1: layers 40–79 (40)",
		"llama-3.1-70b on 4× h100",
		"bubble share",
	)
	out.Reset()
	err := dispatch([]string{"run", "-o", dir, "--pp", "0", "--requests", "10"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), `field "pp" (flag --pp): 0 must be in [1, 64]`) {
		t.Errorf("--pp 0: %v", err)
	}
}

// TestRunExpertParallel: servesim run with vLLM's -dp 2 -ep on
// Qwen3-30B-A3B prints the DP ranks' and the EP group's figures (64 of 128
// experts a GPU, 32.07 GB weights a GPU against 61.06 without EP), the
// run's all-to-all share, and a DeepSeek-V3 wide-EP layout on one GB200
// NVL72 domain (72 ranks, ⌈256/72⌉ = 4 experts a GPU) runs; --dp 0 is an
// error naming the flag.
func TestRunExpertParallel(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--model", "qwen3-30b-a3b", "--gpu", "h100", "--data-parallel-size", "2", "--enable-expert-parallel", "--requests", "100"},
			[]string{"Data parallel: dp 2 ranks × tp 1 = 2 GPUs per replica", "32.07 GB weights/GPU; routed by dp-coordinator",
				"Expert parallel: ep 2 GPUs hold 128 routed experts, 64 per GPU whole; all-to-all allgather_reducescatter over NVLink (one 8-GPU domain); expert load skew 1.069",
				"qwen3-30b-a3b on 2 × 1× h100", "tokens per rank step; all-to-all"}},
		{[]string{"--model", "deepseek-v3", "--gpu", "gb200", "--weights", "fp8", "--kv", "fp8", "-dp", "72", "-ep", "--enable-eplb", "--all2all-backend", "deepep_low_latency", "--requests", "300", "--rate", "50"},
			[]string{"Data parallel: dp 72 ranks × tp 1 = 72 GPUs per replica", "ep 72 GPUs hold 256 routed experts, 4 per GPU whole; all-to-all deepep_low_latency over NVLink (one 72-GPU domain); expert load skew 1.008",
				"deepseek-v3 on 72 × 1× gb200"}},
		// vLLM's dual batch overlap with its decode threshold lowered, and a
		// disaggregated decode pool of its own layout (servesim's flags).
		{[]string{"--model", "qwen3-30b-a3b", "--gpu", "h100", "-dp", "2", "-ep", "--all2all-backend", "deepep_low_latency", "--enable-dbo", "--dbo-decode-token-threshold", "1",
			"--decode-replicas", "1", "--decode-dp", "4", "--requests", "100"},
			[]string{"two-batch overlap above 1 decode / 512 prefill tokens", "Decode pool: Data parallel: dp 4 ranks × tp 1 = 4 GPUs per replica",
				"Decode pool: Expert parallel: ep 4 GPUs hold 128 routed experts, 32 per GPU whole; all-to-all deepep_low_latency", "(exposed: two-batch overlap split",
				"Decode pool: DP lock-step:"}},
		// SGLang's spelling takes SGLang's split rule, a given threshold wins.
		{[]string{"--model", "qwen3-30b-a3b", "--gpu", "h100", "-dp", "2", "-ep", "--enable-two-batch-overlap", "--requests", "20"},
			[]string{"two-batch overlap above 1 decode / 1 prefill tokens"}},
		{[]string{"--model", "qwen3-30b-a3b", "--gpu", "h100", "-dp", "2", "-ep", "--enable-two-batch-overlap", "--tbo-decode-token-threshold", "8", "--requests", "20"},
			[]string{"two-batch overlap above 8 decode / 1 prefill tokens"}},
		// EP × PP in vLLM's and SGLang's spellings: an EP group of dp × tp
		// a stage; and a disaggregated decode pool with its own stages.
		{[]string{"--model", "qwen3-30b-a3b", "--gpu", "h100", "-pp", "2", "-tp", "2", "-dp", "2", "-ep", "--requests", "40"},
			[]string{"Data parallel: dp 2 ranks × pp 2 × tp 2 = 8 GPUs per replica", "24 MoE layers, their experts over the stage's EP group of 4 GPUs",
				"ep 4 GPUs hold 128 routed experts of each MoE layer, one EP group per pipeline stage", ", of which all-to-all: 0: "}},
		// (SGLang's spellings select the sglang engine, which refuses
		// pipeline stages; mapped onto vllm-v1 they run.)
		{[]string{"--model", "qwen3-30b-a3b", "--gpu", "h100", "--pp-size", "2", "--tp-size", "4", "--dp-size", "2", "--enable-dp-attention", "--ep-size", "4", "--requests", "40", "--engine", "vllm-v1"},
			[]string{"Data parallel: dp 2 ranks × pp 2 × tp 2 = 8 GPUs per replica", "ep 4 GPUs hold 128 routed experts of each MoE layer"}},
		{[]string{"--model", "llama-3.1-70b", "--gpu", "h100", "-tp", "2", "-pp", "2", "--decode-replicas", "1", "--decode-pp", "2", "--requests", "20"},
			[]string{"decode instance(s) of 4× h100, TP 2", "Decode pool: Pipeline: pp 2 × tp 2 = 4 GPUs per instance", "KV leaves each of the prefill pool's 2 stages"}},
	}
	for _, c := range cases {
		var out bytes.Buffer
		args := append([]string{"run", "-o", t.TempDir()}, c.args...)
		if err := dispatch(vllmArgs(args), &out, &out); err != nil {
			t.Fatal(err)
		}
		for _, want := range c.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v: output lacks %q:\n%s", c.args, want, out.String())
			}
		}
	}
	var out bytes.Buffer
	err := dispatch([]string{"run", "-o", t.TempDir(), "--dp", "0", "--requests", "10"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), `field "dp" (flag --dp): 0 must be in [1, 576]`) {
		t.Errorf("--dp 0: %v", err)
	}
	err = dispatch([]string{"run", "-o", t.TempDir(), "--decode-replicas", "1", "--decode-pp", "0", "--requests", "10"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), `field "disagg.decode_pp" (flag --decode-pp): 0 must be in [1, 64]`) {
		t.Errorf("--decode-pp 0: %v", err)
	}
}
