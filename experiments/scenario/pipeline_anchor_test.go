package scenario

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"
)

// SGLang's chunked pipeline parallelism (lmsys.org/blog/2026-01-15-chunked-pipeline):
// DeepSeek-V3.1 on H20, batch size 1, chunked prefill size 12K: PP4 × TP8
// reaches 3.31× the prefill throughput of TP8, a strong scaling efficiency
// of 82.8 % (3.31 / 4).
const (
	sglangPPSpeedup    = 3.31
	sglangPPEfficiency = 0.828
)

// TestSGLangChunkedPPAnchor replays the comparison (the two scenarios of
// experiments/validation/published/sglang-pp-h20, README.md there) at
// the assumed input lengths and reports the simulated speedup and its
// error against the published one; nothing is fitted to it. Prefill
// throughput at batch size 1 is prompt tokens over TTFT, so the speedup is
// TTFT(TP8) / TTFT(PP4 × TP8). It checks what must hold whatever the
// input: every request is served, PP4 is faster than TP8 and below the
// ideal 4× (four times the GPUs), and the speedup grows with the prompt
// (more chunks amortise the pipeline's fill).
func TestSGLangChunkedPPAnchor(t *testing.T) {
	dir := filepath.Join("..", "validation", "published", "sglang-pp-h20")
	ttft := func(file string, prompt int) float64 {
		s, err := LoadScenario(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		s.Workload.Prompt = fmt.Sprintf("constant:%d", prompt)
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(p, "")
		if err != nil {
			t.Fatal(err)
		}
		if c := r.Counts(); c.Finished != c.Arrived || c.Arrived != 3 {
			t.Fatalf("%s at %d tokens: %d of %d requests finished", file, prompt, c.Finished, c.Arrived)
		}
		return r.Summary.TTFT.Mean
	}
	last := 0.0
	for _, prompt := range []int{32768, 65536, 131072} {
		tp8, pp4 := ttft("tp8.toml", prompt), ttft("pp4-tp8.toml", prompt)
		speedup := tp8 / pp4
		t.Logf("%6d-token prompt: TTFT TP8 %.2f s, PP4×TP8 %.2f s: %.2f× (published %.2f×, error %+.1f %%), efficiency %.1f %% (published %.1f %%)",
			prompt, tp8/1e3, pp4/1e3, speedup, sglangPPSpeedup, 100*(speedup/sglangPPSpeedup-1), 100*speedup/4, 100*sglangPPEfficiency)
		if !(speedup > 1 && speedup < 4) || math.IsNaN(speedup) {
			t.Errorf("%d tokens: speedup %.3g outside (1, 4)", prompt, speedup)
		}
		if speedup <= last {
			t.Errorf("%d tokens: speedup %.3g not above the shorter prompt's %.3g", prompt, speedup, last)
		}
		last = speedup
	}
}
