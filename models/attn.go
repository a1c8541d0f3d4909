package models

import "math"

// BatchPricer builds BatchOps' operators (prefill and decode attention,
// the final norm with the LM head) of one model at one parallel layout,
// with what depends on the layout alone (heads and KV bytes per GPU, the
// LM head's shard) computed once. A step model calls it every simulated
// step, where Ops and BatchOps would recompute those constants and append
// to a slice; it builds each operator with the same floating-point
// operations, on the same values, in the same order as they do (Ops and
// BatchOps are built from it), so the operators are the same to the bit.
// The zero value is not usable; get one from Model.BatchPricer. It is
// immutable.
type BatchPricer struct {
	mla     bool
	layers  int
	kvHeads int // KV heads one GPU holds (1 for MLA's latent)
	kvb, wb float64
	wc      DType

	// Dense attention: query heads and widths per GPU, KV-cache bytes per
	// token per layer per GPU.
	qHeads, hd, qd, kvTok float64
	// MLA: head dims, the latent rank, cache bytes per token per layer
	// and the kv_b weights on this GPU.
	d, v, kvl, nope, latent, lat, kvbW float64

	// The LM head: hidden size, the vocabulary shard, the final norm's
	// weights and FLOPs per element.
	h, vd, normW, normF float64
}

// BatchPricer returns the batch pricer of m at p. p should pass
// CheckParallel; it panics if p.TP < 1 or a precision is invalid.
func (m *Model) BatchPricer(p Parallel) BatchPricer {
	return m.batchPricer(tpOf(p), p.KV.Bytes(), p.Weights.Bytes(), p.Weights)
}

func (m *Model) batchPricer(tp int, kvb, wb float64, wc DType) BatchPricer {
	t := float64(tp)
	a := BatchPricer{mla: m.IsMLA(), layers: m.Layers, kvb: kvb, wb: wb, wc: wc,
		h: float64(m.Hidden), vd: float64(m.Vocab) / t, normW: m.normElems() * 2, normF: m.normFLOPs()}
	a.qHeads = float64(m.Heads) / t
	if a.mla {
		a.kvHeads = 1
		a.d = float64(m.HeadDim)
		a.v = float64(m.VHeadDim)
		a.kvl = float64(m.KVLoRARank)
		a.nope = m.nopeDim()
		a.latent = m.latentDim()
		a.lat = a.latent * kvb                          // cache bytes per token per layer
		a.kvbW = a.kvl * a.qHeads * (a.nope + a.v) * wb // kv_b weights on this GPU
		return a
	}
	a.kvHeads = m.kvHeadsPerGPU(tp)
	a.hd = float64(m.HeadDim)
	a.qd = a.qHeads * a.hd           // query (and attention output) width per GPU
	kvd := float64(a.kvHeads) * a.hd // K (or V) width per GPU
	a.kvTok = 2 * kvd * kvb          // KV-cache bytes per token per layer per GPU
	return a
}

// Prefill returns b's prefill attention operator (OpAttnPrefill); b must
// have prefill tokens. Under MLA prefill runs non-absorbed, with the kv_b
// up-projection of the context's and the new tokens' latents counted in it.
func (a *BatchPricer) Prefill(b Batch) Op {
	var op Op
	a.PrefillInto(&b, &op)
	return op
}

// PrefillInto sets *op to Prefill(*b), writing it in place (a step
// model's scratch operator: no copy of a returned one, nor of the batch).
func (a *BatchPricer) PrefillInto(b *Batch, op *Op) {
	pt := float64(b.PrefillTokens)
	if a.mla {
		qHeads, d, v, kvl := a.qHeads, a.d, a.v, a.kvl
		rows := float64(b.PrefillCtx) + pt // latents up-projected: context and new tokens
		setOp(op, OpAttnPrefill, a.layers, b.PrefillTokens,
			// kv_b over every row, then QK^T (size HeadDim) and PV (VHeadDim)
			// over the causal pairs.
			2*rows*kvl*qHeads*(a.nope+v)+2*qHeads*(d+v)*b.PrefillPairs,
			// Latents read and the new ones written; kv_b weights; the
			// up-projected K and V written and read once; Q read, O written.
			rows*a.lat+pt*a.lat+a.kvbW+2*rows*qHeads*(d+v)*actBytes+
				pt*qHeads*(d+v)*actBytes,
			0, 0, BF16, false, 1)
		return
	}
	kvTok := a.kvTok
	setOp(op, OpAttnPrefill, a.layers, b.PrefillTokens,
		// QK^T and PV over the causal query–key pairs.
		4*a.qHeads*a.hd*b.PrefillPairs,
		// Q read, O written; K and V of prior context and new tokens read
		// from the cache; new tokens' K and V written to it.
		2*pt*a.qd*actBytes+(float64(b.PrefillCtx)+pt)*kvTok+pt*kvTok,
		0, 0, BF16, false, a.kvHeads)
}

// setOp sets every field of *op, one store each. A composite literal
// assigned through a pointer is built in a temporary and copied with
// 16-byte moves, whose loads of the temporary's 8-byte stores cannot be
// forwarded (a stall each), and a reader of *op soon after pays again.
// TestIntoDirtyOp fills every field of an operator first, so a field
// added to Op and not set here fails it.
func setOp(op *Op, kind OpKind, count, tokens int, flops, bytes float64, n, k int, compute DType, mixed bool, kvHeads int) {
	op.Kind, op.Count, op.Tokens = kind, count, tokens
	op.FLOPs, op.Bytes = flops, bytes
	op.N, op.K, op.Experts, op.CommBytes = n, k, 0, 0
	op.Compute, op.Mixed, op.KVHeads = compute, mixed, kvHeads
}

// Decode returns b's decode attention operator (OpAttnDecode); b must have
// decodes. Under MLA decode runs absorbed, with the W_UK and W_UV
// absorptions counted in it.
func (a *BatchPricer) Decode(b Batch) Op {
	var op Op
	a.DecodeInto(&b, &op)
	return op
}

// DecodeInto sets *op to Decode(*b), writing it in place. It reads *b's
// fields, not b.Query() and b.DecodeTokens() (value receivers: each call
// copied the batch through memory): max(DecodeQuery, 1) is Query(), and
// Decodes times it DecodeTokens().
func (a *BatchPricer) DecodeInto(b *Batch, op *Op) {
	// Each decode's i-th query token attends to its context and the query
	// tokens up to itself (i = 1 without speculation): the query–key pairs
	// are q·DecodeCtx + Decodes·q(q+1)/2; the KV of DecodeCtx + q tokens a
	// decode is read once.
	q, decodes := max(b.DecodeQuery, 1), b.Decodes
	pairs, keys := pairsOf(float64(q), float64(decodes), float64(b.DecodeCtx))
	if a.mla {
		qHeads, d, v, kvl := a.qHeads, a.d, a.v, a.kvl
		n := float64(decodes * q) // query rows: one a decode, 1 + k under speculation
		setOp(op, OpAttnDecode, a.layers, decodes,
			// W_UK absorption (nope→KVLoRARank per head), MQA over the
			// latent (keys of KVLoRARank+RopeHeadDim, values of KVLoRARank),
			// W_UV (KVLoRARank→VHeadDim per head).
			2*n*qHeads*a.nope*kvl+2*qHeads*(a.latent+kvl)*pairs+2*n*qHeads*kvl*v,
			// Latents read and the new ones written; W_UK and W_UV (the kv_b
			// weights); Q read and O written.
			keys*a.lat+n*a.lat+a.kvbW+n*qHeads*(d+v)*actBytes,
			0, 0, BF16, false, 1)
		return
	}
	dt := float64(decodes * q)
	kvTok := a.kvTok
	setOp(op, OpAttnDecode, a.layers, decodes,
		4*a.qHeads*a.hd*pairs,
		2*dt*a.qd*actBytes+keys*kvTok+dt*kvTok,
		0, 0, BF16, b.PrefillTokens > 0, a.kvHeads)
}

// LMHead returns b's final norm and LM head (OpLMHead) and true, or false
// where no row of b samples. The norm runs over every token, the LM head
// over the rows that sample: one per decode and (at most) one per prefill
// chunk. Under speculation every query token of a decode is scored (the
// rejection sampler compares the target's distribution at each draft
// position and samples the bonus token: vllm/v1/worker/gpu_model_runner.py
// _calc_spec_decode_metadata's logits_indices).
func (a *BatchPricer) LMHead(b Batch) (Op, bool) {
	var op Op
	ok := a.LMHeadInto(&b, &op)
	return op, ok
}

// LMHeadInto sets *op to LMHead(*b)'s operator in place and says whether
// *b has one (*op is left alone if not). It computes gemm's fields and
// adds the norm's in gemm's and then the additions' order (the same
// bits), from *b's fields (as DecodeInto).
func (a *BatchPricer) LMHeadInto(b *Batch, op *Op) bool {
	dtok := b.Decodes * max(b.DecodeQuery, 1) // b.DecodeTokens()
	sampled := dtok + b.Prefills
	if sampled <= 0 {
		return false
	}
	h := a.h
	tok := float64(b.PrefillTokens + dtok) // b.Tokens()
	actRW := 2 * tok * h * actBytes        // read and write T×Hidden activations
	normF := a.normF * tok * h             // FLOPs of one norm over the batch
	s := float64(sampled)
	vd := a.vd
	// gemm(OpLMHead, 1, sampled, s, h, vd, h*vd, a.wb, a.wc), then the
	// norm's FLOPs and the activations' and norm weights' bytes.
	setOp(op, OpLMHead, 1, sampled,
		2*s*h*vd+normF,
		h*vd*a.wb+(s*h+s*vd)*actBytes+(actRW+a.normW),
		int(math.Ceil(vd)), int(math.Ceil(h)), a.wc, false, 0)
	return true
}

// Attention appends b's attention operators to dst: prefill (if b has
// prefill tokens), then decode (if it has decodes).
func (a *BatchPricer) Attention(b Batch, dst []Op) []Op {
	if b.PrefillTokens > 0 {
		dst = append(dst, a.Prefill(b))
	}
	if b.Decodes > 0 {
		dst = append(dst, a.Decode(b))
	}
	return dst
}
