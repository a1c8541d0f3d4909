package main

import (
	"github.com/servesim/servesim/experiments"
	"github.com/spf13/pflag"
)

// engineFlags binds the [engine] table's flags on fs (run and validate
// share them) and returns the table they fill.
func engineFlags(fs *pflag.FlagSet) *experiments.Engine {
	e := &experiments.Engine{}
	fs.StringVar(&e.Name, "engine", "", "engine model: "+experiments.EngineNames+" (default "+experiments.DefaultEngine+")")
	fs.BoolVar(&e.NoAsyncScheduling, "no-async-scheduling", false, "vllm-v1: synchronous scheduling (vLLM --no-async-scheduling)")
	fs.BoolVar(&e.NoFrontEnd, "no-front-end", false, "vllm-v1: no front-end costs")
	fs.BoolVar(&e.NoStepCPU, "no-step-cpu", false, "vllm-v1: no per-request CPU time per step")
	fs.Float64Var(&e.RequestMs, "front-end-request-ms", 0, "vllm-v1: front-end time per request in ms (default: fitted)")
	fs.Float64Var(&e.TokenizeUsPerToken, "tokenize-us-per-token", 0, "vllm-v1: tokenization µs per prompt token")
	fs.Float64Var(&e.TokenMs, "front-end-token-ms", 0, "vllm-v1: front-end time per output token in ms")
	fs.Float64Var(&e.CPUPerRequestUs, "step-cpu-per-request-us", 0, "vllm-v1: step CPU µs per request in the batch (default: the profile's)")
	return e
}

// engineScenarioFlags are the [engine] entries of scenarioFlags: src.Engine
// is always set (engineFlags binds it).
var engineScenarioFlags = map[string]func(d, s *experiments.Scenario){
	"engine":                  func(d, s *experiments.Scenario) { engineOf(d).Name = s.Engine.Name },
	"no-async-scheduling":     func(d, s *experiments.Scenario) { engineOf(d).NoAsyncScheduling = s.Engine.NoAsyncScheduling },
	"no-front-end":            func(d, s *experiments.Scenario) { engineOf(d).NoFrontEnd = s.Engine.NoFrontEnd },
	"no-step-cpu":             func(d, s *experiments.Scenario) { engineOf(d).NoStepCPU = s.Engine.NoStepCPU },
	"front-end-request-ms":    func(d, s *experiments.Scenario) { engineOf(d).RequestMs = s.Engine.RequestMs },
	"tokenize-us-per-token":   func(d, s *experiments.Scenario) { engineOf(d).TokenizeUsPerToken = s.Engine.TokenizeUsPerToken },
	"front-end-token-ms":      func(d, s *experiments.Scenario) { engineOf(d).TokenMs = s.Engine.TokenMs },
	"step-cpu-per-request-us": func(d, s *experiments.Scenario) { engineOf(d).CPUPerRequestUs = s.Engine.CPUPerRequestUs },
}

func init() {
	for k, v := range engineScenarioFlags {
		scenarioFlags[k] = v
	}
}

// engineOf returns d's [engine] table, creating it (a copy: d may share
// its table with the scenario it was copied from).
func engineOf(d *experiments.Scenario) *experiments.Engine {
	e := experiments.Engine{}
	if d.Engine != nil {
		e = *d.Engine
	}
	d.Engine = &e
	return d.Engine
}
