package main

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"
)

// BenchmarkSweepJ runs the whole `servesim sweep experiments/batching.toml`
// command (21 scenarios: resolution, simulation, result files and plots)
// with -j 1 and -j 2 into a fresh directory each time, and reports
// scenarios per wall-clock second. Run it with
//
//	go test ./cmd/servesim -run '^$' -bench SweepJ -benchtime 3x
func BenchmarkSweepJ(b *testing.B) {
	for _, j := range []int{1, 2} {
		b.Run(fmt.Sprintf("j%d", j), func(b *testing.B) {
			dir := b.TempDir()
			for i := range b.N {
				out := filepath.Join(dir, fmt.Sprint(i))
				args := []string{"../../experiments/batching.toml", "-q", "-j", fmt.Sprint(j), "-o", out}
				if err := sweepCmd(args, io.Discard, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(21*b.N)/b.Elapsed().Seconds(), "scenarios/s")
		})
	}
}
