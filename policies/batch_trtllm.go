package policies

import (
	"fmt"
	"math"
)

// CapacityPolicy is TensorRT-LLM's scheduler_config.capacity_scheduler_policy.
type CapacityPolicy uint8

const (
	// GuaranteedNoEvict admits a request only when every running request
	// and it can run to completion in the free blocks: TensorRT-LLM's
	// default (llmapi/llm_args.py SchedulerConfig.capacity_scheduler_policy).
	GuaranteedNoEvict CapacityPolicy = iota
	// MaxUtilization admits whatever fits this step and pauses (evicts)
	// the most recently started requests when the blocks run out.
	MaxUtilization
)

func (p CapacityPolicy) String() string {
	return [...]string{"GUARANTEED_NO_EVICT", "MAX_UTILIZATION"}[p]
}

// ReserveView is a View that knows how many KV blocks its running
// requests still need to reach their final length (Candidate.Final), as
// TensorRT-LLM's GUARANTEED_NO_EVICT reserves them.
type ReserveView interface {
	View
	ReservedBlocks() int
}

// TRTLLM is TensorRT-LLM's in-flight batching scheduler as its PyTorch
// backend runs it each iteration (tensorrt_llm/_torch/pyexecutor/scheduler.py
// SimpleScheduler: the C++ capacity scheduler, then the micro-batch
// scheduler, bound as BindCapacityScheduler and BindMicroBatchScheduler):
//
//   - Capacity (cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp).
//     GUARANTEED_NO_EVICT (GuaranteedNoEvictScheduler::impl): requests in
//     generation are kept, and their remaining blocks to completion are
//     taken from the free blocks; then waiting requests, in order, are
//     admitted while the blocks of their prompt + max_new_tokens fit what
//     is left ("If one requests fails to be scheduled, break"). No request
//     is ever evicted. MAX_UTILIZATION (MaxUtilizationScheduler): a
//     request is admitted when this step's blocks fit; when a running
//     request's do not, the last started request is paused (its KV freed:
//     the engine's recompute preemption of the newest).
//   - Micro-batch (microBatchScheduler.cpp MicroBatchScheduler::operator()):
//     up to max_batch_size requests and max_num_tokens tokens; a
//     generation request costs one token; without chunking a context
//     request costs its whole prompt and the first that does not fit ends
//     the batch; with enable_chunked_prefill (FIRST_COME_FIRST_SERVED, the
//     default context_chunking_policy) a context gets the tokens left,
//     rounded down to a multiple of the chunk unit (tokens_per_block) when
//     it is cut. Context and generation requests share one batch.
//
// Max new tokens is taken as the request's output length (a benchmark
// client's max_tokens with ignore_eos). Not modelled: the capacity
// scheduler's skip of a request that could reuse blocks another request
// of the same step is about to fill (beneficialToSkip), and
// EQUAL_PROGRESS chunking.
type TRTLLM struct {
	Policy    CapacityPolicy
	Chunked   bool // enable_chunked_prefill
	ChunkUnit int  // tokens_per_block; ≤ 1 cuts chunks anywhere
}

var _ Batcher = TRTLLM{}

// Name returns "trtllm-" and the policy, e.g. "trtllm-GUARANTEED_NO_EVICT".
func (p TRTLLM) Name() string {
	s := "trtllm-" + p.Policy.String()
	if p.Chunked {
		s += "-chunked"
	}
	return s
}

// MaxContext is the longest prompt a step can hold: without chunked
// prefill, max_num_tokens (TensorRT-LLM refuses a longer prompt); with it,
// any.
func (p TRTLLM) MaxContext(lim Limits) int {
	if p.Chunked {
		return math.MaxInt
	}
	return lim.MaxNumBatchedTokens
}

// MaxPrompt is the longest request (prompt + output) a step can hold
// whole: a MAX_UTILIZATION pause recomputes prompt and generated tokens in
// one context step unless chunked; GUARANTEED_NO_EVICT never pauses.
func (p TRTLLM) MaxPrompt(lim Limits) int {
	if p.Chunked || p.Policy == GuaranteedNoEvict {
		return math.MaxInt
	}
	return lim.MaxNumBatchedTokens
}

// Batch runs every decode, continues partial prefills oldest first, then
// admits waiting requests in queue order under the capacity policy and
// the micro-batch limits. GUARANTEED_NO_EVICT needs a ReserveView and
// panics on another View (a programming error: the engine provides one).
func (p TRTLLM) Batch(v View, lim Limits, d *Decision) {
	budget := lim.MaxNumBatchedTokens
	free := v.FreeBlocks()
	avail := free // blocks GUARANTEED_NO_EVICT may still promise
	if p.Policy == GuaranteedNoEvict {
		rv, ok := v.(ReserveView)
		if !ok {
			panic(fmt.Sprintf("policies: TRTLLM %s needs a ReserveView, got %T", p.Policy, v))
		}
		avail -= rv.ReservedBlocks()
	}
	if n := v.Decoding(); n > 0 {
		d.Decode = true
		budget -= n
		free -= v.DecodeBlocks() // MAX_UTILIZATION: may go negative, the engine pauses the newest
	}
	for i := 0; i < v.Prefilling() && budget > 0; i++ {
		c := v.PrefillingAt(i)
		n := fitChunk(v, c, p.chunk(c.Left(), budget), free)
		if n == 0 {
			continue
		}
		d.Prefill = append(d.Prefill, Chunk{Index: i, ID: c.ID, Tokens: n})
		budget -= n
		free -= v.BlocksFor(c, n)
	}
	seqs := v.Running()
	for i := 0; i < v.Waiting() && seqs < lim.MaxNumSeqs; i++ {
		c := v.WaitingAt(i)
		n := p.chunk(c.Left(), budget)
		if n == 0 || (!p.Chunked && n < c.Left()) {
			break // micro-batch: the context does not fit the tokens left
		}
		now := v.BlocksFor(c, c.Left()) // the context's blocks, allocated when it starts (KVCacheManager::addSequence)
		if free < 0 || now > free {
			break
		}
		if p.Policy == GuaranteedNoEvict {
			need := v.BlocksFor(Candidate{}, max(c.Final, c.Target))
			if need > avail && !(v.Running() == 0 && len(d.Prefill) == 0) {
				break // capacity: "If one requests fails to be scheduled, break"
			}
			// An idle instance admits its head even when the reservation
			// overshoots by the last token's block: the engine admitted the
			// request because its KV (prompt + output − 1) fits.
			avail -= need
		}
		d.Prefill = append(d.Prefill, Chunk{FromQueue: true, Index: i, ID: c.ID, Tokens: n})
		budget -= n
		free -= v.BlocksFor(c, n)
		seqs++
	}
}

// chunk returns the tokens a context of left tokens runs with budget
// tokens left: all of them when they fit; else, chunked, the budget cut
// down to a multiple of the chunk unit (setCtxRequestsChunkSize,
// FIRST_COME_FIRST_SERVED); else none.
func (p TRTLLM) chunk(left, budget int) int {
	switch {
	case left <= budget:
		return left
	case !p.Chunked || budget <= 0:
		return 0
	case p.ChunkUnit > 1:
		return budget / p.ChunkUnit * p.ChunkUnit
	}
	return budget
}
