package scenario

import (
	"bytes"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPipelineExpertRun runs Qwen3-30B-A3B as DP 2 ranks of PP 2 × TP 2
// with expert parallelism (an EP group of dp × tp = 4 GPUs per stage, 8
// GPUs in all) and checks: no request lost across the ranks, each step's
// KV within its rank's capacity, 8 GPUs in the cost, lock-step waves (each
// a round of every rank or a dummy), the all-to-all in every stage, and the
// memory per stage and rank. Per stage GPU, EP saves what each stage's 24
// MoE layers no longer hold: at TP 2 without EP a GPU holds half of each of
// the 128 experts (64 experts' worth), with EP 4 whole ones of 32, so 32
// experts × 24 layers × 9,437,184 B (3 × 2048 × 768 × 2 B) = 7.248 GB fewer.
func TestPipelineExpertRun(t *testing.T) {
	const head = "pp = 2\ntp = 2\ndp = 2\nexpert_parallel = true\n"
	p, r, dir := runConserved(t, epScenario(t, "qwen3-30b-a3b", head, ""), 240, head)
	for _, row := range readRows(t, filepath.Join(dir, "steps.csv")) {
		used, _ := strconv.Atoi(row["kv_blocks_used"])
		total, _ := strconv.Atoi(row["kv_blocks_total"])
		if used > total || total != p.Memory.Blocks {
			t.Fatalf("rank %s uses %d of %d KV blocks (plan %d)", row["instance"], used, total, p.Memory.Blocks)
		}
	}
	if r.GPUs() != 8 || r.CostPerHour() != 8*p.GPU.PricePerHour {
		t.Errorf("%d GPUs, %g $/h; want 8", r.GPUs(), r.CostPerHour())
	}
	res, st := r.Result, r.PipelineStats
	if res.DPWaves == 0 || 2*res.DPWaves != res.Steps+res.DPDummySteps || st.Rounds != res.Steps+res.DPDummySteps {
		t.Errorf("%d waves, %d steps, %d dummies, %d rounds priced", res.DPWaves, res.Steps, res.DPDummySteps, st.Rounds)
	}
	for s, a := range st.AllToAllSeconds {
		if !(a > 0 && a < st.StageBusy[s]) {
			t.Errorf("stage %d: all-to-all %g s of %g s busy", s, a, st.StageBusy[s])
		}
	}
	noEP, err := epScenario(t, "qwen3-30b-a3b", "pp = 2\ntp = 2\ndp = 2\n", "").Resolve()
	if err != nil {
		t.Fatal(err)
	}
	const saving = 32 * 24 * 3 * 2048 * 768 * 2.0 / 1e9
	for i, sp := range p.Stages {
		if got := noEP.Stages[i].WeightGB - sp.WeightGB; math.Abs(got-saving) > 1e-9 {
			t.Errorf("stage %d: %.4f GB a GPU with EP, %.4f without: saves %.4f GB, want %.4f", i, sp.WeightGB, noEP.Stages[i].WeightGB, got, saving)
		}
		if sp.Blocks < noEP.Stages[i].Blocks {
			t.Errorf("stage %d: %d KV blocks with EP, %d without", i, sp.Blocks, noEP.Stages[i].Blocks)
		}
	}
	es := r.expertSummary()
	if es == nil || es.EP != 4 || es.GPUsPerRank != 4 || es.GPUs != 8 || es.LocalExperts != 32 || !(es.AllToAllShare > 0) || es.Waves != res.DPWaves {
		t.Errorf("expert summary %+v", es)
	}
	if ps := r.pipelineSummary(); ps == nil || len(ps.AllToAllMs) != 2 {
		t.Errorf("pipeline summary %+v", ps)
	}
	var b bytes.Buffer
	if err := p.Describe(&b); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"stage 0: layers 0–23 (24), 8.02 GB weights/GPU",
		"24 MoE layers, their experts over the stage's EP group of 4 GPUs (4 in its fullest NVLink domain, 1 domains)",
		"Expert parallel: ep 4 GPUs hold 128 routed experts of each MoE layer, one EP group per pipeline stage (the stage's dp × tp GPUs)",
		"the DP ranks run each micro-batch's stages in lock-step",
		", of which all-to-all: 0: ",
		"all-to-all", "a round (all stages and micro-batches)",
		"DP lock-step: ",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

// TestPipelineExpertNoDP: PP 2 × TP 2 with EP 2 a stage and no DP ranks
// runs without lock-step, DeepEP's all-to-all in each stage (the
// all-gather backend moves nothing at DP 1, as at pp 1).
func TestPipelineExpertNoDP(t *testing.T) {
	for _, c := range []struct {
		backend string
		a2a     bool
	}{{"deepep_low_latency", true}, {"allgather_reducescatter", false}} {
		head := "pp = 2\ntp = 2\nexpert_parallel = true\nall2all_backend = \"" + c.backend + "\"\n"
		_, r, _ := runConserved(t, epScenario(t, "qwen3-30b-a3b", head, ""), 240, head)
		if r.Result.DPWaves != 0 {
			t.Errorf("%s: %d lock-step waves without DP", c.backend, r.Result.DPWaves)
		}
		if a := r.PipelineStats.AllToAllSeconds; len(a) != 2 || (a[0] > 0) != c.a2a || (a[1] > 0) != c.a2a {
			t.Errorf("%s: all-to-all seconds by stage %v", c.backend, a)
		}
	}
}

// TestPipelineWithoutEPUnchanged is half of the metamorphic pair: pp ≥ 2
// without EP takes the path it took before EP × PP (no all-to-all sums,
// no lock-step: the goldens llama70b-h100-pp2-tp2 and, for pp = 1 with EP,
// qwen3moe-h100-dp2-ep2 hold byte for byte in TestGolden), here for the
// MoE model whose EP run TestPipelineExpertRun checks.
func TestPipelineWithoutEPUnchanged(t *testing.T) {
	_, r, _ := runConserved(t, epScenario(t, "qwen3-30b-a3b", "pp = 2\ntp = 2\ndp = 2\n", ""), 240, "no EP")
	if r.PipelineStats.AllToAllSeconds != nil || r.Result.DPWaves != 0 || r.expertSummary().EP != 0 {
		t.Errorf("PP without EP: all-to-all %v, %d waves, %+v", r.PipelineStats.AllToAllSeconds, r.Result.DPWaves, r.expertSummary())
	}
}
