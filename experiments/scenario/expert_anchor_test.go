package scenario

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/servesim/servesim/models"
)

// Published wide-EP figures of SGLang serving DeepSeek-V3 with PD
// disaggregation, DP attention and expert parallelism:
//   - lmsys.org/blog/2025-05-05-large-scale-ep: 12 nodes of 8 H100s (4
//     prefill nodes at EP 32, 9 decode nodes at EP 72), 2000-token inputs:
//     52.3k input and 22.3k output tokens/s per node (with two-batch
//     overlap);
//   - lmsys.org/blog/2025-06-16-gb200-part-1: GB200 NVL72, 12 compute
//     trays (48 GPUs) decoding, 2000-token inputs: 7,583 output tokens/s
//     per GPU (no MTP).
const (
	sglangH100PrefillPerGPU = 52300.0 / 8
	sglangH100DecodePerGPU  = 22300.0 / 8
	sglangGB200DecodePerGPU = 7583.0
)

// TestSGLangWideEPAnchors prices the posts' saturated steps on one DP rank
// of each layout (experiments/validation/published/sglang-wide-ep,
// README.md there) and reports the simulated tokens/s per GPU and the
// error against the published figure; nothing is fitted to them. A
// saturated decode server steps its full batch (the posts fill it with
// their slow-down API), so a rank's output rate is batch / step time; a
// prefill server's input rate is its batch's tokens / step time. The step
// time is the EP step: operators plus the all-to-all (no two-batch
// overlap, which the posts use). It checks what must hold whatever the
// assumptions: the batch fits each rank's KV cache, the all-to-all takes
// a share of the step, and the rates are finite and positive.
func TestSGLangWideEPAnchors(t *testing.T) {
	dir := filepath.Join("..", "validation", "published", "sglang-wide-ep")
	for _, c := range []struct {
		file      string
		prefill   bool
		published float64
	}{
		{"h100-prefill-ep32.toml", true, sglangH100PrefillPerGPU},
		{"h100-decode-ep72.toml", false, sglangH100DecodePerGPU},
		{"gb200-decode-ep48.toml", false, sglangGB200DecodePerGPU},
	} {
		s, err := LoadScenario(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		if p.Expert == nil {
			t.Fatalf("%s: no expert-parallel step", c.file)
		}
		var b models.Batch
		var tokens float64
		if c.prefill {
			n := p.Limits.MaxNumBatchedTokens / 2000 // whole 2000-token prompts in the budget
			b = models.Batch{PrefillTokens: n * 2000, Prefills: n, PrefillPairs: float64(n) * 2000 * 2001 / 2}
			tokens = float64(b.PrefillTokens)
		} else {
			n := p.Limits.MaxNumSeqs
			b = models.Batch{Decodes: n, DecodeCtx: int64(n) * 2050} // halfway through a 100-token decode
			tokens = float64(n)
			if need := n * 2100; p.Memory.Blocks*p.Memory.BlockSize < need {
				t.Errorf("%s: %d requests of 2100 tokens need %d KV tokens, a rank holds %d", c.file, n, need, p.Memory.Blocks*p.Memory.BlockSize)
			}
		}
		sec, _, _ := p.Expert.Step(b)
		d, cb := p.Expert.AllToAll(b.Tokens())
		a2a := float64(p.Model.Layers-p.Model.DenseLayers) * (d + cb)
		rate := tokens / sec
		t.Logf("%s: %d tokens a rank step in %.2f ms (all-to-all %.1f %%): %.0f tokens/s per GPU (published %.0f, error %+.1f %%)",
			c.file, b.Tokens(), 1e3*sec, 100*a2a/sec, rate, c.published, 100*(rate/c.published-1))
		if !(rate > 0) || math.IsInf(rate, 0) || !(a2a > 0 && a2a < sec) {
			t.Errorf("%s: rate %v, all-to-all %v of %v s", c.file, rate, a2a, sec)
		}
	}
}
