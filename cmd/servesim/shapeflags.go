package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servesim/servesim/experiments/scenario"
)

// addShapeFlags adds the workload-shape flags of `servesim run` (stages,
// drain, rescaling, closed-loop concurrency) bound to s; scenarioFlags
// copies them into the base scenario when set.
func addShapeFlags(fs *pflag.FlagSet, s *scenario.Scenario) {
	w := &s.Workload
	fs.Var(&stagesValue{&w.Stages}, "stages", "rate schedule RATE:SECONDS,... (e.g. 8:600,20:600), replacing --rate, --requests and --duration")
	fs.BoolVar(&w.Drain, "drain", false, "start each stage only when every request of the one before has finished")
	fs.Float64Var(&w.GapS, "gap", 0, "seconds of idle time between stages")
	fs.BoolVar(&w.Rescale, "rescale", false, "rescale gaps so that arrivals fill each stage exactly, int(rate × duration) of them (inference-perf's constant load type); without stages, the last of -n requests arrives at n/rate (vLLM bench's normalisation)")
	fs.Var(&concurrencyValue{&w.MaxConcurrency}, "max-concurrency", "requests in flight at most, as vLLM bench: requests wait at the client for a slot (with --rate inf: closed loop)")
	fs.Float64Var(&w.ThinkTimeS, "think-time", 0, "seconds a freed --max-concurrency slot waits before the next send")
}

func init() {
	for name, f := range map[string]scenarioFlag{
		"stages":          {"workload.stages", func(d, s *scenario.Scenario) { d.Workload.Stages = s.Workload.Stages }},
		"drain":           {"workload.drain", func(d, s *scenario.Scenario) { d.Workload.Drain = s.Workload.Drain }},
		"gap":             {"workload.gap_s", func(d, s *scenario.Scenario) { d.Workload.GapS = s.Workload.GapS }},
		"rescale":         {"workload.rescale", func(d, s *scenario.Scenario) { d.Workload.Rescale = s.Workload.Rescale }},
		"max-concurrency": {"workload.max_concurrency", func(d, s *scenario.Scenario) { d.Workload.MaxConcurrency = s.Workload.MaxConcurrency }},
		"think-time":      {"workload.think_time_s", func(d, s *scenario.Scenario) { d.Workload.ThinkTimeS = s.Workload.ThinkTimeS }},
	} {
		scenarioFlags[name] = f
	}
}

// stagesValue is --stages: RATE:SECONDS pairs separated by commas.
type stagesValue struct{ p *[]scenario.Stage }

func (v *stagesValue) String() string {
	if v.p == nil {
		return ""
	}
	parts := make([]string, len(*v.p))
	for i, st := range *v.p {
		parts[i] = fmt.Sprintf("%g:%g", st.Rate, st.DurationS)
	}
	return strings.Join(parts, ",")
}

func (v *stagesValue) Set(s string) error {
	var st []scenario.Stage
	for i, part := range strings.Split(s, ",") {
		r, d, ok := strings.Cut(strings.TrimSpace(part), ":")
		rate, err1 := strconv.ParseFloat(r, 64)
		dur, err2 := strconv.ParseFloat(d, 64)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("stage %d %q: want RATE:SECONDS, e.g. 8:600", i, part)
		}
		st = append(st, scenario.Stage{Rate: rate, DurationS: dur})
	}
	*v.p = st
	return nil
}

func (v *stagesValue) Type() string { return "stages" }

// concurrencyValue is --max-concurrency: setting it, even to 0, sets the
// field, so that an explicit 0 is an error rather than "no limit".
type concurrencyValue struct{ p **int }

func (v *concurrencyValue) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return strconv.Itoa(**v.p)
}

func (v *concurrencyValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a whole number of requests")
	}
	*v.p = &n
	return nil
}

func (v *concurrencyValue) Type() string { return "int" }
