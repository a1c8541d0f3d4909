package scenario

import (
	"fmt"
	"io"

	"github.com/servesim/servesim/sim/metrics"
)

// AblationRow is one run of an ablation: the engine it ran with and the
// latency metrics a client measures.
type AblationRow struct {
	Variant string // "vllm-v1", "no async scheduling", ..., "ideal"
	Engine  Engine
	Summary metrics.Summary
}

// Ablation runs s with the vllm-v1 engine (s's [engine] parameters kept,
// every switch on), then with each mechanism off in turn, with all of
// them off, and with the ideal engine. The all-off and ideal rows are
// equal by construction (a metamorphic check). s's own [engine] switches
// are ignored: each row sets them.
func Ablation(s Scenario) ([]AblationRow, error) {
	if s.Engine != nil && s.Engine.Name == "ideal" {
		return nil, s.fieldError("engine.name", "engine", "\"ideal\": the ablation runs vllm-v1 with each mechanism off in turn, then ideal; leave the engine unset or vllm-v1")
	}
	rows := AblationEngines(s.Engine)
	for i := range rows {
		sc := s
		e := rows[i].Engine
		sc.Engine = &e
		p, err := sc.Resolve()
		if err != nil {
			return nil, err
		}
		rep, err := Run(p, "")
		if err != nil {
			return nil, err
		}
		rows[i].Summary = rep.Summary
	}
	return rows, nil
}

// AblationEngines returns the ablation's variants, without summaries:
// vllm-v1 with e's parameters (e nil: the defaults) and every switch on,
// each mechanism off in turn, all of them off, and ideal.
func AblationEngines(e *Engine) []AblationRow {
	base := Engine{Name: "vllm-v1"}
	if e != nil {
		base = *e
		base.Name = "vllm-v1"
		base.NoAsyncScheduling, base.NoFrontEnd, base.NoStepCPU = false, false, false
		base.NoCustomAllReduce, base.NoMemoryProfile, base.NoFusedAddNorm = false, false, false
		base.NoCPUOverlap, base.NoLaunches, base.EnforceEager, base.NoVLLMDefaults = false, false, false, false
	}
	variant := func(f func(e *Engine)) Engine {
		e := base
		f(&e)
		return e
	}
	return []AblationRow{
		{Variant: "vllm-v1", Engine: base},
		{Variant: "no async scheduling", Engine: variant(func(e *Engine) { e.NoAsyncScheduling = true })},
		{Variant: "no front end", Engine: variant(func(e *Engine) { e.NoFrontEnd = true; e.frontEndOff() })},
		{Variant: "no step CPU", Engine: variant(func(e *Engine) { e.NoStepCPU, e.CPUPerRequestUs = true, 0 })},
		{Variant: "no custom all-reduce", Engine: variant(func(e *Engine) { e.NoCustomAllReduce = true; e.customAROff() })},
		{Variant: "no memory profile", Engine: variant(func(e *Engine) { e.NoMemoryProfile, e.NonTorchGiB = true, 0 })},
		{Variant: "no fused add+norm", Engine: variant(func(e *Engine) { e.NoFusedAddNorm = true })},
		{Variant: "no CPU overlap", Engine: variant(func(e *Engine) { e.NoCPUOverlap = true })},
		{Variant: "enforce eager", Engine: variant(func(e *Engine) { e.EnforceEager = true })},
		{Variant: "no kernel launches", Engine: variant(func(e *Engine) { e.NoLaunches, e.LaunchUs = true, 0 })},
		{Variant: "no vLLM defaults", Engine: variant(func(e *Engine) { e.NoVLLMDefaults = true })},
		{Variant: "all off", Engine: variant(func(e *Engine) {
			e.NoAsyncScheduling, e.NoFrontEnd, e.NoStepCPU = true, true, true
			e.NoCustomAllReduce, e.NoMemoryProfile, e.NoFusedAddNorm = true, true, true
			e.NoCPUOverlap, e.NoLaunches, e.NoVLLMDefaults = true, true, true
			e.frontEndOff()
			e.customAROff()
			e.CPUPerRequestUs, e.NonTorchGiB, e.LaunchUs = 0, 0, 0
		})},
		{Variant: "ideal", Engine: Engine{Name: "ideal"}},
	}
}

// frontEndOff and customAROff zero the parameters of a mechanism an
// ablation row turns off (a parameter beside its switch off is an error,
// checkSwitches).
func (e *Engine) frontEndOff() { e.RequestMs, e.TokenizeUsPerToken, e.TokenMs = 0, 0, 0 }
func (e *Engine) customAROff() {
	e.CustomARLatencyUs, e.CustomARLinkEff, e.CustomARMaxBytes = 0, 0, 0
}

// WriteAblation writes the rows as a Markdown table of mean and p99
// latencies in milliseconds, for a README.
func WriteAblation(w io.Writer, rows []AblationRow) error {
	if _, err := fmt.Fprintln(w, "| engine | TTFT mean | TTFT p99 | TPOT mean | ITL mean | E2E mean | E2E p99 |\n|---|---|---|---|---|---|---|"); err != nil {
		return err
	}
	for _, r := range rows {
		m := r.Summary
		if _, err := fmt.Fprintf(w, "| %s | %.2f | %.2f | %.3f | %.3f | %.1f | %.1f |\n",
			r.Variant, m.TTFT.Mean, m.TTFT.P99, m.TPOT.Mean, m.ITL.Mean, m.E2E.Mean, m.E2E.P99); err != nil {
			return err
		}
	}
	return nil
}
