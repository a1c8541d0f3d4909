package main

import (
	"testing"
)

// plan --dps and --ep: an MoE model's layouts with and without expert
// parallelism by default (DeepSeek-V3 FP8 on H200: TP 8 and TP 8 EP 8, DP 4
// × TP 2 EP 8, each 8 GPUs at the catalog's $4.00, hardware/gpus.toml),
// none with --ep off; --ep on for a dense model, an unknown --ep and a bad
// --dps are errors naming them; place --ep likewise.
func TestPlanDPEPFlags(t *testing.T) {
	moe, dense := "../../experiments/examples/plan-moe.toml", "../../experiments/examples/plan.toml"
	cases := []struct {
		name      string
		args      []string
		code      int
		want, not []string
	}{
		{"moe auto", []string{"plan", "-q", "--config", moe, "--rate", "8", "--gpus", "h200", "--tps", "2,8", "--pps", "1", "--duration", "20", "-o", "-"}, 0,
			[]string{"| h200 | colocated 1×TP8 | 8 | 32.00 |", "| h200 | colocated 1×TP8 EP8 | 8 | 32.00 |", "| h200 | colocated 1×DP4×TP2 EP8 | 8 | 32.00 |", "| - | h200 | colocated DP2×TP2 EP4 |"}, nil},
		{"moe ep off", []string{"plan", "-q", "--config", moe, "--rate", "8", "--gpus", "h200", "--tps", "8", "--pps", "1", "--ep", "off", "--duration", "20", "-o", "-"}, 0,
			[]string{"| 1 | h200 | colocated 1×TP8 | 8 | 32.00 |"}, []string{"EP", "DP"}},
		{"ep on dense", []string{"plan", "--config", dense, "--rate", "1", "--gpus", "h100", "--ep", "on"}, 1,
			[]string{"plan: expert parallelism on: model llama-3.1-70b is dense"}, nil},
		{"ep maybe", []string{"plan", "--config", dense, "--rate", "1", "--ep", "maybe"}, 1, []string{`plan: --ep "maybe": want auto, on or off`}, nil},
		{"dps 0", []string{"plan", "--config", dense, "--rate", "1", "--dps", "0"}, 1, []string{`plan: --dps: "0" is not a positive integer`}, nil},
		{"place moe", []string{"place", "-q", "--config", moe, "--gpus", "8", "--tps", "8", "--ep", "auto", "--only", "colocated", "-o", "-"}, 0,
			[]string{"| colocated 1×TP8 | 8 |", "| colocated 1×TP8 EP8 | 8 |"}, nil},
		{"place ep on dense", []string{"place", "--config", dense, "--gpus", "8", "--ep", "on"}, 1,
			[]string{"plan: place: expert parallelism on: model llama-3.1-70b is dense"}, nil},
		{"place ep x", []string{"place", "--config", dense, "--gpus", "8", "--ep", "x"}, 1, []string{`place: --ep "x": want auto, on or off`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkCLI(t, c.args, c.code, c.want, c.not) })
	}
}
