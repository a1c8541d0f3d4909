package models

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// The attention and LM-head operators as Ops built them before
// BatchPricer (models/ops.go and models/mla.go at 02f686b), kept to check
// that the pricer's operators are the same to the bit.

func oldAppendAttention(m *Model, b Batch, tp int, kvb, wb float64, dst []Op) []Op {
	if m.IsMLA() {
		return oldMLAAttention(m, b, tp, kvb, wb, dst)
	}
	hd := float64(m.HeadDim)
	qHeads := float64(m.Heads) / float64(tp)
	qd := qHeads * hd                        // query (and attention output) width per GPU
	kvd := float64(m.kvHeadsPerGPU(tp)) * hd // K (or V) width per GPU
	kvTok := 2 * kvd * kvb                   // KV-cache bytes per token per layer per GPU
	L := m.Layers
	if b.PrefillTokens > 0 {
		pt := float64(b.PrefillTokens)
		dst = append(dst, Op{Kind: OpAttnPrefill, Count: L, Tokens: b.PrefillTokens,
			// QK^T and PV over the causal query–key pairs.
			FLOPs: 4 * qHeads * hd * b.PrefillPairs,
			// Q read, O written; K and V of prior context and new tokens read
			// from the cache; new tokens' K and V written to it.
			Bytes:   2*pt*qd*actBytes + (float64(b.PrefillCtx)+pt)*kvTok + pt*kvTok,
			Compute: BF16, KVHeads: m.kvHeadsPerGPU(tp)})
	}
	if b.Decodes > 0 {
		dt := float64(b.DecodeTokens())
		// Each decode's i-th query token attends to its context and the
		// query tokens up to itself (i = 1 without speculation): the
		// query–key pairs are q·DecodeCtx + Decodes·q(q+1)/2; the KV of
		// DecodeCtx + q tokens a decode is read once.
		pairs, keys := decodePairs(b)
		dst = append(dst, Op{Kind: OpAttnDecode, Count: L, Tokens: b.Decodes,
			FLOPs:   4 * qHeads * hd * pairs,
			Bytes:   2*dt*qd*actBytes + keys*kvTok + dt*kvTok,
			Compute: BF16, Mixed: b.PrefillTokens > 0, KVHeads: m.kvHeadsPerGPU(tp)})
	}
	return dst
}

func oldAppendLMHead(m *Model, b Batch, tp int, wb float64, wc DType, dst []Op) []Op {
	h := float64(m.Hidden)
	tok := float64(b.Tokens())
	t := float64(tp)
	normW := m.normElems() * 2       // norm weights, BF16
	actRW := 2 * tok * h * actBytes  // read and write T×Hidden activations
	normF := m.normFLOPs() * tok * h // FLOPs of one norm over the batch
	// Final norm over every token, then the LM head over the rows that
	// sample: one per decode and (at most) one per prefill chunk.
	// Under speculation every query token of a decode is scored (the
	// rejection sampler compares the target's distribution at each draft
	// position and samples the bonus token: vllm/v1/worker/gpu_model_runner.py
	// _calc_spec_decode_metadata's logits_indices).
	if sampled := b.DecodeTokens() + b.Prefills; sampled > 0 {
		s := float64(sampled)
		vd := float64(m.Vocab) / t
		op := gemm(OpLMHead, 1, sampled, s, h, vd, h*vd, wb, wc)
		op.FLOPs += normF
		op.Bytes += actRW + normW
		dst = append(dst, op)
	}
	return dst
}

func oldMLAAttention(m *Model, b Batch, tp int, kvb, wb float64, dst []Op) []Op {
	qHeads := float64(m.Heads) / float64(tp)
	d := float64(m.HeadDim)
	v := float64(m.VHeadDim)
	kvl := float64(m.KVLoRARank)
	lat := m.latentDim() * kvb                    // cache bytes per token per layer
	kvbW := kvl * qHeads * (m.nopeDim() + v) * wb // kv_b weights on this GPU
	L := m.Layers
	if b.PrefillTokens > 0 {
		pt := float64(b.PrefillTokens)
		rows := float64(b.PrefillCtx) + pt // latents up-projected: context and new tokens
		dst = append(dst, Op{Kind: OpAttnPrefill, Count: L, Tokens: b.PrefillTokens,
			// kv_b over every row, then QK^T (size HeadDim) and PV (VHeadDim)
			// over the causal pairs.
			FLOPs: 2*rows*kvl*qHeads*(m.nopeDim()+v) + 2*qHeads*(d+v)*b.PrefillPairs,
			// Latents read and the new ones written; kv_b weights; the
			// up-projected K and V written and read once; Q read, O written.
			Bytes: rows*lat + pt*lat + kvbW + 2*rows*qHeads*(d+v)*actBytes +
				pt*qHeads*(d+v)*actBytes,
			Compute: BF16, KVHeads: 1})
	}
	if b.Decodes > 0 {
		n := float64(b.DecodeTokens()) // query rows: one a decode, 1 + k under speculation
		pairs, keys := decodePairs(b)
		dst = append(dst, Op{Kind: OpAttnDecode, Count: L, Tokens: b.Decodes,
			// W_UK absorption (nope→KVLoRARank per head), MQA over the
			// latent (keys of KVLoRARank+RopeHeadDim, values of KVLoRARank),
			// W_UV (KVLoRARank→VHeadDim per head).
			FLOPs: 2*n*qHeads*m.nopeDim()*kvl + 2*qHeads*(m.latentDim()+kvl)*pairs + 2*n*qHeads*kvl*v,
			// Latents read and the new ones written; W_UK and W_UV (the kv_b
			// weights); Q read and O written.
			Bytes:   keys*lat + n*lat + kvbW + n*qHeads*(d+v)*actBytes,
			Compute: BF16, KVHeads: 1})
	}
	return dst
}

// TestBatchPricerSameBits builds every catalog model's attention and LM
// head over thousands of random batches (decode-only, mixed, prefill-only,
// speculative) at several layouts with a BatchPricer and as Ops did before
// it, and wants the same operators to the bit.
func TestBatchPricerSameBits(t *testing.T) {
	pars := []Parallel{
		{TP: 1},
		{TP: 2, Weights: FP8, KV: FP8},
		{TP: 4, KV: FP8},
		{TP: 8, Weights: FP8},
	}
	cat := Builtin()
	all := cat.All()
	if len(all) < 10 {
		t.Fatalf("catalog has %d models", len(all))
	}
	r := rand.New(rand.NewPCG(3, 5))
	mla := 0
	for _, m := range all {
		name := m.Name
		if m.IsMLA() {
			mla++
		}
		for _, p := range pars {
			if m.CheckParallel(p) != nil {
				continue
			}
			a := m.BatchPricer(p)
			for i := range 500 {
				b := randBatch(r)
				got := a.Attention(b, nil)
				if op, ok := a.LMHead(b); ok {
					got = append(got, op)
				}
				want := oldAppendAttention(m, b, p.TP, p.KV.Bytes(), p.Weights.Bytes(), nil)
				want = oldAppendLMHead(m, b, p.TP, p.Weights.Bytes(), p.Weights, want)
				if !sameOps(got, want) {
					t.Fatalf("%s %+v batch %d %+v:\n got  %+v\n want %+v", name, p, i, b, got, want)
				}
				if bo := m.BatchOps(b, p, nil); !sameOps(bo, want) {
					t.Fatalf("%s %+v batch %d %+v: BatchOps\n got  %+v\n want %+v", name, p, i, b, bo, want)
				}
			}
		}
	}
	if mla == 0 {
		t.Error("no MLA model in the catalog")
	}
}

// sameOps reports whether a and b hold the same operators, floats
// compared by their bits.
func sameOps(a, b []Op) bool {
	if len(a) != len(b) {
		return false
	}
	same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
	for i := range a {
		x, y := a[i], b[i]
		if !same(x.FLOPs, y.FLOPs) || !same(x.Bytes, y.Bytes) || !same(x.Experts, y.Experts) || !same(x.CommBytes, y.CommBytes) {
			return false
		}
		x.FLOPs, x.Bytes, x.Experts, x.CommBytes = 0, 0, 0, 0
		y.FLOPs, y.Bytes, y.Experts, y.CommBytes = 0, 0, 0, 0
		if x != y {
			return false
		}
	}
	return true
}

// randBatch returns a decode-only, mixed or prefill-only batch, a quarter
// of those with decodes speculative.
func randBatch(r *rand.Rand) Batch {
	var b Batch
	if r.IntN(3) > 0 {
		b.Decodes = 1 + r.IntN(512)
		b.DecodeCtx = int64(b.Decodes) * int64(1+r.IntN(100000))
		if r.IntN(4) == 0 {
			b.DecodeQuery = 1 + r.IntN(6)
		}
	}
	if b.Decodes == 0 || r.IntN(2) == 0 {
		b.Prefills = 1 + r.IntN(4)
		b.PrefillTokens = b.Prefills + r.IntN(8192)
		b.PrefillCtx = int64(r.IntN(200000))
		pt := float64(b.PrefillTokens)
		b.PrefillPairs = pt * (float64(b.PrefillCtx)/float64(b.Prefills) + (pt+1)/2)
	}
	return b
}

// dirtyOp returns an operator with every field set to something no
// pricer writes (found by reflection, so a field added to Op is set too).
func dirtyOp(r *rand.Rand) Op {
	var op Op
	v := reflect.ValueOf(&op).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(-1 - r.Int64N(1000))
		case reflect.Uint8:
			f.SetUint(200 + r.Uint64N(50))
		case reflect.Float64:
			f.SetFloat(-1 - r.Float64())
		case reflect.Bool:
			f.SetBool(true)
		default:
			panic("dirtyOp: set field " + v.Type().Field(i).Name)
		}
	}
	return op
}

// TestIntoDirtyOp builds every catalog model's attention and LM head
// over random batches into operators whose every field was set to junk
// first (a step model's scratch operators hold the last step's), and
// wants the operators Ops built before BatchPricer, to the bit: each Into
// method sets every field.
func TestIntoDirtyOp(t *testing.T) {
	pars := []Parallel{{TP: 1}, {TP: 2, Weights: FP8, KV: FP8}, {TP: 8, Weights: FP8}}
	r := rand.New(rand.NewPCG(11, 13))
	for _, m := range Builtin().All() {
		for _, p := range pars {
			if m.CheckParallel(p) != nil {
				continue
			}
			a := m.BatchPricer(p)
			for i := range 300 {
				b := randBatch(r)
				var got []Op
				if b.PrefillTokens > 0 {
					op := dirtyOp(r)
					a.PrefillInto(&b, &op)
					got = append(got, op)
				}
				if b.Decodes > 0 {
					op := dirtyOp(r)
					a.DecodeInto(&b, &op)
					got = append(got, op)
				}
				op := dirtyOp(r)
				if a.LMHeadInto(&b, &op) {
					got = append(got, op)
				}
				want := oldAppendAttention(m, b, p.TP, p.KV.Bytes(), p.Weights.Bytes(), nil)
				want = oldAppendLMHead(m, b, p.TP, p.Weights.Bytes(), p.Weights, want)
				if !sameOps(got, want) {
					t.Fatalf("%s %+v batch %d %+v:\n got  %+v\n want %+v", m.Name, p, i, b, got, want)
				}
			}
		}
	}
}
