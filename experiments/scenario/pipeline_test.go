package scenario

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// ppScenario is a small Llama-3.1-70B scenario on H100s with head lines
// (top-level keys) prepended.
func ppScenario(t *testing.T, head string, tail ...string) Scenario {
	t.Helper()
	const body = "model = \"llama-3.1-70b\"\ngpu = \"h100\"\ntp = 2\nseed = 3\n" +
		"[workload]\nrate = 6\nrequests = 200\nprompt = \"lognormal:6.5,0.8\"\noutput = \"lognormal:4.5,0.8\"\n"
	s, err := Parse(strings.NewReader(head+body+strings.Join(tail, "")), "pp.toml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPipelineRunInvariants runs Llama-3.1-70B at PP 2 × TP 2 and checks:
// no request lost (arrived = finished + rejected, every one in
// requests.csv), each step's KV use within every stage's own capacity,
// one pipeline round per step (the probes left out), 4 GPUs per instance
// in the cost, and summary.json's per-stage figures.
func TestPipelineRunInvariants(t *testing.T) {
	for _, head := range []string{"pp = 2\n", "pp = 2\npp_chunked = true\n", "pp = 2\npp_layers = [44, 36]\n"} {
		p, r, dir := runConserved(t, ppScenario(t, head), 200, head)
		if r.PipelineStats.Rounds != r.Result.Steps {
			t.Errorf("%q: %d pipeline rounds for %d steps", head, r.PipelineStats.Rounds, r.Result.Steps)
		}
		if r.GPUs() != 4 || r.CostPerHour() != 4*p.GPU.PricePerHour {
			t.Errorf("%q: %d GPUs, %g $/h; want 4 and 4 × %g", head, r.GPUs(), r.CostPerHour(), p.GPU.PricePerHour)
		}
		minFit := p.Stages[0].Blocks
		for _, st := range p.Stages {
			minFit = min(minFit, st.Blocks)
		}
		if p.Memory.Blocks != minFit {
			t.Errorf("%q: %d blocks, the stages hold %v", head, p.Memory.Blocks, p.Stages)
		}
		for _, row := range readRows(t, filepath.Join(dir, "steps.csv")) {
			used, _ := strconv.Atoi(row["kv_blocks_used"])
			if used > minFit {
				t.Fatalf("%q: a step uses %d KV blocks, a stage holds %d", head, used, minFit)
			}
		}
		var sum struct{ Pipeline *PipelineSummary }
		readSummary(t, dir, &sum)
		ps := sum.Pipeline
		if ps == nil || ps.PP != 2 || ps.GPUsPerReplica != 4 || len(ps.Stages) != 2 || len(ps.StageMs) != 2 || len(ps.SendMs) != 1 ||
			!(ps.Bubble >= 0 && ps.Bubble < 1) || !(ps.MicroBatches >= 1 && ps.MicroBatches <= 2) {
			t.Errorf("%q: summary.json pipeline %+v", head, ps)
		}
		if ps != nil && head == "pp = 2\npp_layers = [44, 36]\n" {
			// More layers, more weights and KV on stage 0: it sets the blocks.
			if ps.Stages[0].Layers != 44 || !(ps.Stages[0].WeightGB > ps.Stages[1].WeightGB) || ps.KVBlocks != ps.Stages[0].Blocks {
				t.Errorf("pp_layers [44, 36]: stages %+v, blocks %d", ps.Stages, ps.KVBlocks)
			}
		}
	}
}

func readRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, v := range r {
			m[recs[0][i]] = v
		}
		rows = append(rows, m)
	}
	return rows
}

// TestPipelineOneIsToday: pp = 1 written out is the scenario without it:
// the same plan pricing and the same results, with no pipeline in the
// summary (the goldens, which never set pp, pin today's figures).
func TestPipelineOneIsToday(t *testing.T) {
	run := func(head string) *Report {
		p, err := ppScenario(t, head).Resolve()
		if err != nil {
			t.Fatal(err)
		}
		if p.Pipeline != nil || p.Stages != nil {
			t.Fatalf("%q: a pipeline at pp 1", head)
		}
		r, err := Run(p, "")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := run(""), run("pp = 1\n")
	if !reflect.DeepEqual(a.Summary, b.Summary) || a.Counts() != b.Counts() || a.GPUs() != 2 || b.SummaryJSON().Pipeline != nil {
		t.Errorf("pp = 1 differs from pp omitted")
	}
}

// TestPipelineFits: Llama-3.1-405B (about 812 GB of BF16 weights) does
// not fit 8 H100s at TP 8 (≈ 101 GB a GPU), and fits at PP 2 × TP 8
// (≈ 51 GB a GPU: 63 layers a stage plus one vocabulary table).
func TestPipelineFits(t *testing.T) {
	const body = "model = \"llama-3.1-405b\"\ngpu = \"h100\"\ntp = 8\n[workload]\nrate = 1\nrequests = 10\nprompt = \"constant:100\"\noutput = \"constant:10\"\n"
	s, err := Parse(strings.NewReader(body), "405b.toml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), "for the KV cache") {
		t.Fatalf("405B at TP 8 on H100: %v; want a memory error", err)
	}
	s, err = Parse(strings.NewReader("pp = 2\n"+body), "405b.toml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range p.Stages {
		if st.Layers != 63 || !(st.WeightGB > 45 && st.WeightGB < 56) {
			t.Errorf("stage %d: %d layers, %.1f GB/GPU", st.Stage, st.Layers, st.WeightGB)
		}
	}
	// 8 GPUs a node: stage 0 fills node 0, stage 1 node 1, so the send crosses nodes.
	if got := p.Pipeline.Sends()[0].Name; got != "h100_dgx inter-node" {
		t.Errorf("PP 2 × TP 8 sends over %q, want the inter-node table", got)
	}
	// Inside one NVLink domain (a GB200 NVL72 by default, or a domain of
	// 16 given) both stages share it: the intra-node table.
	for _, c := range []struct{ head, body string }{
		{"pp = 2\n", strings.Replace(body, `gpu = "h100"`, `gpu = "gb200"`, 1)},
		{"pp = 2\n", body + "[hardware]\ngpus_per_node = 16\n"},
	} {
		s, err := Parse(strings.NewReader(c.head+c.body), "405b.toml")
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Pipeline.Sends()[0].Name; got != "h100_dgx intra-node" {
			t.Errorf("%s: PP 2 × TP 8 sends over %q, want the intra-node table", c.body, got)
		}
	}
	s, _ = Parse(strings.NewReader("pp = 2\n"+body+"[hardware]\ngpus_per_node = 0\n"), "405b.toml")
	if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), `field "hardware.gpus_per_node": 0 must be in [1, 576]`) {
		t.Errorf("gpus_per_node = 0: %v", err)
	}
}

// TestPipelineFieldErrors: bad pipeline fields are errors naming the field.
func TestPipelineFieldErrors(t *testing.T) {
	for _, c := range []struct{ head, want string }{
		{"pp = 0\n", `line 1: field "pp": 0 must be in [1, 64]`},
		{"pp = -2\n", `field "pp": -2 must be in [1, 64]`},
		{"pp = 65\n", "must be in [1, 64]"},
		{"pp = 2\npp_layers = [40, 39]\n", `field "pp_layers": models: layer partition [40 39] sums to 79`},
		{"pp = 3\npp_layers = [40, 40]\n", "has 2 stages, pipeline-parallel size is 3"},
		{"pp_layers = [40, 40]\n", "gives 2 stages but pp is 1"},
		{"pp_chunked = true\n", "chunked pipelining needs pp ≥ 2"},
	} {
		_, err := ppScenario(t, c.head).Resolve()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "scenario: ") {
			t.Errorf("%q: %v, want an error with %q", c.head, err, c.want)
		}
	}
	// The decode pool's stages (disagg.decode_pp) need a decode pool and a
	// degree the model's layers allow.
	for _, c := range []struct{ tail, want string }{
		{"[disagg]\ndecode_pp = 2\n", `field "disagg.decode_pp": describes the decode pool: it needs disagg.decode_replicas ≥ 1`},
		{"[disagg]\ndecode_replicas = 1\ndecode_pp = 0\n", `field "disagg.decode_pp": 0 must be in [1, 64]`},
		{"[disagg]\ndecode_replicas = 1\ndecode_pp = -1\n", `field "disagg.decode_pp": -1 must be in [1, 64]`},
		{"[disagg]\ndecode_replicas = 1\ndecode_pp = 81\n", `field "disagg.decode_pp": models: pipeline-parallel size 81: must be in [1, 64]`},
	} {
		_, err := ppScenario(t, "", c.tail).Resolve()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "scenario: ") {
			t.Errorf("%q: %v, want an error with %q", c.tail, err, c.want)
		}
	}
}

// TestPipelineOneInFlight: with one request at a time (max_concurrency 1)
// a vLLM pipeline holds one micro-batch, whose trip through the stages is
// the whole model's step plus the activation sends: every request's
// latency is the pp = 1 one plus a few microseconds a step (Vidur's
// intra-node send/recv, 5–20 µs at these sizes, against steps of several
// ms), and the stages idle 1 − 1/pp of the time (bubble ≈ 50 % at pp 2).
func TestPipelineOneInFlight(t *testing.T) {
	run := func(pp int) *Report {
		s, err := Parse(strings.NewReader(fmt.Sprintf("model = \"llama-3.1-8b\"\ngpu = \"h100\"\npp = %d\n[workload]\nrate = 5\nrequests = 40\nmax_concurrency = 1\nprompt = \"lognormal:6.5,0.8\"\noutput = \"lognormal:4.5,0.8\"\n", pp)), "one.toml")
		if err != nil {
			t.Fatal(err)
		}
		_, r := resolveRun(t, s)
		return r
	}
	one, two := run(1), run(2)
	d := two.Summary.E2E.Mean - one.Summary.E2E.Mean // ms
	steps := float64(two.Result.Steps) / float64(two.Result.Finished)
	if !(d > 0 && d < steps*0.05) { // < 50 µs a step
		t.Errorf("mean E2E pp 2 − pp 1 = %.4g ms over %.0f steps a request; want (0, %.3g ms)", d, steps, steps*0.05)
	}
	t.Logf("E2E %.3f vs %.3f ms, %.0f steps a request, bubble %.4f", two.Summary.E2E.Mean, one.Summary.E2E.Mean, steps, two.PipelineStats.Bubble())
	if b := two.PipelineStats.Bubble(); !(b > 0.49 && b < 0.52) {
		t.Errorf("bubble %.4f with one micro-batch over 2 stages, want ≈ 0.5", b)
	}
}

// runConserved resolves and runs s into a temporary directory and checks
// that no request is lost: arrived (want of them) = finished + rejected,
// some finished, and every arrival has its row in requests.csv. label
// names the case in failures.
func runConserved(t *testing.T, s Scenario, want int64, label string) (*Plan, *Report, string) {
	t.Helper()
	p, r, dir := runDir(t, s)
	c := r.Counts()
	if c.Arrived != want || c.Finished+c.Rejected != c.Arrived || c.Finished == 0 {
		t.Errorf("%q: arrived %d, finished %d, rejected %d", label, c.Arrived, c.Finished, c.Rejected)
	}
	if n := len(readRows(t, filepath.Join(dir, "requests.csv"))); int64(n) != c.Arrived {
		t.Errorf("%q: requests.csv has %d rows for %d arrivals", label, n, c.Arrived)
	}
	return p, r, dir
}
