package scenario

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.golden from the current code")

func TestDefaultScenarioResolves(t *testing.T) {
	p, err := Default().Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if p.Model.Name != "llama-3.1-8b" || p.GPU.Name != "h100" || p.Memory.Blocks <= 0 {
		t.Fatalf("default plan: model %s gpu %s blocks %d", p.Model.Name, p.GPU.Name, p.Memory.Blocks)
	}
}

// TestBadInput checks that each kind of bad input is an error naming the
// field at fault, before anything runs.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		toml string // appended to a valid scenario's top-level keys
		edit func(*Scenario)
		want []string // substrings the error must contain
	}{
		{name: "unknown model", edit: func(s *Scenario) { s.Model = "llama-9" }, want: []string{`unknown model "llama-9"`, `"model"`}},
		{name: "unknown gpu", edit: func(s *Scenario) { s.GPU = "h300" }, want: []string{`"h300"`, `"gpu"`}},
		{name: "zero rate", edit: func(s *Scenario) { s.Workload.Rate = 0 }, want: []string{`"workload.rate"`, "--rate", "positive"}},
		{name: "negative rate", edit: func(s *Scenario) { s.Workload.Rate = -3 }, want: []string{`"workload.rate"`, "-3"}},
		// Llama-3.1-8B has 32 attention heads; 32 % 3 ≠ 0.
		{name: "tp not dividing heads", edit: func(s *Scenario) { s.TP = 3 }, want: []string{"tp", "3", `"tp"`}},
		// Llama-3.1-405B in BF16 is ≈ 811 GB of weights; one H100 has 80 GB.
		{name: "weights do not fit", edit: func(s *Scenario) { s.Model = "llama-3.1-405b" }, want: []string{"llama-3.1-405b", "h100", "tp"}},
		{name: "bad precision", edit: func(s *Scenario) { s.Weights = "int3" }, want: []string{`"weights"`, "int3"}},
		{name: "bad distribution", edit: func(s *Scenario) { s.Workload.Prompt = "normal:5" }, want: []string{`"workload.prompt"`}},
		{name: "unknown policy", edit: func(s *Scenario) { s.Batch.Policy = "magic" }, want: []string{`"batch.policy"`, "magic"}},
		{name: "no requests", edit: func(s *Scenario) { s.Workload.Requests = 0 }, want: []string{`"workload.requests"`}},
		{name: "negative slo", edit: func(s *Scenario) { s.SLO.TPOTms = -1 }, want: []string{`"slo.tpot_ms"`}},
		{name: "prefill-first budget below context", edit: func(s *Scenario) {
			s.Batch.Policy, s.Batch.MaxNumBatchedTokens, s.Batch.MaxModelLen = "prefill-first", 4096, 8192
		}, want: []string{`"batch.max_num_batched_tokens"`, "max_model_len"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Default()
			c.edit(&s)
			_, err := s.Resolve()
			errHas(t, "", err, c.want)
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"unknown key", "model = \"llama-3.1-8b\"\n[workload]\nrat = 5\n", []string{"s.toml line 3", "workload.rat"}},
		{"unknown table", "model = \"llama-3.1-8b\"\n[wrkload]\nrate = 5\n", []string{"s.toml line 2", "wrkload"}},
		{"unknown top-level key", "modle = \"llama-3.1-8b\"\n", []string{"s.toml line 1", "modle"}},
		{"wrong type", "model = \"llama-3.1-8b\"\n[workload]\nrate = \"fast\"\n", []string{"s.toml", "line 3", "rate"}},
		{"syntax", "model = \n", []string{"s.toml", "line 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(c.text), "s.toml")
			errHas(t, "", err, c.want)
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(DefaultTOML())
	f.Add("model = 1\n")
	f.Add("[workload]\nrate = -1\n[batch]\npolicy = \"x\"")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(strings.NewReader(text), "fuzz.toml")
		if err != nil {
			return
		}
		// A parsed scenario must resolve or fail with an error; never panic.
		if s.Workload.Requests > 1000 || s.Workload.DurationS > 0 {
			return // keep fuzzing fast: do not run, only resolve
		}
		_, _ = s.Resolve()
	})
}

func small() Scenario {
	s := Default()
	s.Workload.Requests = 300
	s.Workload.Rate = 20
	return s
}

// TestByteIdenticalOutputs runs the same scenario twice and requires every
// result file to be byte-identical.
func TestByteIdenticalOutputs(t *testing.T) {
	p, err := small().Resolve()
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{t.TempDir(), t.TempDir()}
	for _, d := range dirs {
		if _, err := Run(p, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"requests.csv", "steps.csv", "summary.json"} {
		a, err := os.ReadFile(filepath.Join(dirs[0], f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dirs[1], f))
		if err != nil {
			t.Fatal(err)
		}
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("%s differs between two runs of the same scenario (or is empty)", f)
		}
	}
	// Nothing but the three files is left behind (temporary files renamed).
	ents, _ := os.ReadDir(dirs[0])
	if len(ents) != 3 {
		t.Fatalf("output dir holds %d entries, want 3", len(ents))
	}
}

// TestGolden runs each scenario under testdata/golden and compares what it
// prints (plan, summary, and the first iterations) with the .golden file.
// Regenerate with: go test ./experiments -run TestGolden -update
func TestGolden(t *testing.T) { checkGoldens(t, "testdata/golden", nil) }

// TestGoldenIdeal pins the ideal engine (kernels only, servesim's engine
// before the vllm-v1 model became the default) on the same scenarios, in
// testdata/golden/ideal: switching the default must not move it.
func TestGoldenIdeal(t *testing.T) {
	checkGoldens(t, filepath.Join("testdata", "golden", "ideal"), &Engine{Name: "ideal"})
}

func checkGoldens(t *testing.T, dir string, engine *Engine) {
	files := goldenFiles(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s := loadFile(t, f)
			if engine != nil {
				s.Engine = engine
			}
			p, err := s.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			for range 2 { // twice in one process: output must not change
				got.Reset()
				out := t.TempDir()
				rep, err := Run(p, out)
				if err != nil {
					t.Fatal(err)
				}
				p.Describe(&got)
				rep.WriteText(&got)
				steps, _ := os.ReadFile(filepath.Join(out, "steps.csv"))
				lines := strings.SplitAfter(string(steps), "\n")
				got.WriteString("first iterations (steps.csv):\n")
				got.WriteString(strings.Join(lines[:min(len(lines), 25)], ""))
			}
			golden := filepath.Join(dir, strings.TrimSuffix(filepath.Base(f), ".toml")+".golden")
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("output differs from %s; rerun with -update and read the diff.\ngot:\n%s", golden, got.String())
			}
		})
	}
}

// The kernel-time model follows hardware.profile: the built-in calibrated
// profile by default, the roofline on request, a profile file by path, and
// the roofline for a GPU without a built-in profile; a profile for another
// GPU is an error naming the field.
func TestKernelProfileChoice(t *testing.T) {
	cases := []struct {
		profile, gpu, want string
	}{
		{"", "h100", "calibrated: h100"},
		{"builtin", "a100", "calibrated: a100"},
		{"roofline", "h100", "roofline"},
	}
	for _, c := range cases {
		s := Default()
		s.Hardware.Profile, s.GPU = c.profile, c.gpu
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.Kernel, c.want) {
			t.Errorf("profile %q on %s: kernel %q, want prefix %q", c.profile, c.gpu, p.Kernel, c.want)
		}
	}
	// A user GPU without a built-in profile falls back to the roofline, and says so.
	dir := t.TempDir()
	gpus := filepath.Join(dir, "gpus.toml")
	os.WriteFile(gpus, []byte("[[gpu]]\nname = \"x1\"\nbf16_flops = 500e12\nmem_bytes = 96e9\nmem_bw = 4e12\nlink_bw = 450e9\nhost_bw = 64e9\n"), 0o644)
	s := Default()
	s.GPUsFile, s.GPU = gpus, "x1"
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Kernel, "no built-in calibrated profile for x1") {
		t.Errorf("kernel %q", p.Kernel)
	}
	s = Default()
	s.Hardware.Profile = "../../hardware/calibrate/profiles/a100.toml"
	if _, err := s.Resolve(); err == nil || !strings.Contains(err.Error(), "hardware.profile") {
		t.Errorf("an A100 profile on an H100: error %v, want one naming hardware.profile", err)
	}
}
