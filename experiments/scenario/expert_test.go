package scenario

import (
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// epScenario is a small scenario of model on H100s with head lines
// (top-level keys) prepended and tail lines (sections) appended.
func epScenario(t *testing.T, model, head, tail string) Scenario {
	t.Helper()
	body := "model = \"" + model + "\"\ngpu = \"h100\"\nseed = 5\n" +
		"[workload]\nrate = 12\nrequests = 240\nprompt = \"lognormal:6.5,0.8\"\noutput = \"lognormal:4.5,0.8\"\n"
	s, err := Parse(strings.NewReader(head+body+tail), "ep.toml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestExpertRunInvariants runs Qwen3-30B-A3B at DP 2 with expert
// parallelism (EP 2) and checks: no request lost across the ranks (arrived
// = finished + rejected, each in requests.csv), every step's KV use within
// its rank's capacity, both ranks ran, 2 GPUs in the cost, the ranks in
// lock-step (every wave one step or dummy batch a rank), and summary.json's
// per-rank figures: 64 of 128 experts per GPU, weights 32.07 GB instead of
// 61.06 (64 experts × 48 layers × 9.44 MB fewer).
func TestExpertRunInvariants(t *testing.T) {
	for _, head := range []string{"dp = 2\nexpert_parallel = true\n", "dp = 2\nexpert_parallel = true\neplb = true\nall2all_backend = \"deepep_low_latency\"\n"} {
		p, r, dir := runConserved(t, epScenario(t, "qwen3-30b-a3b", head, ""), 240, head)
		ran := map[string]int{}
		for _, row := range readRows(t, filepath.Join(dir, "steps.csv")) {
			used, _ := strconv.Atoi(row["kv_blocks_used"])
			total, _ := strconv.Atoi(row["kv_blocks_total"])
			if used > total || total != p.Memory.Blocks {
				t.Fatalf("%q: rank %s uses %d of %d KV blocks (plan %d)", head, row["instance"], used, total, p.Memory.Blocks)
			}
			ran[row["instance"]]++
		}
		if len(ran) != 2 {
			t.Errorf("%q: steps by rank %v, want both ranks", head, ran)
		}
		if r.GPUs() != 2 || r.CostPerHour() != 2*p.GPU.PricePerHour {
			t.Errorf("%q: %d GPUs, %g $/h", head, r.GPUs(), r.CostPerHour())
		}
		// Lock-step: each wave is one step of each rank, the idle one's a
		// dummy batch priced by the same EP step (the probes left out).
		if res := r.Result; res.DPWaves == 0 || 2*res.DPWaves != res.Steps+res.DPDummySteps || r.ExpertStats.Steps != res.Steps+res.DPDummySteps {
			t.Errorf("%q: %d waves, %d steps, %d dummies, %d EP steps priced", head, res.DPWaves, res.Steps, res.DPDummySteps, r.ExpertStats.Steps)
		}
		var sum struct {
			Experts *ExpertSummary `json:"expert_parallel"`
		}
		readSummary(t, dir, &sum)
		es := sum.Experts
		if es == nil || es.DP != 2 || es.EP != 2 || es.GPUs != 2 || es.LocalExperts != 64 || es.KVBlocks != p.Memory.Blocks ||
			!(es.AllToAllShare > 0 && es.AllToAllShare < 1) || !(es.TokensPerRank > 0) || int(es.WeightGB*100+0.5) != 3207 ||
			es.Waves != r.Result.DPWaves || !(es.RankSpread > 0.5 && es.RankSpread <= 1) {
			t.Errorf("%q: summary.json expert_parallel %+v", head, es)
		}
		wantSkew := DefaultExpertSkew
		if strings.Contains(head, "eplb") {
			wantSkew = DefaultExpertSkewEPLB
		}
		if es != nil && es.Skew != wantSkew {
			t.Errorf("%q: skew %v, want %v", head, es.Skew, wantSkew)
		}
	}
}

// TestDPWithoutMoEIsReplicas: DP ranks of a dense model are independent
// replicas: dp = 2 gives the same results as replicas = 2 behind the same
// router (vLLM's DP load balancer), and dp = 1 the same as no dp.
func TestDPWithoutMoEIsReplicas(t *testing.T) {
	run := func(head, tail string) *Report {
		p, err := epScenario(t, "llama-3.1-8b", head, tail).Resolve()
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(p, "")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	dp := run("dp = 2\n", "")
	rep := run("replicas = 2\n", "[router]\npolicy = \"dp-coordinator\"\n")
	if !reflect.DeepEqual(dp.Summary, rep.Summary) || dp.Counts() != rep.Counts() || dp.GPUs() != rep.GPUs() {
		t.Errorf("dp 2 and 2 replicas differ: TTFT %v / %v, TPOT %v / %v, GPUs %d / %d",
			dp.Summary.TTFT.Mean, rep.Summary.TTFT.Mean, dp.Summary.TPOT.Mean, rep.Summary.TPOT.Mean, dp.GPUs(), rep.GPUs())
	}
	one, none := run("dp = 1\n", ""), run("", "")
	if !reflect.DeepEqual(one.Summary, none.Summary) || one.Counts() != none.Counts() {
		t.Error("dp = 1 differs from no dp")
	}
}

// TestExpertParallelFits: DeepSeek-V3 at FP8 does not fit one H100's
// memory at TP 1, but does as 16 DP ranks with EP 16 (16 experts a GPU),
// across two 8-GPU nodes.
func TestExpertParallelFits(t *testing.T) {
	if _, err := epScenario(t, "deepseek-v3", "weights = \"fp8\"\nkv = \"fp8\"\ndp = 16\n", "").Resolve(); err == nil {
		t.Error("DeepSeek-V3 fits one H100 without EP")
	}
	p, err := epScenario(t, "deepseek-v3", "weights = \"fp8\"\nkv = \"fp8\"\ndp = 16\nexpert_parallel = true\nall2all_backend = \"deepep_high_throughput\"\n", "").Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Model.LocalExperts(p.Parallel); got != 16 {
		t.Errorf("%d experts per GPU, want 256 / 16 = 16", got)
	}
	hdr := header(t, p)
	if !strings.Contains(hdr, "Expert parallel: ep 16 GPUs hold 256 routed experts, 16 per GPU whole; all-to-all deepep_high_throughput over NVLink and the scale-out NIC (2 domains of 8 GPUs") {
		t.Errorf("header:\n%s", hdr)
	}
}

func TestExpertFieldErrors(t *testing.T) {
	cases := []struct {
		model, head, want string
	}{
		{"llama-3.1-8b", "dp = 2\nexpert_parallel = true\n", "is dense"},
		{"qwen3-30b-a3b", "eplb = true\n", "needs expert_parallel"},
		{"qwen3-30b-a3b", "expert_skew = 1.2\n", "needs expert_parallel"},
		{"qwen3-30b-a3b", "dp = 0\n", "must be in [1, 576]"},
		{"qwen3-30b-a3b", "dp = 2\nexpert_parallel = true\nexpert_skew = 0.5\n", "must be ≥ 1"},
		{"qwen3-30b-a3b", "dp = 2\nexpert_parallel = true\nall2all_backend = \"nccl\"\n", "unknown backend"},
		{"qwen3-30b-a3b", "expert_parallel = true\n", "dp × tp = 1 GPU"},
		{"qwen3-30b-a3b", "dp = 2\nexpert_parallel = true\npp = 2\ntwo_batch_overlap = true\n", `field "two_batch_overlap": with 2 pipeline stages: two-batch overlap inside pipeline stages is not modelled`},
		{"qwen3-30b-a3b", "expert_parallel = true\npp = 2\n", "dp × tp = 1 GPU"},
		{"qwen3-30b-a3b", "dp = 2\nexpert_parallel = true\neplb_redundant_experts = 8\n", "needs eplb"},
		{"qwen3-30b-a3b", "dp = 256\nexpert_parallel = true\n", "more GPUs than its 128 experts"},
		{"qwen3-30b-a3b", "dp = 2\nexpert_parallel = true\ntwo_batch_overlap = true\ntbo_schedule = \"trtllm\"\n", `field "tbo_schedule": unknown schedule "trtllm"`},
		{"qwen3-30b-a3b", "tbo_comm_sms = 20\n", "needs expert_parallel"},
		{"qwen3-30b-a3b", "dp = 2\nexpert_parallel = true\ntbo_comm_sms = 20\n", "ep.toml line 3: field \"tbo_comm_sms\": needs two_batch_overlap"},
		{"qwen3-30b-a3b", "dp = 2\nexpert_parallel = true\ntwo_batch_overlap = true\ntbo_comm_sms = -1\n", "must be ≥ 0"},
		{"qwen3-30b-a3b", "dp = 2\nexpert_parallel = true\ntwo_batch_overlap = true\ntbo_comm_sms = 132\n", "fewer than GPU \"h100\"'s 132"},
	}
	for _, c := range cases {
		_, err := epScenario(t, c.model, c.head, "").Resolve()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "scenario: ") {
			t.Errorf("%q: %v, want %q", c.head, err, c.want)
		}
	}
}

// expertHeader resolves s and returns the plan and the header's data- and
// expert-parallel lines.
func expertHeader(t *testing.T, s Scenario) (*Plan, string) {
	t.Helper()
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := p.describeExperts(&b); err != nil {
		t.Fatal(err)
	}
	return p, b.String()
}

// TestTBOCommSMsHeader: the header says how many SMs the all-to-all holds
// under two-batch overlap and the compute's slow-down beside it (DeepEP
// normal on H100: 20 of 132, 132/112 = 1.179×; low-latency none; a given
// tbo_comm_sms in place of the backend's), and summary.json carries them.
func TestTBOCommSMsHeader(t *testing.T) {
	for _, c := range []struct {
		head, want string
		sms        int
	}{
		{"all2all_backend = \"deepep_high_throughput\"\n", "the all-to-all holds 20 of the GPU's 132 SMs, so the compute beside it runs 1.179× slower", 20},
		{"all2all_backend = \"deepep_low_latency\"\n", "the all-to-all holds no SMs", 0},
		// 32 of 132: 132/100 = 1.320.
		{"all2all_backend = \"deepep_high_throughput\"\ntbo_comm_sms = 32\n", "holds 32 of the GPU's 132 SMs, so the compute beside it runs 1.320× slower", 32},
		{"all2all_backend = \"deepep_high_throughput\"\ntbo_comm_sms = 0\n", "the all-to-all holds no SMs", 0},
	} {
		p, hdr := expertHeader(t, epScenario(t, "qwen3-30b-a3b", "dp = 2\nexpert_parallel = true\ntwo_batch_overlap = true\ntbo_decode_token_threshold = 1\n"+c.head, ""))
		if !strings.Contains(hdr, c.want) {
			t.Errorf("%q: header\n%s\nlacks %q", c.head, hdr, c.want)
		}
		r, err := Run(p, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if es := r.expertSummary(); es == nil || es.CommSMs != c.sms || es.OverlapSteps == 0 {
			t.Errorf("%q: summary %+v, want %d communication SMs and split steps", c.head, es, c.sms)
		}
	}
}

// TestDPWithPipeline: DP ranks of pipeline stages count dp × pp × tp GPUs
// in the header, summary.json and the cost (Llama-3.1-70B, DP 2 of PP 2 ×
// TP 2: 8 GPUs).
func TestDPWithPipeline(t *testing.T) {
	s := ppScenario(t, "pp = 2\ndp = 2\n")
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	hdr := header(t, p)
	if !strings.Contains(hdr, "Data parallel: dp 2 ranks × pp 2 × tp 2 = 8 GPUs per replica") {
		t.Errorf("header:\n%s", hdr)
	}
	r, err := Run(p, "")
	if err != nil {
		t.Fatal(err)
	}
	if es := r.expertSummary(); r.GPUs() != 8 || es == nil || es.GPUs != 8 || es.GPUsPerRank != 4 {
		t.Errorf("%d GPUs, summary %+v; want 8, 4 a rank", r.GPUs(), es)
	}
}
