package scenario

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestDisaggPipeline runs Llama-3.1-70B (80 layers; KV 2 × 8 heads × 128 ×
// 2 B = 4,096 B a layer and token) disaggregated with pipeline stages in
// either pool, and checks the stages' memory and the KV link.
//
// Each prefill stage's TP 2 GPUs send their stage's layers' KV at once, 50
// GB/s each (the ib preset): the link carries 2 × 50 GB/s × 80 / (the most
// layers a stage holds): [40 40] → 200 GB/s, [44 36] → 181.8 GB/s, one stage
// → 100 GB/s. A decode stage of 40 layers at TP 2 holds 40 × 4,096 / 2 =
// 81,920 B of KV a token a GPU. One request at a time (0.05 req/s) so that
// transfers never share the link: its busy seconds are the bytes over the
// bandwidth.
func TestDisaggPipeline(t *testing.T) {
	for _, c := range []struct {
		head, tail string
		link       float64 // B/s
		gpus       int
		decodePP   int
	}{
		{"", "decode_tp = 2\n", 100e9, 2 + 2*2, 1},
		{"pp = 2\n", "decode_tp = 2\n", 200e9, 4 + 2*2, 1},
		{"pp = 2\npp_layers = [44, 36]\npp_chunked = true\n", "decode_tp = 2\n", 2 * 50e9 * 80 / 44, 4 + 2*2, 1},
		{"pp = 2\n", "decode_tp = 2\ndecode_pp = 2\n", 200e9, 4 + 2*4, 2},
		{"", "decode_tp = 2\ndecode_pp = 2\n", 100e9, 2 + 2*4, 2},
	} {
		s := ppScenario(t, c.head, "[disagg]\ndecode_replicas = 2\n"+c.tail)
		s.Workload.Rate, s.Workload.Requests = 0.05, 6
		p, r, _ := runConserved(t, s, 6, c.head+c.tail)
		if got := p.Serve.Disagg.Link.Bandwidth; math.Abs(got-c.link) > 1e-3 {
			t.Errorf("%q: KV link %.6g B/s, want %.6g", c.head+c.tail, got, c.link)
		}
		res := r.Result
		if res.Transfers != 6 || math.Abs(res.LinkBusySeconds*c.link-res.TransferBytes) > 1e-6*res.TransferBytes {
			t.Errorf("%q: %d transfers, %g B in %g s busy: want 6 at %g B/s", c.head+c.tail, res.Transfers, res.TransferBytes, res.LinkBusySeconds, c.link)
		}
		if r.GPUs() != c.gpus {
			t.Errorf("%q: %d GPUs, want %d", c.head+c.tail, r.GPUs(), c.gpus)
		}
		ds := r.decodePipelineSummary()
		if c.decodePP == 1 {
			if ds != nil || p.Decode.Pipeline != nil {
				t.Errorf("%q: a decode pipeline %+v", c.head+c.tail, ds)
			}
			continue
		}
		if ds == nil || ds.PP != 2 || ds.Rounds == 0 || r.DecodePipelineStats.Rounds != ds.Rounds {
			t.Fatalf("%q: decode pipeline %+v", c.head+c.tail, ds)
		}
		for _, st := range p.Decode.Stages {
			if st.Layers != 40 || st.KVBytesToken != 81920 {
				t.Errorf("%q: decode stage %+v, want 40 layers and 81,920 B/token/GPU", c.head+c.tail, st)
			}
		}
		// The decode pool's rounds carry up to 2 micro-batches of its budget.
		if got, want := p.Serve.Disagg.Decode.Limits.MaxNumBatchedTokens, 2*p.Decode.Limits.MaxNumBatchedTokens; got != want {
			t.Errorf("%q: decode round budget %d, want %d", c.head+c.tail, got, want)
		}
		var b bytes.Buffer
		if err := p.Describe(&b); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"decode instance(s) of 4× h100, TP 2", "Decode pool: Pipeline: pp 2 × tp 2 = 4 GPUs per instance", "Decode pool: Pipeline: "} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%q: report lacks %q:\n%s", c.head+c.tail, want, b.String())
			}
		}
		if c.head != "" && !strings.Contains(b.String(), "KV leaves each of the prefill pool's 2 stages from that stage's GPUs") {
			t.Errorf("%q: header lacks the stages' KV line:\n%s", c.head+c.tail, b.String())
		}
	}
}

// TestDisaggPipelineExpert: the decode pool's own EP × PP layout
// (Qwen3-30B-A3B, decode DP 2 of PP 2 × TP 1 with EP 2 a stage) runs in
// lock-step with the all-to-all in each of its stages.
func TestDisaggPipelineExpert(t *testing.T) {
	s := epScenario(t, "qwen3-30b-a3b", "", "[disagg]\ndecode_replicas = 1\ndecode_dp = 2\ndecode_pp = 2\ndecode_expert_parallel = true\n")
	_, r, _ := runConserved(t, s, 240, "decode EP × PP")
	res, st := r.Result, r.DecodePipelineStats
	if res.DecodeDPWaves == 0 || st.Rounds != 2*res.DecodeDPWaves || len(st.AllToAllSeconds) != 2 || !(st.AllToAllSeconds[1] > 0) {
		t.Errorf("%d decode waves, %d rounds, all-to-all %v", res.DecodeDPWaves, st.Rounds, st.AllToAllSeconds)
	}
	if es := r.decodeExpertSummary(); es == nil || es.EP != 2 || es.GPUsPerRank != 2 || es.GPUs != 4 || !(es.AllToAllShare > 0) {
		t.Errorf("decode expert summary %+v", es)
	}
	if r.GPUs() != 1+4 {
		t.Errorf("%d GPUs, want 1 prefill + 2 ranks × 2 stages", r.GPUs())
	}
	// Two-batch overlap in the staged decode pool is refused, naming the
	// field that turned it on there.
	for _, c := range []struct{ head, tail, want string }{
		{"", "decode_two_batch_overlap = true\n", `field "disagg.decode_two_batch_overlap": with 2 pipeline stages`},
		{"dp = 2\nexpert_parallel = true\ntwo_batch_overlap = true\n", "", `field "two_batch_overlap": with 2 pipeline stages`},
	} {
		s := epScenario(t, "qwen3-30b-a3b", c.head, "[disagg]\ndecode_replicas = 1\ndecode_dp = 2\ndecode_pp = 2\ndecode_expert_parallel = true\n"+c.tail)
		if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %q: %v, want %q", c.head, c.tail, err, c.want)
		}
	}
}
