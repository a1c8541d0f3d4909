package policies

import (
	"fmt"
	"strings"

	"github.com/servesim/servesim/sim"
)

// Candidate is a request that still has prompt tokens to prefill, as a
// batching policy sees it.
type Candidate struct {
	ID       int64
	Arrival  sim.Time
	Computed int // tokens whose KV is already in the cache (prefix-cache hits included)
	Target   int // tokens to have in the cache when the prefill ends (prompt, plus generated tokens after a recompute preemption)
	// Pinned is the KV blocks a waiting request's cached prefix takes out of
	// the evictable pool when it is admitted (BlocksFor includes them).
	Pinned int
	// Final is the tokens the request holds when it completes: prompt plus
	// output (TensorRT-LLM's prompt_len + max_new_tokens, which
	// policies.TRTLLM reserves); 0 when the view does not know.
	Final int
	// Output is the output tokens it may still generate (its max_new_tokens
	// less those generated before a preemption).
	Output int
}

// Left returns the tokens still to prefill.
func (c Candidate) Left() int { return c.Target - c.Computed }

// View is what a batching policy may read of one instance at the start of an
// iteration. Implementations must not allocate.
type View interface {
	// Now returns the current simulated time.
	Now() sim.Time
	// Running returns the number of requests holding KV blocks: decoding
	// requests plus partially prefilled ones.
	Running() int
	// Decoding returns the running requests in their decode phase; each needs
	// one token of budget when decodes run.
	Decoding() int
	// DecodeBlocks returns the KV blocks the decodes need this iteration.
	DecodeBlocks() int
	// Prefilling returns the number of running requests with prompt left
	// (chunked prefill in progress), and PrefillingAt the i-th, oldest first.
	Prefilling() int
	PrefillingAt(i int) Candidate
	// Waiting returns the queue length, and WaitingAt the i-th in queue order.
	Waiting() int
	WaitingAt(i int) Candidate
	// FreeBlocks returns the KV blocks available: free ones plus those of
	// cached prefixes no request uses (evicted on demand).
	FreeBlocks() int
	// BlocksFor returns the blocks a candidate needs to grow its KV from
	// c.Computed to c.Computed+tokens, given the blocks it already holds,
	// plus c.Pinned.
	BlocksFor(c Candidate, tokens int) int
}

// Limits are the batch limits of an instance (vLLM's names).
type Limits struct {
	MaxNumSeqs          int // running requests at most
	MaxNumBatchedTokens int // tokens per iteration at most
	// SpecTokens is the draft tokens each decode carries under speculative
	// decoding (num_speculative_tokens; 0: none): a decode then takes
	// 1 + SpecTokens of the token budget, as vLLM's scheduler counts a
	// running request's spec tokens among its new tokens.
	SpecTokens int
}

// DecodeTokens returns the budget n decodes take: n × (1 + SpecTokens).
func (l Limits) DecodeTokens(n int) int { return n * (1 + l.SpecTokens) }

// Chunk is one prefill chunk of a decision.
type Chunk struct {
	FromQueue bool  // admitted from the waiting queue (else a running partial prefill)
	Index     int   // position in the waiting queue or among the running partial prefills
	ID        int64 // request ID, for printing and checking
	Tokens    int   // prompt tokens to process
}

// Decision is what one iteration runs.
type Decision struct {
	Decode  bool    // every decoding request advances one token
	Prefill []Chunk // prefill chunks, in order
	// WakeAt, for an empty decision, asks to be consulted again at that
	// time even if nothing arrives (a dynamic batcher's max wait); 0 = no.
	WakeAt sim.Time
}

// Reset empties d, keeping its storage.
func (d *Decision) Reset() {
	d.Decode = false
	d.Prefill = d.Prefill[:0]
	d.WakeAt = 0
}

// Empty reports whether the decision runs nothing.
func (d *Decision) Empty() bool { return !d.Decode && len(d.Prefill) == 0 }

// String prints the decision, e.g. "decode+prefill[q#7:512 r#3:128]".
func (d *Decision) String() string {
	var b strings.Builder
	if d.Decode {
		b.WriteString("decode")
	}
	if len(d.Prefill) > 0 {
		if d.Decode {
			b.WriteByte('+')
		}
		b.WriteString("prefill[")
		for i, c := range d.Prefill {
			if i > 0 {
				b.WriteByte(' ')
			}
			src := "r"
			if c.FromQueue {
				src = "q"
			}
			fmt.Fprintf(&b, "%s#%d:%d", src, c.ID, c.Tokens)
		}
		b.WriteByte(']')
	}
	if b.Len() == 0 {
		return "idle"
	}
	return b.String()
}

// Batcher chooses what the next iteration runs. It fills d (already reset).
type Batcher interface {
	Batch(v View, lim Limits, d *Decision)
	Name() string
}

// PrefillFirst is vLLM V0 continuous batching with chunked prefill off.
type PrefillFirst struct{}

// Chunked is Sarathi-Serve / vLLM V1 chunked prefill.
type Chunked struct{}

var (
	_ Batcher = PrefillFirst{}
	_ Batcher = Chunked{}
)

// Name returns "prefill-first".
func (PrefillFirst) Name() string { return "prefill-first" }

// Batch admits whole prompts from the head of the queue while they fit the
// token budget, the sequence limit and the free blocks; if it admitted none
// and requests are decoding, it runs a decode iteration instead. A prompt
// larger than the whole budget can never run: the engine rejects such
// requests on arrival.
func (PrefillFirst) Batch(v View, lim Limits, d *Decision) {
	admitWhole(v, lim, d, false)
	if len(d.Prefill) == 0 && v.Decoding() > 0 {
		d.Decode = true
	}
}

// Name returns "chunked".
func (Chunked) Name() string { return "chunked" }

// Batch runs every decode, then continues partial prefills oldest first
// (a chunk shrinks to the free blocks rather than forcing a preemption), then
// admits from the queue head, each chunk as large as the remaining token
// budget, stopping at the first request whose chunk's blocks are not free.
func (Chunked) Batch(v View, lim Limits, d *Decision) {
	budget := lim.MaxNumBatchedTokens
	free := v.FreeBlocks()
	if n := v.Decoding(); n > 0 {
		d.Decode = true
		budget -= lim.DecodeTokens(n)
		free -= v.DecodeBlocks() // may go negative: the engine preempts, nothing new is admitted
	}
	// The view does not change while the batcher decides: its counts are
	// read once (interface calls, every step).
	for i, np := 0, v.Prefilling(); i < np && budget > 0; i++ {
		c := v.PrefillingAt(i)
		n := fitChunk(v, c, min(c.Left(), budget), free)
		if n == 0 {
			continue
		}
		d.Prefill = append(d.Prefill, Chunk{Index: i, ID: c.ID, Tokens: n})
		budget -= n
		free -= v.BlocksFor(c, n)
	}
	seqs := v.Running()
	for i, nw := 0, v.Waiting(); i < nw && budget > 0 && seqs < lim.MaxNumSeqs; i++ {
		c := v.WaitingAt(i)
		n := min(c.Left(), budget)
		need := v.BlocksFor(c, n)
		if free < 0 || need > free {
			break // as vLLM V1: a waiting request that does not fit stops admission
		}
		d.Prefill = append(d.Prefill, Chunk{FromQueue: true, Index: i, ID: c.ID, Tokens: n})
		budget -= n
		free -= need
		seqs++
	}
}

// fitChunk returns the largest chunk of at most n tokens whose blocks fit in
// free.
func fitChunk(v View, c Candidate, n, free int) int {
	if n <= 0 || free < 0 {
		return 0
	}
	if v.BlocksFor(c, n) <= free {
		return n
	}
	// Binary search for the largest fitting n; BlocksFor is monotone in n.
	lo, hi := 0, n
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if v.BlocksFor(c, mid) <= free {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// MaxPrompt returns the longest request (prompt plus output) PrefillFirst can
// serve: a prompt, or a recompute of prompt and generated tokens after a
// preemption, runs in one iteration, so it must fit the token budget. This
// is why vLLM requires max_num_batched_tokens ≥ max_model_len when chunked
// prefill is off.
func (PrefillFirst) MaxPrompt(lim Limits) int { return lim.MaxNumBatchedTokens }
