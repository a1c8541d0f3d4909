package models

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// opOf returns the op of kind k in ops, failing the test if absent.
func opOf(t testing.TB, ops []Op, k OpKind) Op {
	t.Helper()
	for _, op := range ops {
		if op.Kind == k {
			return op
		}
	}
	t.Fatalf("no %v op in %v", k, kinds(ops))
	return Op{}
}

func kinds(ops []Op) []OpKind {
	ks := make([]OpKind, len(ops))
	for i, op := range ops {
		ks[i] = op.Kind
	}
	return ks
}

func decodes(n int, ctx int64) Batch { return Batch{Decodes: n, DecodeCtx: ctx} }

// prefill is one chunk of p tokens over c cached tokens.
func prefill(p int, c int64) Batch {
	return Batch{Prefills: 1, PrefillTokens: p, PrefillCtx: c,
		PrefillPairs: float64(p) * (float64(c) + float64(p+1)/2)}
}

func TestOpsEmptyBatch(t *testing.T) {
	m := builtin(t, "llama-3.1-8b")
	dst := make([]Op, 2, 8)
	got := m.Ops(Batch{}, Parallel{TP: 1}, dst)
	if len(got) != 2 || &got[0] != &dst[0] {
		t.Errorf("empty batch: got %d ops, want dst unchanged (2)", len(got))
	}
}

func TestOpsKindsPresent(t *testing.T) {
	dense := []OpKind{OpEmbed, OpNorm, OpQKV, OpRoPE, OpAttnDecode, OpOutProj, OpMLPUp, OpAct, OpMLPDown, OpAdd, OpLMHead}
	moe := []OpKind{OpEmbed, OpNorm, OpQKV, OpRoPE, OpAttnPrefill, OpOutProj, OpAllReduce, OpMoERouter, OpMLPUp, OpAct, OpMLPDown, OpAdd, OpLMHead}
	mixed := []OpKind{OpEmbed, OpNorm, OpQKV, OpRoPE, OpAttnPrefill, OpAttnDecode, OpOutProj, OpAllReduce, OpMLPUp, OpAct, OpMLPDown, OpAdd, OpLMHead}
	both := prefill(100, 0)
	both.Decodes, both.DecodeCtx = 4, 400
	tests := []struct {
		model string
		b     Batch
		tp    int
		want  []OpKind
	}{
		{"llama-3.1-8b", decodes(8, 800), 1, dense}, // no prefill, no all-reduce, no router
		{"mixtral-8x7b", prefill(512, 0), 2, moe},   // no decode
		{"llama-3.1-70b", both, 4, mixed},           // everything a dense model has
	}
	for _, tc := range tests {
		got := kinds(builtin(t, tc.model).Ops(tc.b, Parallel{TP: tc.tp}, nil))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s TP %d: kinds %v, want %v", tc.model, tc.tp, got, tc.want)
		}
	}
}

func TestOpsQKV(t *testing.T) {
	m := builtin(t, "llama-3.1-8b")
	tests := []struct {
		tp           int
		flops, bytes float64
	}{
		// N = 4096 + 2·1024 = 6144. FLOPs 2·1·4096·6144; bytes: weights
		// 4096·6144·2 = 50,331,648 plus activations (4096 + 6144)·2 = 20,480.
		{1, 50331648, 50352128},
		// Per GPU N = 2048 + 2·512 = 3072: weights 4096·3072·2 = 25,165,824,
		// activations (4096 + 3072)·2 = 14,336.
		{2, 25165824, 25180160},
	}
	for _, tc := range tests {
		op := opOf(t, m.Ops(decodes(1, 0), Parallel{TP: tc.tp}, nil), OpQKV)
		if op.FLOPs != tc.flops || op.Bytes != tc.bytes || op.Count != 32 || op.Tokens != 1 || op.Compute != BF16 {
			t.Errorf("TP %d: qkv %+v, want FLOPs %v, Bytes %v, Count 32, Tokens 1", tc.tp, op, tc.flops, tc.bytes)
		}
	}
	// The GEMM computes in the weight precision.
	if op := opOf(t, m.Ops(decodes(1, 0), Parallel{TP: 1, Weights: FP8}, nil), OpQKV); op.Compute != FP8 || op.Bytes != 4096*6144+20480 {
		t.Errorf("FP8 qkv: %+v, want Compute fp8 and Bytes 4096·6144·1 + 20,480", op)
	}
}

// TestOpsGEMMDims checks N and K, the per-GPU output and reduction
// dimensions of each GEMM (llama-3.1-8b: hidden 4096, 32 heads and 8 KV
// heads of 128, ffn 14336, gated, vocab 128256; mixtral-8x7b: hidden 4096,
// 8 experts of ffn 14336, top 2), and that a GEMM's FLOPs are 2·M·N·K with
// M = Tokens (the LM head adds its final norm's 4·T·hidden).
func TestOpsGEMMDims(t *testing.T) {
	tests := []struct {
		model string
		tp    int
		kind  OpKind
		n, k  int
	}{
		// QKV at TP 2: N = (4096 + 2·1024)/2 = 3072, K = 4096.
		{"llama-3.1-8b", 2, OpQKV, 3072, 4096},
		// QKV at TP 1: N = 4096 + 2·8·128 = 6144.
		{"llama-3.1-8b", 1, OpQKV, 6144, 4096},
		// Output projection at TP 2: K = 32·128/2 = 2048, N = 4096.
		{"llama-3.1-8b", 2, OpOutProj, 4096, 2048},
		// Gate+up at TP 2: N = 2·14336/2 = 14336; down: K = 14336/2 = 7168.
		{"llama-3.1-8b", 2, OpMLPUp, 14336, 4096},
		{"llama-3.1-8b", 2, OpMLPDown, 4096, 7168},
		// LM head at TP 2: N = 128256/2 = 64128.
		{"llama-3.1-8b", 2, OpLMHead, 64128, 4096},
		// Mixtral at TP 2: one expert's gate+up N = 2·14336/2 = 14336, down K = 7168;
		// the router is replicated: N = 8 experts.
		{"mixtral-8x7b", 2, OpMLPUp, 14336, 4096},
		{"mixtral-8x7b", 2, OpMLPDown, 4096, 7168},
		{"mixtral-8x7b", 2, OpMoERouter, 8, 4096},
	}
	b := Batch{Prefills: 1, PrefillTokens: 300, PrefillPairs: 300 * 150.5, Decodes: 7, DecodeCtx: 700}
	for _, tc := range tests {
		op := opOf(t, builtin(t, tc.model).Ops(b, Parallel{TP: tc.tp}, nil), tc.kind)
		if op.N != tc.n || op.K != tc.k {
			t.Errorf("%s TP %d %v: N, K = %d, %d, want %d, %d", tc.model, tc.tp, tc.kind, op.N, op.K, tc.n, tc.k)
		}
		flops := 2 * float64(op.Tokens) * float64(op.N) * float64(op.K)
		if tc.kind == OpLMHead {
			flops += 4 * 307 * 4096 // RMSNorm over T = 307 tokens
		}
		if relErr(op.FLOPs, flops) > 1e-12 {
			t.Errorf("%s TP %d %v: FLOPs %g, want 2·M·N·K = %g", tc.model, tc.tp, tc.kind, op.FLOPs, flops)
		}
	}
	// Operators that are not GEMMs have none, but for the expert
	// activation: Mixtral's expert width per GPU 14336/2 = 7168 and its
	// hidden size 4096.
	for _, op := range builtin(t, "mixtral-8x7b").Ops(b, Parallel{TP: 2}, nil) {
		switch {
		case op.Kind == OpAct && op.Experts > 0:
			if op.N != 7168 || op.K != 4096 {
				t.Errorf("expert act: N, K = %d, %d, want 7168, 4096", op.N, op.K)
			}
		case op.Kind == OpQKV || op.Kind == OpOutProj || op.Kind == OpMoERouter || op.Kind == OpMLPUp || op.Kind == OpMLPDown || op.Kind == OpLMHead:
			if op.N <= 0 || op.K <= 0 {
				t.Errorf("%v: N, K = %d, %d", op.Kind, op.N, op.K)
			}
		default:
			if op.N != 0 || op.K != 0 {
				t.Errorf("%v is not a GEMM but has N, K = %d, %d", op.Kind, op.N, op.K)
			}
		}
	}
}

// weightBytes is the part of an op's bytes that does not grow with the
// batch: Bytes(T) = W + a·T for GEMMs and norms, so W = 2·Bytes(1) − Bytes(2).
func weightBytes(t *testing.T, m *Model, p Parallel, k OpKind) float64 {
	b1 := opOf(t, m.Ops(decodes(1, 0), p, nil), k).Bytes
	b2 := opOf(t, m.Ops(decodes(2, 0), p, nil), k).Bytes
	return 2*b1 - b2
}

func TestOpsTPHalvesShardedWeights(t *testing.T) {
	for _, name := range []string{"llama-3.1-8b", "mixtral-8x7b", "phi-2"} {
		m := builtin(t, name)
		p1, p2 := Parallel{TP: 1}, Parallel{TP: 2}
		for _, k := range []OpKind{OpQKV, OpOutProj, OpMLPUp, OpMLPDown, OpLMHead} {
			if m.IsMoE() && (k == OpMLPUp || k == OpMLPDown) {
				continue // touched experts are not linear in T; see TestOpsMoE
			}
			w1, w2 := weightBytes(t, m, p1, k), weightBytes(t, m, p2, k)
			if k == OpLMHead { // the final norm's weights are replicated
				norm := m.normElems() * 2
				w1, w2 = w1-norm, w2-norm
			}
			if relErr(w2, w1/2) > 1e-12 {
				t.Errorf("%s %v: TP 2 weight bytes %.0f, want half of TP 1's %.0f", name, k, w2, w1)
			}
		}
		// Norm weights are replicated.
		if w1, w2 := weightBytes(t, m, p1, OpNorm), weightBytes(t, m, p2, OpNorm); w1 != w2 {
			t.Errorf("%s norm: TP 2 weight bytes %.0f != TP 1 %.0f", name, w2, w1)
		}
	}
}

func TestOpsAttention(t *testing.T) {
	m := builtin(t, "llama-3.1-8b")
	// KV bytes per token per layer: 2 · 8 heads · 128 · 2 B = 4096.
	pre := opOf(t, m.Ops(prefill(1000, 0), Parallel{TP: 1}, nil), OpAttnPrefill)
	// Pairs 1000·1001/2 = 500,500; FLOPs 4 · 32 heads · 128 · 500,500.
	// Bytes: Q and O 2·1000·4096·2 = 16,384,000; KV read 1000·4096 =
	// 4,096,000; KV written 1000·4096 = 4,096,000.
	if pre.FLOPs != 8200192000 || pre.Bytes != 24576000 || pre.Tokens != 1000 || pre.Count != 32 || pre.Compute != BF16 {
		t.Errorf("prefill attention %+v", pre)
	}
	dec := opOf(t, m.Ops(decodes(3, 300), Parallel{TP: 1}, nil), OpAttnDecode)
	// Keys 300 + 3 (each decode sees itself); FLOPs 4·32·128·303.
	// Bytes: Q and O 2·3·4096·2 = 49,152; KV read 303·4096 = 1,241,088;
	// KV written 3·4096 = 12,288.
	if dec.FLOPs != 4964352 || dec.Bytes != 1302528 || dec.Tokens != 3 {
		t.Errorf("decode attention %+v", dec)
	}
	// FP8 KV halves the cache traffic only.
	dec8 := opOf(t, m.Ops(decodes(3, 300), Parallel{TP: 1, KV: FP8}, nil), OpAttnDecode)
	if want := 49152 + (1241088+12288)/2.0; dec8.Bytes != want || dec8.FLOPs != dec.FLOPs {
		t.Errorf("FP8-KV decode attention bytes %v, want %v", dec8.Bytes, want)
	}
	// Prior context adds its KV read to a chunk: 500 cached tokens more.
	pre2 := opOf(t, m.Ops(prefill(1000, 500), Parallel{TP: 1}, nil), OpAttnPrefill)
	if got := pre2.Bytes - pre.Bytes; got != 500*4096 {
		t.Errorf("500 cached tokens add %v bytes, want 500·4096", got)
	}
}

func TestOpsAllReduce(t *testing.T) {
	m := builtin(t, "llama-3.1-70b")
	op := opOf(t, m.Ops(decodes(10, 1000), Parallel{TP: 4}, nil), OpAllReduce)
	// Two per layer (80 layers); message 10 tokens · 8192 · 2 B.
	if op.Count != 160 || op.CommBytes != 163840 || op.FLOPs != 0 || op.Bytes != 0 || op.Tokens != 10 {
		t.Errorf("all-reduce %+v", op)
	}
}

func TestOpsLMHead(t *testing.T) {
	m := builtin(t, "llama-3.1-8b")
	b := Batch{Prefills: 2, PrefillTokens: 100, PrefillPairs: 2 * 50 * 25.5, Decodes: 3, DecodeCtx: 30}
	op := opOf(t, m.Ops(b, Parallel{TP: 1}, nil), OpLMHead)
	// Rows 2 + 3 = 5 of T = 103. FLOPs 2·5·4096·128256 = 5,253,365,760 plus
	// the final RMSNorm 4·103·4096 = 1,687,552. Bytes: weights
	// 4096·128256·2 = 1,050,673,152; GEMM activations (5·4096 + 5·128256)·2
	// = 1,323,520; norm over 103 tokens 2·103·4096·2 = 1,687,552 and its
	// weights 4096·2 = 8192.
	if op.Tokens != 5 || op.Count != 1 || op.FLOPs != 5255053312 || op.Bytes != 1053692416 {
		t.Errorf("lm head %+v", op)
	}
}

func TestOpsMoE(t *testing.T) {
	m := builtin(t, "mixtral-8x7b")
	up := opOf(t, m.Ops(decodes(1, 0), Parallel{TP: 1}, nil), OpMLPUp)
	// One token picks 2 experts: 8·(1 − (1 − 2/8)^1) = 2 touched. Weights
	// 2 · 4096 · (2·14336) · 2 B = 469,762,048; rows 2: activations
	// (2·4096 + 2·28672)·2 = 131,072. FLOPs 2 · 2 rows · 4096 · 28672.
	if up.Bytes != 469893120 || up.FLOPs != 469762048 || up.Tokens != 2 {
		t.Errorf("mixtral one-token up %+v", up)
	}
	// A large batch touches all 8 experts: weight bytes 8·4096·28672·2.
	big := opOf(t, m.Ops(decodes(4096, 0), Parallel{TP: 1}, nil), OpMLPUp)
	act := (4096*2*4096 + 4096*2*28672) * 2.0 // 8192 rows in and out
	if got, want := big.Bytes-act, 8*4096*28672*2.0; relErr(got, want) > 1e-9 {
		t.Errorf("4096 tokens: expert weight bytes %.0f, want %.0f", got, want)
	}
	router := opOf(t, m.Ops(decodes(1, 0), Parallel{TP: 2}, nil), OpMoERouter)
	// Replicated: 4096 × 8 weights at 2 B whatever TP, + (4096 + 8)·2.
	if router.Bytes != 4096*8*2+(4096+8)*2 || router.FLOPs != 2*4096*8 {
		t.Errorf("router %+v", router)
	}
}

// MoEOps with the expected touched experts is Ops's MoE MLP of one layer;
// a forced count changes only the expert weights read.
func TestMoEOps(t *testing.T) {
	m := builtin(t, "qwen3-30b-a3b")
	p := Parallel{TP: 1}
	all := m.Ops(prefill(16, 0), p, nil)
	// 16 tokens of top-8 over 128 experts: 128·(1 − (120/128)^16) touched.
	touched := expectedExperts(128, 8, 16)
	got := m.MoEOps(16, touched, p, nil)
	for i, k := range []OpKind{OpMoERouter, OpMLPUp, OpAct, OpMLPDown} {
		want := opOf(t, all, k)
		want.Count = 1
		if k != OpMoERouter && want.Experts != touched {
			t.Errorf("Ops %v: Experts %v, want %v", k, want.Experts, touched)
		}
		if got[i] != want {
			t.Errorf("MoEOps %v = %+v, want Ops's %+v", k, got[i], want)
		}
	}
	// 64 experts forced: up reads 64 · 2048 · (2·768) · 2 B = 402,653,184
	// of weights plus (128 rows)·(2048 + 1536)·2 = 917,504 of activations.
	up := m.MoEOps(16, 64, p, nil)[1]
	if up.Bytes != 402653184+917504 || up.Experts != 64 || up.Tokens != 128 {
		t.Errorf("forced 64 experts: up %+v", up)
	}
	if dense := opOf(t, builtin(t, "llama-3.1-8b").Ops(prefill(16, 0), p, nil), OpMLPUp); dense.Experts != 0 {
		t.Errorf("a dense MLP's up-projection has Experts %v, want 0", dense.Experts)
	}
	for _, bad := range []struct {
		tokens  int
		touched float64
	}{{0, 8}, {16, 0}, {16, 129}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MoEOps(%d, %v) did not panic", bad.tokens, bad.touched)
				}
			}()
			m.MoEOps(bad.tokens, bad.touched, p, nil)
		}()
	}
}

func TestExpectedExperts(t *testing.T) {
	tests := []struct {
		e, k, n, want float64
	}{
		{8, 2, 1, 2},   // one token touches exactly k
		{128, 4, 1, 4}, // idem
		{8, 2, 0, 0},   // no token, no expert
		{8, 8, 3, 8},   // top-k = all
		{128, 4, 32, 128 * (1 - math.Pow(124.0/128, 32))}, // ≈ 81.66
	}
	for _, tc := range tests {
		if got := expectedExperts(tc.e, tc.k, tc.n); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("expectedExperts(%v, %v, %v) = %v, want %v", tc.e, tc.k, tc.n, got, tc.want)
		}
	}
	prev := 0.0
	for n := 1.0; n <= 1<<16; n *= 2 {
		got := expectedExperts(128, 4, n)
		if got < prev || got > 128 {
			t.Fatalf("expectedExperts(128, 4, %v) = %v after %v", n, got, prev)
		}
		prev = got
	}
	if prev < 128-1e-9 {
		t.Errorf("65536 tokens touch %v of 128 experts, want all", prev)
	}
}

// For a batch of decodes every GEMM row is a token, so the GEMM FLOPs of a
// forward pass summed over the TP group are 2 × (parameters multiplied) ×
// tokens: 2 × ActiveParams × T, less norms and biases (under 0.01 %).
func TestOpsLinearFLOPsMatchActiveParams(t *testing.T) {
	const T = 4096
	gemms := []OpKind{OpQKV, OpOutProj, OpMoERouter, OpMLPUp, OpMLPDown, OpLMHead}
	for _, m := range Builtin().All() {
		for _, tp := range []int{1, 2, 4, 8} {
			p := Parallel{TP: tp}
			if m.CheckParallel(p) != nil || tp > m.KVHeads {
				continue // replicated KV heads add FLOPs on purpose
			}
			var sum float64
			for _, op := range m.Ops(decodes(T, 0), p, nil) {
				if !slices.Contains(gemms, op.Kind) {
					continue
				}
				f := float64(op.Count) * op.FLOPs
				if op.Kind == OpLMHead {
					f -= m.normFLOPs() * T * float64(m.Hidden) // the final norm rides with the LM head
				}
				if op.Kind != OpMoERouter { // the router is replicated, not split
					f *= float64(tp)
				}
				sum += f
			}
			if m.IsMLA() {
				// MLA: q_a and kv_a are replicated, not split; kv_b's
				// parameters are multiplied inside decode attention (the
				// W_UK and W_UV absorptions), 2·T·kv_lora_rank·heads·(nope + v).
				sum -= float64(tp-1) * 2 * T * float64(m.Hidden) * float64(m.QLoRARank+m.KVLoRARank+m.RopeHeadDim) * float64(m.Layers)
				sum += 2 * T * float64(m.KVLoRARank) * float64(m.Heads) * (m.nopeDim() + float64(m.VHeadDim)) * float64(m.Layers)
			}
			if e := relErr(sum, 2*m.ActiveParams()*T); e > 1e-3 {
				t.Errorf("%s TP %d: GEMM FLOPs %.4g vs 2·active·T %.4g: off by %.3f%%", m.Name, tp, sum, 2*m.ActiveParams()*T, 100*e)
			}
		}
	}
}

func TestOpsAllFiniteAndPositive(t *testing.T) {
	b := prefill(300, 1000)
	b.Decodes, b.DecodeCtx = 7, 7000
	for _, m := range Builtin().All() {
		for _, tp := range []int{1, 2, 8} {
			p := Parallel{TP: tp, Weights: FP8, KV: FP8}
			if m.CheckParallel(p) != nil {
				continue
			}
			for _, op := range m.Ops(b, p, nil) {
				ok := op.Count > 0 && op.Tokens > 0 && !math.IsNaN(op.FLOPs) && !math.IsInf(op.FLOPs, 0) &&
					op.FLOPs >= 0 && op.Bytes >= 0 && op.CommBytes >= 0
				if op.Kind == OpAllReduce {
					ok = ok && op.CommBytes > 0
				} else {
					ok = ok && op.Bytes > 0 && (op.FLOPs > 0 || op.Kind == OpEmbed)
				}
				if !ok {
					t.Errorf("%s TP %d: bad op %+v", m.Name, tp, op)
				}
			}
		}
	}
}

func TestOpsZeroAlloc(t *testing.T) {
	b := prefill(512, 2048)
	b.Decodes, b.DecodeCtx = 64, 64*1500
	for _, name := range []string{"llama-3.1-70b", "mixtral-8x7b"} {
		m := builtin(t, name)
		dst := make([]Op, 0, NumOpKinds)
		allocs := testing.AllocsPerRun(100, func() {
			dst = m.Ops(b, Parallel{TP: 4, Weights: FP8, KV: FP8}, dst[:0])
		})
		if allocs != 0 {
			t.Errorf("%s: Ops allocates %v times per call", name, allocs)
		}
	}
}

func BenchmarkOps(b *testing.B) {
	batch := prefill(512, 2048)
	batch.Decodes, batch.DecodeCtx = 64, 64*1500
	for _, bc := range []struct {
		model string
		tp    int
	}{{"llama-3.1-70b", 4}, {"mixtral-8x7b", 2}} {
		m := builtin(b, bc.model)
		p := Parallel{TP: bc.tp, Weights: FP8, KV: FP8}
		b.Run(bc.model, func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]Op, 0, NumOpKinds)
			for b.Loop() {
				dst = m.Ops(batch, p, dst[:0])
			}
		})
	}
}

// TestBatchOpsSplit checks the contract that lets step models cache by token
// count: for random batches, the token-only operators of Ops depend only on
// b.Tokens(), and the others are exactly BatchOps(b).
func TestBatchOpsSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, name := range []string{"llama-3.1-8b", "mixtral-8x7b", "phi-2"} {
		m, err := Builtin().Get(name)
		if err != nil {
			t.Fatal(err)
		}
		p := Parallel{TP: 1, Weights: BF16, KV: FP8}
		for range 200 {
			pre := r.IntN(3000)
			b := Batch{PrefillTokens: pre, Decodes: r.IntN(200)}
			if pre > 0 {
				b.Prefills = 1 + r.IntN(3)
				b.PrefillCtx = int64(r.IntN(5000))
				b.PrefillPairs = float64(pre) * (float64(b.PrefillCtx) + float64(pre+1)/2)
			}
			b.DecodeCtx = int64(b.Decodes * r.IntN(4000))
			if b.Tokens() == 0 {
				continue
			}
			// The same token count as decodes only, with no context.
			plain := Batch{Decodes: b.Tokens()}
			var tok, rest []Op
			for _, op := range m.Ops(b, p, nil) {
				if TokenOnly(op.Kind) {
					tok = append(tok, op)
				} else {
					rest = append(rest, op)
				}
			}
			var tokPlain []Op
			for _, op := range m.Ops(plain, p, nil) {
				if TokenOnly(op.Kind) {
					tokPlain = append(tokPlain, op)
				}
			}
			if !slices.Equal(tok, tokPlain) {
				t.Fatalf("%s %+v: token-only ops differ from those of %d decodes", name, b, b.Tokens())
			}
			if got := m.BatchOps(b, p, nil); !slices.Equal(got, rest) {
				t.Fatalf("%s %+v: BatchOps = %+v, want %+v", name, b, got, rest)
			}
			// AttentionOps is BatchOps but the LM head, which in a batch
			// without prefill is that of its token count as decodes.
			att := slices.DeleteFunc(slices.Clone(rest), func(op Op) bool { return op.Kind == OpLMHead })
			if got := m.AttentionOps(b, p, nil); !slices.Equal(got, att) {
				t.Fatalf("%s %+v: AttentionOps = %+v, want %+v", name, b, got, att)
			}
			ops := m.Ops(plain, p, nil)
			i := slices.IndexFunc(ops, func(op Op) bool { return op.Kind == OpLMHead })
			if lm := rest[len(rest)-1]; b.Prefills == 0 && (lm.Kind != OpLMHead || lm != ops[i]) {
				t.Fatalf("%s %+v: LM head %+v is not that of %d decodes", name, b, lm, b.Tokens())
			}
		}
	}
}
