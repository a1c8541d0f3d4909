package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// TestSGLangAliases: each SGLang spelling sets the same scenario field as
// servesim's flag, so the two command lines give the same summary.json
// (scenario and metrics). Both run on the embedded default written to a
// --config file, which keeps SGLang's radix-cache default
// (TestSGLangHeader) out of the comparison.
func TestSGLangAliases(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "default.toml")
	if err := os.WriteFile(cfg, []byte(scenario.DefaultTOML()), 0o644); err != nil {
		t.Fatal(err)
	}
	base := "run --config " + cfg + " --prompt-len constant:200 --output-len constant:20 -n 30 "
	const moe = "--model qwen3-30b-a3b --gpu h100 "
	for _, c := range []struct{ servesim, sglang string }{
		{"--tp 2", "--tp-size 2"},
		{"--pp 2 --tp 2", "--pp-size 2 --tp-size 2"},
		// DP without DP attention: replicas behind the router.
		{"--replicas 2", "--dp-size 2"},
		// DP attention: tp_size 2 over dp_size 2 is 2 ranks of TP 1;
		// tp_size 4 over 2 is 2 ranks of TP 2, EP over all 4 GPUs.
		{moe + "--dp 2 --tp 1 --expert-parallel", moe + "--tp-size 2 --dp-size 2 --enable-dp-attention --ep-size 2"},
		{moe + "--dp 2 --tp 2 --expert-parallel", moe + "--tp 4 --dp 2 --enable-dp-attention --ep 4"},
		{moe + "--dp 2 --tp 2", moe + "--tp 4 --dp 2 --enable-dp-attention --expert-parallel-size 1"},
		{moe + "--dp 2 --expert-parallel --all2all-backend deepep_low_latency", moe + "--tp-size 2 --dp-size 2 --enable-dp-attention --moe-a2a-backend deepep --deepep-mode low_latency"},
		{moe + "--dp 2 --expert-parallel --all2all-backend deepep_high_throughput", moe + "--dp 2 --ep-size 2 --moe-a2a-backend deepep --deepep-mode normal"},
		{moe + "--dp 2 --expert-parallel --all2all-backend allgather_reducescatter", moe + "--dp 2 --ep-size 2 --moe-a2a-backend none"},
		// 128 routed + 2 redundant experts over 2 GPUs: 65 a GPU.
		{moe + "--dp 2 --expert-parallel --eplb --eplb-redundant-experts 2", moe + "--dp 2 --ep-size 2 --enable-eplb --ep-num-redundant-experts 2"},
		{"--max-num-batched-tokens 4096 --chunked-prefill", "--chunked-prefill-size 4096"},
		// Under DP attention SGLang divides the chunk by dp_size: 4096 // 2 = 2048 a rank.
		{moe + "--dp 2 --expert-parallel --max-num-batched-tokens 2048 --chunked-prefill", moe + "--tp-size 2 --dp-size 2 --enable-dp-attention --ep-size 2 --chunked-prefill-size 4096"},
		{"--chunked-prefill=false", "--chunked-prefill-size -1"},
		{"--max-num-seqs 16", "--max-running-requests 16"},
		// Under DP attention 64 // dp_size 2 = 32 a rank.
		{moe + "--dp 2 --max-num-seqs 32", moe + "--tp-size 2 --dp-size 2 --enable-dp-attention --max-running-requests 64"},
		{"--max-model-len 4096", "--context-length 4096"},
		{"--block-size 32", "--page-size 32"},
		{"--scheduler fcfs", "--schedule-policy fcfs"},
		{"--prefix-caching=false", "--disable-radix-cache"},
	} {
		sameSummary(t, base, c.servesim, c.sglang)
	}
}

// TestSGLangErrors: refused SGLang flags, layouts servesim does not model,
// and an SGLang flag beside vLLM's (or servesim's) spelling of the same
// field are errors naming each side (exit 1).
func TestSGLangErrors(t *testing.T) {
	const moe = "--model qwen3-30b-a3b --gpu h100 "
	for _, c := range []struct {
		args string
		want []string
	}{
		// Refused, with the reason and servesim's equivalent.
		// The sglang engine's settings: out of range, vLLM's beside them, or under another engine.
		{"--mem-fraction-static 1.5", []string{"engine.mem_fraction_static", "must be in (0, 1)"}},
		{"--mem-fraction-static 0.8 --gpu-memory-utilization 0.9", []string{"--mem-fraction-static", "--gpu-memory-utilization"}},
		{"--schedule-conservativeness -1", []string{"engine.schedule_conservativeness", "[0, 100]"}},
		{"--max-prefill-tokens -1", []string{"engine.max_prefill_tokens", "in [1, 1073741824]"}},
		{"--cuda-graph-max-bs 100000", []string{"engine.cuda_graph_max_bs", "in [1, 65536]"}},
		{"--chunked-prefill-size 100000", []string{"--max-num-batched-tokens", "reserves", "--mem-fraction-static"}},
		{"--engine vllm-v1 --mem-fraction-static 0.8", []string{"engine.mem_fraction_static", "need engine \"sglang\""}},
		// Under trtllm too, chosen by name or by a trtllm-serve flag beside them.
		{"--engine trtllm --mem-fraction-static 0.8", []string{"engine.mem_fraction_static", "need engine \"sglang\", not \"trtllm\""}},
		{"--mem-fraction-static 0.8 --max_batch_size 64", []string{"engine.mem_fraction_static", "not \"trtllm\""}},
		{"--engine sglang --policy static", []string{"batch.policy", "SGLang's scheduler"}},
		{"--engine sglang --pp 2 --tp 2 --chunked-prefill-size -1", []string{"chunked pipelining", "needs chunked prefill"}},
		{"--schedule-policy lpm", []string{"--schedule-policy", "lpm order is not modelled"}},
		{"--schedule-policy dfs-weight", []string{"--schedule-policy", "dfs-weight"}},
		{moe + "--dp 2 --moe-a2a-backend mooncake", []string{"--moe-a2a-backend mooncake", "not modelled"}},
		{moe + "--dp 2 --moe-a2a-backend deepep", []string{"--moe-a2a-backend deepep", "--deepep-mode normal or low_latency", "default auto"}},
		{moe + "--dp 2 --moe-a2a-backend deepep --deepep-mode auto", []string{"--deepep-mode", "SGLang's auto"}},
		// EP must be 1 or the DP group's GPUs: dp 2 × tp 1 = 2.
		{moe + "--tp-size 2 --dp-size 2 --enable-dp-attention --ep-size 4", []string{"--ep-size 4", "dp 2 × tp 1 = 2", "1 or 2"}},
		{moe + "--tp 4 --ep 2", []string{"--ep 2", "dp 1 × tp 4 = 4", "below tp_size"}},
		{moe + "--ep-size 0", []string{"--ep-size 0"}},
		{moe + "--tp-size 3 --dp-size 2 --enable-dp-attention", []string{"--tp-size 3", "--dp-size 2", "multiple"}},
		{moe + "--dp-size 2 --enable-dp-attention", []string{"--enable-dp-attention", "--tp-size"}},
		{moe + "--tp-size 2 --enable-dp-attention", []string{"--enable-dp-attention", "--dp-size"}},
		{"--chunked-prefill-size 0", []string{"--chunked-prefill-size 0", "-1"}},
		{moe + "--tp-size 2 --dp-size 2 --enable-dp-attention --chunked-prefill-size 1", []string{"--chunked-prefill-size 1", "divides it by --dp-size 2"}},
		{moe + "--tp-size 2 --dp-size 2 --enable-dp-attention --max-running-requests 1", []string{"--max-running-requests 1", "divides it by --dp-size 2"}},
		{"--engine vllm-v1 --pp-size 2 --tp 2 --max-running-requests 8", []string{"--max-running-requests 8", "max_running_requests // pp_size", "only the sglang engine"}},
		{"--tp-size 2 --tensor-parallel-size 2", []string{"--tp-size", "--tensor-parallel-size"}},
		{"--tp-size 2 --tp 2", []string{"--tp-size", "--tp"}},
		{"--pp-size 2 -pp 2", []string{"--pp-size", "--pipeline-parallel-size"}},
		{moe + "--ep 2 --ep-size 2", []string{"--ep-size and --ep are one SGLang flag"}},
		{"--chunked-prefill-size -1 --policy chunked", []string{"--chunked-prefill-size -1", "--policy chunked"}},
		// One field, two engines' spellings.
		{"--max-running-requests 8 --max-num-seqs 8", []string{"--max-running-requests", "--max-num-seqs"}},
		{"--context-length 4096 --max-model-len 4096", []string{"--context-length", "--max-model-len"}},
		{"--page-size 32 --block-size 32", []string{"--page-size", "--block-size"}},
		{"--chunked-prefill-size 4096 --max-num-batched-tokens 4096", []string{"--chunked-prefill-size", "--max-num-batched-tokens"}},
		{"--chunked-prefill-size 4096 --no-enable-chunked-prefill", []string{"--chunked-prefill-size", "--no-enable-chunked-prefill"}},
		{"--disable-radix-cache --enable-prefix-caching", []string{"--disable-radix-cache", "--enable-prefix-caching"}},
		{"--schedule-policy fcfs --scheduling-policy fcfs", []string{"--schedule-policy", "--scheduling-policy"}},
		{moe + "--dp 2 --ep-num-redundant-experts 2 --num-redundant-experts 2", []string{"--ep-num-redundant-experts", "--num-redundant-experts"}},
		{moe + "--dp 2 --ep-size 2 --enable-expert-parallel", []string{"--ep-size", "--enable-expert-parallel"}},
		{moe + "--dp 2 -ep --enable-two-batch-overlap --enable-dbo", []string{"--enable-two-batch-overlap", "--enable-dbo"}},
		{moe + "--dp 2 --ep-size 2 --moe-a2a-backend none --all2all-backend allgather_reducescatter", []string{"--moe-a2a-backend", "--all2all-backend"}},
		{"--dp-size 2 --replicas 2", []string{"--dp-size", "--replicas"}},
		{"--dp-size 2 --data-parallel-size 2", []string{"--dp-size", "--data-parallel-size"}},
		{"--dp-size 2 --dp 2 --tp 2 --enable-dp-attention", []string{"--dp-size", "--dp"}},
	} {
		var out bytes.Buffer
		args := append([]string{"run", "-n", "5", "--prompt-len", "constant:8", "--output-len", "constant:2", "-o", "", "-q"}, vllmArgs(strings.Fields(c.args))...)
		if code := exitCode(dispatch(args, &out, &out), &out); code != exitBadInput {
			t.Errorf("%s: exit %d, want %d:\n%s", c.args, code, exitBadInput, out.String())
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", c.args, w, out.String())
			}
		}
	}
}

// TestSGLangHeader: an SGLang command line's header says that its flags
// selected the sglang engine model and what each became; SGLang's
// radix cache (on by default, disable_radix_cache = False) turns prefix
// caching on unless --disable-radix-cache, which a vLLM or servesim
// command line does not.
func TestSGLangHeader(t *testing.T) {
	for _, c := range []struct {
		args   string
		header []string
		prefix bool // summary.json's batch.prefix_caching
	}{
		{"--model qwen3-30b-a3b --gpu h100 --tp-size 4 --dp-size 4 --enable-dp-attention --ep-size 4 --chunked-prefill-size 2048 --max-prefill-tokens 16384",
			[]string{"SGLang flags (--tp-size, --dp-size, --enable-dp-attention, --ep-size, --chunked-prefill-size, --max-prefill-tokens) mapped onto the sglang engine model", "--engine sglang (an SGLang command line)",
				"--tp-size 4 --dp-size 4 --enable-dp-attention → --dp 4 --tp 1", "--ep-size 4 → --expert-parallel=true",
				"--chunked-prefill-size 2048 → --max-num-batched-tokens 512 a DP rank (SGLang's 2048 // dp_size 4)",
				"prefix caching on (SGLang's radix cache is on unless --disable-radix-cache)",
				"SGLang memory plan (h100, tp 1)", "max_prefill_tokens 16384",
				"Data parallel: dp 4 ranks × tp 1 = 4 GPUs per replica", "Expert parallel: ep 4 GPUs"}, true},
		{"--dp-size 2 --disable-radix-cache", []string{"--dp-size 2 → --replicas 2 (SGLang's DP without --enable-dp-attention: replicas behind the router)", "Policies: 2 replica(s)"}, false},
		{"--engine ideal --page-size 32", []string{"SGLang flags (--page-size) mapped onto the ideal engine model"}, true},
		{"--tp 2", nil, false}, // servesim's spelling: no SGLang line, the embedded default's prefix caching off
	} {
		var out bytes.Buffer
		line := "run -n 20 --prompt-len constant:64 --output-len constant:4 " + c.args
		args := append(strings.Fields(line), "-o", t.TempDir())
		if err := dispatch(args, &out, &out); err != nil {
			t.Fatalf("%s: %v\n%s", c.args, err, out.String())
		}
		for _, w := range c.header {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: the header lacks %q:\n%s", c.args, w, out.String())
			}
		}
		if c.header == nil && strings.Contains(out.String(), "SGLang flags") {
			t.Errorf("%s: an SGLang line without an SGLang flag:\n%s", c.args, out.String())
		}
		s := summaryOf(t, line)
		if got := s["scenario"].(map[string]any)["batch"].(map[string]any)["prefix_caching"]; got != c.prefix {
			t.Errorf("%s: prefix_caching %v, want %v", c.args, got, c.prefix)
		}
	}
}

// TestSGLangFlagWalk walks sglangFlags: an honoured flag (and each alias)
// is a flag of run --help; a no-effect one runs and the header lists it; a
// refused one is an error naming it and servesim's equivalent, and given
// SGLang's default it runs as no effect; every vLLM spelling an entry
// names is a flag of run (a misspelt one would never be Changed, and the
// contradiction never caught).
func TestSGLangFlagWalk(t *testing.T) {
	has := runHasFlag(t)
	fs := newFlagSet("run", "", &bytes.Buffer{})
	var s scenario.Scenario
	addSGLangFlags(fs, &s)
	const noEffectLine = "SGLang flags with no effect in a simulation: "
	counts := map[vllmClass]int{}
	seen := map[string]bool{}
	for _, f := range sglangFlags {
		if seen[f.name] {
			t.Errorf("--%s: twice in sglangFlags", f.name)
		}
		seen[f.name] = true
		counts[f.class]++
		for _, v := range f.vllm {
			if !has(v) {
				t.Errorf("--%s: its vLLM spelling --%s is not a flag of run --help", f.name, v)
			}
		}
		if f.class != honoured {
			checkUnhonoured(t, noEffectLine, "SGLang", f.name, f.class, f.kind, f.dflt, f.note, f.equiv)
			continue
		}
		for _, n := range append([]string{f.name}, f.aliases...) {
			if !has(n) {
				t.Errorf("honoured --%s: not a flag in run --help", n)
			}
		}
		if f.bound == "" && fs.Lookup(f.name) == nil {
			t.Errorf("honoured --%s: addSGLangFlags does not bind it", f.name)
		}
	}
	t.Logf("%d SGLang flags: %d honoured, %d no effect, %d refused", len(sglangFlags), counts[honoured], counts[noEffect], counts[refused])
}

// sglangFlagTableMarkdown renders sglangFlags as docs/vllm-sglang.md's table.
func sglangFlagTableMarkdown() string {
	var b strings.Builder
	b.WriteString("| class | SGLang flag | servesim | what SGLang means, and how servesim reads it |\n|---|---|---|---|\n")
	for _, c := range []vllmClass{honoured, noEffect, refused} {
		for _, f := range sglangFlags {
			if f.class != c {
				continue
			}
			names := []string{"`--" + f.name + "`"}
			for _, a := range f.aliases {
				names = append(names, "`--"+a+"`")
			}
			equiv := "—"
			if f.equiv != "" {
				equiv = "`" + f.equiv + "`"
			}
			note := f.note
			if len(f.dflt) > 0 {
				note += " (accepted as `" + strings.Join(f.dflt, "` or `") + "`, SGLang's default)"
			}
			b.WriteString("| " + c.String() + " | " + strings.Join(names, ", ") + " | " + equiv + " | " + note + " |\n")
		}
	}
	return b.String()
}

// TestSGLangFlagTableInREADME: docs/vllm-sglang.md's table of SGLang's flags is
// sglangFlagTableMarkdown's (SERVESIM_UPDATE_README=1 prints it to paste).
func TestSGLangFlagTableInREADME(t *testing.T) {
	docHasTable(t, "docs/vllm-sglang.md", sglangFlagTableMarkdown(), "SGLang flags rendered from sglangFlags")
}

// TestSGLangPPMaxRunning: on the embedded default (the sglang engine),
// --max-running-requests 9 over --pp-size 2 runs (9 // 2) × 2 = 8 requests,
// pp_max_micro_batch_size 4 on each of the two micro-batches, as
// --max-num-seqs 8 does.
func TestSGLangPPMaxRunning(t *testing.T) {
	const base = "run --prompt-len constant:200 --output-len constant:20 -n 30 --tp-size 2 --pp-size 2 "
	a, b := summaryOf(t, base+"--max-num-seqs 8"), summaryOf(t, base+"--max-running-requests 9")
	if !reflect.DeepEqual(a["scenario"], b["scenario"]) {
		t.Errorf("--max-num-seqs 8 and --max-running-requests 9 under pp 2 differ:\n%v\n%v", a["scenario"], b["scenario"])
	}
}
