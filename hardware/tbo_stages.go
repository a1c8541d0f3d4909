package hardware

import (
	"math"

	"github.com/servesim/servesim/models"
)

// Two-batch overlap as the engines schedule it. Both micro-batches'
// operations are launched on one compute stream, handed between A and B
// at fixed points; only the DeepEP transfers run beside the compute (the
// normal kernels on DeepEP's communication stream, the low-latency ones
// as RDMA sends whose receive hook is called later). So the compute of A
// and B never overlaps itself, and an all-to-all hides only behind the
// compute launched between its start and the operation that waits for
// it. Per MoE layer, with X = attention (prepare and core), P its
// prepare (norm, q/kv projections, rope), C its core (attention kernel
// and output projection), E the MoE operators (gate, routed and shared
// experts), d and k a micro-batch's dispatch and combine:
//
//	paired (SGLang's prefill, _compute_moe_deepseek_blog_prefill in
//	operations_strategy.py, delta 0: stages [attn, gate, dispatch_a]
//	[dispatch_b, experts, combine_a] [shared experts, combine_b,
//	output], run A, B, A, … by operations.py
//	execute_overlapped_operations; and vLLM's DBO for every batch:
//	FusedMoEModularKernel yields (dbo_yield) after launching the
//	dispatch and the combine, vllm/model_executor/layers/fused_moe/
//	modular_kernel.py, the two micro-batch threads of
//	vllm/v1/worker/ubatching.py taking turns):
//	    A's dispatch beside B's attention, B's dispatch beside A's
//	    experts, A's combine beside B's experts, B's combine beside A's
//	    next attention:
//	    s(X_B, d_A) + s(E_A, d_B) + s(E_B, k_A) + s(X_A, k_B)
//	SGLang's decode (_compute_moe_deepseek_blog_decode, delta 2: stages
//	[attn prepare] [attn core, gate] [dispatch_a, shared experts]
//	[dispatch_b, experts, combine_a] [combine_b] [output], B two stages
//	behind A):
//	    A's dispatch beside B's attention prepare (and A's shared
//	    experts), A's combine beside B's attention core, and the same
//	    for B against A's next layer; the routed experts hide nothing:
//	    E_A + E_B + s(P_B, d_A) + s(C_B, k_A) + s(P_A, d_B) + s(C_A, k_B)
//
// s(c, a) being contended (the compute's SM contention). The edges: the
// first layer's attention of A runs before any all-to-all, and B's last
// combine (and, in SGLang's decode, its last dispatch) after the last
// compute. The shared experts are counted in E (models blends them into
// the MoE operators), so SGLang's decode dispatch does not hide behind
// them: a pessimism of their share. SGLang picks the schedule by the
// batch (EXTEND: prefill, DECODE: decode); vLLM has one.

// stageParts splits a micro-batch's per-layer compute sec/layers into
// the attention prepare, the attention core and the MoE operators at moe
// seconds (the step's MoE operators, at the group's load when set):
// the core is the attention and output projection operators of b, the
// prepare the rest. It reuses e.ops.
func (e *ExpertStep) stageParts(b models.Batch, sec, moe, layers float64) (prep, core, ex float64) {
	e.ops = e.s.m.Ops(b, e.s.p, e.ops[:0])
	for i := range e.ops {
		op := &e.ops[i]
		switch op.Kind {
		case models.OpAttnPrefill, models.OpAttnDecode, models.OpOutProj:
			if op.Count != 0 {
				core += float64(op.Count) * e.s.k.OpTime(op)
			}
		}
	}
	core = math.Min(core, math.Max(0, sec-moe))
	prep = math.Max(0, sec-moe-core)
	return prep / layers, core / layers, moe / layers
}

// stagedStep is the length of a step of layers layers, moe of them MoE
// layers, run as SGLang's two overlapped micro-batches (see above) with
// per-layer attention prepare p, core c and MoE operators x, per-MoE-layer
// dispatch d and combine k, the compute beside an all-to-all slowed by f;
// paired: the paired schedule, else SGLang's decode one; without the
// iteration overhead. It never exceeds the two micro-batches run back to
// back.
func stagedStep(layers, moe float64, p, c, x, d, k [2]float64, f float64, paired bool) float64 {
	var comp [2]float64
	for i := range comp {
		comp[i] = p[i] + c[i] + x[i]
	}
	serial := layers*(comp[0]+comp[1]) + moe*(d[0]+k[0]+d[1]+k[1])
	dense := (layers - moe) * (comp[0] + comp[1])
	if moe <= 0 {
		return math.Min(serial, dense)
	}
	var layer, edge float64
	if paired {
		xa, xb := p[0]+c[0], p[1]+c[1]
		layer = contended(xb, d[0], f) + contended(x[0], d[1], f) + contended(x[1], k[0], f) + contended(xa, k[1], f)
		edge = xa - contended(xa, k[1], f) + k[1]
	} else {
		layer = x[0] + x[1] + contended(p[1], d[0], f) + contended(c[1], k[0], f) + contended(p[0], d[1], f) + contended(c[0], k[1], f)
		edge = p[0] - contended(p[0], d[1], f) + c[0] - contended(c[0], k[1], f) + d[1] + k[1]
	}
	return math.Min(serial, dense+moe*layer+edge)
}
