package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkGPURatios prints the saturated output throughput (`--rate inf`,
// the default engine) of the built-in H100, H200 and B200 profiles on the
// docs/calibration.md's two example workloads (its "GPU ratios these profiles give"
// table) and on an MLPerf-like Llama-2-70B offline run, with the
// H200/H100 and B200/H200 ratios. It is a report, not a check (nothing is
// compared with a target); run it with
//
//	go test ./cmd/servesim -run '^$' -bench GPURatios -benchtime 1x
func BenchmarkGPURatios(b *testing.B) {
	for range b.N {
		var out strings.Builder
		if err := gpuRatios(&out); err != nil {
			b.Fatal(err)
		}
		b.Log("\n" + out.String())
	}
}

// ratioWorkload is one row of the ratio report: the run flags common to
// its GPUs and, per GPU, the weight (and KV) precision.
type ratioWorkload struct {
	name string
	args []string
	// prec is the precision flags of each GPU column (nil: none).
	prec map[string][]string
}

var ratioWorkloads = func() []ratioWorkload {
	// The batch–latency example's lengths, at its largest batch limit.
	small := []string{"--model", "llama-3.1-8b", "-n", "2400", "--prompt-len", "lognormal:6.5,0.8",
		"--output-len", "lognormal:5.3,0.8", "--max-num-seqs", "256", "--max-num-batched-tokens", "4096"}
	large := []string{"--model", "llama-3.1-70b", "--tp", "4", "-n", "1000", "--prompt-len", "1024", "--output-len", "1024"}
	// MLPerf-style Llama-2-70B offline: mean lengths of its data set,
	// one GPU, FP8 weights and KV cache.
	mlperf := []string{"--model", "llama-2-70b", "-n", "3000", "--prompt-len", "294", "--output-len", "283",
		"--max-num-seqs", "1024", "--max-num-batched-tokens", "8192", "--kv", "fp8"}
	fp8 := []string{"--weights", "fp8"}
	all := func(p []string) map[string][]string { return map[string][]string{"h100": p, "h200": p, "b200": p} }
	return []ratioWorkload{
		{"8B BF16", small, nil},
		{"70B TP 4 BF16", large, nil},
		{"70B TP 4 FP8", large, all(fp8)},
		{"MLPerf-like 70B FP8", mlperf, all(fp8)},
		{"MLPerf-like 70B, B200 FP4 vs H200/H100 FP8", mlperf,
			map[string][]string{"h100": fp8, "h200": fp8, "b200": {"--weights", "fp4"}}},
	}
}()

var outputThroughput = regexp.MustCompile(`Output token throughput \(tok/s\):\s+([0-9.]+)`)

// gpuRatios writes the ratio table to w.
func gpuRatios(w io.Writer) error {
	fmt.Fprintln(w, "| workload | H100 | H200 | B200 | H200/H100 | B200/H200 |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, wl := range ratioWorkloads {
		tps := map[string]float64{}
		for _, g := range []string{"h100", "h200", "b200"} {
			args := append([]string{"run", "--gpu", g, "--rate", "inf", "-q", "-o", ""}, wl.args...)
			args = append(args, wl.prec[g]...)
			var out, errs bytes.Buffer
			if err := dispatch(args, &out, &errs); err != nil {
				return fmt.Errorf("%s on %s: %v: %s", wl.name, g, err, errs.String())
			}
			m := outputThroughput.FindStringSubmatch(out.String())
			if m == nil {
				return fmt.Errorf("%s on %s: no output throughput in\n%s", wl.name, g, out.String())
			}
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return err
			}
			tps[g] = v
		}
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %.0f | %.2f | %.2f |\n", wl.name, tps["h100"], tps["h200"], tps["b200"],
			tps["h200"]/tps["h100"], tps["b200"]/tps["h200"])
	}
	return nil
}
