package serve

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/workload"
)

func disaggConfig(prefill, decode InstanceConfig, bw float64, lat sim.Time, kvPerToken float64) Config {
	return Config{
		Instance: prefill,
		Disagg: &Disagg{
			Decode: decode, DecodeReplicas: 1,
			Link:            Link{Bandwidth: bw, Latency: lat},
			KVBytesPerToken: kvPerToken,
		},
	}
}

// The KV transfer's time from the model's KV size. Llama-3.1-70B at BF16
// holds 2 × 80 layers × 8 KV heads × 128 × 2 bytes = 327,680 bytes per token
// (config.json of meta-llama/Llama-3.1-70B), so a 2,048-token prompt moves
// 671,088,640 bytes: 13.42 ms at 50 GB/s, 0.746 ms at 900 GB/s, each plus
// the link latency (here 20 µs). FP8 KV halves the bytes: 6.71 ms at 50 GB/s.
func TestTransferTime(t *testing.T) {
	cases := []struct {
		bw, kvPerToken float64
		want           sim.Time
	}{
		{50e9, 327680, sim.FromSeconds(671088640/50e9) + 20*sim.Microsecond},
		{900e9, 327680, sim.FromSeconds(671088640/900e9) + 20*sim.Microsecond},
		{50e9, 163840, sim.FromSeconds(335544320/50e9) + 20*sim.Microsecond},
	}
	for _, c := range cases {
		cfg := disaggConfig(baseConfig(policies.Chunked{}, 1000, 4096), baseConfig(policies.Chunked{}, 1000, 4096), c.bw, 20*sim.Microsecond, c.kvPerToken)
		res, rec := runCfg(t, cfg, []workload.Request{{ID: 0, PromptTokens: 2048, OutputTokens: 5}})
		r := rec.recs[0]
		if got := r.TransferEnd - r.TransferStart; got != c.want {
			t.Errorf("bw %g, %g B/token: transfer %v, want %v", c.bw, c.kvPerToken, got, c.want)
		}
		if res.TransferBytes != 2048*c.kvPerToken {
			t.Errorf("bytes moved %g, want %g", res.TransferBytes, 2048*c.kvPerToken)
		}
	}
}

// Metamorphic: with an instant, free transfer and ample KV everywhere, every
// request's TTFT equals what the prefill pool alone gives it (the same
// requests cut to one output token, so they end at their first token); a
// lone request's decode takes (output − 1) decode iterations of 1000 + 10 µs
// on the decode instance; and the bytes moved are Σ prompt × KV bytes per
// token over requests with more than one output token.
func TestDisaggInstantTransferMatchesPools(t *testing.T) {
	reqs := randomRequests(21, 200)
	pre := baseConfig(policies.Chunked{}, 5000, 1024)
	dec := baseConfig(policies.Chunked{}, 5000, 1024)
	dec.Limits.MaxNumSeqs = 256
	res, rec := runCfg(t, disaggConfig(pre, dec, 1e30, 0, 1000), reqs)

	alone := make([]workload.Request, len(reqs))
	copy(alone, reqs)
	var wantBytes float64
	for i := range alone {
		if alone[i].OutputTokens > 1 {
			wantBytes += float64(alone[i].PromptTokens) * 1000
		}
		alone[i].OutputTokens = 1
	}
	_, ref := runCfg(t, Config{Instance: pre}, alone)
	first := map[int64]sim.Time{}
	for _, r := range ref.recs {
		first[r.ID] = r.FirstToken
	}
	for _, r := range rec.recs {
		if r.FirstToken != first[r.ID] {
			t.Fatalf("request %d: TTFT %v disaggregated, %v on the prefill pool alone", r.ID, r.FirstToken-r.Arrival, first[r.ID]-r.Arrival)
		}
	}
	if res.TransferBytes != wantBytes {
		t.Fatalf("bytes moved %g, want %g", res.TransferBytes, wantBytes)
	}

	// A lone request: 4 decode iterations after the transfer.
	_, one := runCfg(t, disaggConfig(pre, dec, 1e30, 0, 1000), []workload.Request{{ID: 0, PromptTokens: 300, OutputTokens: 5}})
	if got := one.recs[0].Finish - one.recs[0].TransferEnd; got != 4*1010*sim.Microsecond {
		t.Fatalf("decode phase %v, want 4 × 1010 µs", got)
	}
}

// Backpressure: a decode pool far too small for the load (one instance, 40
// KV blocks = 640 tokens, 2 sequences) never loses a request; finished
// prefills wait for it (transfer wait > 0), and the prefill instance stops
// admitting past its pending limit.
func TestDisaggBackpressure(t *testing.T) {
	checkAll = true
	defer func() { checkAll = false }()
	reqs := randomRequests(22, 120)
	for i := range reqs {
		reqs[i].PromptTokens = 1 + reqs[i].PromptTokens%400 // fits the decode KV with its output
	}
	pre := baseConfig(policies.Chunked{}, 2000, 1024)
	dec := baseConfig(policies.Chunked{}, 40, 1024)
	dec.Limits.MaxNumSeqs = 2
	cfg := disaggConfig(pre, dec, 25e9, 10*sim.Microsecond, 1e5)
	cfg.Disagg.MaxPending = 3
	rec := &recorder{t: t}
	coll := metrics.NewCollector(metrics.SLO{})
	cfg.Source, cfg.Collector, cfg.Sink = &sliceSource{reqs: reqs}, coll, rec
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Finished+res.Rejected != int64(len(reqs)) || res.Finished == 0 {
		t.Fatalf("finished %d rejected %d of %d", res.Finished, res.Rejected, len(reqs))
	}
	s := coll.Summary()
	if s.Phases.TransferWait.Mean <= 0 || s.Phases.TransferWait.N == 0 {
		t.Fatalf("transfer wait %+v: the small decode pool caused no waiting", s.Phases.TransferWait)
	}
	t.Logf("transfer wait caused by the decode pool: mean %.1f ms, p99 %.1f ms over %d requests",
		s.Phases.TransferWait.Mean, s.Phases.TransferWait.P99, s.Phases.TransferWait.N)
}

// TestDisaggRandomInvariants: random pools, links, streaming and policies,
// with the full invariant check after every iteration on every instance.
func TestDisaggRandomInvariants(t *testing.T) {
	checkAll = true
	defer func() { checkAll = false }()
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 8))
		pre := baseConfig([]policies.Batcher{policies.Chunked{}, policies.PrefillFirst{}}[r.IntN(2)], 60+r.IntN(200), 1024)
		pre.PrefixCache = r.IntN(2) == 0
		dec := baseConfig(policies.Chunked{}, 60+r.IntN(200), 1024)
		dec.Limits.MaxNumSeqs = 4 + r.IntN(60)
		cfg := disaggConfig(pre, dec, 1e9*float64(1+r.IntN(100)), sim.Time(r.IntN(50))*sim.Microsecond, 1e5)
		cfg.Replicas = 1 + r.IntN(3)
		cfg.Disagg.DecodeReplicas = 1 + r.IntN(3)
		cfg.Disagg.Streaming = r.IntN(2) == 0
		cfg.Disagg.Layers = 32
		cfg.Disagg.MaxPending = r.IntN(5)
		cfg.Router = policies.LeastOutstanding{}
		reqs := randomRequests(seed, 150)
		for i := range reqs {
			reqs[i].Prefix = []uint64{uint64(i % 3)}
			reqs[i].PrefixBlockTokens = 64
		}
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			res, rec := runCfg(t, cfg, reqs)
			if res.Finished+res.Rejected != int64(len(reqs)) {
				t.Fatalf("finished %d rejected %d of %d", res.Finished, res.Rejected, len(reqs))
			}
			for _, x := range rec.recs {
				if x.Rejected == "" && x.OutputTokens > 1 && (x.TransferStart < x.FirstToken || x.TransferEnd < x.TransferStart || x.Finish < x.TransferEnd) {
					t.Fatalf("request %d: phases out of order: %+v", x.ID, x)
				}
			}
		})
	}
}

// TestDisaggDecodeRoutingCounts: a request delivered to a decode instance
// counts there for the decode router, not on the prefill instance. A (200
// output tokens, about 200 decode steps of 1 ms) is decoding on decode
// instance 1 when B arrives 50 ms later; least-outstanding then sends B to
// instance 2 (1 outstanding against 0). Before, a delivered request was
// never counted on its decode instance (and never left the prefill
// instance's count), so both decode instances read 0 and B went to the
// first, instance 1.
func TestDisaggDecodeRoutingCounts(t *testing.T) {
	cfg := disaggConfig(baseConfig(policies.Chunked{}, 1000, 4096), baseConfig(policies.Chunked{}, 1000, 4096), 50e9, 0, 1000)
	cfg.Disagg.DecodeReplicas = 2
	cfg.Disagg.DecodeRouter = policies.LeastOutstanding{}
	_, rec := runCfg(t, cfg, []workload.Request{
		{ID: 0, PromptTokens: 100, OutputTokens: 200},
		{ID: 1, Arrival: 50 * sim.Millisecond, PromptTokens: 100, OutputTokens: 5},
	})
	recs := recordsByID(rec.recs)
	if recs[0].Instance != 1 || recs[1].Instance != 2 {
		t.Errorf("decode instances %d and %d, want 1 and 2", recs[0].Instance, recs[1].Instance)
	}
}

// TestDisaggSGLangPrealloc: SGLang's PD mechanisms (experiments' sglang
// engine sets both).
//   - FirstTokenAtDecode: a lone 2,048-token request's first token is the
//     decode instance's at the transfer's end (2048 × 327,680 B at 50 GB/s
//   - 20 µs = 13.44 ms after the prefill), not the prefill's; its last
//     token is the same either way (the decodes follow the transfer).
//   - DecodeReserveTokens 512: two 300-token prompts (19 blocks of 16 each)
//     finish their prefill together; a decode instance of 60 blocks takes
//     the first (19 + 0 ≤ 60) but not the second while the first runs
//     (19 + ⌈512 / 16⌉ = 51 > 60 − 19 − its growth), so the second's
//     transfer starts when the first has finished; without the reserve
//     both transfers start at once.
func TestDisaggSGLangPrealloc(t *testing.T) {
	cfg := func(reserve int, atDecode bool, decBlocks int) Config {
		c := disaggConfig(baseConfig(policies.Chunked{}, 1000, 4096), baseConfig(policies.Chunked{}, decBlocks, 4096), 50e9, 20*sim.Microsecond, 327680)
		c.Disagg.DecodeReserveTokens, c.Disagg.FirstTokenAtDecode = reserve, atDecode
		return c
	}
	lone := []workload.Request{{ID: 0, PromptTokens: 2048, OutputTokens: 5}}
	_, vllm := runCfg(t, cfg(0, false, 1000), lone)
	_, sgl := runCfg(t, cfg(0, true, 1000), lone)
	v, s := vllm.recs[0], sgl.recs[0]
	if s.FirstToken != s.TransferEnd || !(v.FirstToken <= v.TransferStart) {
		t.Errorf("first token at %v (transfer %v–%v) at the decode, %v (transfer from %v) at the prefill", s.FirstToken, s.TransferStart, s.TransferEnd, v.FirstToken, v.TransferStart)
	}
	if s.FirstToken-v.FirstToken != sim.FromSeconds(2048*327680/50e9)+20*sim.Microsecond || s.Finish != v.Finish {
		t.Errorf("TTFT moved by %v, finish %v and %v: want the transfer (13.44 ms) and the same finish", s.FirstToken-v.FirstToken, s.Finish, v.Finish)
	}
	two := []workload.Request{{ID: 0, PromptTokens: 300, OutputTokens: 50}, {ID: 1, PromptTokens: 300, OutputTokens: 50}}
	for _, reserve := range []int{0, 512} {
		_, rec := runCfg(t, cfg(reserve, true, 60), two)
		a, b := rec.recs[0], rec.recs[1]
		if a.TransferStart > b.TransferStart {
			a, b = b, a
		}
		if waited := b.TransferStart >= a.Finish; waited != (reserve > 0) {
			t.Errorf("reserve %d: second transfer at %v, first request done at %v", reserve, b.TransferStart, a.Finish)
		}
	}
}
