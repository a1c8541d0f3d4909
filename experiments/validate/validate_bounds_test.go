package validate

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
)

// TestCheckReplaySize: the cap sits at 100 × the largest real run, in
// requests and in tokens, and the refusal gives the figures and the flag.
func TestCheckReplaySize(t *testing.T) {
	row := func(stages []realrun.Stage, prompt float64) *realrun.Run {
		return &realrun.Run{Name: "x", Path: "runs.csv line 2", Stage: &realrun.StageRow{Stages: stages, PromptLenMean: prompt, OutputLen: 248}}
	}
	for _, c := range []struct {
		name string
		run  *realrun.Run
		want string // "" = accepted
	}{
		// 2800 req/s × 600 s = 1,680,000 requests = the cap; tokens
		// 1,680,000 × (1 + 248) = 418,320,000, under 1,383,396,000.
		{"requests at the cap", row([]realrun.Stage{{Rate: 2800, Seconds: 600}}, 1), ""},
		// 2800 × 600 + int(1 × 1) = 1,680,001.
		{"requests past the cap", row([]realrun.Stage{{Rate: 2800, Seconds: 600}, {Rate: 1, Seconds: 1}}, 1), "1.68e+06 requests"},
		// 8 × 600 = 4,800 requests × (287,959.5 + 248) = 1,383,396,000
		// tokens = the cap.
		{"tokens at the cap", row([]realrun.Stage{{Rate: 8, Seconds: 600}}, 287959.5), ""},
		{"tokens past the cap", row([]realrun.Stage{{Rate: 8, Seconds: 600}}, 287960), "4800 requests and 1.383e+09 tokens (8 req/s × 600 s, each of 287960 prompt + 248 output tokens)"},
		// 1e300 × 1e300 overflows to +Inf in floating point: still refused.
		{"overflow", row([]realrun.Stage{{Rate: 1e300, Seconds: 1e300}}, 1), "+Inf requests"},
		{"per-request run", &realrun.Run{Name: "r", Path: "r", Requests: []realrun.Request{{Input: 1_383_396_000, Output: 1}}}, "1 requests and 1.383e+09 tokens (the recorded requests)"},
	} {
		err := CheckReplaySize([]*realrun.Run{c.run})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--allow-large")):
			t.Errorf("%s: err = %v, want %q and --allow-large", c.name, err, c.want)
		}
	}
}

// TestReplaySizeBasis: the cap's basis is the largest run in
// ../shared/data that validate reads, by requests and by tokens.
func TestReplaySizeBasis(t *testing.T) {
	dir, err := scenario.FindDataDir(filepath.Join("..", "..", "..", "shared", "data"))
	if err != nil {
		t.Skip(err)
	}
	var maxN, maxTok float64
	for _, p := range []string{"vllm-h100-runs/runs.csv", "llmservingsim/vllm-runs/RTX4090/Llama-3.1-8B", "llmservingsim/vllm-runs/RTXPRO6000/Llama-3.1-8B"} {
		runs, err := realrun.Open(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckReplaySize(runs); err != nil {
			t.Error(err)
		}
		for _, r := range runs {
			n, tok, _ := ReplaySize(r)
			maxN, maxTok = max(maxN, n), max(maxTok, tok)
		}
	}
	if maxN != largestRunRequests || maxTok != largestRunTokens {
		t.Errorf("largest run %g requests, %g tokens; the cap's basis says %d, %d", maxN, maxTok, largestRunRequests, largestRunTokens)
	}
}
