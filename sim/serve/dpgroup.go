package serve

import (
	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/sim"
)

// prioWaveEnd orders a DP group's wave end after its ranks' step ends at
// the same time, so that every rank has ended before the next wave starts.
const prioWaveEnd = prioStepEnd + 1

// DPLockstep ties the instances into data-parallel groups that step in
// lock-step, as vLLM's DP engine cores do for an MoE model with expert
// parallelism (vllm/v1/engine/core.py DPEngineCoreProc): every MoE layer is
// a collective over all ranks, so a step starts on every rank of the group
// at once and ends when the slowest rank's does; a rank with nothing to run
// while another has work runs a dummy batch (execute_dummy_batch, one
// token) to join the collectives.
type DPLockstep struct {
	// Ranks is the instances per group: instances i·Ranks … (i+1)·Ranks − 1
	// form group i (≤ 1: no lock-step).
	Ranks int
	// Load, when set, is told the group's mean tokens per rank before the
	// ranks' steps of a wave are priced, and 0 after: an expert-parallel
	// step model prices its MoE layers at the group's load rather than the
	// rank's own (hardware.ExpertStep.SetGroupLoad).
	Load func(tokensPerRank float64)
	// Agree, when set, is told the working ranks' batches and the idle
	// ranks' count before a wave's steps are priced, and nil after: the
	// ranks split their steps in two micro-batches only if every rank's
	// batch would be split (vLLM's dp_utils._synchronize_dp_ranks: "either
	// all ranks run with microbatching or none of them do"; an idle rank's
	// dummy batch of one token is not split). hardware.ExpertStep
	// SetGroupBatches.
	Agree func(batches []models.Batch, idle int)
}

// dpGroup is one lock-step group's state.
type dpGroup struct {
	ranks     []*Instance
	load      func(float64)
	agree     func([]models.Batch, int)
	batches   []models.Batch // the working ranks' batches, for agree
	inWave    bool           // a wave's steps are in flight
	starting  bool           // startWave is asking the ranks for their batches
	pending   bool           // a rank asked for a step during the wave
	working   []*Instance
	endEv     *sim.Event
	waves     int64
	dummies   int64
	rankSteps int64 // the ranks' real steps in the waves
}

// setupDPGroups builds the groups of the colocated (or prefill) instances.
func (w *World) setupDPGroups() { w.dpGroups(w.cfg.DPLockstep, w.front.insts) }

// dpGroups builds the lock-step groups d makes of a pool's instances.
func (w *World) dpGroups(d DPLockstep, insts []*Instance) {
	if d.Ranks <= 1 {
		return
	}
	for i := 0; i+d.Ranks <= len(insts); i += d.Ranks {
		g := &dpGroup{ranks: insts[i : i+d.Ranks], load: d.Load, agree: d.Agree}
		g.endEv = sim.NewEvent(prioWaveEnd, sim.HandlerFunc(func(now sim.Time) { g.waveEnd(w, now) }))
		for _, in := range g.ranks {
			in.grp = g
		}
		w.groups = append(w.groups, g)
	}
}

// request is a rank's wish to step: at once when the group is idle, else
// after the wave in flight.
func (g *dpGroup) request(w *World, now sim.Time) {
	if g.inWave {
		g.pending = true
		return
	}
	g.startWave(w, now)
}

// startWave has every rank choose its batch, prices the ranks' steps at
// the group's load and ends them all when the slowest does.
func (g *dpGroup) startWave(w *World, now sim.Time) {
	g.starting = true
	g.working = g.working[:0]
	for _, in := range g.ranks {
		in.startStep(now) // a rank with work appends itself to g.working
	}
	g.starting = false
	if len(g.working) == 0 {
		return
	}
	tokens := 0
	for _, in := range g.working {
		tokens += in.batch.Tokens()
	}
	if g.load != nil {
		g.load(float64(tokens) / float64(len(g.ranks)))
	}
	if g.agree != nil {
		g.batches = g.batches[:0]
		for _, in := range g.working {
			g.batches = append(g.batches, in.batch)
		}
		g.agree(g.batches, len(g.ranks)-len(g.working))
	}
	longest := 0.0
	for _, in := range g.working {
		var sec, flops, bytes float64
		if in.pipe != nil && in.back {
			sec, flops, bytes = in.pipe.StepPipelined(in.batch) // the engine's back-to-back step (vllm-v1: CPU overlapped)
		} else {
			sec, flops, bytes = in.cfg.Step.Step(in.batch)
		}
		in.flops, in.bytes = flops, bytes
		in.stepSeq++
		if !(sec >= 0) {
			w.fail(in.stepTimeError(now, sec))
			return
		}
		longest = max(longest, sec+in.swapSec)
	}
	if idle := len(g.ranks) - len(g.working); idle > 0 {
		// The idle ranks' dummy batches join the collectives.
		sec, _, _ := g.ranks[0].cfg.Step.Step(models.Batch{Decodes: 1})
		longest = max(longest, sec)
		g.dummies += int64(idle)
	}
	if g.load != nil {
		g.load(0)
	}
	if g.agree != nil {
		g.agree(nil, 0)
	}
	end, ok := now.AddSeconds(longest)
	if !ok {
		w.fail(g.working[0].stepTimeError(now, longest))
		return
	}
	for _, in := range g.working {
		w.eng.ScheduleEvent(in.endEv, end)
	}
	g.inWave = true
	g.waves++
	g.rankSteps += int64(len(g.working))
	w.eng.ScheduleEvent(g.endEv, end)
}

// waveEnd follows the ranks' step ends: the next wave starts if any rank
// asked for one.
func (g *dpGroup) waveEnd(w *World, now sim.Time) {
	g.inWave = false
	if g.pending {
		g.pending = false
		g.startWave(w, now)
	}
}
