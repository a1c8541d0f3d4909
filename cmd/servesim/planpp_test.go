package main

import (
	"bytes"
	"strings"
	"testing"
)

// plan --pps plans pipeline layouts: on H100 the 405B fits only as
// PP 2 × TP 8, which the table names with its 16 GPUs; --pps and
// --duration refuse bad values naming the flag; place --pps likewise.
func TestPlanPPFlag(t *testing.T) {
	cfg := "../../experiments/examples/plan-405b.toml"
	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"pp 2 serves", []string{"plan", "-q", "--config", cfg, "--rate", "1", "--gpus", "h100", "--tps", "8", "--duration", "20", "-o", "-"}, 0,
			[]string{"| 1 | h100 | colocated 1×PP2×TP8 | 16 | 48.00 |", "| - | h100 | colocated TP8 | — |"}},
		{"pp 1 alone", []string{"plan", "-q", "--config", cfg, "--rate", "1", "--gpus", "h100", "--tps", "8", "--pps", "1", "--duration", "20", "-o", "-"}, 1,
			[]string{"no deployment of up to 64 GPUs serves 1 req/s", "h100 colocated TP8: hardware: llama-3.1-405b at tp 8 on h100 leaves"}},
		{"pps 0", []string{"plan", "--config", cfg, "--rate", "1", "--pps", "0"}, 1, []string{`plan: --pps: "0" is not a positive integer`}},
		{"pps twice", []string{"plan", "--config", cfg, "--rate", "1", "--pps", "2,2"}, 1, []string{"plan: --pps: 2 is given twice"}},
		{"pps 65", []string{"plan", "--config", cfg, "--rate", "1", "--gpus", "h100", "--pps", "65"}, 1, []string{"plan: pipeline degree 65: must be in [1, 64]"}},
		{"duration 0", []string{"plan", "--config", cfg, "--rate", "1", "--duration", "0"}, 1, []string{"plan: --duration 0: want a finite number > 0"}},
		{"place pp 2", []string{"place", "-q", "--config", cfg, "--gpus", "16", "--tps", "8", "--pps", "1,2", "--only", "colocated", "-o", "-"}, 0,
			[]string{"| 1 | colocated 1×PP2×TP8 | 16 |"}},
		{"place pps x", []string{"place", "--config", cfg, "--gpus", "16", "--pps", "x"}, 1, []string{`place: --pps: "x" is not a positive integer`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkCLI(t, c.args, c.code, c.want, nil) })
	}
}

// checkCLI runs servesim with args and checks its exit code, that its
// output holds every string of want and none of not.
func checkCLI(t *testing.T, args []string, code int, want, not []string) {
	t.Helper()
	var out bytes.Buffer
	if got := exitCode(dispatch(args, &out, &out), &out); got != code {
		t.Fatalf("exit %d, want %d:\n%s", got, code, out.String())
	}
	wantOutput(t, out.String(), want...)
	for _, w := range not {
		if strings.Contains(out.String(), w) {
			t.Errorf("output has %q:\n%s", w, out.String())
		}
	}
}
