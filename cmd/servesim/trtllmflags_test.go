package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// TestTRTLLMAliases: each trtllm-serve spelling, and each key of an
// --extra_llm_api_options file (JSON or YAML), sets the same scenario
// field as servesim's own spelling, so the command lines give the same
// summary.json (scenario and metrics).
func TestTRTLLMAliases(t *testing.T) {
	file := tempFiles(t)
	yaml := file("extra.yaml", "# LLM-API options\nenable_chunked_prefill: true\nscheduler_config:\n  capacity_scheduler_policy: MAX_UTILIZATION\nkv_cache_config:\n  free_gpu_memory_fraction: 0.8  # of the free memory\n  enable_block_reuse: false\n  tokens_per_block: 64\ncuda_graph_config:\n  enable_padding: true\n  max_batch_size: 256\nmax_batch_size: 512\n")
	json := file("extra.json", `{"enable_chunked_prefill": true, "scheduler_config": {"capacity_scheduler_policy": "MAX_UTILIZATION"},
		"kv_cache_config": {"free_gpu_memory_fraction": 0.8, "enable_block_reuse": false, "tokens_per_block": 64},
		"cuda_graph_config": {"enable_padding": true, "max_batch_size": 256}, "max_batch_size": 512}`)
	base := "run --prompt-len constant:300 --output-len constant:20 -n 30 "
	for _, c := range []struct{ a, b string }{
		{"--engine trtllm --max-num-seqs 64", "--max_batch_size 64"},
		{"--engine trtllm --max-num-batched-tokens 4096", "--max_num_tokens 4096"},
		{"--engine trtllm --max-model-len 4096", "--max_seq_len 4096"},
		{"--engine trtllm --tp 2", "--tp_size 2"},
		{"--engine trtllm --pp 2 --tp 2", "--pp_size 2 --tp_size 2"},
		{"--engine trtllm --model qwen3-30b-a3b --tp 2 --expert-parallel", "--model qwen3-30b-a3b --tp_size 2 --ep_size 2"},
		{"--engine trtllm --kv_cache_free_gpu_memory_fraction 0.8", "--extra_llm_api_options " + file("f.json", `{"kv_cache_config": {"free_gpu_memory_fraction": 0.8}}`)},
		{"--engine trtllm --enable_chunked_prefill", "--extra_llm_api_options " + file("c.yaml", "enable_chunked_prefill: true\n")},
		{"--engine trtllm --extra_llm_api_options " + yaml, "--extra_llm_api_options " + json},
		{"--engine trtllm", "--trust_remote_code --log_level info --max_beam_width 1"}, // no effect, and TensorRT-LLM's default
	} {
		sameSummary(t, base, c.a, c.b)
	}
	// The file's options are read: MAX_UTILIZATION with chunking, 64-token blocks.
	out, err := runOut("--extra_llm_api_options", yaml)
	if err != nil || !strings.Contains(out, "trtllm-MAX_UTILIZATION-chunked batching, max_num_seqs 512") || !strings.Contains(out, "blocks of 64 tokens") {
		t.Errorf("%v:\n%s", err, out)
	}
}

// TestTRTLLMFlagWalk walks trtllmFlags: an honoured flag is a flag of run
// --help; a no-effect one runs and the header lists it; a refused one is
// an error naming it and its reason, and given TensorRT-LLM's default it
// runs as no effect; every other spelling an entry names is a flag of run.
func TestTRTLLMFlagWalk(t *testing.T) {
	has := runHasFlag(t)
	const noEffectLine = "trtllm-serve flags with no effect in a simulation: "
	seen := map[string]bool{}
	for _, f := range trtllmFlags {
		if seen[f.name] {
			t.Errorf("--%s: twice in trtllmFlags", f.name)
		}
		seen[f.name] = true
		for _, o := range f.other {
			if !has(o) {
				t.Errorf("--%s: its other spelling --%s is not a flag of run --help", f.name, o)
			}
		}
		if f.class != honoured {
			checkUnhonoured(t, noEffectLine, "TensorRT-LLM", f.name, f.class, f.kind, f.dflt, f.note)
		} else if !has(f.name) {
			t.Errorf("honoured --%s: not a flag in run --help", f.name)
		}
	}
}

// Bad command lines and option files are errors naming the flag or key.
func TestTRTLLMFlagErrors(t *testing.T) {
	file := tempFiles(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max_batch_size", "64", "--engine", "vllm-v1"}, "give --engine trtllm"},
		{[]string{"--max_batch_size", "64", "--max-num-seqs", "64"}, "set the same field"},
		{[]string{"--ep_size", "3", "--tp_size", "2"}, "EP size 3"},
		{[]string{"--kv_cache_free_gpu_memory_fraction", "1"}, "free_gpu_memory_fraction"},
		{[]string{"--extra_llm_api_options", filepath.Join(t.TempDir(), "missing.yaml")}, "--extra_llm_api_options"},
		{[]string{"--extra_llm_api_options", file("u.json", `{"speculative_config": {"decoding_type": "MTP"}}`)}, `key "speculative_config"`},
		{[]string{"--extra_llm_api_options", file("k.yaml", "kv_cache_config:\n  host_cache_size: 10\n")}, `key "kv_cache_config.host_cache_size"`},
		{[]string{"--extra_llm_api_options", file("p.yaml", "scheduler_config:\n  capacity_scheduler_policy: STATIC_BATCH\n")}, "STATIC_BATCH is not modelled"},
		{[]string{"--extra_llm_api_options", file("l.yaml", "cuda_graph_config:\n  batch_sizes:\n    - 1\n    - 2\n")}, "block list"},
		{[]string{"--extra_llm_api_options", file("b.yaml", "cuda_graph_config:\n  batch_sizes: [1, 2, 4]\n")}, "explicit CUDA-graph batch sizes"},
		{[]string{"--extra_llm_api_options", file("t.yaml", "enable_chunked_prefill: yes please\n")}, "want true or false"},
		{[]string{"--extra_llm_api_options", file("i.yaml", "kv_cache_config:\n  max_tokens: 1.5\n")}, "want an integer"},
		{[]string{"--extra_llm_api_options", file("d.yaml", "max_batch_size: 8\nmax_batch_size: 9\n")}, "given twice"},
		{[]string{"--extra_llm_api_options", file("j.json", `{"max_batch_size": 8`)}, "JSON"},
	} {
		_, err := runOut(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "run: ") && !strings.HasPrefix(err.Error(), "scenario: ") {
			t.Errorf("%v: error %v, want one naming %q", c.args, err, c.want)
		}
	}
}

// FuzzLLMAPIOptions: the option-file reader never panics, and whatever it
// parses applies to a scenario without panicking (an error or fields set).
func FuzzLLMAPIOptions(f *testing.F) {
	for _, s := range []string{
		"enable_chunked_prefill: true\nkv_cache_config:\n  free_gpu_memory_fraction: 0.8\n",
		`{"scheduler_config": {"capacity_scheduler_policy": "MAX_UTILIZATION"}, "max_batch_size": 64}`,
		"cuda_graph_config:\n  enable_padding: true # pad\n  max_batch_size: 128\ncuda_graph_config2: [1, 2]\n",
		"a:\n b:\n  c: 'x # y'\n d: \"q\"\n",
		"cuda_graph_config: null\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseLLMAPIOptions(data)
		if err != nil {
			return
		}
		p := filepath.Join(t.TempDir(), "o.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var s scenario.Scenario
		if _, err := applyLLMAPIOptions(p, &s); err == nil && m == nil && len(bytes.TrimSpace(data)) > 0 && bytes.TrimSpace(data)[0] == '{' {
			t.Fatalf("%q: a JSON object parsed to nil", data)
		}
	})
}

// tempFiles returns a function writing a file of text into one temporary
// directory and returning its path.
func tempFiles(t *testing.T) func(name, text string) string {
	dir := t.TempDir()
	return func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
}
