package hardware

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/models"
)

// StepModel prices whole iterations (forward passes over a batch) of one
// instance: a model on a GPU type at a parallel configuration, with a kernel
// model. It is what the engine calls once per simulated step.
//
// A StepModel keeps a scratch operator list, so it is not safe for
// concurrent use; give each goroutine (each simulation run) its own.
type StepModel struct {
	m *models.Model
	g *GPU
	p models.Parallel
	k KernelModel
	// inner is k under the engine wrappers (unwrapKernel): they pass a
	// step's attention and LM head through to it, so those are priced by
	// inner directly, and by dec (inner as a DecodeKernel, or nil) for a
	// decode-only step's attention.
	inner        KernelModel
	dec          DecodeKernel
	iterOverhead float64
	ops          []models.Op // scratch, reused by every call
	// bp builds a step's attention and LM head with the layout's
	// constants computed once, into bops (no slice to grow).
	bp   models.BatchPricer
	bops [3]models.Op
	// prices holds, per batch token count below maxCachedTokens, the
	// time, FLOPs and bytes of the operators whose cost depends on the
	// token count alone (models.TokenOnly): most of a step's operators,
	// and the LM head of a batch without prefill. A step then prices only
	// attention afresh (and the LM head of a batch with prefill chunks).
	// It is s's own table, or the process-wide one of step models with the
	// same model, GPU, layout and kernel (SharePrices), filled by
	// whichever prices a count first; seen keeps the chunks of it s has
	// met, so that a cached count is two loads.
	prices *priceTable
	seen   [maxCachedTokens / priceChunk]*partChunk
	own    tokenPart // tokenPart's answer when it is not in prices
}

type tokenPart struct {
	sec, flops, bytes float64
	embed             float64 // the embedding's share of sec (a pipeline's first stage runs it)
	// lm is the LM head's time, FLOPs and bytes (Count × one occurrence)
	// in a batch of this many tokens and no prefill, where every token
	// samples: its LM head is that of Ops(Batch{Decodes: n}).
	lm [3]float64
}

// maxCachedTokens bounds the token-count table (56 bytes a count, ≈ 3.5
// MiB when every count below it is priced).
const maxCachedTokens = 1 << 16

// NewStepModel returns the step model of m on g at p, with kernel model k
// and a fixed per-iteration (CPU scheduling, sampling, launch) overhead in
// seconds. It checks m.CheckParallel(p), that the weights fit in the GPU's
// memory (PlanMemory at utilization 1 without activation reserve: the KV
// budget at the user's utilization is PlanMemory's business), and, when k
// is a Roofline, that its GPU and TP match and its efficiencies are valid.
func NewStepModel(m *models.Model, g *GPU, p models.Parallel, k KernelModel, iterOverhead float64) (*StepModel, error) {
	return newStepModel(m, g, p, k, iterOverhead, true)
}

// newStepModel is NewStepModel; fit says whether to check that the whole
// model's weights fit one GPU (a pipeline stage holds only some layers:
// NewPipelineStep checks each stage instead).
func newStepModel(m *models.Model, g *GPU, p models.Parallel, k KernelModel, iterOverhead float64, fit bool) (*StepModel, error) {
	if m == nil || g == nil || k == nil {
		return nil, fmt.Errorf("hardware: NewStepModel: nil model, GPU or kernel model")
	}
	if !(iterOverhead >= 0) || math.IsInf(iterOverhead, 0) {
		return nil, fmt.Errorf("hardware: iteration overhead must be finite and >= 0, got %v", iterOverhead)
	}
	if err := m.CheckParallel(p); err != nil {
		return nil, err
	}
	var rf *Roofline
	switch r := unwrapKernel(k).(type) { // a wrapped kernel is checked as the kernel it wraps
	case Roofline:
		rf = &r
	case *Roofline:
		rf = r
	}
	if rf != nil {
		if rf.GPU == nil {
			return nil, fmt.Errorf("hardware: roofline has no GPU")
		}
		if rf.GPU != g && rf.GPU.Name != g.Name {
			return nil, fmt.Errorf("hardware: roofline is for gpu %q but the step model for gpu %q", rf.GPU.Name, g.Name)
		}
		if rf.TP != p.TP {
			return nil, fmt.Errorf("hardware: roofline has tp %d but the step model tp %d", rf.TP, p.TP)
		}
		if err := rf.Eff.Validate(); err != nil {
			return nil, err
		}
	}
	if fit {
		if _, err := PlanMemory(m, g, p, 1, DefaultBlockSize, 0); err != nil {
			return nil, err
		}
	}
	s := &StepModel{m: m, g: g, p: p, k: k, inner: unwrapKernel(k), iterOverhead: iterOverhead, prices: &priceTable{}}
	s.dec, _ = s.inner.(DecodeKernel)
	s.ops = make([]models.Op, 0, models.NumOpKinds)
	s.bp = m.BatchPricer(p)
	return s, nil
}

// Model, GPU, Parallel, Kernel and IterOverhead return what s was built with.
func (s *StepModel) Model() *models.Model { return s.m }

// GPU returns the GPU type.
func (s *StepModel) GPU() *GPU { return s.g }

// Parallel returns the parallel configuration.
func (s *StepModel) Parallel() models.Parallel { return s.p }

// Kernel returns the kernel model.
func (s *StepModel) Kernel() KernelModel { return s.k }

// IterOverhead returns the fixed per-iteration overhead in seconds.
func (s *StepModel) IterOverhead() float64 { return s.iterOverhead }

// StepTime returns the seconds one iteration over b takes:
//
//	iterOverhead + Σ_op op.Count · k.OpTime(op)
//
// over the operators m.Ops lists for b. An empty batch (no tokens) takes 0.
// It does not allocate. See Step.
func (s *StepModel) StepTime(b models.Batch) float64 {
	sec, _, _ := s.Step(b)
	return sec
}

// Step returns an iteration's time (as StepTime) and its FLOPs and HBM
// bytes on one GPU (as Work) in one pass. The operators that depend only on
// the token count are priced once per token count and cached, so the kernel
// model must be a pure function of the operator (KernelModel's contract);
// the sum is then taken in a fixed order (cached part, then attention and LM
// head), so results are deterministic but may differ from Breakdown's sum in
// the last bits. It does not allocate once a token count has been seen.
func (s *StepModel) Step(b models.Batch) (sec, flops, bytes float64) {
	// b.Tokens() from b's fields: the value-receiver call (and
	// DecodeTokens' inside it) copied b through memory twice.
	n := b.PrefillTokens + b.Decodes*max(b.DecodeQuery, 1)
	if n <= 0 {
		return 0, 0, 0
	}
	tp := s.tokenPart(n)
	sec, flops, bytes = tp.sec, tp.flops, tp.bytes
	if b.Prefills == 0 && b.PrefillTokens == 0 && s.dec != nil {
		// A decode-only step (it has decodes: n > 0): batchOps' one
		// operator, priced by the kernel's decode path (the same bits).
		op := &s.bops[0]
		s.bp.DecodeInto(&b, op)
		c := float64(op.Count)
		if op.Count != 0 {
			sec += c * s.dec.DecodeTime(op)
		}
		flops += c * op.FLOPs
		bytes += c * op.Bytes
		sec, flops, bytes = sec+tp.lm[0], flops+tp.lm[1], bytes+tp.lm[2]
		return s.iterOverhead + sec, flops, bytes
	}
	// BatchOps' operators in its order, but for a batch without prefill
	// the LM head's Count × time, FLOPs and bytes come from tp (the same
	// products, so the same bits).
	ops, cached := s.batchOps(&b)
	for i := range ops {
		op := &ops[i]
		c := float64(op.Count)
		if op.Count != 0 {
			sec += c * s.inner.OpTime(op)
		}
		flops += c * op.FLOPs
		bytes += c * op.Bytes
	}
	if cached {
		sec, flops, bytes = sec+tp.lm[0], flops+tp.lm[1], bytes+tp.lm[2]
	}
	return s.iterOverhead + sec, flops, bytes
}

// batchOps returns BatchOps(b) (b with tokens), or for a batch without
// prefill only its attention, and says which: such a batch samples every
// token, so its LM head is that of its token count's tokenPart (lm). A
// batch with prefill chunks samples its decodes' tokens and one row a
// chunk (a 100k-request run's 78,644 mixed steps have 62,281 distinct
// pairs of token count and sampled rows: a cache would rarely hit). The
// operators are s's scratch, valid until the next call.
func (s *StepModel) batchOps(b *models.Batch) (ops []models.Op, lmCached bool) {
	n := 0
	if b.PrefillTokens > 0 {
		s.bp.PrefillInto(b, &s.bops[n])
		n++
	}
	if b.Decodes > 0 {
		s.bp.DecodeInto(b, &s.bops[n])
		n++
	}
	if b.Prefills == 0 && b.PrefillTokens == 0 {
		return s.bops[:n], true
	}
	if s.bp.LMHeadInto(b, &s.bops[n]) {
		n++
	}
	return s.bops[:n], false
}

// tokenPart returns the summed token-only operators for n tokens: an
// entry of s.prices, or s.own, valid until the next call.
func (s *StepModel) tokenPart(n int) *tokenPart {
	if u := uint(n); u < maxCachedTokens {
		if c := s.seen[u/priceChunk]; c != nil && c.state[u%priceChunk].Load() == entryReady {
			return &c.parts[u%priceChunk]
		}
	}
	return s.priceTokens(n)
}

// priceTokens is tokenPart for a token count not in s.seen's chunks
// (kept out of tokenPart so that the cached case inlines): the table's
// entry when another step model has priced it, else computed and
// published.
func (s *StepModel) priceTokens(n int) *tokenPart {
	if n < 0 || n >= maxCachedTokens {
		s.own = s.computeTokens(n)
		return &s.own
	}
	c := s.seen[n/priceChunk]
	if c == nil {
		c = s.prices.chunk(n)
		s.seen[n/priceChunk] = c
	}
	if tp, ok := c.ready(n); ok {
		return tp
	}
	tp := s.computeTokens(n)
	if c.publish(n, tp) {
		return &c.parts[n%priceChunk]
	}
	s.own = tp // another step model is writing the same bits
	return &s.own
}

// computeTokens sums the token-only operators (and the LM head of a batch
// without prefill) of a batch of n tokens.
func (s *StepModel) computeTokens(n int) tokenPart {
	var tp tokenPart
	s.ops = s.m.Ops(models.Batch{Decodes: n}, s.p, s.ops[:0])
	for i := range s.ops {
		op := &s.ops[i]
		if op.Kind == models.OpLMHead {
			c := float64(op.Count)
			if op.Count != 0 {
				tp.lm[0] = c * s.k.OpTime(op)
			}
			tp.lm[1], tp.lm[2] = c*op.FLOPs, c*op.Bytes
		}
		if !models.TokenOnly(op.Kind) {
			continue
		}
		c := float64(op.Count)
		if op.Count != 0 {
			t := c * s.k.OpTime(op)
			tp.sec += t
			if op.Kind == models.OpEmbed {
				tp.embed = t
			}
		}
		tp.flops += c * op.FLOPs
		tp.bytes += c * op.Bytes
	}
	return tp
}

// OpTime is one operator class's share of an iteration, for reports.
type OpTime struct {
	Kind    models.OpKind
	Count   int     // occurrences per forward pass
	Seconds float64 // Count × the time of one occurrence
	FLOPs   float64 // Count × FLOPs of one occurrence, on one GPU
	Bytes   float64 // Count × HBM bytes of one occurrence, on one GPU
}

// Breakdown returns the per-operator-class terms of StepTime(b), in the
// order m.Ops lists them; StepTime(b) = IterOverhead() + Σ Seconds. An empty
// batch gives nil. It allocates.
func (s *StepModel) Breakdown(b models.Batch) []OpTime {
	if b.Tokens() == 0 {
		return nil
	}
	ops := s.m.Ops(b, s.p, nil)
	out := make([]OpTime, 0, len(ops))
	for i := range ops {
		op := &ops[i]
		c := float64(op.Count)
		sec := 0.0
		if op.Count != 0 {
			sec = c * s.k.OpTime(op)
		}
		out = append(out, OpTime{Kind: op.Kind, Count: op.Count, Seconds: sec, FLOPs: c * op.FLOPs, Bytes: c * op.Bytes})
	}
	return out
}

// Work returns the FLOPs and HBM bytes of one iteration over b on one GPU of
// the TP group (Σ Count × per-occurrence values): divide by the step time
// and the GPU's peaks for MFU and MBU. It does not allocate. See Step.
func (s *StepModel) Work(b models.Batch) (flops, bytes float64) {
	_, flops, bytes = s.Step(b)
	return flops, bytes
}
