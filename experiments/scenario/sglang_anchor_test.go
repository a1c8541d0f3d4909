package scenario

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"
)

// Published SGLang results (experiments/validation/published/sglang-v04-overlap,
// README.md there); nothing is fitted to them:
//   - lmsys.org/blog/2024-12-04-sglang-v0-4: "Zero-overhead batch scheduler:
//     1.1x increase in throughput" (the overlap scheduler against the
//     scheduler before it);
//   - runinfra.ai/news/vllm-vs-sglang-vs-tensorrt-llm-benchmark (Llama-3.1-8B-
//     Instruct, one H100 80GB, bf16; vLLM 0.23.0, SGLang 0.5.13): vLLM has
//     the highest throughput at saturation and "SGLang tracked vLLM within a
//     few percent".
const sglangOverlapSpeedup = 1.1

// TestSGLangOverlapAnchor runs the offline scenario under the sglang engine
// with and without overlap scheduling and under vllm-v1, and reports the
// output-throughput ratios against the published ones. What must hold: every
// request is served, overlap is never slower (it hides CPU work, it adds
// none), and the two engines are within 25 % of each other on the same
// kernels (they differ in scheduling and memory plan, not in kernel speed).
func TestSGLangOverlapAnchor(t *testing.T) {
	dir := filepath.Join("..", "validation", "published", "sglang-v04-overlap")
	tput := func(edit func(e *Engine)) float64 {
		s, err := LoadScenario(filepath.Join(dir, "offline.toml"))
		if err != nil {
			t.Fatal(err)
		}
		edit(s.Engine)
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(p, "")
		if err != nil {
			t.Fatal(err)
		}
		if c := r.Counts(); c.Finished != c.Arrived || c.Arrived != 1000 {
			t.Fatalf("%+v: %d of %d requests finished", s.Engine, c.Finished, c.Arrived)
		}
		return r.Summary.OutputThroughput
	}
	overlap := tput(func(*Engine) {})
	serial := tput(func(e *Engine) { e.DisableOverlapSchedule = true })
	vllm := tput(func(e *Engine) { *e = Engine{Name: "vllm-v1"} })
	speedup := overlap / serial
	t.Logf("sglang overlap %.0f tok/s, --disable-overlap-schedule %.0f tok/s: %.3f× (published %.2f×, error %+.1f %%)",
		overlap, serial, speedup, sglangOverlapSpeedup, 100*(speedup/sglangOverlapSpeedup-1))
	t.Logf("sglang %.0f tok/s / vllm-v1 %.0f tok/s = %.3f (published: within a few percent, vLLM ahead)", overlap, vllm, overlap/vllm)
	if !(speedup >= 1) || math.IsNaN(speedup) {
		t.Errorf("overlap scheduling %.3g× the serial scheduler: it must not be slower", speedup)
	}
	if r := overlap / vllm; !(r > 0.8 && r < 1.25) {
		t.Errorf("sglang / vllm-v1 throughput %.3g: outside (0.8, 1.25)", r)
	}
}

// TestSGLangPR1060Prefill runs the published prefill-heavy SGLang run of
// experiments/validation/published/sglang-pr1060-prefill (sgl-project/sglang
// PR 1060: Llama-3.1-8B-Instruct, 1,000 random prompts of up to 8,192 tokens
// and up to 8 output tokens at rate inf; measured 6.81 req/s, 27,670 input
// tok/s, mean TTFT 73,187 ms) and reports the errors; nothing is fitted to
// it. What must hold: every request is served and the input tokens are
// bench_serving's (uniform on [1, 8192]: 4,096.5 a request on average, the
// run's 4,065 within 2 %).
func TestSGLangPR1060Prefill(t *testing.T) {
	const reqPerS, inputTokPerS, meanTTFTms = 6.81, 27670.26, 73186.68
	s, err := LoadScenario(filepath.Join("..", "validation", "published", "sglang-pr1060-prefill", "offline.toml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(p, "")
	if err != nil {
		t.Fatal(err)
	}
	sum := r.Summary
	if sum.Completed != 1000 {
		t.Fatalf("%d of 1000 requests finished", sum.Completed)
	}
	if in := float64(sum.InputTokens) / 1000; math.Abs(in/4065-1) > 0.02 {
		t.Errorf("mean prompt %.0f tokens, the run's 4,065", in)
	}
	in := float64(sum.InputTokens) / sum.Duration
	t.Logf("req/s %.2f (published %.2f, %+.1f %%); input tok/s %.0f (%.0f, %+.1f %%); mean TTFT %.0f ms (%.0f, %+.1f %%)",
		sum.RequestThroughput, reqPerS, 100*(sum.RequestThroughput/reqPerS-1), in, inputTokPerS, 100*(in/inputTokPerS-1),
		sum.TTFT.Mean, meanTTFTms, 100*(sum.TTFT.Mean/meanTTFTms-1))
}

// TestSGLangPPUnderSGLang runs the chunked-pipelining anchor of
// experiments/validation/published/sglang-pp-h20 (LMSYS 2026-01-15: PP4 × TP8
// 3.31× TP8's prefill throughput on H20, DeepSeek-V3.1, batch size 1) under
// the sglang engine (sglang-*.toml) beside vllm-v1 (tp8.toml, pp4-tp8.toml),
// and checks that the pipeline runs as SGLang's: chunked pipelining without
// pp_chunked, max_running_requests // pp a micro-batch. One request at a
// time and one output token leave no scheduling choice, so the two engines
// must agree within 1 % (the same kernels and stage pricing).
func TestSGLangPPUnderSGLang(t *testing.T) {
	dir := filepath.Join("..", "validation", "published", "sglang-pp-h20")
	ttft := func(file string, prompt int) (float64, *Plan) {
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
		return r.Summary.TTFT.Mean, p
	}
	for _, prompt := range []int{32768, 65536, 131072} {
		tp8, _ := ttft("sglang-tp8.toml", prompt)
		pp4, p := ttft("sglang-pp4-tp8.toml", prompt)
		vtp8, _ := ttft("tp8.toml", prompt)
		vpp4, _ := ttft("pp4-tp8.toml", prompt)
		t.Logf("%6d-token prompt: sglang TTFT TP8 %.2f s, PP4×TP8 %.2f s: %.2f× (published %.2f×, error %+.1f %%); vllm-v1 %.2f×",
			prompt, tp8/1e3, pp4/1e3, tp8/pp4, sglangPPSpeedup, 100*(tp8/pp4/sglangPPSpeedup-1), vtp8/vpp4)
		if !p.PoolPlan.chunked || p.Limits.MaxNumSeqs%4 != 0 {
			t.Errorf("sglang pp 4: chunked pipelining %t, max running %d (want true, a multiple of 4)", p.PoolPlan.chunked, p.Limits.MaxNumSeqs)
		}
		if r := (tp8 / pp4) / (vtp8 / vpp4); math.Abs(r-1) > 0.01 {
			t.Errorf("%d tokens: sglang speedup %.3f, vllm-v1's %.3f", prompt, tp8/pp4, vtp8/vpp4)
		}
	}
}
