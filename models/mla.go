package models

// Multi-head latent attention (MLA), as DeepSeek-V2/V3 define it and vLLM
// runs it (vllm/v1/attention/backends/mla/common.py, whose module docstring
// reads: "we generally want to use the compute friendly approach for
// 'prefill' ... and the data-movement friendly approach for 'decode'"):
//
//   - q = q_b(norm(q_a(x))) (q_a: Hidden→QLoRARank, q_b: QLoRARank→Heads·HeadDim;
//     without QLoRARank one Hidden→Heads·HeadDim projection);
//   - [c, k_rope] = kv_a(x) (Hidden→KVLoRARank+RopeHeadDim): the cached latent
//     c (normed) and one RoPE key shared by all heads;
//   - kv_b (KVLoRARank→Heads·(nope+VHeadDim)) up-projects c to per-head K_nope
//     and V, with nope = HeadDim − RopeHeadDim;
//   - o (Heads·VHeadDim→Hidden).
//
// vLLM computes prefill in the non-absorbed (compute-friendly) form: the
// latents of the chunk's context and new tokens are up-projected by kv_b and
// attention runs per head with query/key size HeadDim and value size
// VHeadDim. It computes decode in the absorbed (data-movement-friendly) form:
// W_UK is folded into the query (q_nope·W_UK, to KVLoRARank per head), the
// heads attend over the cached latent as multi-query attention with key size
// KVLoRARank+RopeHeadDim and value size KVLoRARank, and W_UV maps each
// head's output back to VHeadDim. The cache holds KVLoRARank+RopeHeadDim
// elements per token per layer, on every GPU of the TP group.

// IsMLA reports whether the model uses multi-head latent attention.
func (m *Model) IsMLA() bool { return m.KVLoRARank > 0 }

// latentDim is the cached elements per token per layer under MLA.
func (m *Model) latentDim() float64 { return float64(m.KVLoRARank) + float64(m.RopeHeadDim) }

// nopeDim is the part of a query/key head that carries no RoPE.
func (m *Model) nopeDim() float64 { return float64(m.HeadDim) - float64(m.RopeHeadDim) }

func (m *Model) validateMLA() error {
	if !m.IsMLA() {
		for _, f := range []struct {
			key string
			v   int
		}{{"q_lora_rank", m.QLoRARank}, {"rope_head_dim", m.RopeHeadDim}, {"v_head_dim", m.VHeadDim}} {
			if f.v != 0 {
				return m.fieldErr(f.key, "is %d, but kv_lora_rank is 0: the MLA fields need kv_lora_rank > 0", f.v)
			}
		}
		return nil
	}
	if m.RopeHeadDim <= 0 || m.RopeHeadDim >= m.HeadDim {
		return m.fieldErr("rope_head_dim", "must be in [1, head_dim−1] for MLA (head_dim %d = qk_nope_head_dim + qk_rope_head_dim), not %d", m.HeadDim, m.RopeHeadDim)
	}
	if m.VHeadDim <= 0 {
		return m.fieldErr("v_head_dim", "must be > 0 for MLA (kv_lora_rank = %d)", m.KVLoRARank)
	}
	if m.QKVBias {
		return m.fieldErr("qkv_bias", "MLA projections carry no biases here")
	}
	return nil
}

// mlaQMatrix is the query projection parameters of one layer.
func (m *Model) mlaQMatrix(t float64) (replicated, split float64) {
	h, qd := float64(m.Hidden), m.qDim()
	if m.QLoRARank > 0 {
		ql := float64(m.QLoRARank)
		return h * ql, ql * qd / t
	}
	return 0, h * qd / t
}

// mlaMatrixPerGPU is one layer's MLA matrices on one GPU of t: q_a and kv_a
// replicated, q_b, kv_b and o split by heads.
func (m *Model) mlaMatrixPerGPU(t float64) float64 {
	h, heads := float64(m.Hidden), float64(m.Heads)
	qr, qs := m.mlaQMatrix(t)
	kva := h * m.latentDim()
	kvb := float64(m.KVLoRARank) * heads * (m.nopeDim() + float64(m.VHeadDim)) / t
	o := heads * float64(m.VHeadDim) * h / t
	return qr + qs + kva + kvb + o
}

func (m *Model) mlaMatrix() float64 { return m.mlaMatrixPerGPU(1) }

// mlaQKV is the projections before attention on one GPU: q_a and kv_a (one
// fused GEMM, as vLLM's fused_qkv_a_proj, K = Hidden), then q_b. N and K are
// those of the fused down-projection.
func (m *Model) mlaQKV(count, nTok int, tok, t, wb float64, wc DType) Op {
	h := float64(m.Hidden)
	qHeads := float64(m.Heads) / t
	down := m.latentDim() + float64(m.QLoRARank)
	op := gemm(OpQKV, count, nTok, tok, h, down, h*down, wb, wc)
	k := float64(m.QLoRARank)
	if k == 0 {
		k = h
	}
	qb := gemm(OpQKV, count, nTok, tok, k, qHeads*float64(m.HeadDim), k*qHeads*float64(m.HeadDim), wb, wc)
	if m.QLoRARank == 0 { // the query projection reads x itself, not a latent
		qb.Bytes -= tok * h * actBytes
	}
	op.FLOPs += qb.FLOPs
	op.Bytes += qb.Bytes
	return op
}
