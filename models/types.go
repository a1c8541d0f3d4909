package models

// This file holds the types the rest of servesim programs against. Their
// meaning is fixed here; see doc.go for how operator costs are derived.

// DType is a numeric precision for weights or the KV cache.
type DType uint8

// Precisions.
const (
	BF16 DType = iota // 2 bytes per element
	FP8               // 1 byte per element
	FP4               // 0.5 bytes per element (packed; scale overhead ignored)
)

// Batch summarises one iteration's batch as the kernel-time model needs it,
// without listing requests, so that it can be kept incrementally as requests
// join, advance and leave. All sums are over the requests of the batch.
//
// A prefill chunk i processes p_i new prompt tokens on top of c_i tokens
// already in the KV cache; a decode j processes one token on top of a
// context of c_j tokens already in the KV cache.
type Batch struct {
	Prefills      int     // number of prefill chunks
	PrefillTokens int     // Σ p_i
	PrefillCtx    int64   // Σ c_i: prior-context tokens whose KV the chunks read
	PrefillPairs  float64 // Σ p_i·(c_i + (p_i+1)/2): query–key pairs under the causal mask
	Decodes       int     // number of decode requests (one token each)
	DecodeCtx     int64   // Σ c_j: KV tokens read by decodes
	// DecodeQuery is the query tokens of each decode (0 or 1: one token, no
	// speculation; 1 + k when k drafted tokens are verified).
	DecodeQuery int
}

// Query returns the query tokens of each decode: DecodeQuery, at least 1.
func (b Batch) Query() int { return max(b.DecodeQuery, 1) }

// DecodeTokens returns the tokens the decodes process: Decodes × Query().
func (b Batch) DecodeTokens() int {
	if b.DecodeQuery > 1 {
		return b.Decodes * b.DecodeQuery
	}
	return b.Decodes
}

// Tokens returns the tokens processed by the iteration: Σ p_i + the
// decodes' tokens.
func (b Batch) Tokens() int { return b.PrefillTokens + b.DecodeTokens() }

// Parallel is how one instance runs a model: tensor-parallel degree, the
// precisions of weights and KV cache and, for an MoE model, an
// expert-parallel layout (the zero value: experts split by TP on every GPU,
// as before).
type Parallel struct {
	TP      int
	Weights DType
	KV      DType
	EP      ExpertParallel
}

// OpKind names an operator class. Kernel-time models (package hardware) key
// their efficiencies and calibrations on it.
type OpKind uint8

// Operator classes of one forward pass.
const (
	OpEmbed       OpKind = iota // token embedding gather
	OpNorm                      // RMSNorm / LayerNorm (input and post-attention)
	OpQKV                       // fused QKV projection GEMM
	OpRoPE                      // rotary embedding
	OpAttnPrefill               // attention of prefill chunks (FlashAttention-like)
	OpAttnDecode                // attention of decodes (paged KV read)
	OpOutProj                   // attention output projection GEMM
	OpAllReduce                 // tensor-parallel all-reduce of activations
	OpMoERouter                 // MoE gate GEMM and top-k
	OpMLPUp                     // gate+up GEMM (dense MLP or the touched experts)
	OpAct                       // SiLU-and-mul / GELU
	OpMLPDown                   // down GEMM (dense MLP or the touched experts)
	OpAdd                       // residual adds
	OpLMHead                    // final norm and LM head GEMM (sampled rows only)
	OpQKNorm                    // norms inside attention: per-head q/k RMSNorm (Qwen3), MLA latent norms
	NumOpKinds                  // number of operator classes
)

// Op is the cost of one operator class for one iteration on one GPU of the
// tensor-parallel group: what a kernel-time model turns into seconds.
type Op struct {
	Kind   OpKind
	Count  int     // occurrences per forward pass (e.g. layers, or 2·layers for two norms)
	Tokens int     // rows processed by one occurrence (GEMM M dimension)
	FLOPs  float64 // floating-point operations of one occurrence, on one GPU
	Bytes  float64 // HBM bytes read and written by one occurrence, on one GPU
	// N and K are the per-GPU output and reduction dimensions of a GEMM
	// (OpQKV, OpOutProj, OpMoERouter, OpMLPUp, OpMLPDown, OpLMHead): one
	// occurrence multiplies an M×K activation by a K×N weight, M = Tokens.
	// For MoE expert GEMMs they are one expert's, with M the (token, expert)
	// rows of all touched experts. Kernel models use them for tile and wave
	// quantization. 0 for operators that are not GEMMs, except an MoE
	// layer's expert activation (OpAct with Experts > 0), which carries its
	// expert's width per GPU and the hidden size, so that a kernel model
	// can tell expert sizes apart (it does no GEMM).
	N, K int
	// Experts marks an MoE layer's expert operators (OpMLPUp, OpAct,
	// OpMLPDown of an MoE model): the experts whose weights one occurrence
	// reads, the distinct routed experts its tokens touch (expected, or
	// forced by MoEOps) plus the shared ones; 0 for a dense MLP. A kernel
	// model may price expert kernels (vLLM's fused MoE) apart from dense
	// GEMMs by it; Roofline ignores it.
	Experts float64
	// CommBytes is the message size of one occurrence of a collective
	// (OpAllReduce), in bytes; 0 for other operators.
	CommBytes float64
	// Compute is the precision the math runs in (the tensor-core peak that
	// applies). For GEMMs it is the weight precision where the GPU supports
	// it; see doc.go.
	Compute DType
	// Mixed marks an OpAttnDecode whose decodes share one attention call
	// with prefill chunks (a chunked-prefill batch: vLLM's FlashAttention
	// varlen call), which a calibrated kernel model may price apart from
	// a decode-only call. Roofline ignores it.
	Mixed bool
	// KVHeads is, for an attention operator (OpAttnPrefill, OpAttnDecode),
	// the KV heads one GPU holds (1 for MLA's latent); 0 for others.
	// FlashAttention's decode grid is sequences × KV heads (the query
	// heads of a group share their KV head's thread block: pack_gqa), so
	// a kernel model may price a decode call by its Tokens × KVHeads work
	// units and their Bytes / work units each. Roofline ignores it.
	KVHeads int
}
