package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// numericFlags lists a command's numeric flags and their pflag types, read
// from its --help text (pflag prints "--name type" for valued flags).
func numericFlags(t *testing.T, cmd string) map[string]string {
	t.Helper()
	var out bytes.Buffer
	if err := dispatch([]string{cmd, "--help"}, &out, &out); err != nil && exitCode(err, &out) != 0 {
		t.Fatalf("%s --help: %v", cmd, err)
	}
	re := regexp.MustCompile(`--([a-z0-9-]+) (int|int64|int32|uint|uint64|uint32|float|float64|float32)\b`)
	flags := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(out.String(), -1) {
		flags[m[1]] = m[2]
	}
	if len(flags) == 0 {
		t.Fatalf("%s --help lists no numeric flags:\n%s", cmd, out.String())
	}
	return flags
}

// edgeValues are the values every numeric flag is tried with: zero, −1,
// the non-finite floats, a huge value and its type's limits.
func edgeValues(typ string) []string {
	v := []string{"0", "-1", "NaN", "+Inf", "-Inf", "1e300", "-1e300"}
	switch typ {
	case "float", "float64", "float32":
		v = append(v, "1.7976931348623157e308", "5e-324", "1e-300")
	case "uint", "uint64", "uint32":
		v = append(v, "18446744073709551615")
	default:
		v = append(v, "9223372036854775807", "-9223372036854775808", "2147483647")
	}
	return v
}

// sweepEdgeFiles are the small inputs the sweep, plan and place edges run
// on: a scenario of 20 short requests with an SLO, and a two-point sweep
// of it.
var sweepEdgeFiles = map[string]string{
	"s.toml": `name = "edge"
model = "llama-3.1-8b"
gpu = "h100"
[workload]
rate = 2
requests = 20
prompt = "constant:64"
output = "constant:8"
[slo]
ttft_ms = 1000
tpot_ms = 100
`,
	"sw.toml": `name = "edge"
seeds = [1]
[base]
model = "llama-3.1-8b"
gpu = "h100"
[base.workload]
rate = 2
requests = 20
prompt = "constant:64"
output = "constant:8"
[[axis]]
field = "workload.rate"
values = [1, 4]
`,
}

// TestNumericFlagEdges tries every numeric flag of run, validate, sweep,
// plan and place with the edge values (calibrate has none): none may
// panic; each either runs (bounded here to a short time) or fails with a
// message that names the flag or its field.
func TestNumericFlagEdges(t *testing.T) {
	if testing.Short() {
		t.Skip("many runs")
	}
	// In parallel with TestCalibrateVidurMatchesBuiltin alone (parallel
	// tests start after every sequential one), which does not read
	// interruptible, replaced here.
	t.Parallel()
	// Bound each command: a legal but huge workload (2⁶³ requests) is
	// cancelled after a short time, which counts as running.
	old := interruptible
	interruptible = func() (context.Context, func()) {
		return context.WithTimeout(context.Background(), 300*time.Millisecond)
	}
	t.Cleanup(func() { interruptible = old })
	in := t.TempDir()
	for name, body := range sweepEdgeFiles {
		if err := os.WriteFile(filepath.Join(in, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scen := filepath.Join(in, "s.toml")
	base := map[string][]string{
		"run":   {"run", "-o", "", "-q", "-n", "20"},
		"sweep": {"sweep", "-q", filepath.Join(in, "sw.toml"), "-o", "{out}"},
		"plan":  {"plan", "-q", "--config", scen, "--rate", "2", "--gpus", "h100", "--tps", "1", "-o", "-"},
		"place": {"place", "-q", "--config", scen, "--gpus", "2", "--tps", "1", "-o", "-"},
	}
	// validate replays a real run when ../shared/data is beside the checkout.
	if run := filepath.Join(sharedData, "llmservingsim", "vllm-runs", "RTX4090", "Llama-3.1-8B"); dirExists(run) {
		base["validate"] = []string{"validate", "-o", "", "-q", run}
	}
	for cmd, args := range base {
		for flag, typ := range numericFlags(t, cmd) {
			for _, v := range edgeValues(typ) {
				a := append(append([]string(nil), args...), "--"+flag+"="+v)
				t.Run(fmt.Sprintf("%s/%s=%s", cmd, flag, v), func(t *testing.T) {
					for i := range a {
						if a[i] == "{out}" {
							a[i] = t.TempDir()
						}
					}
					var out bytes.Buffer
					code, p := dispatchRecovered(a, &out)
					msg := out.String()
					// vLLM's spelling of a flag is the same field as
					// servesim's: its errors name servesim's flag.
					if canon, ok := vllmAliasOf[flag]; ok && strings.Contains(msg, "--"+canon) {
						msg += " " + flag
					}
					if canon, ok := sglangAliasOf[flag]; ok && strings.Contains(msg, "--"+canon) {
						msg += " " + flag
					}
					switch {
					case p != nil:
						t.Fatalf("servesim %s panicked: %v", strings.Join(a, " "), p)
					case code == 0:
					case strings.Contains(msg, "deadline exceeded"):
					case cmd == "plan" && code == 1 && strings.Contains(msg, "no deployment") && !strings.Contains(msg, "field \""):
						// An answer: no deployment serves the rate (the
						// reasons are capacities, not a bad field).
					case code == 1 && strings.Contains(msg, flag) || strings.Contains(msg, strings.ReplaceAll(flag, "-", "_")):
					default:
						t.Errorf("servesim %s: exit %d, and the message does not name --%s:\n%s", strings.Join(a, " "), code, flag, tail(msg))
					}
				})
			}
		}
	}
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
