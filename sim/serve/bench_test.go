package serve

import (
	"fmt"
	"testing"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/workload"
)

// BenchmarkDecodeStep measures the engine's cost per iteration at batch
// sizes 16 to 4096: n requests arrive at once with 16-token prompts and
// 20,000-token outputs, so nearly every iteration is a decode of the whole
// batch. The ns/step metric should stay flat as the batch grows: an
// iteration touches no decoding request (see Instance). What does grow is
// per-request work (routing, admission, heap push and pop, the record),
// amortized over the 20,000 iterations: measured on the 2-core dev box,
// 73–77, 79 and 200–233 ns/step at batch 16, 256 and 4,096.
func BenchmarkDecodeStep(b *testing.B) {
	for _, n := range []int{16, 256, 4096} {
		b.Run(fmt.Sprintf("batch%d", n), func(b *testing.B) {
			reqs := make([]workload.Request, n)
			for i := range reqs {
				reqs[i] = workload.Request{ID: int64(i), PromptTokens: 16, OutputTokens: 20000}
			}
			cfg := InstanceConfig{
				Step:      linearTimer{base: 1000, perToken: 1},
				Blocks:    n * 1260, // 20,015 tokens per request fit in 1,251 blocks
				BlockSize: 16,
				Limits:    policies.Limits{MaxNumSeqs: n, MaxNumBatchedTokens: 16 * n},
				Batcher:   policies.Chunked{},
			}
			b.ReportAllocs()
			b.ResetTimer()
			var steps int64
			for i := 0; i < b.N; i++ {
				res, err := Run(Config{Instance: cfg, Source: &sliceSource{reqs: reqs}, Collector: metrics.NewCollector(metrics.SLO{})})
				if err != nil || res.Finished != int64(n) {
					b.Fatal(err, res.Finished)
				}
				steps += res.Steps
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(steps), "ns/step")
		})
	}
}
