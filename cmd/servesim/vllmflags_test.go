package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// TestGoodputOnlyNamedSLOs: with --goodput, exactly the SLOs it names
// count, as in vLLM (serve.py's calculate_metrics): --goodput e2el:MS over
// the embedded default (TTFT 500 ms, TPOT 50 ms) gives request goodput =
// (requests with E2E ≤ MS) / duration, counted here from requests.csv, and
// summary.json carries that number. A --slo-* flag beside it still counts.
func TestGoodputOnlyNamedSLOs(t *testing.T) {
	for _, c := range []struct {
		args        string
		e2e, ttft   float64 // the bounds a good request meets, ms (0: none)
		wantSLO     map[string]float64
		headerWords string
	}{
		// 3000 ms sits inside the E2E distribution at 40 req/s (so neither
		// all nor none pass); TTFT and TPOT are dropped.
		{"--goodput e2el:3000", 3000, 0, map[string]float64{"ttft_ms": 0, "tpot_ms": 0, "e2e_ms": 3000}, "e2el ≤ 3000 ms only (as vLLM; the scenario's ttft 500 ms, tpot 50 ms dropped)"},
		{"--goodput e2el:3000 --slo-ttft 400", 3000, 400, map[string]float64{"ttft_ms": 400, "tpot_ms": 0, "e2e_ms": 3000}, "ttft ≤ 400 ms, e2el ≤ 3000 ms only (as vLLM; the scenario's tpot 50 ms dropped)"},
	} {
		dir := t.TempDir()
		var out bytes.Buffer
		args := append(strings.Fields("run --model llama-3.1-8b --rate 40 -n 300 "+c.args), "-o", dir)
		if err := dispatch(args, &out, &out); err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if !strings.Contains(out.String(), c.headerWords) {
			t.Errorf("%s: the header lacks %q:\n%s", c.args, c.headerWords, out.String())
		}
		f, err := os.Open(filepath.Join(dir, "requests.csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		good := 0
		for _, r := range rows[1:] {
			e2e, _ := strconv.ParseFloat(r[col["e2e_ms"]], 64)
			ttft, _ := strconv.ParseFloat(r[col["ttft_ms"]], 64)
			if r[col["rejected"]] == "" && e2e <= c.e2e && (c.ttft == 0 || ttft <= c.ttft) {
				good++
			}
		}
		data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Scenario struct{ SLO map[string]float64 }
			Metrics  struct {
				Duration float64 `json:"duration_s"`
				Goodput  float64 `json:"request_goodput_req_per_s"`
			}
		}
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
		if good == 0 || good == len(rows)-1 {
			t.Fatalf("%s: %d of %d requests good: the bound does not split them", c.args, good, len(rows)-1)
		}
		if want := float64(good) / s.Metrics.Duration; s.Metrics.Goodput != want {
			t.Errorf("%s: goodput %v req/s, want %d good / %v s = %v", c.args, s.Metrics.Goodput, good, s.Metrics.Duration, want)
		}
		for k, v := range c.wantSLO {
			if s.Scenario.SLO[k] != v {
				t.Errorf("%s: summary.json slo.%s = %v, want %v", c.args, k, s.Scenario.SLO[k], v)
			}
		}
	}
}

// runOut runs `servesim run ARGS` on a small workload, writing no files,
// and returns its output and error.
func runOut(args ...string) (string, error) {
	var out bytes.Buffer
	base := []string{"run", "-n", "2", "--prompt-len", "constant:8", "--output-len", "constant:2", "-o", ""}
	err := dispatch(append(base, args...), &out, &out)
	return out.String(), err
}

// TestVLLMFlagWalk walks every flag of vllm serve and vllm bench serve in
// vllmFlags: an honoured one is a flag of `servesim run` listed in its
// --help (with its --no- form for a BooleanOptionalAction); a no-effect
// one runs and is named in the header's no-effect line; a refused one is
// an error naming it and the servesim equivalent, and given vLLM's default
// value (-pp 1) it runs as no effect.
func TestVLLMFlagWalk(t *testing.T) {
	var help bytes.Buffer
	if err := dispatch([]string{"run", "--help"}, &help, &help); exitCode(err, &help) != 0 {
		t.Fatal(err)
	}
	const noEffectLine = "vLLM flags with no effect in a simulation: "
	seen := map[string]bool{}
	counts := map[vllmClass]int{}
	for _, f := range vllmFlags {
		if seen[f.name] {
			t.Errorf("--%s: twice in vllmFlags", f.name)
		}
		seen[f.name] = true
		counts[f.class]++
		var forms [][]string // the command-line words of each form
		for _, n := range f.names() {
			if f.as != "" && f.as != "-" && !strings.HasPrefix(n, "no-") {
				n = f.name // given as vLLM spells it; vllmArgs rewrites it
			}
			switch {
			case f.kind == vBool || f.kind == vSwitch:
				forms = append(forms, []string{"--" + n})
			case f.kind == vList:
				forms = append(forms, []string{"--" + n, "a", "b"})
			case f.as == "-":
				forms = append(forms, []string{"--" + n, "serve.yaml"})
			default:
				forms = append(forms, []string{"--" + n, "2"})
			}
		}
		if f.short != "" {
			forms = append(forms, []string{"-" + f.short, "2"})
		}
		switch f.class {
		case honoured:
			for _, n := range f.names() {
				if !strings.Contains(help.String(), "--"+n+" ") && !strings.Contains(help.String(), "--"+n+"[") {
					t.Errorf("honoured --%s: not a flag in run --help", n)
				}
			}
		case noEffect:
			for _, w := range forms {
				out, err := runOut(w...)
				if err != nil {
					t.Errorf("no-effect %v: %v", w, err)
					continue
				}
				i := strings.Index(out, noEffectLine)
				name := w[0]
				if !strings.HasPrefix(name, "--") {
					name = "--" + f.name // a shorthand is listed by its name
				}
				if i < 0 || !strings.Contains(out[i:], name) {
					t.Errorf("no-effect %v: the header does not list it:\n%s", w, out)
				}
			}
		case refused:
			for _, w := range forms {
				if strings.HasPrefix(w[0], "--no-") {
					// The off form of a refused switch is vLLM's default.
					out, err := runOut(w...)
					if err != nil || !strings.Contains(out, w[0]) {
						t.Errorf("refused switch %v, vLLM's default: %v, want it listed as no effect", w, err)
					}
					continue
				}
				_, err := runOut(w...)
				if err == nil || !strings.Contains(err.Error(), "--"+f.name) || (f.equiv != "" && !strings.Contains(err.Error(), f.equiv)) {
					t.Errorf("refused %v: error %v, want one naming --%s and %q", w, err, f.name, f.equiv)
				}
			}
			for _, d := range f.dflt {
				out, err := runOut("--"+f.name, d)
				if err != nil || !strings.Contains(out, "--"+f.name+" "+d) {
					t.Errorf("refused --%s %s, vLLM's default: %v, want it listed as no effect:\n%s", f.name, d, err, out)
				}
			}
		}
	}
	t.Logf("%d vLLM flags: %d honoured, %d no effect, %d refused", len(vllmFlags), counts[honoured], counts[noEffect], counts[refused])
}

// TestVLLMFlagsRefusedTogether: every refused flag of a command line is
// named in one error, not one run at a time.
func TestVLLMFlagsRefusedTogether(t *testing.T) {
	_, err := runOut("-dcp", "2", "--enable-lora", "-dpn", "1", "--ramp-up-strategy", "linear")
	for _, want := range []string{"--decode-context-parallel-size 2", "--enable-lora", "--data-parallel-rank 1", "(servesim: --dp)", "--ramp-up-strategy linear", "(servesim: --stages)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// vllmFlagTableMarkdown renders vllmFlags as docs/vllm-sglang.md's table: one row per
// class and servesim meaning, the flags of the row comma-separated.
func vllmFlagTableMarkdown() string {
	type row struct {
		class vllmClass
		what  string
		flags []string
	}
	var rows []*row
	index := map[string]*row{}
	for _, f := range vllmFlags {
		what := f.note
		switch f.class {
		case honoured:
			what = "see the table above"
		case refused:
			if f.note == "" {
				what = "not modelled"
			}
			if f.equiv != "" {
				what += "; servesim: `" + f.equiv + "`"
			}
			if len(f.dflt) > 0 {
				what += " (accepted as `" + strings.Join(f.dflt, "` or `") + "`, vLLM's default)"
			}
		}
		key := f.class.String() + "|" + what
		r := index[key]
		if r == nil {
			r = &row{class: f.class, what: what}
			index[key] = r
			rows = append(rows, r)
		}
		name := "`--" + f.name + "`"
		if f.kind == vBool {
			name = "`--[no-]" + f.name + "`"
		}
		if f.short != "" {
			name = "`-" + f.short + "`, " + name
		}
		r.flags = append(r.flags, name)
	}
	var b strings.Builder
	b.WriteString("| class | vLLM flags | in servesim |\n|---|---|---|\n")
	for _, c := range []vllmClass{honoured, noEffect, refused} {
		for _, r := range rows {
			if r.class == c {
				b.WriteString("| " + c.String() + " | " + strings.Join(r.flags, ", ") + " | " + r.what + " |\n")
			}
		}
	}
	return b.String()
}

// TestVLLMFlagTableInREADME: docs/vllm-sglang.md's table of every vLLM flag is
// vllmFlagTableMarkdown's (SERVESIM_UPDATE_README=1 prints it to paste).
func TestVLLMFlagTableInREADME(t *testing.T) {
	docHasTable(t, "docs/vllm-sglang.md", vllmFlagTableMarkdown(), "vLLM flags rendered from vllmFlags")
}

// TestCheckpointPrecision: a quantized checkpoint named by --model runs at
// its precision, and the header says what was inferred; --weights against
// it is an error naming both; a fine-tune of a catalog architecture runs.
func TestCheckpointPrecision(t *testing.T) {
	for _, c := range []struct {
		args, weights, header, err string
	}{
		{"--model Qwen/Qwen3-8B-FP8", "fp8", "Inferred: weights fp8: from the id's -FP8.", ""},
		{"--model Qwen/Qwen3-8B-FP8 --quantization fp8", "fp8", "Inferred: weights fp8", ""},
		{"--model Qwen/Qwen3-30B-A3B-Instruct-2507 --gpu h200", "bf16", "catalog architecture qwen3-30b-a3b (that of Qwen/Qwen3-30B-A3B; the id's suffix -Instruct-2507", ""},
		{"--model Qwen/Qwen3-8B-FP8 --weights bf16", "", "", `"weights" (flag --weights): "bf16", but the checkpoint stores fp8 weights`},
	} {
		dir := t.TempDir()
		var out bytes.Buffer
		err := dispatch(append(strings.Fields("run -n 3 --prompt-len constant:8 --output-len constant:2 "+c.args), "-o", dir), &out, &out)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if !strings.Contains(out.String(), c.header) {
			t.Errorf("%s: header lacks %q:\n%s", c.args, c.header, out.String())
		}
		data, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
		var s struct{ Scenario struct{ Weights string } }
		if err := json.Unmarshal(data, &s); err != nil || s.Scenario.Weights != c.weights {
			t.Errorf("%s: summary.json weights %q (%v), want %q", c.args, s.Scenario.Weights, err, c.weights)
		}
	}
}

// TestVLLMDefaultsBySpelling: a command line in vLLM's spelling gets
// vLLM V1's defaults where servesim's embedded scenario differs
// (docs/vllm-sglang.md, "Defaults that differ from vLLM"): vllm serve's prefix caching on;
// vllm bench serve's rate inf, no SLOs, and for --num-prompts its random
// dataset of 1024 and 128 tokens. servesim's spelling, an explicit flag or
// a --config file keeps servesim's values.
func TestVLLMDefaultsBySpelling(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "s.toml")
	if err := os.WriteFile(cfg, []byte(scenario.DefaultTOML()), 0o644); err != nil {
		t.Fatal(err)
	}
	type want struct {
		prefix     bool
		rate       any // float64, or "inf" as summary.json writes it
		prompt     string
		ttft, tpot float64
	}
	def := want{false, 10.0, "lognormal:6.5,0.8", 500, 50} // the embedded default
	for _, c := range []struct {
		args string
		want want
	}{
		{"-n 20", def},
		{"--tp 1 -n 20", def},
		{"-tp 1 -n 20", want{true, 10.0, "lognormal:6.5,0.8", 500, 50}},
		{"-tp 1 --no-enable-prefix-caching -n 20", def},
		{"--disable-log-stats -n 20", want{true, 10.0, "lognormal:6.5,0.8", 500, 50}}, // a no-effect flag is vLLM's spelling too
		{"--host 0.0.0.0 -n 20", def},                                                 // both tools take --host: it says neither
		{"--num-prompts 20", want{false, "inf", "constant:1024", 0, 0}},
		{"--num-prompts 20 --request-rate 4", want{false, 4.0, "constant:1024", 0, 0}},
		{"--num-prompts 20 --rate 4 --prompt-len constant:100", want{false, 4.0, "constant:100", 0, 0}},
		{"--request-rate 4 -n 20", want{false, 4.0, "lognormal:6.5,0.8", 0, 0}},
		{"--rate 4 -n 20 --goodput ttft:300", want{false, 4.0, "lognormal:6.5,0.8", 300, 0}},
		{"--config " + cfg + " -tp 1 --num-prompts 20", def},
	} {
		m := summaryOf(t, c.args)
		sc := m["scenario"].(map[string]any)
		w, b, slo := sc["workload"].(map[string]any), sc["batch"].(map[string]any), sc["slo"].(map[string]any)
		got := want{b["prefix_caching"].(bool), w["rate"], w["prompt"].(string), slo["ttft_ms"].(float64), slo["tpot_ms"].(float64)}
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.args, got, c.want)
		}
	}
}

// TestOneSetOfDefaults: the embedded default and a minimal scenario file
// get the same batch limits, vLLM's for the GPU under vllm-v1 (H100: 1024
// and 8192, EngineArgs' defaults for a GPU of ≥ 70 GiB other than the
// A100; A100: 256 and 2048), and the error for --max-num-seqs 0 quotes
// the same default.
func TestOneSetOfDefaults(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		gpu          string
		seqs, tokens float64
	}{{"h100", 1024, 8192}, {"a100", 256, 2048}} {
		toml := filepath.Join(dir, c.gpu+".toml")
		if err := os.WriteFile(toml, []byte("model = \"llama-3.1-8b\"\ngpu = \""+c.gpu+"\"\n[workload]\nrate = 5.0\nrequests = 5\nprompt = \"constant:100\"\noutput = \"constant:10\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range []string{"--gpu " + c.gpu + " -n 5", "--config " + toml} {
			b := summaryOf(t, args)["scenario"].(map[string]any)["batch"].(map[string]any)
			if b["max_num_seqs"] != c.seqs || b["max_num_batched_tokens"] != c.tokens {
				t.Errorf("%s: max_num_seqs %v, max_num_batched_tokens %v; want %v, %v", args, b["max_num_seqs"], b["max_num_batched_tokens"], c.seqs, c.tokens)
			}
		}
	}
	_, err := runOut("--max-num-seqs", "0")
	if err == nil || !strings.Contains(err.Error(), "default (1024,") {
		t.Errorf("--max-num-seqs 0: %v, want the default it would get, 1024", err)
	}
}
