package trace

import (
	"os"
	"path/filepath"
)

// sharedDir is where CI keeps the shared data, beside the checkout.
var sharedDir = filepath.Join("..", "..", "..", "..", "shared", "data", "traces")

// sharedTraces are the trace files in ../shared/data/traces with the row
// counts their SOURCE.md files give.
var sharedTraces = []struct {
	short, path string
	rows        int64
}{
	{"azure-code", "azure-llm-2023/AzureLLMInferenceTrace_code.csv", 8819},
	{"azure-conv", "azure-llm-2023/AzureLLMInferenceTrace_conv.csv", 19366},
	{"mooncake-conv", "mooncake-fast25/conversation_trace.jsonl", 12031},
	{"mooncake-synth", "mooncake-fast25/synthetic_trace.jsonl", 3993},
	{"sharegpt", "sharegpt/sharegpt_8k_filtered_stats_llama2_tokenizer.csv", 30731},
	{"arxiv", "arxiv-summarization/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv", 28257},
}

func readShared(rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(sharedDir, rel))
}
