package validate

import (
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/servesim/servesim/experiments"
	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
)

// The validation suite: one small TOML file per visible real run
// (experiments/validation/*.toml), embedded by package experiments
// (experiments.ValidationSuite).

// SuiteEntry is one suite file: which run, how it maps to a scenario, and
// what was fitted on it.
type SuiteEntry struct {
	File       string   `toml:"-"`
	Run        string   `toml:"run"`        // path relative to the data directory (../shared/data)
	Experiment string   `toml:"experiment"` // inference-perf tables: the experiment's rows only
	Fitted     []string `toml:"fitted"`     // parameters fitted on this run (none so far)
	// Workload names the run's workload for the suite's by-workload
	// medians (codegen, general, roleplay, sharegpt; the sim2real
	// profiles general-lite, codegen, roleplay, reasoning-lite).
	Workload string `toml:"workload"`
	// IgnoreKVOffload replays a run with a CPU KV offload tier GPU-only
	// (realrun.OpenOptions; each run's notes say so); otherwise the tier
	// is replayed (RunScenario: offload.cpu_blocks).
	IgnoreKVOffload bool `toml:"ignore_kv_offload"`
	Overrides       struct {
		Model          string  `toml:"model"`
		GPU            string  `toml:"gpu"`
		Profile        string  `toml:"profile"`
		IterOverheadMs float64 `toml:"iteration_overhead_ms"`
	} `toml:"overrides"`
}

// Suite returns the embedded suite entries, sorted by file name.
func Suite() ([]SuiteEntry, error) {
	names, err := fs.Glob(experiments.ValidationSuite, "validation/*.toml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []SuiteEntry
	for _, n := range names {
		data, err := experiments.ValidationSuite.ReadFile(n)
		if err != nil {
			return nil, err
		}
		var e SuiteEntry
		md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&e)
		if err != nil {
			return nil, fmt.Errorf("validate: %s: %v", n, err)
		}
		if und := md.Undecoded(); len(und) > 0 {
			return nil, fmt.Errorf("validate: %s: unknown field %q", n, und[0].String())
		}
		if e.Run == "" {
			return nil, fmt.Errorf("validate: %s: field \"run\" missing", n)
		}
		if e.Workload == "" {
			return nil, fmt.Errorf("validate: %s: field \"workload\" missing (the suite's by-workload medians)", n)
		}
		e.File = n
		out = append(out, e)
	}
	return out, nil
}

// Open reads the entry's runs from dataDir, and the overrides as a base
// scenario for RunScenario plus the fields to apply after it.
func (e SuiteEntry) Open(dataDir string) ([]*realrun.Run, error) {
	// A table of several experiments is read whole; the entry's own
	// experiment is refused below when it has a CPU KV offload tier and
	// the entry does not accept replaying it GPU-only.
	runs, err := realrun.OpenWith(filepath.Join(dataDir, filepath.FromSlash(e.Run)), realrun.OpenOptions{IgnoreKVOffload: e.IgnoreKVOffload})
	if err != nil {
		return nil, fmt.Errorf("%w (suite file %s)", err, e.File)
	}
	if e.Experiment != "" {
		var kept []*realrun.Run
		for _, r := range runs {
			if r.Stage != nil && r.Stage.Experiment == e.Experiment {
				if r.Stage.Workload != "" && r.Stage.Workload != e.Workload {
					return nil, fmt.Errorf("validate: %s: field \"workload\": %q, but %s records %q for %s", e.File, e.Workload, e.Run, r.Stage.Workload, e.Experiment)
				}
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 {
			return nil, fmt.Errorf("validate: %s: experiment %q not in %s", e.File, e.Experiment, e.Run)
		}
		runs = kept
	}
	return runs, nil
}

// Apply sets the entry's overrides on s (Model and GPU go into the base
// given to RunScenario instead; see Base).
func (e SuiteEntry) Apply(s *scenario.Scenario) {
	if e.Overrides.Profile != "" {
		s.Hardware.Profile = e.Overrides.Profile
	}
	if e.Overrides.IterOverheadMs != 0 {
		s.Hardware.IterOverheadMs = e.Overrides.IterOverheadMs
	}
}

// Base returns the RunScenario base the entry's model and GPU overrides give.
func (e SuiteEntry) Base() scenario.Scenario {
	return scenario.Scenario{Model: e.Overrides.Model, GPU: e.Overrides.GPU}
}

// Describe is a one-line summary: file, run and what was fitted.
func (e SuiteEntry) Describe() string {
	f := "nothing fitted"
	if len(e.Fitted) > 0 {
		f = "fitted: " + strings.Join(e.Fitted, ", ")
	}
	return fmt.Sprintf("%s: %s (%s)", filepath.Base(e.File), e.Run, f)
}

// ValidateRuns validates runs in order. The consecutive rows of one
// inference-perf experiment share one simulation (ValidateStages), built
// by StageScenario from the summary row when it is there; other runs go
// through RunScenario and Validate. base is the RunScenario base; adjust,
// when not nil, applies the caller's overrides to each scenario built.
func ValidateRuns(runs []*realrun.Run, base scenario.Scenario, adjust func(*scenario.Scenario)) ([]*Validation, error) {
	var vs []*Validation
	for i := 0; i < len(runs); {
		r := runs[i]
		group := []*realrun.Run{r}
		for i++; r.Format == realrun.FormatStages && i < len(runs) && runs[i].Format == realrun.FormatStages &&
			runs[i].Stage.Experiment == r.Stage.Experiment; i++ {
			group = append(group, runs[i])
		}
		// A stage group simulates once, from its summary row when it has one.
		build, from := RunScenario, r
		check := func(s scenario.Scenario) ([]*Validation, error) {
			v, err := Validate(r, s)
			return []*Validation{v}, err
		}
		if r.Format == realrun.FormatStages {
			build = StageScenario
			check = func(s scenario.Scenario) ([]*Validation, error) { return ValidateStages(group, s) }
			for _, g := range group {
				if g.Stage.Scope == "summary" {
					from = g
				}
			}
		}
		s, err := build(from, base)
		if err != nil {
			return nil, err
		}
		if adjust != nil {
			adjust(&s)
		}
		got, err := check(s)
		if err != nil {
			return nil, err
		}
		vs = append(vs, got...)
	}
	return vs, nil
}

// Validate opens the entry's runs under dataDir and validates them
// (ValidateRuns) on base, with the entry's model and GPU where base names
// none, its overrides applied, then adjust (nil: none); each validation
// records what was fitted on the run.
func (e SuiteEntry) Validate(dataDir string, base scenario.Scenario, adjust func(*scenario.Scenario)) ([]*Validation, error) {
	runs, err := e.Open(dataDir)
	if err != nil {
		return nil, err
	}
	eb := e.Base()
	if base.Model == "" {
		base.Model = eb.Model
	}
	if base.GPU == "" {
		base.GPU = eb.GPU
	}
	got, err := ValidateRuns(runs, base, func(sc *scenario.Scenario) {
		e.Apply(sc)
		if adjust != nil {
			adjust(sc)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, v := range got {
		v.Fitted, v.Workload = e.Fitted, e.Workload
	}
	return got, nil
}
