package scenario

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim/serve"
	"github.com/servesim/servesim/sim/workload/trace"
)

// resolveServe checks the policy sections and fills p.Serve.
func (s *Scenario) resolveServe(p *Plan) error {
	if err := orDefault(s, &s.Replicas, 1, "replicas", "replicas", "≥ 1", "1"); err != nil {
		return err
	}
	if s.Replicas < 0 {
		return s.fieldError("replicas", "replicas", "%d must be ≥ 1", s.Replicas)
	}
	if s.Replicas > MaxReplicas {
		return s.fieldError("replicas", "replicas", "%d is out of range (at most %d instances)", s.Replicas, MaxReplicas)
	}
	if s.Replicas*s.Ranks() > MaxReplicas {
		return s.fieldError("dp", "dp", "%d ranks × %d replicas is out of range (at most %d instances)", s.Ranks(), s.Replicas, MaxReplicas)
	}
	p.Replicas = s.Replicas * s.Ranks() // each DP rank is an instance
	b := &s.Batch
	if b.Preemption == "" {
		b.Preemption = serve.PreemptRecompute
	}
	if b.Preemption != serve.PreemptRecompute && b.Preemption != serve.PreemptSwap {
		return s.fieldError("batch.preemption", "preemption", "%q: want recompute or swap", b.Preemption)
	}
	if b.Victim == "" {
		b.Victim = serve.VictimNewest
	}
	if b.Victim != serve.VictimNewest && b.Victim != serve.VictimLowestPriority && b.Victim != serve.VictimFewestOutput {
		return s.fieldError("batch.victim", "victim", "%q: want newest, lowest-priority or fewest-output", b.Victim)
	}
	if b.SwapSpaceGB == 0 && !s.Explicit("batch.swap_space_gb") { // an explicit 0: no host memory to swap to
		b.SwapSpaceGB = 4 * 1.073741824 // vLLM's default swap_space of 4 GiB per GPU
	}
	if !(b.SwapSpaceGB >= 0) || math.IsInf(b.SwapSpaceGB, 0) {
		return s.fieldError("batch.swap_space_gb", "swap-space-gb", "%g must be ≥ 0", b.SwapSpaceGB)
	}
	sc := &s.Scheduler
	if sc.Policy == "" {
		sc.Policy = "fcfs"
	}
	sched, err := policies.SchedulerByName(sc.Policy, sc.Priorities)
	if err != nil {
		return s.fieldError("scheduler.policy", "scheduler", "%v", err)
	}
	if !(sc.PredictError >= 0) || math.IsInf(sc.PredictError, 0) {
		return s.fieldError("scheduler.predict_error", "predict-error", "%g must be ≥ 0", sc.PredictError)
	}
	if err := s.checkPriorities(p); err != nil {
		return err
	}
	ad := &s.Admission
	if ad.Policy == "" {
		ad.Policy = "none"
	}
	if err := s.checkAdmission(p); err != nil {
		return err
	}
	adm, err := s.newAdmission()
	if err != nil {
		return s.fieldError("admission.policy", "admission", "%v", err)
	}
	rt := &s.Router
	if rt.Policy == "" {
		rt.Policy = "round-robin"
		if s.Ranks() > 1 || (p.Decode != nil && s.decodeDP() > 1) {
			rt.Policy = "dp-coordinator" // vLLM's DP load balancer
		}
	}
	router, err := s.newRouter(serve.StreamRouting)
	if err != nil {
		return s.fieldError("router.policy", "router", "%v", err)
	}
	staleness, err := s.duration("router.staleness_ms", "router-staleness-ms", rt.StalenessMs, 1e-3, "ms")
	if err != nil {
		return err
	}
	if s.Workload.SharedPrefix < 0 || s.Workload.PrefixGroups < 0 || (s.Workload.SharedPrefix > 0 && s.Workload.PrefixGroups == 0) {
		return s.fieldError("workload.prefix_groups", "prefix-groups", "shared_prefix_tokens %d with prefix_groups %d: both ≥ 0, and groups ≥ 1 when a prefix is set",
			s.Workload.SharedPrefix, s.Workload.PrefixGroups)
	}
	p.Serve = serve.Config{
		Instance: serve.InstanceConfig{
			Step: p.Step, Blocks: p.Memory.Blocks, BlockSize: p.Memory.BlockSize, Limits: p.Limits,
			Batcher: p.Batcher, MaxModelLen: p.MaxModelLen,
			Preempt: b.Preemption, Victim: b.Victim, HostBW: p.GPU.HostBW, SwapSpace: b.SwapSpaceGB * 1e9,
			KVBytesPerToken: p.Memory.KVBytesPerTokenPerGPU, PrefixCache: b.PrefixCaching,
		},
		Replicas: p.Replicas, Router: router, Scheduler: sched, Admission: adm,
		RouterStaleness: staleness, PredictError: sc.PredictError,
		TTFTSLO: p.SLO.TTFT, Seed: s.Seed,
	}
	if p.Serve.Instance.Tiers, err = s.offloadTiers(p.Parallel.TP*s.pp(), p.GPU.HostBW, float64(p.Memory.BlockSize)*p.Memory.KVBytesPerTokenPerGPU); err != nil {
		return err
	}
	if p.Pipeline != nil {
		// A round runs up to pp micro-batches, each with the token budget.
		p.Serve.Instance.Step = p.Pipeline
		p.Serve.Instance.Limits.MaxNumBatchedTokens *= len(p.Stages)
		if p.Parallel.EP.On() && s.Ranks() > 1 {
			// The DP ranks' stages run each MoE layer together (pipeline_expert.go).
			p.Serve.DPLockstep = serve.DPLockstep{Ranks: s.Ranks(), Agree: p.Pipeline.SetGroupBatches}
		}
	}
	if p.Expert != nil {
		p.Serve.Instance.Step = p.Expert
		if s.Ranks() > 1 {
			// vLLM's DP engine cores step in lock-step for an MoE model.
			p.Serve.DPLockstep = serve.DPLockstep{Ranks: s.Ranks(), Load: p.Expert.SetGroupLoad}
			if p.Expert.TBO() != nil {
				p.Serve.DPLockstep.Agree = p.Expert.SetGroupBatches
			}
		}
	}
	if p.Decode != nil {
		if err := s.resolveDisagg(p); err != nil {
			return err
		}
	}
	return nil
}

// checkPriorities checks scheduler.priorities against the workload's
// classes. The priority scheduler orders requests by class, so it needs
// classes (a class mix, or a trace that may carry a class column) and a
// priority for them; a priority naming a class the mix does not have is a
// typo that would silently leave that class at the default priority 0.
func (s *Scenario) checkPriorities(p *Plan) error {
	sc := &s.Scheduler
	if sc.Policy != "priority" {
		return nil
	}
	if p.Mix == nil && p.Trace == nil {
		return s.fieldError("scheduler.policy", "scheduler", "\"priority\" orders requests by class, but the workload has no classes: give workload.classes, or a trace with a class column, or choose another scheduler")
	}
	if len(sc.Priorities) == 0 {
		return s.fieldError("scheduler.policy", "scheduler", "\"priority\" needs a priority per class (lower first) in scheduler.priorities, e.g. priorities = {chat = 0, batch = 1}")
	}
	if p.Mix == nil {
		return nil // a trace's classes are known only when it is read
	}
	var known []string
	for _, c := range p.Mix.Classes {
		known = append(known, fmt.Sprintf("%q", c.Name))
	}
	names := slices.Sorted(maps.Keys(sc.Priorities))
	for _, name := range names {
		if !slices.ContainsFunc(p.Mix.Classes, func(c trace.Class) bool { return c.Name == name }) {
			return s.fieldError("scheduler.priorities."+name, "", "unknown class %q (the workload's classes: %s)", name, strings.Join(known, ", "))
		}
	}
	return nil
}

// checkAdmission checks what the admission policy needs besides its own
// parameters: SLO-aware admission compares a request's predicted TTFT with
// its deadline, arrival + TTFT SLO, and admits every request without one,
// so it needs slo.ttft_ms or a ttft_ms in every class. A token bucket's
// rate must let a deferred request's wait, at most 1/rate, fit the clock.
func (s *Scenario) checkAdmission(p *Plan) error {
	ad := &s.Admission
	switch strings.ToLower(ad.Policy) {
	case "slo-aware":
		if s.SLO.TTFTms > 0 || p.Trace != nil { // a trace's rows may carry their own ttft_slo_ms
			return nil
		}
		if p.Mix == nil {
			return s.fieldError("admission.policy", "admission", "\"slo-aware\" rejects requests predicted to miss their TTFT deadline, but no TTFT SLO is set: give slo.ttft_ms (flag --slo-ttft)")
		}
		for i, c := range s.Workload.Classes {
			if c.TTFTms == 0 {
				return s.fieldError("admission.policy", "admission", "\"slo-aware\" needs a TTFT SLO for every request, but class %q (workload.classes[%d]) has no ttft_ms and slo.ttft_ms is not set", c.Name, i)
			}
		}
	case "token-bucket":
		if ad.Rate > 0 && !(ad.Rate >= 1/MaxDurationS && ad.Rate <= math.MaxFloat64) {
			return s.fieldError("admission.rate", "", "%g requests/s is out of range (from %g, one per %g s, to a finite rate)", ad.Rate, 1/MaxDurationS, MaxDurationS)
		}
		if !(ad.Burst <= math.MaxFloat64) {
			return s.fieldError("admission.burst", "", "%g is out of range (a finite number ≥ 1)", ad.Burst)
		}
	}
	return nil
}
