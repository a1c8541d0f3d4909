package validate

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/servesim/servesim/experiments/realrun"
)

// SuiteGroup is one line of the suite's grouped medians: the rows of one
// model, GPU, TP degree or workload that the group scores.
type SuiteGroup struct {
	Section string // SectionModel, SectionGPU, SectionTP or SectionWorkload
	Key     string // "qwen2.5-7b", "h100", "TP 2", "codegen"
	Scored  []*Validation
	// Rows counts the group's rows before any is left out (Overlap rows
	// are never counted); FittedOn names the runs of a model left out
	// because a parameter was fitted on them.
	Rows     int
	FittedOn []string
}

// The sections of SuiteGroups, in print order.
const (
	SectionModel    = "by model left out"
	SectionGPU      = "by GPU, held out"
	SectionTP       = "by TP, held out"
	SectionWorkload = "by workload, held out"
)

// SuiteGroups splits the simulated validations vs (rows without a plan
// are in no group; Overlap rows are never scored) four ways:
//
//   - by model left out: per catalog model, the rows of its runs, each
//     scored only when no parameter was fitted with that model's runs. A
//     parameter fitted on one run of a model is in every replay of that
//     model, so a model with any fitted run has no left-out rows at all
//     (today: Llama-2-7B, on whose codegen stage_0 the vllm-v1 front end
//     was fitted; its line shows — until a refit leaves the model out);
//   - by GPU, by TP degree and by workload (the suite file's name): the
//     held-out rows (nothing fitted on the run, HeldOut).
//
// Groups are sorted by key within a section (TP by degree).
func SuiteGroups(vs []*Validation) []SuiteGroup {
	var simd []*Validation
	for _, v := range vs {
		if v.Plan != nil && v.Plan.Model != nil && v.Plan.GPU != nil {
			simd = append(simd, v)
		}
	}
	fitted := map[string][]string{} // model → its runs with fitted parameters
	for _, v := range simd {
		if len(v.Fitted) > 0 {
			m := v.Plan.Model.Name
			if name := suiteRunName(v); !slices.Contains(fitted[m], name) {
				fitted[m] = append(fitted[m], name)
			}
		}
	}
	var out []SuiteGroup
	split := func(section string, rows []*Validation, key func(*Validation) string, less func(a, b string) bool, leave func(key string) []string) {
		at := map[string]int{}
		var gs []SuiteGroup
		for _, v := range rows {
			k := key(v)
			i, ok := at[k]
			if !ok {
				i = len(gs)
				at[k] = i
				gs = append(gs, SuiteGroup{Section: section, Key: k})
			}
			g := &gs[i]
			if v.Overlap {
				continue
			}
			g.Rows++
			if leave != nil {
				if g.FittedOn = leave(k); len(g.FittedOn) > 0 {
					continue
				}
			}
			g.Scored = append(g.Scored, v)
		}
		sort.SliceStable(gs, func(i, j int) bool { return less(gs[i].Key, gs[j].Key) })
		out = append(out, gs...)
	}
	byName := func(a, b string) bool { return a < b }
	split(SectionModel, simd, func(v *Validation) string { return v.Plan.Model.Name }, byName, func(k string) []string { return fitted[k] })
	held := HeldOut(simd)
	split(SectionGPU, held, func(v *Validation) string { return v.Plan.GPU.Name }, byName, nil)
	split(SectionTP, held, func(v *Validation) string { return fmt.Sprintf("TP %d", v.Plan.Parallel.TP) }, func(a, b string) bool {
		var x, y int
		fmt.Sscanf(a, "TP %d", &x)
		fmt.Sscanf(b, "TP %d", &y)
		return x < y
	}, nil)
	split(SectionWorkload, held, func(v *Validation) string {
		if v.Workload == "" {
			return "(unnamed)"
		}
		return v.Workload
	}, byName, nil)
	return out
}

// suiteRunName is the run's experiment (inference-perf rows) or its name.
func suiteRunName(v *Validation) string {
	if v.Run.Stage != nil {
		return ShortRunName(v.Run.Stage.Experiment)
	}
	return v.Run.Name
}

// MedianOfModels returns, per metric, the median over the models of the
// by-model-left-out groups that score any row of each model's median
// |error| (each model counts once, however many runs it has), and how
// many models that is for the metric.
func MedianOfModels(gs []SuiteGroup) (map[string]float64, map[string]int) {
	per := map[string][]float64{}
	for _, g := range gs {
		if g.Section != SectionModel || len(g.Scored) == 0 {
			continue
		}
		_, med := MedianAbsErrors(g.Scored)
		for k, e := range med {
			per[k] = append(per[k], e)
		}
	}
	out, n := map[string]float64{}, map[string]int{}
	for k, x := range per {
		out[k], n[k] = median(x), len(x)
	}
	return out, n
}

// median of x (sorted in place); NaN for none.
func median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	slices.Sort(x)
	n := len(x)
	if n%2 == 0 {
		return (x[n/2-1] + x[n/2]) / 2
	}
	return x[n/2]
}

// RepeatSpread is the run-to-run spread of the real system: for the
// configurations measured twice (../shared/data/vllm-sim2real-runs:
// repeat_measurements.csv, an earlier campaign, against runs_long.csv's
// summary scope), per metric of the suite's columns, the median of
// |earlier − later| / later. No simulator can be held closer to one run
// than this floor.
type RepeatSpread struct {
	Configs int
	Median  map[string]float64 // by suite metric: ttft_mean, ttft_p90, ttft_p99, tpot_mean (itl_mean), e2e_mean, e2e_p90, e2e_p99
}

// repeatMetrics maps the repeat table's metrics to the suite's columns
// (itl_mean is the mean TPOT, SOURCE.md).
var repeatMetrics = map[string]string{"ttft_mean": "ttft_mean", "ttft_p90": "ttft_p90", "ttft_p99": "ttft_p99",
	"e2e_mean": "e2e_mean", "e2e_p90": "e2e_p90", "e2e_p99": "e2e_p99", "itl_mean": "tpot_mean"}

// LoadRepeatSpread reads dir (the sim2real directory: experiments.csv,
// runs_long.csv, repeat_measurements.csv) and computes the spread. Every
// experiment of the repeat table must be in runs_long.csv with a summary
// row, and the other way round: the floor is over the same configurations.
func LoadRepeatSpread(dir string) (*RepeatSpread, error) {
	open := func(name string) (*os.File, error) {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("validate: %w", err)
		}
		return f, nil
	}
	var files [3]*os.File
	for i, n := range []string{realrun.Sim2RealExperiments, realrun.Sim2RealLong, realrun.Sim2RealRepeats} {
		f, err := open(n)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		files[i] = f
	}
	rows, err := realrun.ReadSim2Real(files[0], files[0].Name(), files[1], files[1].Name())
	if err != nil {
		return nil, err
	}
	rep, err := realrun.ReadRepeats(files[2], files[2].Name())
	if err != nil {
		return nil, err
	}
	return repeatSpread(rows, rep, files[2].Name())
}

// repeatSpread is LoadRepeatSpread's arithmetic on the rows read.
func repeatSpread(rows []realrun.StageRow, rep map[string]map[string]float64, name string) (*RepeatSpread, error) {
	later := map[string]map[string]float64{}
	for i := range rows {
		r := &rows[i]
		if r.Scope != "summary" {
			continue
		}
		later[r.Experiment] = map[string]float64{"ttft_mean": r.TTFT.Mean, "ttft_p90": r.TTFT.P90, "ttft_p99": r.TTFT.P99,
			"e2e_mean": r.E2E.Mean, "e2e_p90": r.E2E.P90, "e2e_p99": r.E2E.P99, "itl_mean": r.ITLMean}
	}
	for exp := range later {
		if _, ok := rep[exp]; !ok {
			return nil, fmt.Errorf("validate: %s: experiment %q (in runs_long.csv) has no repeat measurement", name, exp)
		}
	}
	diffs := map[string][]float64{}
	for _, exp := range slices.Sorted(maps.Keys(rep)) {
		l, ok := later[exp]
		if !ok {
			return nil, fmt.Errorf("validate: %s: experiment %q has no summary row in runs_long.csv to compare with", name, exp)
		}
		for m, col := range repeatMetrics {
			e, ok := rep[exp][m]
			if !ok {
				return nil, fmt.Errorf("validate: %s: experiment %q: metric %q missing", name, exp, m)
			}
			if l[m] > 0 {
				diffs[col] = append(diffs[col], math.Abs(e/1e3-l[m])/l[m]) // e in ms, l in s
			}
		}
	}
	s := &RepeatSpread{Configs: len(rep), Median: map[string]float64{}}
	for k, x := range diffs {
		s.Median[k] = median(x)
	}
	return s, nil
}

// writeGroups writes the grouped medians under the suite's error table
// (each section a heading line, then one line per group), the median of
// the models' left-out medians, and the repeat-measurement floor when
// given.
func writeGroups(b *bytes.Buffer, nameW int, vs []*Validation, floor *RepeatSpread) {
	row := func(label string, med map[string]float64) {
		fmt.Fprintf(b, "%-*s", nameW, label)
		for _, c := range suiteColumns {
			if e, ok := med[c.metric]; ok && !math.IsNaN(e) {
				fmt.Fprintf(b, " %6.0f%%", 100*e)
			} else {
				fmt.Fprintf(b, " %7s", "—")
			}
		}
		b.WriteByte('\n')
	}
	gs := SuiteGroups(vs)
	var fittedOn []string
	section := ""
	for _, g := range gs {
		if g.Section != section {
			if section == SectionModel {
				med, n := MedianOfModels(gs)
				row(fmt.Sprintf("  median of the models (%d)", n["e2e_mean"]), med)
			}
			section = g.Section
			fmt.Fprintf(b, "%s:\n", section)
		}
		label := fmt.Sprintf("  %s (%d)", g.Key, len(g.Scored))
		if len(g.FittedOn) > 0 {
			label = fmt.Sprintf("  %s (0 of %d) †", g.Key, g.Rows)
			fittedOn = append(fittedOn, fmt.Sprintf("%s (%s)", g.Key, strings.Join(g.FittedOn, ", ")))
		}
		_, med := MedianAbsErrors(g.Scored)
		row(label, med)
	}
	if floor != nil {
		row(fmt.Sprintf("repeat spread, floor (%d)", floor.Configs), floor.Median)
	}
	if len(fittedOn) > 0 {
		fmt.Fprintf(b, "† = a parameter was fitted on a run of the model, so no row of it is scored here: %s.\n", strings.Join(fittedOn, "; "))
	}
}
