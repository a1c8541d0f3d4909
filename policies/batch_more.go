package policies

import "github.com/servesim/servesim/sim"

// Mixed is Orca-style iteration-level batching without chunking (vLLM V1
// with chunked prefill off): every iteration runs all decodes and adds whole
// prompts from the queue head while they fit the rest of the token budget,
// the sequence limit and the free blocks. With a budget at least as long as
// every prompt it runs the same iterations as Chunked.
type Mixed struct{}

// DecodeFirst is decode-prioritized continuous batching: every iteration
// runs all decodes, and whole prompts join (as in Mixed) only while fewer
// than Refill requests are decoding, so a busy decode batch is never slowed
// by prefills. Refill ≤ 0 means half of max_num_seqs (rounded up).
type DecodeFirst struct{ Refill int }

// Static is FasterTransformer-style static batching: when the instance is
// empty, a batch of whole prompts is taken from the queue head (up to
// max_num_seqs, the token budget and the free blocks) and runs until every
// request in it has finished; nothing joins a running batch.
type Static struct{}

// Dynamic is static batching with a batch-formation delay (as Triton's
// dynamic batcher): an empty instance starts a batch when max_num_seqs
// requests wait, or when the oldest has waited MaxWait.
type Dynamic struct{ MaxWait sim.Time }

var (
	_ Batcher = Mixed{}
	_ Batcher = DecodeFirst{}
	_ Batcher = Static{}
	_ Batcher = Dynamic{}
)

// Name returns "mixed".
func (Mixed) Name() string { return "mixed" }

// Batch runs every decode plus whole prompts that fit.
func (Mixed) Batch(v View, lim Limits, d *Decision) {
	admitWhole(v, lim, d, true)
}

// MaxPrompt: a prompt (or a recompute) must fit one iteration's budget.
func (Mixed) MaxPrompt(lim Limits) int { return lim.MaxNumBatchedTokens }

// Name returns "decode-first".
func (DecodeFirst) Name() string { return "decode-first" }

// Batch runs every decode, and admits whole prompts only below the refill
// level.
func (p DecodeFirst) Batch(v View, lim Limits, d *Decision) {
	refill := p.Refill
	if refill <= 0 {
		refill = (lim.MaxNumSeqs + 1) / 2
	}
	if v.Decoding() >= refill {
		d.Decode = true
		return
	}
	admitWhole(v, lim, d, true)
}

// MaxPrompt: a prompt must fit one iteration's budget.
func (DecodeFirst) MaxPrompt(lim Limits) int { return lim.MaxNumBatchedTokens }

// Name returns "static".
func (Static) Name() string { return "static" }

// Batch decodes the running batch to completion, then forms a new one.
func (Static) Batch(v View, lim Limits, d *Decision) {
	if v.Running() > 0 {
		d.Decode = v.Decoding() > 0
		return
	}
	admitWhole(v, lim, d, false)
}

// MaxPrompt: a prompt must fit one iteration's budget.
func (Static) MaxPrompt(lim Limits) int { return lim.MaxNumBatchedTokens }

// Name returns "dynamic".
func (Dynamic) Name() string { return "dynamic" }

// Batch decodes the running batch to completion; an empty instance waits
// until the batch is full or its oldest request has waited MaxWait.
func (p Dynamic) Batch(v View, lim Limits, d *Decision) {
	if v.Running() > 0 {
		d.Decode = v.Decoding() > 0
		return
	}
	if v.Waiting() == 0 {
		return
	}
	if v.Waiting() < lim.MaxNumSeqs {
		// Fewer than a full batch wait (so this loop is short): start when
		// the oldest has waited MaxWait, else ask to be woken then.
		oldest := v.WaitingAt(0).Arrival
		for i := 1; i < v.Waiting(); i++ {
			oldest = min(oldest, v.WaitingAt(i).Arrival)
		}
		if due := oldest + p.MaxWait; v.Now() < due {
			d.WakeAt = due
			return
		}
	}
	admitWhole(v, lim, d, false)
}

// MaxPrompt: a prompt must fit one iteration's budget.
func (Dynamic) MaxPrompt(lim Limits) int { return lim.MaxNumBatchedTokens }

// admitWhole optionally runs all decodes, then admits whole prompts from the
// queue head while they fit the budget, the sequence limit and the free
// blocks, stopping at the first that does not.
func admitWhole(v View, lim Limits, d *Decision, decode bool) {
	budget := lim.MaxNumBatchedTokens
	free := v.FreeBlocks()
	if decode && v.Decoding() > 0 {
		d.Decode = true
		budget -= lim.DecodeTokens(v.Decoding())
		free -= v.DecodeBlocks()
	}
	seqs := v.Running()
	for i := 0; i < v.Waiting() && seqs < lim.MaxNumSeqs; i++ {
		c := v.WaitingAt(i)
		n := c.Left()
		if n > budget {
			break
		}
		need := v.BlocksFor(c, n)
		if free < 0 || need > free {
			break
		}
		d.Prefill = append(d.Prefill, Chunk{FromQueue: true, Index: i, ID: c.ID, Tokens: n})
		budget -= n
		free -= need
		seqs++
	}
}

// ByName returns the batcher a scenario names. Parameters that some
// batchers take come from p.
func ByName(name string, p BatchParams) (Batcher, bool) {
	switch name {
	case "chunked":
		return Chunked{}, true
	case "prefill-first", "continuous":
		return PrefillFirst{}, true
	case "mixed":
		return Mixed{}, true
	case "decode-first":
		return DecodeFirst{Refill: p.Refill}, true
	case "static":
		return Static{}, true
	case "dynamic":
		return Dynamic{MaxWait: p.MaxWait}, true
	}
	return nil, false
}

// BatcherNames lists the names ByName knows.
const BatcherNames = "chunked, prefill-first (alias continuous), mixed, decode-first, static, dynamic"

// BatchParams are the batchers' optional parameters.
type BatchParams struct {
	Refill  int      // DecodeFirst
	MaxWait sim.Time // Dynamic
}
