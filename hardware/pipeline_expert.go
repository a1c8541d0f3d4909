package hardware

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/models"
)

// Expert parallelism inside pipeline stages (EP × PP).
//
// vLLM forms one EP group per pipeline stage: the ranks are laid out as
// arange(world).reshape(-1, dp, pp, pcp, tp) and the EP group is
// all_ranks.transpose(1, 2).reshape(-1, dp·pcp·tp), the dp × tp GPUs that
// hold the same stage (vllm/distributed/parallel_state.py
// initialize_model_parallel). So a stage's MoE layers shard their experts
// over dp × tp GPUs, every stage has its own group, and a GPU of DP rank d,
// stage s and TP rank t is number (d·pp + s)·tp + t: with pp > 1 a stage's
// group is strided over the DP ranks' nodes rather than packed into one.
//
// A stage's time then adds, for each of its MoE layers, the dispatch and
// combine of ExpertStep.AllToAll at the micro-batch's tokens (the stage's
// own group, placed as above), and the routed experts are priced at the EP
// layout's rows by the step model's operators (the StepModel carries the
// EP layout). Under DP lock-step (SetGroupBatches) micro-batch i of every
// rank runs each stage together with the other ranks' micro-batch i (every
// MoE layer is a collective of the stage's group): its MoE operators and
// all-to-all are priced at the group's mean tokens of micro-batch i, and
// each (micro-batch, stage) lasts the slowest rank's; a rank with fewer
// micro-batches than the wave runs a one-token dummy in the others
// (vLLM's execute_dummy_batch; an assumption for the PP case, where no
// measured trace was seen).

// placement returns the EP group's GPUs in its fullest NVLink domain and
// the domains it spans: the group packed on consecutive GPUs unless place
// set another placement.
func (e *ExpertStep) placement() (span int, domains float64) {
	G := e.s.p.EP.Size
	if e.span > 0 {
		return e.span, float64(e.domains)
	}
	return min(G, e.node), math.Ceil(float64(G) / float64(e.node))
}

// place sets the group's placement (span GPUs in its fullest domain, over
// domains NVLink domains) and reprices the all-to-all per token.
func (e *ExpertStep) place(span, domains int) {
	e.span, e.domains = span, domains
	e.price()
}

// Placement returns the EP group's GPUs in its fullest NVLink domain and the
// domains it spans: for reports.
func (e *ExpertStep) Placement() (span, domains int) {
	s, d := e.placement()
	return s, int(d)
}

// StagePlacement returns, for stage s of dp ranks of pp stages of tp GPUs
// in vLLM's rank order (GPU (d·pp + s)·tp + t, node-major in domains of
// node GPUs), the stage's EP group's GPUs in its fullest domain and the
// domains it spans. At pp = 1 it is the packed placement: min(dp·tp, node)
// and ⌈dp·tp / node⌉.
func StagePlacement(dp, pp, tp, s, node int) (span, domains int) {
	if node <= 0 {
		node = 8
	}
	count := map[int]int{}
	for d := range dp {
		for t := range tp {
			count[((d*pp+s)*tp+t)/node]++
		}
	}
	for _, n := range count {
		span = max(span, n)
	}
	return span, len(count)
}

// setupExpert gives each stage its EP group's all-to-all pricing and MoE
// layer count. dp is the DP ranks of the layout (the EP group is dp × tp).
func (ps *PipelineStep) setupExpert(backend string, node int) error {
	m, p := ps.s.m, ps.s.p
	if !m.IsMoE() {
		return fmt.Errorf("hardware: a pipeline with expert parallelism needs an MoE model; %s is dense", m.Name)
	}
	pp := len(ps.frac)
	ps.ex = make([]*ExpertStep, pp)
	ps.moeLayers = make([]float64, pp)
	start := 0
	for s, n := range ps.pl.Layers {
		e, err := NewExpertStep(ps.s, backend, node)
		if err != nil {
			return err
		}
		e.place(StagePlacement(p.EP.DP, pp, p.TP, s, node))
		ps.ex[s] = e
		dense := max(0, min(m.DenseLayers, start+n)-start)
		ps.moeLayers[s] = float64(n - dense)
		start += n
	}
	ps.stats.AllToAllSeconds = make([]float64, pp)
	ps.a2aT = make([]float64, pp*pp)
	return nil
}

// Expert returns stage s's all-to-all pricing; nil without expert
// parallelism.
func (ps *PipelineStep) Expert(s int) *ExpertStep {
	if ps.ex == nil {
		return nil
	}
	return ps.ex[s]
}

// MoELayers returns the MoE layers of each stage; nil without expert
// parallelism.
func (ps *PipelineStep) MoELayers() []float64 { return ps.moeLayers }

// expertTimes adds to t the expert-parallel part of micro-batch mb's stage
// times and fills a2a with each stage's all-to-all: the MoE operators
// moved to the group's load (load > 0: its mean tokens per rank of this
// micro-batch) in the stages' layer shares, and each stage's MoE layers ×
// (dispatch + combine) at the load (or mb's own tokens).
func (ps *PipelineStep) expertTimes(mb models.Batch, load float64, t, a2a []float64) {
	tokens := mb.Tokens()
	if load > 0 {
		g := max(1, int(math.Round(load)))
		delta := ps.ex[0].moeSec(g) - ps.ex[0].moeSec(tokens)
		for s := range t {
			t[s] += delta * ps.frac[s]
		}
		tokens = g
	}
	for s := range t {
		d, c := ps.ex[s].AllToAll(tokens)
		a2a[s] = ps.moeLayers[s] * (d + c)
		t[s] += a2a[s]
	}
}

// SetGroupBatches prices the rounds that follow as one wave of a DP
// lock-step group whose working ranks run batches and idle ranks a dummy
// batch: every micro-batch's stage lasts the slowest rank's, with the MoE
// layers at the group's load (see the notes above). nil ends the wave:
// each round is priced on its own batch again. Without expert parallelism
// it does nothing. (serve.DPLockstep.Agree.)
func (ps *PipelineStep) SetGroupBatches(batches []models.Batch, idle int) {
	ps.grp = false
	if batches == nil || ps.ex == nil {
		return
	}
	pp := len(ps.frac)
	ranks := len(batches) + idle
	if need := len(batches) * pp; cap(ps.gsplit) < need {
		ps.gsplit = make([]models.Batch, need)
		ps.gm = make([]int, len(batches))
	}
	ps.gsplit, ps.gm = ps.gsplit[:len(batches)*pp], ps.gm[:len(batches)]
	clear(ps.gload)
	waveM := 1
	for r, b := range batches {
		m := ps.split(b)
		ps.gm[r] = m
		waveM = max(waveM, m)
		copy(ps.gsplit[r*pp:], ps.micro[:m])
		for i := range m {
			ps.gload[i] += float64(ps.micro[i].Tokens())
		}
	}
	for i := range waveM {
		ps.gload[i] /= float64(ranks)
	}
	clear(ps.gt)
	clear(ps.gsend)
	clear(ps.ga2a)
	dummy := models.Batch{Decodes: 1}
	for i := range waveM {
		for r := range batches {
			mb := dummy
			if i < ps.gm[r] {
				mb = ps.gsplit[r*pp+i]
			}
			ps.maxStage(mb, i)
		}
		if idle > 0 {
			ps.maxStage(dummy, i)
		}
	}
	ps.waveM = waveM
	ps.grp = true
}

// maxStage raises the wave's (micro-batch i, stage) times to mb's.
func (ps *PipelineStep) maxStage(mb models.Batch, i int) {
	pp := len(ps.frac)
	t, send, a2a := ps.scratchT[:pp], ps.scratchS[:pp], ps.scratchA[:pp]
	ps.stageTimes(mb, ps.gload[i], t, send, a2a)
	for s := range pp {
		ps.gt[i*pp+s] = max(ps.gt[i*pp+s], t[s])
		ps.gsend[i*pp+s] = max(ps.gsend[i*pp+s], send[s])
		ps.ga2a[i*pp+s] = max(ps.ga2a[i*pp+s], a2a[s])
	}
}
