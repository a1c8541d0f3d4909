package scenario

import (
	"math"
	"path/filepath"
	"strconv"
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
	dir := filepath.Join("..", "validation", "published", "sglang-wide-ep")
	for _, c := range []struct {
		file      string
		decode    bool
		replicas  int // prefill replicas for the decode figure
		rate      float64
		requests  int
		published float64
	}{
		{"h100-pd.toml", false, 0, 0, 0, sglangH100PrefillPerGPU},
		{"h100-pd.toml", true, 32, 4000, 60000, sglangH100DecodePerGPU},
		{"gb200-pd.toml", true, 64, 8000, 80000, sglangGB200DecodePerGPU},
	} {
		for _, tbo := range []bool{true, false} {
			s, err := LoadScenario(filepath.Join(dir, c.file))
			if err != nil {
				t.Fatal(err)
			}
			// Without two-batch overlap too, to tell its share of the figure.
			s.TwoBatchOverlap, s.Disagg.DecodeTwoBatchOverlap = tbo, tbo
			if c.replicas > 0 {
				s.Replicas, s.Workload.Rate, s.Workload.Requests = c.replicas, c.rate, c.requests
			}
			p, err := s.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			r, err := Run(p, out)
			if err != nil {
				t.Fatal(err)
			}
			if cn := r.Counts(); cn.Finished != cn.Arrived || cn.Arrived == 0 {
				t.Fatalf("%s: %d arrived, %d finished", c.file, cn.Arrived, cn.Finished)
			}
			var tokens, lo, hi float64
			lo, hi = math.Inf(1), math.Inf(-1)
			rows := readRows(t, filepath.Join(out, "steps.csv"))
			type step struct{ start, end, n float64 }
			var steps []step
			for _, row := range rows {
				inst, _ := strconv.Atoi(row["instance"])
				if (inst >= p.Replicas) != c.decode {
					continue
				}
				start, _ := strconv.ParseFloat(row["start_s"], 64)
				dur, _ := strconv.ParseFloat(row["duration_s"], 64)
				col := "prefill_tokens"
				if c.decode {
					col = "decodes"
				}
				n, _ := strconv.ParseFloat(row[col], 64)
				steps = append(steps, step{start, start + dur, n})
				lo, hi = math.Min(lo, start), math.Max(hi, start+dur)
			}
			gpus := float64(p.Replicas)
			if c.decode {
				gpus = float64(p.DecodeInstances)
				lo, hi = lo+(hi-lo)/4, hi-(hi-lo)/4 // the middle half
			}
			var busy float64
			for _, st := range steps {
				if st.start >= lo && st.start < hi {
					tokens += st.n
					busy++
				}
			}
			rate := tokens / (hi - lo) / gpus
			what := "prefill"
			if c.decode {
				what = "decode"
			}
			t.Logf("%s %s, two-batch overlap %v (%d prefill + %d decode GPUs): %.0f tokens/s per GPU (published %.0f, error %+.1f %%); %.1f tokens a rank step; TTFT %.0f ms, TPOT %.1f ms",
				c.file, what, tbo, p.Replicas, p.DecodeInstances, rate, c.published, 100*(rate/c.published-1), tokens/busy, r.Summary.TTFT.Mean, r.Summary.TPOT.Mean)
			if !(rate > 0) || math.IsInf(rate, 0) {
				t.Errorf("%s %s: rate %v", c.file, what, rate)
			}
		}
	}
}
