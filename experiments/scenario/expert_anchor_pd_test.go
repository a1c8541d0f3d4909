package scenario

import (
	"math"
	"path/filepath"
	"testing"
)

// TestSGLangWideEPPD runs the SGLang wide-EP anchors as PD runs
// (experiments/validation/published/sglang-wide-ep, README.md there): a
// prefill pool and a decode pool, each with its own DP × EP layout, the KV
// crossing per request, two-batch overlap in both, every rank in its
// pool's lock-step. Nothing is fitted; it logs the simulated rates and the
// errors against the posts and checks what must hold whatever the
// assumptions (no request lost, rates finite and positive).
//
//   - prefill: the post's layout (one prefill server of DP 32, one decode
//     server of DP 72) under arrivals above the prefill pool's capacity:
//     the prefill ranks' prompt tokens over the span they ran, per GPU;
//   - decode: the prefill pool scaled (replicas) so that the decode pool
//     runs full, standing in for the post's slow-down API: the decode
//     ranks' tokens in the middle half of the decode pool's span over that
//     window, per GPU.
func TestSGLangWideEPPD(t *testing.T) {
	for _, c := range wideEPPDCases {
		for _, tbo := range []bool{true, false} {
			// Without two-batch overlap too, to tell its share of the figure.
			p, r, rate, perStep := runWideEPPD(t, c, func(s *Scenario) { s.TwoBatchOverlap, s.Disagg.DecodeTwoBatchOverlap = tbo, tbo })
			what := "prefill"
			if c.decode {
				what = "decode"
			}
			t.Logf("%s %s, two-batch overlap %v (%d prefill + %d decode GPUs): %.0f tokens/s per GPU (published %.0f, error %+.1f %%); %.1f tokens a rank step; TTFT %.0f ms, TPOT %.1f ms",
				c.file, what, tbo, p.Replicas, p.DecodeInstances, rate, c.published, 100*(rate/c.published-1), perStep, r.Summary.TTFT.Mean, r.Summary.TPOT.Mean)
			if !(rate > 0) || math.IsInf(rate, 0) {
				t.Errorf("%s %s: rate %v", c.file, what, rate)
			}
		}
	}
}

// wideEPPDCases are the wide-EP PD anchors' runs: the prefill figure on
// the post's layout, and the decode figures with the prefill pool scaled
// (replicas) so that the decode pool runs full.
var wideEPPDCases = []wideEPPDCase{
	{"h100-pd.toml", false, 0, 0, 0, sglangH100PrefillPerGPU},
	{"h100-pd.toml", true, 32, 4000, 60000, sglangH100DecodePerGPU},
	{"gb200-pd.toml", true, 64, 8000, 80000, sglangGB200DecodePerGPU},
}

type wideEPPDCase struct {
	file      string
	decode    bool
	replicas  int // prefill replicas for the decode figure
	rate      float64
	requests  int
	published float64
}

// runWideEPPD loads case c from experiments/validation/published/sglang-wide-ep,
// sets it with set and the case's scale, resolves and runs it, fails the
// test unless every request that arrived (at least one) finished, and
// returns the plan, the report and the pool's token rate (poolTokenRate).
func runWideEPPD(t *testing.T, c wideEPPDCase, set func(*Scenario)) (p *Plan, r *Report, rate, perStep float64) {
	t.Helper()
	s := loadFile(t, filepath.Join("..", "validation", "published", "sglang-wide-ep", c.file))
	set(&s)
	if c.replicas > 0 {
		s.Replicas, s.Workload.Rate, s.Workload.Requests = c.replicas, c.rate, c.requests
	}
	p, r, out := runDir(t, s)
	if cn := r.Counts(); cn.Finished != cn.Arrived || cn.Arrived == 0 {
		t.Fatalf("%s: %d arrived, %d finished", c.file, cn.Arrived, cn.Finished)
	}
	rate, perStep = poolTokenRate(t, filepath.Join(out, "steps.csv"), p, c.decode)
	return p, r, rate, perStep
}
