package workload

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/sim"
)

// TestReplayTotals: a replay yields exactly its requests, in order, so its
// token totals are the recorded ones.
func TestReplayTotals(t *testing.T) {
	rp := Replay{Requests: []Request{
		{Arrival: 0, PromptTokens: 2358, OutputTokens: 531},
		{Arrival: sim.FromSeconds(0.285), PromptTokens: 1034, OutputTokens: 769},
		{Arrival: sim.FromSeconds(0.285), PromptTokens: 1320, OutputTokens: 769},
	}}
	src, err := rp.Source()
	if err != nil {
		t.Fatal(err)
	}
	var in, out, n int
	var r Request
	for src.Next(&r) {
		if r.ID != int64(n) || r.Arrival != rp.Requests[n].Arrival {
			t.Errorf("request %d: id %d arrival %v", n, r.ID, r.Arrival)
		}
		in, out, n = in+r.PromptTokens, out+r.OutputTokens, n+1
	}
	// 2358 + 1034 + 1320 = 4712 prompt tokens; 531 + 769 + 769 = 2069 output.
	if n != 3 || in != 4712 || out != 2069 {
		t.Errorf("replayed %d requests, %d/%d tokens; want 3, 4712/2069", n, in, out)
	}
}

func TestReplayValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		reqs []Request
		want string
	}{
		{"negative", []Request{{Arrival: -1, PromptTokens: 1, OutputTokens: 1}}, "request 0: arrival"},
		{"order", []Request{{Arrival: 5, PromptTokens: 1, OutputTokens: 1}, {Arrival: 4, PromptTokens: 1, OutputTokens: 1}}, "request 1: arrival"},
		{"prompt", []Request{{PromptTokens: 0, OutputTokens: 1}}, "0 prompt tokens"},
		{"output", []Request{{PromptTokens: 1, OutputTokens: 0}}, "0 output tokens"},
	} {
		_, err := Replay{Requests: tc.reqs}.Source()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "workload: ") {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}
