package models

import (
	"fmt"
	"math"
)

// MaxEP bounds an expert-parallel group: 576 GPUs, the largest NVLink
// domain NVIDIA announces (Rubin Ultra NVL576), eight of today's NVL72
// racks, and above the 96 GPUs of the largest published wide-EP serving
// run this project compares with (SGLang, lmsys.org 2025-05-05).
const MaxEP = 576

// ExpertParallel is an MoE model's expert-parallel layout: the routed
// experts of every MoE layer are divided over an EP group of Size GPUs,
// each holding its share whole, instead of every GPU holding a TP slice of
// every expert (vLLM --enable-expert-parallel: the EP group is the DP × TP
// GPUs, vllm/distributed/parallel_state.py; SGLang --ep-size). The zero
// value (Size ≤ 1) is no expert parallelism.
//
// Attention, dense MLPs, the router and shared experts stay on the TP rule
// and run on the rank's own batch; the routed experts of each GPU compute
// the (token, expert) rows the whole group's DP ranks route to it. The
// group's tokens are taken as DP ranks of the rank's own batch each (the
// symmetric case: every DP rank carries as many tokens as this one), so a
// GPU's routed rows are
//
//	rows = tokens × TopK × DP / Size × Skew
//
// on the busiest GPU, which sets the layer's time (every GPU of the group
// waits for the combine).
type ExpertParallel struct {
	// Size is the EP group's GPUs (vLLM: DP × TP).
	Size int
	// DP is the data-parallel ranks whose tokens the group serves (≥ 1).
	DP int
	// Redundant is EPLB's redundant experts (vLLM --eplb-config
	// num_redundant_experts; SGLang --ep-num-redundant-experts): extra
	// physical copies of hot experts, held beside the logical ones.
	Redundant int
	// Skew is the busiest GPU's routed rows over the group's mean (the
	// max/mean rank load that vLLM's EPLB logs as the inverse of its
	// "balancedness"); values below 1 mean 1 (perfect balance).
	Skew float64
}

// On reports whether the layout shards the experts.
func (e ExpertParallel) On() bool { return e.Size > 1 }

// skew returns Skew, at least 1.
func (e ExpertParallel) skew() float64 { return math.Max(1, e.Skew) }

// checkEP checks an expert-parallel layout against the model.
func (m *Model) checkEP(e ExpertParallel) error {
	if !e.On() {
		return nil
	}
	switch {
	case !m.IsMoE():
		return fmt.Errorf("models: model %q: expert parallelism (ep %d) needs an MoE model; %s is dense", m.Name, e.Size, m.Name)
	case e.Size > MaxEP:
		return fmt.Errorf("models: model %q: ep %d is more than %d GPUs", m.Name, e.Size, MaxEP)
	case e.DP < 1 || e.DP > e.Size:
		return fmt.Errorf("models: model %q: ep %d with dp %d: dp must be in [1, ep]", m.Name, e.Size, e.DP)
	case e.Redundant < 0 || e.Redundant > m.Experts:
		return fmt.Errorf("models: model %q: %d redundant experts must be in [0, experts=%d]", m.Name, e.Redundant, m.Experts)
	case e.Size > m.Experts+e.Redundant:
		return fmt.Errorf("models: model %q: ep %d is more GPUs than its %d experts (+ %d redundant): a GPU would hold none", m.Name, e.Size, m.Experts, e.Redundant)
	case math.IsNaN(e.Skew) || math.IsInf(e.Skew, 0) || e.Skew > float64(e.Size):
		return fmt.Errorf("models: model %q: expert skew %v must be finite and at most ep = %d (all rows on one GPU)", m.Name, e.Skew, e.Size)
	}
	return nil
}

// LocalExperts returns the routed experts (physical, with EPLB's redundant
// copies) the fullest GPU of p's EP group holds: ⌈(Experts + Redundant) /
// Size⌉ (vLLM's determine_expert_map gives the remainder to the first
// ranks). Without expert parallelism it is Experts (every GPU holds a slice
// of every expert). 0 for a dense model.
func (m *Model) LocalExperts(p Parallel) int {
	if !m.IsMoE() {
		return 0
	}
	if !p.EP.On() {
		return m.Experts
	}
	n := m.Experts + p.EP.Redundant
	return (n + p.EP.Size - 1) / p.EP.Size
}

// RoutedRows returns the routed (token, expert) rows the busiest GPU of
// p's EP group computes in one MoE layer when each DP rank carries tokens
// tokens (see ExpertParallel). Without expert parallelism it is tokens ×
// TopK (every GPU computes every row on its TP slice).
func (m *Model) RoutedRows(tokens int, p Parallel) float64 {
	t := float64(tokens) * float64(m.TopK)
	if !p.EP.On() {
		return t
	}
	return t * float64(p.EP.DP) / float64(p.EP.Size) * p.EP.skew()
}

// moeOpsEP are moeOps under expert parallelism: the router on the rank's
// own nTok tokens; the routed experts at their whole width on the busiest
// GPU's rows (RoutedRows) over the distinct local experts they touch
// (expectedExperts with each row on one of the LocalExperts), and the
// shared experts on the rank's own tokens at the TP width, their FLOPs and
// bytes added to the routed operators' (one operator per class, as the
// dense-layer blend of appendMLP; the operators keep the routed experts'
// shape, which dominates). The all-to-all that moves the rows is priced by
// the hardware (hardware.ExpertStep), not here.
func (m *Model) moeOpsEP(L, rc, nTok int, t, wb float64, wc DType, ep ExpertParallel) [4]Op {
	h := float64(m.Hidden)
	tok := float64(nTok)
	e := float64(m.Experts)
	sh := float64(m.SharedExperts)
	p := Parallel{TP: int(t), EP: ep}
	rows := m.RoutedRows(nTok, p)
	loc := float64(m.LocalExperts(p))
	touched := 0.0
	if rows > 0 {
		touched = math.Max(1, expectedExperts(loc, 1, rows))
	}
	f := float64(m.ExpertFFN) // a routed expert is whole on its GPU
	up := m.upMatrices() * f
	mRows := int(math.Ceil(rows))
	ops := [4]Op{
		gemm(OpMoERouter, rc, nTok, tok, h, e, h*e, wb, wc),
		gemm(OpMLPUp, L, mRows, rows, h, up, touched*h*up, wb, wc),
		m.actOp(L, mRows, rows*f),
		gemm(OpMLPDown, L, mRows, rows, f, h, touched*f*h, wb, wc),
	}
	if sh > 0 {
		fs := f / t
		ups := m.upMatrices() * fs
		srows := tok * sh
		shared := [3]Op{
			gemm(OpMLPUp, L, nTok, srows, h, ups, sh*h*ups, wb, wc),
			m.actOp(L, nTok, srows*fs),
			gemm(OpMLPDown, L, nTok, srows, fs, h, sh*fs*h, wb, wc),
		}
		for i := range shared {
			ops[i+1].FLOPs += shared[i].FLOPs
			ops[i+1].Bytes += shared[i].Bytes
		}
	}
	ops[2].N, ops[2].K = int(f), m.Hidden
	for i := 1; i < len(ops); i++ {
		ops[i].Experts = touched + sh
	}
	return ops
}
