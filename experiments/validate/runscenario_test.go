package validate

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
)

// TestExpertFromRun: a real run's data_parallel_size, enable_expert_parallel
// and enable_eplb reach the replayed scenario (DP ranks, not replicas), and
// the scenario resolves as that layout.
func TestExpertFromRun(t *testing.T) {
	for _, c := range []struct {
		dp         int
		ep, eplb   bool
		wantDP     int
		wantLayout int // EP group
	}{{0, false, false, 0, 0}, {1, false, false, 0, 0}, {2, false, false, 2, 0}, {2, true, true, 2, 2}, {4, true, false, 4, 4}} {
		run := &realrun.Run{Name: "r", Engine: realrun.Engine{Model: "Qwen/Qwen3-30B-A3B", GPU: "h100", TP: 1, DP: c.dp, ExpertParallel: c.ep, EPLB: c.eplb}}
		s, err := RunScenario(run, scenario.Scenario{})
		if err != nil {
			t.Fatal(err)
		}
		if s.DP != c.wantDP || s.ExpertParallel != c.ep || s.EPLB != c.eplb || s.Replicas != 1 {
			t.Errorf("run dp %d ep %v: scenario dp %d ep %v eplb %v replicas %d", c.dp, c.ep, s.DP, s.ExpertParallel, s.EPLB, s.Replicas)
		}
		if c.ep {
			s.Workload.Rate, s.Workload.Requests, s.Workload.Prompt, s.Workload.Output = 1, 10, "constant:100", "constant:10" // the replay's trace stands in for these
			p, err := s.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			if p.Parallel.EP.Size != c.wantLayout || p.Replicas != c.dp {
				t.Errorf("run dp %d ep: EP %d, %d instances", c.dp, p.Parallel.EP.Size, p.Replicas)
			}
		}
	}
}

// TestPipelineFromRun: a real run's pipeline_parallel_size reaches the
// replay's scenario (one stage leaves pp unset, as today's replays).
func TestPipelineFromRun(t *testing.T) {
	for _, c := range []struct{ pp, want int }{{0, 0}, {1, 0}, {2, 2}} {
		run := &realrun.Run{Name: "r", Engine: realrun.Engine{Model: "meta-llama/Llama-3.1-70B", GPU: "h100", TP: 2, PP: c.pp}}
		s, err := RunScenario(run, scenario.Scenario{})
		if err != nil {
			t.Fatal(err)
		}
		if s.PP != c.want {
			t.Errorf("run pp %d: scenario pp %d, want %d", c.pp, s.PP, c.want)
		}
	}
}

// TestPipelineExpertFromRun: a real run with both pipeline_parallel_size 2
// and enable_expert_parallel replays as that layout (it was refused: EP was
// modelled without stages).
func TestPipelineExpertFromRun(t *testing.T) {
	e, err := realrun.ReadMeta(strings.NewReader(`{"engine_kwargs": {"model": "Qwen/Qwen3-30B-A3B", "tensor_parallel_size": 2, "pipeline_parallel_size": 2, "data_parallel_size": 2, "enable_expert_parallel": true}}`), "meta.json")
	if err != nil || e.PP != 2 || e.DP != 2 || !e.ExpertParallel {
		t.Fatalf("meta.json: %+v, %v", e, err)
	}
	e.GPU = "h100"
	run := &realrun.Run{Name: "r", Engine: e}
	s, err := RunScenario(run, scenario.Scenario{})
	if err != nil {
		t.Fatal(err)
	}
	s.Workload.Rate, s.Workload.Requests, s.Workload.Prompt, s.Workload.Output = 1, 10, "constant:100", "constant:10" // the replay's trace stands in for these
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if p.Parallel.EP.Size != 4 || len(p.Stages) != 2 || p.Replicas != 2 || p.Pipeline.Expert(1) == nil {
		t.Errorf("EP %d, %d stages, %d instances", p.Parallel.EP.Size, len(p.Stages), p.Replicas)
	}
}

// TestRunScenarioSpeculative: a real run's speculative_config becomes the
// replay's [speculative] (method and k; a draft_model's draft), and the
// replay resolves with the method's default acceptance.
func TestRunScenarioSpeculative(t *testing.T) {
	run := &realrun.Run{Name: "r", Engine: realrun.Engine{Model: "meta-llama/Llama-3.1-8B", GPU: "h100",
		Speculative: `{"method": "eagle3", "num_speculative_tokens": 3, "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}`}}
	s, err := RunScenario(run, scenario.Scenario{})
	if err != nil {
		t.Fatal(err)
	}
	if sp := s.Speculative; sp == nil || sp.Method != "eagle3" || sp.NumSpeculativeTokens != 3 || sp.Model != "" {
		t.Fatalf("speculative %+v", s.Speculative)
	}
	run.Engine.Speculative = `{"method": "eagle3", "num_speculative_tokens": "3"}`
	if _, err := RunScenario(run, scenario.Scenario{}); err == nil || !strings.Contains(err.Error(), "speculative_config") {
		t.Errorf("bad config: %v", err)
	}
}

// TestSim2RealOffloadTier: a sim2real experiment's logged CPU blocks
// become its replay's host tier. 67-llama-2-7b-hf-tp1-reasoning-lite-1-1
// logged 1,023 CPU blocks; Llama-2-7B's KV is 2 × 32 layers × 32 heads ×
// 128 × 2 B = 524,288 B a token, a 16-token block 8 MiB, so the tier is
// 1,023 × 8 MiB = 8,581,545,984 B (vLLM's --kv-offloading-size 8 GiB less
// the part of a block). With IgnoreKVOffload there is no tier.
func TestSim2RealOffloadTier(t *testing.T) {
	entries, err := Suite()
	if err != nil {
		t.Fatal(err)
	}
	for _, ignore := range []bool{false, true} {
		var tiers int
		for _, e := range entries {
			if e.Experiment != "67-llama-2-7b-hf-tp1-reasoning-lite-1-1" {
				continue
			}
			e.IgnoreKVOffload = ignore
			runs, err := e.Open(filepath.Join("..", "..", "..", "shared", "data"))
			if err != nil {
				t.Skipf("sim2real runs not here: %v", err)
			}
			s, err := StageScenario(runs[0], e.Base())
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			tiers = len(p.Serve.Instance.Tiers)
			if !ignore && (tiers != 1 || p.Serve.Instance.Tiers[0].Bytes != 1023*16*524288) {
				t.Fatalf("tiers %+v, want one of 1023 × 16 × 524288 B", p.Serve.Instance.Tiers)
			}
		}
		if ignore && tiers != 0 {
			t.Fatalf("ignore_kv_offload: %d tiers, want none", tiers)
		}
	}
}
