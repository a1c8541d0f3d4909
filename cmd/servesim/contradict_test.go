package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestContradictions: settings that contradict each other, accepted
// without a word before, are errors naming both sides (exit 1), and their
// consistent neighbours still run.
func TestContradictions(t *testing.T) {
	dir := t.TempDir()
	toml := filepath.Join(dir, "s.toml")
	if err := os.WriteFile(toml, []byte("model = \"llama-3.1-8b\"\ngpu = \"h100\"\n[workload]\nrate = 5.0\nrequests = 5\n[engine]\nno_front_end = true\nfront_end_request_ms = 50\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args string
		want []string // "" : runs
	}{
		{"--no-enable-chunked-prefill --policy chunked", []string{"--no-enable-chunked-prefill", "--policy chunked"}},
		{"--chunked-prefill=false --policy chunked", []string{"--chunked-prefill=false", "--policy chunked"}},
		{"--enable-chunked-prefill --policy prefill-first", []string{"--enable-chunked-prefill", "--policy prefill-first"}},
		{"--no-enable-chunked-prefill --policy prefill-first", nil},
		{"--no-enable-chunked-prefill --policy mixed", nil}, // Orca's mixed batches do not chunk either
		{"--no-front-end --front-end-request-ms 50", []string{"--front-end-request-ms", "--no-front-end"}},
		{"--no-front-end --front-end-request-ms 0", nil}, // an explicit 0 agrees with "off"
		{"--no-step-cpu --step-cpu-per-request-us 40", []string{"--step-cpu-per-request-us", "--no-step-cpu"}},
		{"--no-custom-all-reduce --custom-all-reduce-latency-us 3", []string{"--custom-all-reduce-latency-us", "--no-custom-all-reduce"}},
		{"--no-kernel-launches --kernel-launch-us 2", []string{"--kernel-launch-us", "--no-kernel-launches"}},
		{"--no-memory-profile --non-torch-memory-gib 1", []string{"--non-torch-memory-gib", "--no-memory-profile"}},
		{"--ablation --engine ideal", []string{"--engine", "ablation"}},
		{"--ablation --front-end-request-ms 3", nil}, // the "no front end" row drops the parameter with the mechanism
		{"--engine=", []string{"--engine", `""`}},
		{"--config " + toml, []string{"s.toml", "front_end_request_ms", "no_front_end"}},
		{"--config serve.yaml", []string{"--config serve.yaml", "YAML"}},
		// The random dataset draws the lengths: a distribution beside it
		// was dropped without a word.
		{"--dataset-name random --prompt-len lognormal:6,0.5", []string{"--prompt-len lognormal:6,0.5", "--dataset-name random"}},
		{"--dataset-name sharegpt --dataset-path testdata/vllm/sharegpt.json --prompt-len constant:9", []string{"--prompt-len constant:9", "--dataset-name sharegpt"}},
	} {
		var out bytes.Buffer
		args := append([]string{"run", "-n", "5", "--prompt-len", "constant:8", "--output-len", "constant:2", "-o", "", "-q"}, strings.Fields(c.args)...)
		code := exitCode(dispatch(args, &out, &out), &out)
		if c.want == nil {
			if code != 0 {
				t.Errorf("%s: exit %d, want a run:\n%s", c.args, code, out.String())
			}
			continue
		}
		if code != exitBadInput {
			t.Errorf("%s: exit %d, want %d", c.args, code, exitBadInput)
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", c.args, w, out.String())
			}
		}
	}
}

// TestBurstinessImpliesGamma: --burstiness alone gives gamma arrivals of
// that shape, as vllm bench serve draws them; with an explicit
// --arrival poisson it is still a contradiction.
func TestBurstinessImpliesGamma(t *testing.T) {
	a := summaryOf(t, "run --model llama-3.1-8b -n 20 --burstiness 0.5")
	b := summaryOf(t, "run --model llama-3.1-8b -n 20 --arrival gamma --burstiness 0.5")
	if w := a["scenario"].(map[string]any)["workload"].(map[string]any); w["arrival"] != "gamma" || w["burstiness"] != 0.5 {
		t.Errorf("--burstiness 0.5: workload %v, want gamma arrivals of shape 0.5", w)
	}
	if ma, mb := a["metrics"], b["metrics"]; !bytes.Equal(mustJSON(t, ma), mustJSON(t, mb)) {
		t.Errorf("--burstiness 0.5 and --arrival gamma --burstiness 0.5 differ:\n%v\n%v", ma, mb)
	}
	var out bytes.Buffer
	if err := dispatch([]string{"run", "-n", "5", "-o", "", "-q", "--burstiness", "0.5", "--arrival", "poisson"}, &out, &out); err == nil || !strings.Contains(err.Error(), "poisson") {
		t.Errorf("--burstiness 0.5 --arrival poisson: %v, want the contradiction", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
