package serve

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/workload"
)

// constTimer prices every iteration at sec seconds.
type constTimer struct{ sec float64 }

func (t constTimer) Step(models.Batch) (float64, float64, float64) { return t.sec, 0, 0 }

// A run whose simulated time would pass the clock's end stops with an error
// naming the cause, instead of panicking in FromSeconds or wrapping time
// around to negative values.
func TestClockOverflowIsAnError(t *testing.T) {
	cases := []struct {
		name string
		sec  float64 // every step's time
		reqs []workload.Request
		bw   float64 // disaggregated with this link bandwidth (B/s) when > 0
		ttft sim.Time
		want string
	}{
		// One step of 1e10 s: 1e19 ns > 2^63 ≈ 9.22e18 (a GPU 1e13 times too slow).
		{"step past the range", 1e10, []workload.Request{{PromptTokens: 10, OutputTokens: 2}}, 0, 0,
			"would pass the clock's range (9.22e+09 s, about 292 years) at step 1 of instance 0: a step of 1e+10 s"},
		// 3e9 s per step: steps 1–3 end at 3e9, 6e9, 9e9 s; the 4th would end at 1.2e10 s.
		{"fourth step past the range", 3e9, []workload.Request{{PromptTokens: 10, OutputTokens: 10}}, 0, 0,
			"at step 4 of instance 0: a step of 3e+09 s"},
		{"NaN step", math.NaN(), []workload.Request{{PromptTokens: 10, OutputTokens: 2}}, 0, 0,
			"the step time is NaN s"},
		{"negative step", -1, []workload.Request{{PromptTokens: 10, OutputTokens: 2}}, 0, 0,
			"not a duration ≥ 0"},
		// An arrival 1 s before the clock's end with a 2 s TTFT SLO.
		{"deadline past the range", 1e-3, []workload.Request{{Arrival: sim.Forever - sim.Second, PromptTokens: 10, OutputTokens: 2}}, 0, 2 * sim.Second,
			"its TTFT deadline (2.000000000s later) would pass the clock's range"},
		// 16 tokens × 1e6 B at 1e-3 B/s: 1.6e10 s > 9.22e9 s.
		{"transfer past the range", 1e-3, []workload.Request{{PromptTokens: 16, OutputTokens: 2}}, 1e-3, 0,
			"a KV transfer of 1.6e+10 s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ic := baseConfig(policies.Chunked{}, 1000, 256)
			ic.Step = constTimer{c.sec}
			cfg := Config{Instance: ic, TTFTSLO: c.ttft}
			if c.bw > 0 {
				cfg = disaggConfig(ic, ic, c.bw, 0, 1e6)
			}
			cfg.Source, cfg.Collector = &sliceSource{reqs: c.reqs}, metrics.NewCollector(metrics.SLO{})
			_, err := Run(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one with %q", err, c.want)
			}
		})
	}
}

// PredictTTFT saturates at the clock's end: Now() plus it never overflows,
// so SLO-aware admission rejects instead of admitting on a wrapped time.
func TestPredictTTFTSaturates(t *testing.T) {
	ic := baseConfig(policies.Chunked{}, 1000, 256)
	ic.Step = constTimer{1e9} // 256 tokens per 1e9 s: 1e6 tokens take ≈ 3.9e12 s
	var w World
	in := newInstance(0, ic, &w)
	if got := in.PredictTTFT(1_000_000); got != sim.Forever {
		t.Fatalf("PredictTTFT = %v, want Forever − now = %v", got, sim.Forever)
	}
	v := policies.SLOAware{}.Admit(in, policies.QueueItem{Prompt: 1_000_000, Deadline: sim.Second})
	if v.Admit {
		t.Fatal("SLO-aware admission admitted a request it predicts to take longer than the clock's range")
	}
}
