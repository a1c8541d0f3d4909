package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// The models and GPUs of issue 14 are listed with their sources.
func TestCatalogListingsIssue14(t *testing.T) {
	var out bytes.Buffer
	if err := dispatch([]string{"models", "--sources"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"qwen3-8b", "qwen3-14b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "mixtral-8x22b",
		"llama-4-scout-17b-16e", "deepseek-v3", "mistral-nemo-12b", "qwen2.5-7b", "yi-34b",
		"https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json", "meta-llama/Llama-3.1-8B-Instruct"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("models --sources lacks %s", s)
		}
	}
	out.Reset()
	if err := dispatch([]string{"gpus", "--sources"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"h100-pcie:", "a100-pcie:", "gb200:", "756e12 dense [S15†]", "1,935 GB/s [S2†]", "186 GB HBM3e per GPU [S11]"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("gpus --sources lacks %s", s)
		}
	}
}

// --model-config imports a config.json as the model; --model takes an HF id.
func TestRunModelConfig(t *testing.T) {
	dir := filepath.Join("..", "..", "models", "testdata", "hf", "Qwen3-8B")
	for _, args := range [][]string{
		{"run", "--model-config", dir, "--gpu", "h100-pcie", "-n", "20", "-o", ""},
		{"run", "--model", "Qwen/Qwen3-8B", "--gpu", "h100-pcie", "-n", "20", "-o", ""},
	} {
		var out bytes.Buffer
		if err := dispatch(args, &out, &out); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.Contains(out.String(), "qwen3-8b (bf16 weights, bf16 KV) on 1× h100-pcie") {
			t.Errorf("%v: output lacks the imported model:\n%s", args, out.String())
		}
	}
}

// The catalog GPUs with no timings of their own run on their derived
// built-in profile (hardware/calibrate/builtin_derived.go), not the
// roofline; each line names the profile it was transferred from.
func TestRunDerivedProfiles(t *testing.T) {
	for gpu, from := range map[string]string{"h100-pcie": "h100", "a100-pcie": "a100", "gb200": "h100", "l40s": "rtx-4090"} {
		var out bytes.Buffer
		if err := dispatch([]string{"run", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", gpu, "-n", "5", "-o", ""}, &out, &out); err != nil {
			t.Fatalf("%s: %v", gpu, err)
		}
		want := "Kernel times: calibrated: " + gpu + ": the " + from + " profile"
		if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "no built-in calibrated profile") {
			t.Errorf("%s: output lacks %q:\n%s", gpu, want, out.String())
		}
	}
}
