package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// Sweep points take their explicit fields from the sweep file (the point's
// own TOML spells out every field of the base, zeros included): a zero in
// the base or on an axis is an error naming the sweep file's line; fields
// the file omits take their defaults.
func TestSweepExplicitZeros(t *testing.T) {
	// smallSweep's lines: 3 seeds, 6 gpu, 13 the batch axis's values; an
	// appended axis's values are on line 19.
	cases := []struct {
		name, text, want string
	}{
		{"base", strings.Replace(smallSweep, "gpu = \"h100\"\n", "gpu = \"h100\"\nreplicas = 0\n", 1),
			`sweep.toml line 7: field "replicas": 0 must be ≥ 1; omit the field for the default (1)`},
		{"axis", smallSweep + "[[axis]]\nfield = \"batch.max_num_seqs\"\nvalues = [8, 0]\n",
			`sweep.toml line 19: field "batch.max_num_seqs": 0 must be ≥ 1`},
		{"table value", strings.Replace(smallSweep, `{policy = "prefill-first"}`, `{policy = "prefill-first", block_size = 0}`, 1),
			`sweep.toml line 13: field "batch.block_size": 0 must be ≥ 1`},
		{"negative seed", strings.Replace(smallSweep, "seeds = [1, 2]", "seeds = [1, -2]", 1),
			`sweep.toml line 3: field "seeds": seed -2 must be ≥ 0`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sw, err := LoadSweep(writeSweep(t, c.text))
			if err == nil {
				_, err = sw.Points()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one with %q", err, c.want)
			}
		})
	}
}

// Every result file is mode 0644 whatever the umask allows CreateTemp (0600):
// a run's three files, a sweep's point files and results, and
// WriteFileAtomic's.
func TestResultFileModes(t *testing.T) {
	p, err := small().Resolve()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := scenario.Run(p, dir); err != nil {
		t.Fatal(err)
	}
	sw, err := LoadSweep(writeSweep(t, smallSweep))
	if err != nil {
		t.Fatal(err)
	}
	pts, err := sw.Points()
	if err != nil {
		t.Fatal(err)
	}
	sdir := t.TempDir()
	if _, _, err := RunSweepDir(pts[:2], sdir, DirOptions{Workers: 1}); err != nil {
		t.Fatal(err)
	}
	pfs, err := Collect(pts[:2], sdir)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteResults(sdir, sw.Axes, pfs); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "plan.csv")
	if err := scenario.WriteFileAtomic(other, []byte("x\n")); err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(dir, "requests.csv"), filepath.Join(dir, "steps.csv"), filepath.Join(dir, "summary.json"),
		filepath.Join(sdir, "results.csv"), filepath.Join(sdir, "results.json"), other}
	for _, pt := range pts[:2] {
		files = append(files, filepath.Join(sdir, "points", pt.Key()+".json"))
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if st.Mode().Perm() != scenario.ResultMode {
			t.Errorf("%s: mode %v, want %v", f, st.Mode().Perm(), scenario.ResultMode)
		}
	}
}

// A sweep under a cancelled context runs no point and keeps no
// temporaries (RunContext is what the CLI's signal handler cancels;
// scenario.TestRunContextCancelled has a run's side).
func TestSweepContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Cancelled before it starts: no point runs.
	sw, err := LoadSweep(writeSweep(t, smallSweep))
	if err != nil {
		t.Fatal(err)
	}
	pts, err := sw.Points()
	if err != nil {
		t.Fatal(err)
	}
	sdir := t.TempDir()
	ran, _, err := RunSweepDir(pts, sdir, DirOptions{Workers: 2, KeepRecords: true, Context: ctx})
	if ran != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled sweep ran %d points, error %v", ran, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(sdir, "points")); len(ents) != 0 {
		t.Errorf("cancelled sweep left %d entries in points/", len(ents))
	}
}

// TestExpertSweepAndKeys: dp is a sweep axis (Qwen3-30B-A3B with expert
// parallelism at DP 2 and 4: 2 and 4 GPUs, 64 and 32 experts a GPU), and
// the default scenario's TOML form has none of the new keys (sweep point
// keys of scenarios without them are unchanged).
func TestExpertSweepAndKeys(t *testing.T) {
	const text = "name = \"dp\"\n[base]\nmodel = \"qwen3-30b-a3b\"\ngpu = \"h100\"\nexpert_parallel = true\n[base.workload]\nrate = 4\nrequests = 60\nprompt = \"lognormal:6.5,0.8\"\noutput = \"lognormal:4,0.6\"\n[[axis]]\nfield = \"dp\"\nvalues = [2, 4]\n"
	res := runSweepText(t, text)
	if len(res) != 2 || res[0].Report.GPUs() != 2 || res[1].Report.GPUs() != 4 ||
		res[0].Report.Plan.Model.LocalExperts(res[0].Report.Plan.Parallel) != 64 || res[1].Report.Plan.Model.LocalExperts(res[1].Report.Plan.Parallel) != 32 {
		t.Errorf("sweep over dp: %d points", len(res))
	}
	defaultTOMLLacks(t, "dp ", "expert_parallel", "eplb", "expert_skew", "all2all_backend")
}

// TestPipelineSweepAndKeys: pp is a sweep axis like any field (each point
// its own pipeline), and a scenario without it has the TOML form it had
// before pipeline parallelism, so sweep point keys (a hash of that form)
// do not move.
func TestPipelineSweepAndKeys(t *testing.T) {
	const text = "name = \"pp\"\n[base]\nmodel = \"llama-3.1-70b\"\ngpu = \"h100\"\ntp = 2\n[base.workload]\nrate = 4\nrequests = 60\nprompt = \"lognormal:6.5,0.8\"\noutput = \"lognormal:4,0.6\"\n[[axis]]\nfield = \"pp\"\nvalues = [1, 2]\n"
	res := runSweepText(t, text)
	if len(res) != 2 || res[0].Report.GPUs() != 2 || res[1].Report.GPUs() != 4 || res[0].Report.Plan.Pipeline != nil || res[1].Report.PipelineStats.Rounds != res[1].Report.Result.Steps {
		t.Errorf("sweep over pp: %d points", len(res))
	}
	defaultTOMLLacks(t, "pp", "gpus_per_node")
}

// TestDecodePPSweepAndKeys: disagg.decode_pp is a sweep axis (the decode
// pool of Llama-3.1-70B at TP 2 with 1 and 2 stages: 2 + 2 and 2 + 4
// GPUs), and the default scenario's TOML form has no decode_pp key.
func TestDecodePPSweepAndKeys(t *testing.T) {
	const text = "name = \"dpp\"\n[base]\nmodel = \"llama-3.1-70b\"\ngpu = \"h100\"\ntp = 2\n[base.disagg]\ndecode_replicas = 1\n[base.workload]\nrate = 2\nrequests = 30\nprompt = \"lognormal:6.5,0.8\"\noutput = \"lognormal:4,0.6\"\n[[axis]]\nfield = \"disagg.decode_pp\"\nvalues = [1, 2]\n"
	res := runSweepText(t, text)
	if len(res) != 2 || res[0].Report.GPUs() != 4 || res[1].Report.GPUs() != 6 || res[0].Report.Plan.Decode.Pipeline != nil || res[1].Report.DecodePipelineStats.Rounds == 0 {
		t.Errorf("sweep over disagg.decode_pp: %d points", len(res))
	}
	defaultTOMLLacks(t, "decode_pp")
}

// small is the default scenario cut to 300 requests at 20 req/s.
func small() scenario.Scenario {
	s := scenario.Default()
	s.Workload.Requests, s.Workload.Rate = 300, 20
	return s
}
