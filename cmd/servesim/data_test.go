package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDataList(t *testing.T) {
	cache := t.TempDir()
	os.MkdirAll(filepath.Join(cache, "burstgpt"), 0o755)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"data", "list", "--dir", cache}, []string{
			"NAME", "azure-llm-2023", "llmservingsim", "Cache: " + cache,
			// BurstGPT: 52,283,111 + 51,429,517 bytes = 103.7 MB, found in the cache (its folder is there)
			"burstgpt             2      103.7 MB   0           cache",
			// ShareGPT's raw JSON: one file, no size or checksum known
			"sharegpt             1      ?          1",
		}},
		{[]string{"data", "list", "--dir", cache, "mooncake-fast25"}, []string{
			"Licence: Apache-2.0", "conversation_trace.jsonl", "conversation", "3029533", "shared-copy",
			"toolagent_trace.jsonl", "unknown", "https://raw.githubusercontent.com/kvcache-ai/Mooncake/3b5a594133958449a1feaf1c9e0fc1b553e34a28/",
		}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[3:], " "), func(t *testing.T) {
			var out bytes.Buffer
			if err := dispatch(c.args, &out, &out); err != nil {
				t.Fatal(err)
			}
			wantOutput(t, out.String(), c.want...)
		})
	}
}

// A fetch of files already in the cache checks them and downloads nothing:
// the Azure traces copied from ../shared/data are whole and verified.
func TestDataFetchCached(t *testing.T) {
	src := filepath.Join(sharedData, "traces", "azure-llm-2023")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("needs ../shared/data: %v", err)
	}
	cache := t.TempDir()
	for _, f := range []string{"AzureLLMInferenceTrace_code.csv", "AzureLLMInferenceTrace_conv.csv"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(cache, "azure-llm-2023"), 0o755)
		os.WriteFile(filepath.Join(cache, "azure-llm-2023", f), b, 0o644)
	}
	var out bytes.Buffer
	if err := dispatch([]string{"data", "fetch", "--dir", cache, "azure-llm-2023"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, out.String(),
		"Licence: CC-BY 4.0",
		"azure-llm-2023/AzureLLMInferenceTrace_code.csv: cached, 0 bytes, verified (size and sha256, shared-copy)",
		"azure-llm-2023/AzureLLMInferenceTrace_conv.csv: cached, 0 bytes, verified",
		"azure-llm-2023: done; all 2 files verified.",
	)
	// the cache comes first in a lookup
	t.Setenv("SERVESIM_DATA", cache)
	out.Reset()
	if err := dispatch([]string{"data", "path", "azure-llm-2023:conv"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "azure-llm-2023", "AzureLLMInferenceTrace_conv.csv") + "\n"; out.String() != want {
		t.Errorf("data path: %q, want %q", out.String(), want)
	}
}
