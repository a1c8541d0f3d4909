package models

import (
	"math"
	"testing"
)

// TestVerifyBatchOps: a verification of 8 decodes at 1 + 3 query tokens
// processes 32 tokens; every query row is scored by the LM head; decode
// attention reads each context once and computes q·c + q(q+1)/2 pairs a
// decode.
func TestVerifyBatchOps(t *testing.T) {
	m := mustLlama8B(t)
	p := Parallel{TP: 1, Weights: BF16, KV: BF16}
	b := Batch{Decodes: 8, DecodeCtx: 8000, DecodeQuery: 4}
	if b.Tokens() != 32 || b.DecodeTokens() != 32 {
		t.Fatalf("tokens %d, decode tokens %d, want 32", b.Tokens(), b.DecodeTokens())
	}
	var attn, head Op
	for _, op := range m.Ops(b, p, nil) {
		switch op.Kind {
		case OpAttnDecode:
			attn = op
		case OpLMHead:
			head = op
		case OpQKV:
			if op.Tokens != 32 {
				t.Errorf("QKV rows %d, want 32", op.Tokens)
			}
		}
	}
	if head.Tokens != 32 {
		t.Errorf("LM head rows %d, want 32 (8 decodes × 4)", head.Tokens)
	}
	// pairs = 4·8000 + 8·4·5/2 = 32080; FLOPs = 4·heads·head_dim·pairs.
	want := 4 * float64(m.Heads) * float64(m.HeadDim) * 32080
	if math.Abs(attn.FLOPs-want) > 1e-6*want {
		t.Errorf("attention FLOPs %g, want %g", attn.FLOPs, want)
	}
	// KV read: 8000 + 8·4 tokens; written 32; at 2·8 heads·128·2 B = 4096 B a token a layer.
	kvTok := 2 * float64(m.KVHeads) * float64(m.HeadDim) * 2
	wantBytes := 2*32*float64(m.Heads*m.HeadDim)*2 + (8000+32)*kvTok + 32*kvTok
	if math.Abs(attn.Bytes-wantBytes) > 1e-6*wantBytes {
		t.Errorf("attention bytes %g, want %g", attn.Bytes, wantBytes)
	}
	// DecodeQuery 0 and 1 are the plain decode.
	for _, q := range []int{0, 1} {
		b0 := Batch{Decodes: 8, DecodeCtx: 8000, DecodeQuery: q}
		if b0.Tokens() != 8 {
			t.Errorf("query %d: tokens %d, want 8", q, b0.Tokens())
		}
	}
}

// TestDraftHeadWeights: the drafters' added weights on Llama-3.1-8B
// (hidden 4096, heads 32, kv_heads 8, head_dim 128, ffn 14336, BF16).
// One layer: QKV 4096·(4096 + 2·1024) + O 4096² + MLP 3·4096·14336 =
// 25,165,824 + 16,777,216 + 176,160,768 = 218,103,808 weights, plus 2
// norms (8192) and the final norm (4096) at 2 B.
func TestDraftHeadWeights(t *testing.T) {
	m := mustLlama8B(t)
	p := Parallel{TP: 1, Weights: BF16, KV: BF16}
	layer := 218103808.0*2 + (8192+4096)*2
	h := 4096.0
	for _, c := range []struct {
		method string
		want   float64
	}{
		{DraftEagle, layer + 2*h*h*2},              // shared head; fc 2h×h
		{DraftEagle3, layer + 32000*h*2 + 3*h*h*2}, // own 32k head; fc 3h×h
		{DraftMTP, layer + 2*h*h*2},                // shared head; eh_proj 2h×h
	} {
		d, err := m.DraftHead(c.method, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.WeightBytesPerGPU(p); math.Abs(got-c.want) > 1 {
			t.Errorf("%s: %g bytes, want %g", c.method, got, c.want)
		}
		// KV of one layer: 2·8·128·2 = 4096 B a token.
		if got := d.Model.KVBytesPerTokenPerGPU(p); got != 4096 {
			t.Errorf("%s: KV %g B/token, want 4096", c.method, got)
		}
	}
	if _, err := m.DraftHead("medusa", 0); err == nil {
		t.Error("unknown method accepted")
	}
}

func mustLlama8B(t *testing.T) *Model {
	t.Helper()
	m, err := Builtin().Lookup("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	return m
}
