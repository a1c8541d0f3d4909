package scenario

import (
	"math"
	"strconv"
	"testing"
)

// TestSGLangPDUnderSGLang runs the wide-EP PD anchors of
// experiments/validation/published/sglang-wide-ep (TestSGLangWideEPPD runs
// them under the kernels-only engine) under the sglang engine, two-batch
// overlap on as the posts ran: SGLang's scheduler and memory plan in both
// pools, its decode preallocation (512 tokens kept free a request) and the
// first token streamed by the decode server. What must hold: the plan
// carries both SGLang mechanisms and every request is served
// (sim/serve TestDisaggSGLangPrealloc checks the mechanisms' arithmetic).
func TestSGLangPDUnderSGLang(t *testing.T) {
	for _, c := range wideEPPDCases {
		p, r, rate, perStep := runWideEPPD(t, c, func(s *Scenario) { s.Engine.Name = "sglang" })
		if d := p.Serve.Disagg; d.DecodeReserveTokens != SGLangReservedDecodeTokens || !d.FirstTokenAtDecode {
			t.Fatalf("%s: decode reserve %d, first token at decode %t", c.file, d.DecodeReserveTokens, d.FirstTokenAtDecode)
		}
		t.Logf("%s decode %t (%d + %d GPUs): %.0f tokens/s per GPU (published %.0f, error %+.1f %%); %.1f tokens a rank step; KV tokens a GPU %d / %d; TTFT %.0f ms, TPOT %.1f ms",
			c.file, c.decode, p.Replicas, p.DecodeInstances, rate, c.published, 100*(rate/c.published-1), perStep,
			p.Memory.Blocks, p.Decode.Memory.Blocks, r.Summary.TTFT.Mean, r.Summary.TPOT.Mean)
		if !(rate > 0) || math.IsInf(rate, 0) {
			t.Errorf("%s: rate %v", c.file, rate)
		}
	}
}

// poolTokenRate returns the prefill pool's prompt tokens (decode false) or
// the decode pool's decodes (true) a second a GPU, over the pool's span
// (the decode pool: its middle half, past the fill and before the drain),
// and the tokens a step.
func poolTokenRate(t *testing.T, steps string, p *Plan, decode bool) (rate, perStep float64) {
	col, gpus := "prefill_tokens", float64(p.Replicas)
	if decode {
		col, gpus = "decodes", float64(p.DecodeInstances)
	}
	var starts, ns []float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range readRows(t, steps) {
		if inst, _ := strconv.Atoi(row["instance"]); (inst >= p.Replicas) != decode {
			continue
		}
		start, _ := strconv.ParseFloat(row["start_s"], 64)
		dur, _ := strconv.ParseFloat(row["duration_s"], 64)
		n, _ := strconv.ParseFloat(row[col], 64)
		starts, ns = append(starts, start), append(ns, n)
		lo, hi = math.Min(lo, start), math.Max(hi, start+dur)
	}
	if decode {
		lo, hi = lo+(hi-lo)/4, hi-(hi-lo)/4
	}
	var tokens, count float64
	for i := range starts {
		if starts[i] >= lo && starts[i] < hi {
			tokens, count = tokens+ns[i], count+1
		}
	}
	return tokens / (hi - lo) / gpus, tokens / count
}
