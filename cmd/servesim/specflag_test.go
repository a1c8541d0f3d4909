package main

import "testing"

// TestSpeculativeConfigFlag: --speculative-config runs speculation (the
// header names it, the summary counts it), vLLM's keys without a simulated
// cost are accepted, and bad JSON, an unknown key, a wrong type or a bad
// value exit 2 naming what is wrong.
func TestSpeculativeConfigFlag(t *testing.T) {
	base := []string{"run", "-o", t.TempDir(), "--model", "llama-3.1-8b", "--gpu", "h100", "--requests", "20", "--rate", "2"}
	with := func(cfg string) []string { return append(append([]string{}, base...), "--speculative-config", cfg) }
	checkCLI(t, with(`{"method": "eagle3", "num_speculative_tokens": 3, "draft_tensor_parallel_size": 1}`), 0,
		[]string{"Speculative decoding: eagle3, 3 tokens", "Mean acceptance length:"}, nil)
	for _, c := range []struct{ cfg, want string }{
		{`{"method": "eagle3"`, "not a JSON object"},
		{`{"method": "eagle3", "num_speculative_tokens": 3, "bogus": 1}`, "unknown key bogus"},
		{`{"method": "eagle3", "num_speculative_tokens": "3"}`, `key "num_speculative_tokens"`},
		{`{"num_speculative_tokens": 3}`, `key "method" is missing`},
		{`{"method": "medusa", "num_speculative_tokens": 3}`, `unknown method "medusa"`},
	} {
		t.Run(c.cfg, func(t *testing.T) { checkCLI(t, with(c.cfg), 1, []string{c.want}, nil) })
	}
}
