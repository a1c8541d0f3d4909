package realrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineArgsRefused: every engine-argument source the readers take
// (meta.json engine_kwargs and resolved_config, bench --metadata keys,
// table columns) refuses an argument that deploys what servesim does not
// model, naming it and its value, and accepts the same argument at its
// inert value (vLLM's default).
func TestEngineArgsRefused(t *testing.T) {
	const stageHead = "experiment,model,tp,max_num_seqs,max_num_batched_tokens,max_model_len,load_type,stages,scope,stage_rate,data_type,system_prompt_len,question_len,output_len,successes,failures,ttft_s_mean,ttft_s_median,ttft_s_p90,ttft_s_p99,e2e_s_mean,e2e_s_median,e2e_s_p90,e2e_s_p99,prompt_len_mean,requests_per_sec,input_tokens_per_sec,output_tokens_per_sec"
	const stageRow = "e,m,1,1,1,1,constant,1rps x 1s,summary,,shared_prefix,1,1,2,1,0,1,1,1,1,1,1,1,1,1,1,1,1"
	metaWith := func(kw string) string {
		return `{"model": "m", "engine_kwargs": {"model": "m", ` + kw + `}}`
	}
	benchWith := func(kv string) string {
		return `{"model_id": "m", "request_rate": 1, ` + kv + `, "input_lens": [1], "output_lens": [1], "ttfts": [0.1], "latencies": [0.2]}`
	}
	for _, c := range []struct {
		name, in string
		read     func(string) error
		want     string // "" = accepted
	}{
		{"meta dp 2", metaWith(`"data_parallel_size": 2`), meta, ""}, // modelled (TestEngineArgsDPEP)
		{"meta dp local 2", metaWith(`"data_parallel_size_local": 2`), meta, "engine_kwargs.data_parallel_size_local = 2: one node's share"},
		{"meta dp local 1", metaWith(`"data_parallel_size_local": 1`), meta, ""},
		{"meta elastic ep", metaWith(`"enable_elastic_ep": true`), meta, "engine_kwargs.enable_elastic_ep = true: elastic expert parallelism"},
		{"meta ep off", metaWith(`"enable_expert_parallel": false`), meta, ""},
		{"meta both named", metaWith(`"data_parallel_size_local": 2, "enable_elastic_ep": true`), meta, "data_parallel_size_local = 2: one node's share of a multi-node DP launch is not replayed alone; engine_kwargs.enable_elastic_ep = true"},
		{"meta pp", metaWith(`"pipeline_parallel_size": 2`), meta, ""},                                              // modelled (TestEngineArgsPP)
		{"meta spec", metaWith(`"speculative_config": {"method": "ngram", "num_speculative_tokens": 4}`), meta, ""}, // modelled (TestEngineArgsSpeculative)
		{"meta spec v0", metaWith(`"speculative_model": "m-draft"`), meta, `speculative_model = m-draft: speculative decoding recorded without speculative_config`},
		{"meta spec null", metaWith(`"speculative_config": null`), meta, ""},
		{"meta kv transfer", metaWith(`"kv_transfer_config": {"kv_connector": "NixlConnector"}`), meta, "kv_transfer_config"},
		{"meta kv offload", metaWith(`"kv_offloading_size": 64`), meta, "kv_offloading_size = 64: a CPU KV-cache offload tier"},
		{"meta lora", metaWith(`"enable_lora": true`), meta, "enable_lora = true"},
		{"meta priority", metaWith(`"scheduling_policy": "priority"`), meta, "scheduling_policy = priority"},
		{"meta fcfs", metaWith(`"scheduling_policy": "fcfs"`), meta, ""},
		{"resolved dp local", `{"engine_kwargs": {"model": "m"}, "resolved_config": {"parallel_config": {"data_parallel_size_local": 4}, "speculative_config": null}}`, meta, "resolved_config.parallel_config.data_parallel_size_local = 4"},
		{"resolved spec", `{"engine_kwargs": {"model": "m"}, "resolved_config": {"speculative_config": {"method": "eagle"}}}`, meta, ""}, // modelled
		{"bench metadata dp local", benchWith(`"data_parallel_size_local": "2"`), bench, "data_parallel_size_local = 2: one node's share"},
		{"bench metadata ep python bool", benchWith(`"enable_expert_parallel": "True"`), bench, ""},
		{"bench metadata ep off", benchWith(`"enable_expert_parallel": "False"`), bench, ""},
		{"bench metadata quantization", benchWith(`"quantization": "fp8"`), bench, ""},
		{"stage column dp local", strings.Replace(stageHead, "experiment,", "data_parallel_size_local,experiment,", 1) + "\r\n2," + stageRow + "\r\n", stages, `s.csv line 2: engine arguments servesim does not model (validate stops rather than replay the run without them): column "data_parallel_size_local" = 2`},
		{"stage column cpu kv", strings.Replace(stageHead, "experiment,", "cpu_kv_blocks_logged,experiment,", 1) + "\r\n6553," + stageRow + "\r\n", stages, `column "cpu_kv_blocks_logged" = 6553: a CPU KV-cache offload tier`},
		{"stage column cpu kv 0", strings.Replace(stageHead, "experiment,", "cpu_kv_blocks_logged,experiment,", 1) + "\r\n0," + stageRow + "\r\n", stages, ""},
	} {
		err := c.read(c.in)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), "realrun: ") || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestEngineArgsPP: pipeline_parallel_size reaches the Engine from
// meta.json's engine_kwargs and from a table column; below 1 is an error.
func TestEngineArgsPP(t *testing.T) {
	e, err := ReadMeta(strings.NewReader(`{"engine_kwargs": {"model": "m", "pipeline_parallel_size": 2}}`), "meta.json")
	if err != nil || e.PP != 2 {
		t.Errorf("meta.json: PP %d, %v; want 2", e.PP, err)
	}
	e, err = ReadMeta(strings.NewReader(`{"engine_kwargs": {"model": "m"}, "resolved_config": {"parallel_config": {"pipeline_parallel_size": 3}}}`), "meta.json")
	if err != nil || e.PP != 3 {
		t.Errorf("resolved_config only: PP %d, %v; want 3", e.PP, err)
	}
	_, err = ReadMeta(strings.NewReader(`{"engine_kwargs": {"model": "m", "pipeline_parallel_size": 2}, "resolved_config": {"parallel_config": {"pipeline_parallel_size": 4}}}`), "meta.json")
	if err == nil || !strings.Contains(err.Error(), "4, but engine_kwargs.pipeline_parallel_size is 2") {
		t.Errorf("engine_kwargs 2, resolved 4: %v", err)
	}
	var c Engine
	if err := applyArg(&c, "pipeline_parallel_size", "4"); err != nil || c.PP != 4 {
		t.Errorf("column: PP %d, %v; want 4", c.PP, err)
	}
	if err := applyArg(&c, "pipeline_parallel_size", "0"); err == nil || !strings.Contains(err.Error(), "want a whole number ≥ 1") {
		t.Errorf("column 0: %v", err)
	}
}

// TestEngineArgsModelled: a modelled argument from each source reaches
// the Engine; one not in the table is a note.
func TestEngineArgsModelled(t *testing.T) {
	e, err := ReadMeta(strings.NewReader(`{"engine_kwargs": {"model": "m", "enable_chunked_prefill": false, "quantization": "fp8", "enforce_eager": true, "disable_custom_all_reduce": true, "async_scheduling": false, "block_size": 32, "gpu_memory_utilization": 0.8, "enable_prefix_caching": false, "swap_space": 4}}`), "meta.json")
	if err != nil {
		t.Fatal(err)
	}
	if e.ChunkedPrefill == nil || *e.ChunkedPrefill || e.Quantization != "fp8" || !e.EnforceEager || !e.NoCustomAllReduce ||
		e.AsyncScheduling == nil || *e.AsyncScheduling || e.BlockSize != 32 || e.GPUMemUtil != 0.8 || e.PrefixCaching == nil || *e.PrefixCaching {
		t.Errorf("engine = %+v", e)
	}
	if len(e.Notes) != 1 || !strings.Contains(e.Notes[0], "swap_space not in servesim's engine-argument table") {
		t.Errorf("notes = %q, want one naming swap_space", e.Notes)
	}
	r, _, err := ReadBench(strings.NewReader(`{"model_id": "m", "request_rate": 1, "max_num_seqs": "64", "enable_chunked_prefill": "False", "input_lens": [1], "output_lens": [1], "ttfts": [0.1], "latencies": [0.2]}`), "b.json")
	if err != nil {
		t.Fatal(err)
	}
	if r.Engine.MaxNumSeqs != 64 || r.Engine.ChunkedPrefill == nil || *r.Engine.ChunkedPrefill {
		t.Errorf("bench engine = %+v", r.Engine)
	}
}

// TestEngineArgsSharedRuns applies the table to every engine-argument
// source in ../shared/data. The runs validate reads are all accepted.
// vllm-sim2real-runs/experiments.csv, which validate does not replay,
// is checked column by column: its cpu_kv_blocks_logged is above 0 (a CPU
// offload tier configured) on 9 of its 12 experiments (experiments.csv:
// every row but the three Llama-4-Scout ones at 0), which the table
// refuses.
func TestEngineArgsSharedRuns(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "data")
	if _, err := os.Stat(root); err != nil {
		t.Skip("../shared/data not found")
	}
	for _, p := range []string{"llmservingsim/vllm-runs/RTXPRO6000/Llama-3.1-8B", "llmservingsim/vllm-runs/RTX4090/Llama-3.1-8B", "vllm-h100-runs/runs.csv"} {
		runs, err := Open(filepath.Join(root, p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, r := range runs {
			if len(r.Engine.Notes) > 0 {
				t.Errorf("%s: notes %q: every argument of the suite's runs is in the table", p, r.Engine.Notes)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(root, "vllm-sim2real-runs", "experiments.csv"))
	if err != nil {
		t.Skip(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	head := strings.Split(strings.TrimSpace(lines[0]), ",")
	refused := 0
	for _, l := range lines[1:] {
		c := &argChecker{file: "experiments.csv"}
		for i, v := range strings.Split(strings.TrimSpace(l), ",") {
			c.check(head[i], head[i], v)
		}
		if c.err() != nil {
			refused++
			if !strings.Contains(c.err().Error(), "cpu_kv_blocks_logged = ") || len(c.refused) != 1 {
				t.Errorf("%s: %v: want cpu_kv_blocks_logged refused alone", l[:20], c.err())
			}
		}
	}
	if refused != 9 {
		t.Errorf("%d sim2real experiments refused, want 9", refused)
	}
}

// TestEngineArgsDPEP: data_parallel_size, enable_expert_parallel and
// enable_eplb reach the Engine from meta.json engine_kwargs, from
// resolved_config.parallel_config where engine_kwargs gives none (a
// disagreement is an error naming both), and from bench --metadata (with
// Python's booleans); a negative DP size is an error (0, as every count, is not recorded).
func TestEngineArgsDPEP(t *testing.T) {
	e, err := ReadMeta(strings.NewReader(`{"engine_kwargs": {"model": "m", "data_parallel_size": 2, "enable_expert_parallel": true, "enable_eplb": true}}`), "meta.json")
	if err != nil || e.DP != 2 || !e.ExpertParallel || !e.EPLB {
		t.Errorf("meta.json: %+v, %v; want DP 2, EP, EPLB", e, err)
	}
	e, err = ReadMeta(strings.NewReader(`{"engine_kwargs": {"model": "m"}, "resolved_config": {"parallel_config": {"data_parallel_size": 4, "enable_expert_parallel": true}}}`), "meta.json")
	if err != nil || e.DP != 4 || !e.ExpertParallel {
		t.Errorf("resolved_config only: DP %d EP %v, %v; want 4, true", e.DP, e.ExpertParallel, err)
	}
	_, err = ReadMeta(strings.NewReader(`{"engine_kwargs": {"model": "m", "data_parallel_size": 2}, "resolved_config": {"parallel_config": {"data_parallel_size": 4}}}`), "meta.json")
	if err == nil || !strings.Contains(err.Error(), "4, but engine_kwargs.data_parallel_size is 2") {
		t.Errorf("engine_kwargs 2, resolved 4: %v", err)
	}
	if _, err = ReadMeta(strings.NewReader(`{"engine_kwargs": {"model": "m", "data_parallel_size": -1}}`), "meta.json"); err == nil {
		t.Error("data_parallel_size -1: no error")
	}
	var b Engine
	if err := applyArg(&b, "enable_expert_parallel", "True"); err != nil || !b.ExpertParallel {
		t.Errorf("bench metadata True: %v, %v", b.ExpertParallel, err)
	}
	if err := applyArg(&b, "data_parallel_size", "0"); err == nil {
		t.Error("bench metadata data_parallel_size 0: no error")
	}
	// Dual batch overlap and its thresholds (vLLM's enable_dbo).
	e, err = ReadMeta(strings.NewReader(`{"engine_kwargs": {"model": "m", "data_parallel_size": 2, "enable_expert_parallel": true, "enable_dbo": true, "dbo_decode_token_threshold": 16}}`), "meta.json")
	if err != nil || !e.DBO || e.DBODecodeThreshold != 16 || e.DBOPrefillThreshold != 0 {
		t.Errorf("meta.json with enable_dbo: %+v, %v; want DBO, decode threshold 16, prefill unset", e, err)
	}
	if err := applyArg(&b, "enable_dbo", "True"); err != nil || !b.DBO {
		t.Errorf("bench metadata enable_dbo True: %v, %v", b.DBO, err)
	}
	if err := applyArg(&b, "dbo_prefill_token_threshold", "0"); err == nil {
		t.Error("bench metadata dbo_prefill_token_threshold 0: no error")
	}
}

// TestEngineArgsSpeculative: speculative_config reaches the Engine as its
// JSON from meta.json's engine_kwargs, from resolved_config where
// engine_kwargs has none, and null or {} is none.
func TestEngineArgsSpeculative(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"engine_kwargs": {"model": "m", "speculative_config": {"method": "eagle3", "num_speculative_tokens": 3}}}`, `{"method": "eagle3", "num_speculative_tokens": 3}`},
		{`{"engine_kwargs": {"model": "m"}, "resolved_config": {"speculative_config": {"method": "mtp", "num_speculative_tokens": 1}}}`, `{"method": "mtp", "num_speculative_tokens": 1}`},
		{`{"engine_kwargs": {"model": "m", "speculative_config": null}}`, ""},
		{`{"engine_kwargs": {"model": "m", "speculative_config": {}}}`, ""},
	} {
		e, err := ReadMeta(strings.NewReader(c.in), "meta.json")
		if err != nil || e.Speculative != c.want {
			t.Errorf("%s: speculative %q, %v; want %q", c.in, e.Speculative, err, c.want)
		}
	}
}

// TestResolvedParallelErrors pins the whole message for each
// resolved_config.parallel_config size that is below 1 or disagrees with
// engine_kwargs (data_parallel_size and pipeline_parallel_size share one
// check, resolvedSize).
func TestResolvedParallelErrors(t *testing.T) {
	for _, c := range []struct{ kwargs, resolved, want string }{
		{``, `"data_parallel_size": 0`, `realrun: meta.json: field "resolved_config.parallel_config.data_parallel_size": 0: want ≥ 1`},
		{`, "data_parallel_size": 2`, `"data_parallel_size": 4`, `realrun: meta.json: field "resolved_config.parallel_config.data_parallel_size": 4, but engine_kwargs.data_parallel_size is 2: how many DP ranks ran?`},
		{``, `"pipeline_parallel_size": -1`, `realrun: meta.json: field "resolved_config.parallel_config.pipeline_parallel_size": -1: want ≥ 1`},
		{`, "pipeline_parallel_size": 2`, `"pipeline_parallel_size": 4`, `realrun: meta.json: field "resolved_config.parallel_config.pipeline_parallel_size": 4, but engine_kwargs.pipeline_parallel_size is 2: how many stages ran?`},
	} {
		meta := `{"engine_kwargs": {"model": "m"` + c.kwargs + `}, "resolved_config": {"parallel_config": {` + c.resolved + `}}}`
		if _, err := ReadMeta(strings.NewReader(meta), "meta.json"); err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", meta, err, c.want)
		}
	}
}
