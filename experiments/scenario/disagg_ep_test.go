package scenario

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDisaggExpertPools runs Qwen3-30B-A3B disaggregated with a layout of
// its own in each pool: prefill DP 2 × TP 1 with EP 2 (64 experts a GPU),
// decode DP 4 × TP 1 with EP 4 (32 experts a GPU), DeepEP low-latency and
// two-batch overlap (SGLang's split rule) in decode. It checks: no request lost across the pools
// (arrived = finished + rejected, each in requests.csv), every step's KV
// use within its own pool's per-rank capacity, every rank of both pools
// stepped, 2 + 4 = 6 GPUs in the cost, each pool in lock-step on its own
// (every wave one step or dummy a rank: 2 and 4 ranks), and summary.json's
// per-pool figures.
func TestDisaggExpertPools(t *testing.T) {
	// SGLang's split rule (thresholds 1): at 12 req/s a decode rank runs
	// about 5 sequences, under vLLM's 32.
	head := "dp = 2\nexpert_parallel = true\ntbo_decode_token_threshold = 1\ntbo_prefill_token_threshold = 1\n"
	tail := "[disagg]\ndecode_replicas = 1\ndecode_dp = 4\ndecode_all2all_backend = \"deepep_low_latency\"\ndecode_two_batch_overlap = true\n"
	p, err := epScenario(t, "qwen3-30b-a3b", head, tail).Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if p.Replicas != 2 || p.DecodeInstances != 4 || p.Parallel.EP.Size != 2 || p.Decode.Parallel.EP.Size != 4 {
		t.Fatalf("instances %d + %d, EP %d and %d; want 2 + 4, EP 2 and 4", p.Replicas, p.DecodeInstances, p.Parallel.EP.Size, p.Decode.Parallel.EP.Size)
	}
	if p.Model.LocalExperts(p.Parallel) != 64 || p.Model.LocalExperts(p.Decode.Parallel) != 32 {
		t.Errorf("experts a GPU %d and %d, want 64 and 32 of 128", p.Model.LocalExperts(p.Parallel), p.Model.LocalExperts(p.Decode.Parallel))
	}
	if !(p.Decode.Memory.WeightBytesPerGPU < p.Memory.WeightBytesPerGPU) || !(p.Decode.Memory.Blocks > p.Memory.Blocks) {
		t.Errorf("decode weights %.2f GB and %d blocks a GPU against prefill %.2f GB and %d: EP 4 should hold fewer experts and more KV",
			p.Decode.Memory.WeightBytesPerGPU/1e9, p.Decode.Memory.Blocks, p.Memory.WeightBytesPerGPU/1e9, p.Memory.Blocks)
	}
	if p.Expert.TBO() != nil || p.Decode.Expert.TBO() == nil || p.Decode.Expert.Backend() != "deepep_low_latency" || p.Expert.Backend() != "allgather_reducescatter" {
		t.Errorf("pools' backends %s / %s and TBO %v / %v", p.Expert.Backend(), p.Decode.Expert.Backend(), p.Expert.TBO(), p.Decode.Expert.TBO())
	}
	dir := t.TempDir()
	r, err := Run(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Counts()
	if c.Arrived != 240 || c.Finished+c.Rejected != c.Arrived || c.Finished == 0 {
		t.Errorf("arrived %d, finished %d, rejected %d", c.Arrived, c.Finished, c.Rejected)
	}
	if n := len(readRows(t, filepath.Join(dir, "requests.csv"))); int64(n) != c.Arrived {
		t.Errorf("requests.csv has %d rows for %d arrivals", n, c.Arrived)
	}
	if res := r.Result; res.Transfers == 0 || res.Transfers > c.Arrived {
		t.Errorf("%d KV transfers for %d arrivals", res.Transfers, c.Arrived)
	}
	ran := map[int]int{}
	for _, row := range readRows(t, filepath.Join(dir, "steps.csv")) {
		inst, _ := strconv.Atoi(row["instance"])
		used, _ := strconv.Atoi(row["kv_blocks_used"])
		total, _ := strconv.Atoi(row["kv_blocks_total"])
		want := p.Memory.Blocks // instances 0, 1: the prefill ranks; 2–5 the decode ranks
		if inst >= p.Replicas {
			want = p.Decode.Memory.Blocks
		}
		if used > total || total != want {
			t.Fatalf("instance %d uses %d of %d KV blocks (its pool's plan %d)", inst, used, total, want)
		}
		ran[inst]++
	}
	if len(ran) != 6 {
		t.Errorf("steps by instance %v, want all 6 ranks", ran)
	}
	if r.GPUs() != 6 || r.CostPerHour() != 6*p.GPU.PricePerHour {
		t.Errorf("%d GPUs, %g $/h; want 6", r.GPUs(), r.CostPerHour())
	}
	res := r.Result
	if res.DPWaves == 0 || 2*res.DPWaves != res.DPRankSteps+res.DPDummySteps {
		t.Errorf("prefill lock-step: %d waves of 2, %d rank steps, %d dummies", res.DPWaves, res.DPRankSteps, res.DPDummySteps)
	}
	if res.DecodeDPWaves == 0 || 4*res.DecodeDPWaves != res.DecodeDPRankSteps+res.DecodeDPDummySteps {
		t.Errorf("decode lock-step: %d waves of 4, %d rank steps, %d dummies", res.DecodeDPWaves, res.DecodeDPRankSteps, res.DecodeDPDummySteps)
	}
	if res.DPRankSteps+res.DecodeDPRankSteps != res.Steps {
		t.Errorf("rank steps %d + %d, want every step %d in a wave", res.DPRankSteps, res.DecodeDPRankSteps, res.Steps)
	}
	if st := r.DecodeExpertStats; st.Steps == 0 || st.OverlapSteps == 0 || r.ExpertStats.OverlapSteps != 0 {
		t.Errorf("decode EP steps %d, overlapped %d; prefill overlapped %d (TBO off there)", st.Steps, st.OverlapSteps, r.ExpertStats.OverlapSteps)
	}
	var sum struct {
		Experts *ExpertSummary `json:"expert_parallel"`
		Decode  *ExpertSummary `json:"decode_expert_parallel"`
	}
	readSummary(t, dir, &sum)
	if es := sum.Experts; es == nil || es.DP != 2 || es.EP != 2 || es.GPUs != 2 || es.LocalExperts != 64 || es.KVBlocks != p.Memory.Blocks || es.TwoBatchOverlap {
		t.Errorf("summary.json expert_parallel %+v", es)
	}
	if es := sum.Decode; es == nil || es.DP != 4 || es.EP != 4 || es.GPUs != 4 || es.LocalExperts != 32 || es.KVBlocks != p.Decode.Memory.Blocks ||
		es.Backend != "deepep_low_latency" || !es.TwoBatchOverlap || es.OverlapSteps == 0 || es.Waves != res.DecodeDPWaves || !(es.RankSpread > 0 && es.RankSpread <= 1) {
		t.Errorf("summary.json decode_expert_parallel %+v", es)
	}
	hdr := header(t, p)
	for _, want := range []string{"Data parallel: dp 2 ranks", "Decode pool: Data parallel: dp 4 ranks", "Decode pool: Expert parallel: ep 4 GPUs hold 128 routed experts, 32 per GPU", "two-batch overlap above 1 decode / 1 prefill tokens"} {
		if !strings.Contains(hdr, want) {
			t.Errorf("header lacks %q:\n%s", want, hdr)
		}
	}
}

// TestDisaggExpertErrors: the decode pool's layout fields name themselves.
func TestDisaggExpertErrors(t *testing.T) {
	cases := []struct {
		model, head, tail, want string
	}{
		{"qwen3-30b-a3b", "", "[disagg]\ndecode_dp = 2\n", "disagg.decode_dp"},
		{"qwen3-30b-a3b", "", "[disagg]\ndecode_replicas = 1\ndecode_dp = 0\n", "disagg.decode_dp"},
		{"qwen3-30b-a3b", "", "[disagg]\ndecode_replicas = 1\ndecode_dp = 100000\n", "disagg.decode_dp"},
		{"llama-3.1-8b", "", "[disagg]\ndecode_replicas = 1\ndecode_dp = 2\ndecode_expert_parallel = true\n", "disagg.decode_expert_parallel"},
		{"qwen3-30b-a3b", "", "[disagg]\ndecode_replicas = 1\ndecode_expert_parallel = true\n", "disagg.decode_expert_parallel"}, // EP group of 1 GPU
		{"qwen3-30b-a3b", "expert_parallel = true\ndp = 2\n", "[disagg]\ndecode_replicas = 1\ndecode_dp = 2\ndecode_all2all_backend = \"nccl\"\n", "disagg.decode_all2all_backend"},
		{"qwen3-30b-a3b", "dp = 2\n", "[disagg]\ndecode_replicas = 1\ndecode_two_batch_overlap = true\n", "disagg.decode_two_batch_overlap"},
		{"qwen3-30b-a3b", "two_batch_overlap = true\n", "", "two_batch_overlap"},
		{"qwen3-30b-a3b", "dp = 2\nexpert_parallel = true\ntbo_decode_token_threshold = -1\n", "", "tbo_decode_token_threshold"},
	}
	for _, c := range cases {
		_, err := epScenario(t, c.model, c.head, c.tail).Resolve()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q + %q: error %v, want one naming %s", c.head, c.tail, err, c.want)
		}
	}
}
