package models

import (
	"fmt"
	"math"
)

// actBytes is the size of one activation element: activations are BF16
// whatever the weight precision (FP8 activations of W8A8 kernels are not
// modelled; see doc.go).
const actBytes = 2

// Nominal floating-point operations per element of the memory-bound
// operators. They only keep FLOPs nonzero and proportionate: these operators
// are bandwidth-bound on every GPU in the catalog by two orders of magnitude.
const (
	rmsNormFLOPs   = 4 // square, accumulate, scale by 1/rms, multiply by the weight
	layerNormFLOPs = 7 // also: mean, subtract it, add the bias
	ropeFLOPs      = 3 // x·cos − y·sin: two multiplies and an add per element
	actFLOPs       = 5 // SiLU(g)·u: exp, add, divide, multiply, multiply (GELU is costed the same)
	addFLOPs       = 1
)

func (m *Model) normFLOPs() float64 {
	if m.Norm == NormLayer {
		return layerNormFLOPs
	}
	return rmsNormFLOPs
}

// gemm is the cost of an M×K by K×N product on one GPU: 2·M·K·N FLOPs;
// bytes are the weights read (weightElems at wb bytes each) plus the
// activations read (M×K) and written (M×N) in BF16. N and K are recorded as
// integers, rounded up (a dimension split unevenly by TP is as wide as its
// widest shard; the catalog's dimensions divide evenly).
func gemm(kind OpKind, count, tokens int, mm, k, n, weightElems, wb float64, compute DType) Op {
	return Op{
		Kind:    kind,
		Count:   count,
		Tokens:  tokens,
		FLOPs:   2 * mm * k * n,
		Bytes:   weightElems*wb + (mm*k+mm*n)*actBytes,
		N:       int(math.Ceil(n)),
		K:       int(math.Ceil(k)),
		Compute: compute,
	}
}

// Ops appends to dst the cost of one forward pass of batch b on one GPU of
// the tensor-parallel group p, one Op per operator class present, in OpKind
// order, and returns the extended slice. Count is the number of occurrences
// per forward pass; FLOPs and Bytes are per occurrence. Operators with no
// work are left out (no prefill ⇒ no OpAttnPrefill; TP = 1 ⇒ no
// OpAllReduce; a dense model has no OpMoERouter); an empty batch returns dst
// unchanged. The formulas, and what they ignore, are in doc.go.
//
// Ops allocates nothing when cap(dst)−len(dst) ≥ NumOpKinds. The model must
// be valid (models from a Catalog are) and p should pass CheckParallel; Ops
// panics if p.TP < 1 or a precision is invalid.
func (m *Model) Ops(b Batch, p Parallel, dst []Op) []Op {
	nTok := b.Tokens()
	if nTok <= 0 {
		return dst
	}
	tp := tpOf(p)
	t := float64(tp)
	wb := p.Weights.Bytes()
	kvb := p.KV.Bytes()
	wc := p.Weights // GEMM compute precision
	L := m.Layers
	h := float64(m.Hidden)
	tok := float64(nTok)
	hd := float64(m.HeadDim)
	qHeads := float64(m.Heads) / t
	qd := qHeads * hd                        // query (and attention output) width per GPU
	kvd := float64(m.kvHeadsPerGPU(tp)) * hd // K (or V) width per GPU
	normW := m.normElems() * 2               // norm weights, BF16
	actRW := 2 * tok * h * actBytes          // read and write T×Hidden activations
	normF := m.normFLOPs() * tok * h         // FLOPs of one norm over the batch

	// Embedding gather: T rows of the table read, T×Hidden written.
	dst = append(dst, Op{Kind: OpEmbed, Count: 1, Tokens: nTok,
		Bytes: tok*h*wb + tok*h*actBytes, Compute: BF16})

	dst = append(dst, Op{Kind: OpNorm, Count: L * m.normsPerLayer(), Tokens: nTok,
		FLOPs: normF, Bytes: actRW + normW, Compute: BF16})

	if m.IsMLA() {
		dst = append(dst, m.mlaQKV(L, nTok, tok, t, wb, wc))
	} else {
		qkvN := qd + 2*kvd
		dst = append(dst, gemm(OpQKV, L, nTok, tok, h, qkvN, h*qkvN, wb, wc))
	}

	ropeElems := tok * (qd + kvd) // rotate Q and K in place
	if m.IsMLA() {
		r := float64(m.RopeHeadDim)
		ropeElems = tok * (qHeads*r + r) // the RoPE part of each query head and the shared key
	}
	dst = append(dst, Op{Kind: OpRoPE, Count: L, Tokens: nTok,
		FLOPs: ropeFLOPs * ropeElems, Bytes: 2 * ropeElems * actBytes, Compute: BF16})

	dst = m.appendAttention(b, tp, kvb, wb, dst)

	od := qd // attention output width per GPU
	if m.IsMLA() {
		od = qHeads * float64(m.VHeadDim)
	}
	dst = append(dst, gemm(OpOutProj, L, nTok, tok, od, h, od*h, wb, wc))

	if tp > 1 {
		dst = append(dst, Op{Kind: OpAllReduce, Count: 2 * L, Tokens: nTok,
			CommBytes: tok * h * actBytes, Compute: BF16})
	}

	dst = m.appendMLP(L, nTok, tok, t, wb, wc, p.EP, dst)

	// Residual adds: read two T×Hidden tensors, write one.
	dst = append(dst, Op{Kind: OpAdd, Count: 2 * L, Tokens: nTok,
		FLOPs: addFLOPs * tok * h, Bytes: 3 * tok * h * actBytes, Compute: BF16})

	dst = m.appendLMHead(b, tp, wb, wc, dst)

	if elems, weights := m.attnNormElems(tok, qd, kvd); elems > 0 {
		dst = append(dst, Op{Kind: OpQKNorm, Count: L, Tokens: nTok,
			FLOPs: rmsNormFLOPs * elems, Bytes: 2*elems*actBytes + weights*2, Compute: BF16})
	}
	return dst
}

// attnNormElems is the elements one layer's norms inside attention read
// (and write) on one GPU, and their weights: Qwen3's q_norm and k_norm over
// the GPU's query and key heads, MLA's q_a and kv_a norms over the
// (replicated) latents.
func (m *Model) attnNormElems(tok, qd, kvd float64) (elems, weights float64) {
	if m.QKNorm {
		elems += tok * (qd + kvd)
		weights += 2 * float64(m.HeadDim)
	}
	if m.IsMLA() {
		elems += tok * float64(m.QLoRARank+m.KVLoRARank)
		weights += float64(m.QLoRARank + m.KVLoRARank)
	}
	return elems, weights
}

// appendMLP appends the MoE router, the MLP up-projection, activation and
// down-projection. An MoE layer's T tokens make T·(TopK + SharedExperts)
// (token, expert) rows over the expected routed experts touched plus the
// shared ones. A model with DenseLayers leading dense layers gets one op
// per class with Count = Layers whose FLOPs and bytes are the layer-weighted
// mean of its dense and MoE layers (sums over the forward pass exact; a
// kernel model sees the mean shape), with the MoE layers' Tokens, N, K and
// Experts; the router counts the MoE layers only.
func (m *Model) appendMLP(L, nTok int, tok, t, wb float64, wc DType, ep ExpertParallel, dst []Op) []Op {
	h := float64(m.Hidden)
	if !m.IsMoE() {
		f := float64(m.FFN) / t
		up := m.upMatrices() * f
		dst = append(dst, gemm(OpMLPUp, L, nTok, tok, h, up, h*up, wb, wc))
		dst = append(dst, m.actOp(L, nTok, tok*f))
		return append(dst, gemm(OpMLPDown, L, nTok, tok, f, h, f*h, wb, wc))
	}
	ml := m.moeLayers()
	var ops [4]Op
	if ep.On() {
		ops = m.moeOpsEP(L, ml, nTok, t, wb, wc, ep)
	} else {
		ops = m.moeOps(L, ml, nTok, expectedExperts(float64(m.Experts), float64(m.TopK), tok), t, wb, wc)
	}
	dst = append(dst, ops[0])
	if dl := m.DenseLayers; dl > 0 {
		df := float64(m.FFN) / t
		dup := m.upMatrices() * df
		dense := [3]Op{
			gemm(OpMLPUp, L, nTok, tok, h, dup, h*dup, wb, wc),
			m.actOp(L, nTok, tok*df),
			gemm(OpMLPDown, L, nTok, tok, df, h, df*h, wb, wc),
		}
		wm, wd := float64(ml)/float64(L), float64(dl)/float64(L)
		for i := range dense {
			ops[i+1].FLOPs = wm*ops[i+1].FLOPs + wd*dense[i].FLOPs
			ops[i+1].Bytes = wm*ops[i+1].Bytes + wd*dense[i].Bytes
		}
	}
	return append(dst, ops[1:]...)
}

// MoEOps appends to dst the operators of the MLP of one MoE layer on one
// GPU of p for a batch of tokens tokens whose routing touches touched
// distinct routed experts: the router (OpMoERouter) and the expert
// up-projection, activation and down-projection (OpMLPUp, OpAct,
// OpMLPDown, with Experts = touched + SharedExperts), each with Count 1.
// Ops prices an MoE layer the same way with touched = the expected number
// of distinct experts under uniform routing; calibration uses MoEOps for
// measurements whose routing was forced (LLMServingSim's moe.csv). The
// model must be an MoE model, tokens ≥ 1, touched in [1, Experts] and p
// valid for the model; MoEOps panics otherwise (a programmer error).
func (m *Model) MoEOps(tokens int, touched float64, p Parallel, dst []Op) []Op {
	if !m.IsMoE() || tokens < 1 || !(touched >= 1 && touched <= float64(m.Experts)) {
		panic(fmt.Sprintf("models: MoEOps(%d tokens, %v experts touched) of model %q with %d experts", tokens, touched, m.Name, m.Experts))
	}
	ops := m.moeOps(1, 1, tokens, touched, float64(tpOf(p)), p.Weights.Bytes(), p.Weights)
	return append(dst, ops[:]...)
}

// moeOps are the router (count rc) and the expert up, activation and down
// operators (count L) of nTok tokens touching touched routed experts.
func (m *Model) moeOps(L, rc, nTok int, touched, t, wb float64, wc DType) [4]Op {
	h := float64(m.Hidden)
	tok := float64(nTok)
	e := float64(m.Experts)
	k := float64(m.TopK)
	sh := float64(m.SharedExperts)
	f := float64(m.ExpertFFN) / t // each expert's intermediate width per GPU
	up := m.upMatrices() * f
	rows := tok * (k + sh) // (token, expert) rows of the grouped GEMMs
	all := touched + sh    // experts whose weights are read
	mTok := nTok * (m.TopK + m.SharedExperts)
	ops := [4]Op{
		gemm(OpMoERouter, rc, nTok, tok, h, e, h*e, wb, wc),
		gemm(OpMLPUp, L, mTok, rows, h, up, all*h*up, wb, wc),
		m.actOp(L, mTok, rows*f),
		gemm(OpMLPDown, L, mTok, rows, f, h, all*f*h, wb, wc),
	}
	// The activation is no GEMM; it carries the expert's width (per GPU)
	// and the hidden size as N and K so that a kernel model can tell one
	// expert size from another (calibrate's [moe] fit holds only for the
	// expert sizes it was measured on).
	ops[2].N, ops[2].K = int(f), m.Hidden
	for i := 1; i < len(ops); i++ {
		ops[i].Experts = all
	}
	return ops
}

// BatchOps appends only the operators whose cost depends on more than the
// batch's token count: prefill and decode attention (which depend on the
// contexts) and the final norm with the LM head (which depends on how many
// rows sample). Every other operator of Ops depends on b.Tokens() and p
// alone, which lets a step model cache their time by token count; Ops(b)
// equals Ops of the same token count with these replaced by BatchOps(b)
// (TestBatchOpsSplit checks it).
func (m *Model) BatchOps(b Batch, p Parallel, dst []Op) []Op {
	if b.Tokens() <= 0 {
		return dst
	}
	tp := tpOf(p)
	dst = m.appendAttention(b, tp, p.KV.Bytes(), p.Weights.Bytes(), dst)
	return m.appendLMHead(b, tp, p.Weights.Bytes(), p.Weights, dst)
}

// AttentionOps appends BatchOps' attention operators, the first part of
// its list (the LM head is the rest): a step model that knows the LM
// head's cost of a batch, which depends on b.Tokens() alone when the batch
// has no prefill (every token then samples), asks only for these.
func (m *Model) AttentionOps(b Batch, p Parallel, dst []Op) []Op {
	if b.Tokens() <= 0 {
		return dst
	}
	return m.appendAttention(b, tpOf(p), p.KV.Bytes(), p.Weights.Bytes(), dst)
}

// TokenOnly reports whether an operator class's cost depends only on the
// batch's token count (and the model and parallel configuration).
func TokenOnly(k OpKind) bool {
	return k != OpAttnPrefill && k != OpAttnDecode && k != OpLMHead
}

func (m *Model) appendAttention(b Batch, tp int, kvb, wb float64, dst []Op) []Op {
	a := m.batchPricer(tp, kvb, wb, BF16)
	return a.Attention(b, dst)
}

func (m *Model) appendLMHead(b Batch, tp int, wb float64, wc DType, dst []Op) []Op {
	a := m.batchPricer(tp, 0, wb, wc)
	if op, ok := a.LMHead(b); ok {
		dst = append(dst, op)
	}
	return dst
}

// decodePairs returns the decodes' query–key pairs under the causal mask
// and the KV tokens they read: q·DecodeCtx + Decodes·q(q+1)/2 and
// DecodeCtx + Decodes·q, for q = b.Query() (DecodeCtx + Decodes both
// without speculation).
func decodePairs(b Batch) (pairs, keys float64) {
	return pairsOf(float64(b.Query()), float64(b.Decodes), float64(b.DecodeCtx))
}

// pairsOf is decodePairs of q query tokens a decode, d decodes and c
// context tokens.
func pairsOf(q, d, c float64) (pairs, keys float64) {
	return q*c + d*q*(q+1)/2, c + d*q
}

// actOp is the MLP activation over out output elements per GPU: SiLU-and-mul
// reads gate and up and writes one; GELU reads and writes one.
func (m *Model) actOp(count, tokens int, out float64) Op {
	return Op{Kind: OpAct, Count: count, Tokens: tokens,
		FLOPs:   actFLOPs * out,
		Bytes:   (m.upMatrices() + 1) * out * actBytes,
		Compute: BF16}
}

// expectedExperts is the expected number of distinct experts that n tokens
// touch when each picks k of e uniformly without replacement: an expert is
// missed by one token with probability 1 − k/e, by all n with (1 − k/e)^n.
func expectedExperts(e, k, n float64) float64 {
	return e * (1 - math.Pow(1-k/e, n))
}
