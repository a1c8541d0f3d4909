package serve

import (
	"fmt"

	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
)

// StepTimer prices one iteration of a batch (hardware.StepModel implements
// it): its duration in seconds, and its FLOPs and HBM bytes per GPU for MFU
// and MBU.
type StepTimer interface {
	Step(b models.Batch) (seconds, flops, bytes float64)
}

// InstanceConfig describes one serving instance: a model on a TP group of
// GPUs with a paged KV cache and a batching policy.
type InstanceConfig struct {
	Step      StepTimer
	Blocks    int // KV blocks in the cache (per GPU; all GPUs of the group hold the same blocks)
	BlockSize int // tokens per block
	Limits    policies.Limits
	Batcher   policies.Batcher
	// MaxModelLen is the longest prompt+output a request may have (vLLM's
	// max_model_len); longer requests are rejected on arrival.
	MaxModelLen int
}

// Rejection reasons.
const (
	RejectContext    = "exceeds-max-model-len"
	RejectKVCapacity = "exceeds-kv-capacity"
	RejectBudget     = "prompt-exceeds-token-budget"
)

// Instance is one serving instance: waiting queue, running set, paged KV
// cache and the iteration loop. It implements policies.View for its batcher.
//
// Decoding requests are not touched per iteration. Every decode iteration
// advances each of them by one token, so the instance keeps a decode
// counter D and, for each request, the counter value, tokens and KV length
// at which it started decoding. Its finish is the counter value
// d0 + output − g0, kept in a heap; the KV blocks the iteration needs are
// the number of requests whose KV length is a multiple of the block size,
// kept per phase (d0 − k0) mod blockSize; the context sum grows by the
// number of decodes. An iteration therefore costs O(prefill chunks +
// finishing requests + log n), not O(batch).
type Instance struct {
	id  int
	cfg InstanceConfig
	w   *World

	waiting    queue
	running    int      // requests in the running list
	head, tail *request // running list, admission order (tail = newest)
	prefilling []*request
	heap       finishHeap

	usedBlocks int
	decodes    int      // requests decoding
	decCounter int64    // D: decode iterations run
	phase      []int    // decoding requests per (d0 − k0) mod blockSize
	sumKV      int64    // Σ KV length of decoding requests
	lastDecode sim.Time // end of the last decode iteration
	newcomers  []*request

	// The iteration in flight.
	busy      bool
	dec       policies.Decision
	started   sim.Time
	stepChunk []*request // requests of dec.Prefill, resolved at start
	batch     models.Batch
	preempted int
	flops     float64 // per GPU, of the iteration in flight
	bytes     float64
	endEv     *sim.Event
	view      policies.View
}

func newInstance(id int, cfg InstanceConfig, w *World) *Instance {
	in := &Instance{id: id, cfg: cfg, w: w, phase: make([]int, cfg.BlockSize)}
	in.view = in
	in.endEv = sim.NewEvent(prioStepEnd, sim.HandlerFunc(in.endStep))
	return in
}

// policies.View implementation.

func (in *Instance) Running() int      { return in.running }
func (in *Instance) Decoding() int     { return in.decodes }
func (in *Instance) DecodeBlocks() int { return in.phase[in.decCounter%int64(in.cfg.BlockSize)] }
func (in *Instance) Prefilling() int   { return len(in.prefilling) }
func (in *Instance) PrefillingAt(i int) policies.Candidate {
	r := in.prefilling[i]
	return policies.Candidate{ID: r.id, Computed: r.computed, Target: r.target}
}
func (in *Instance) Waiting() int { return in.waiting.len() }
func (in *Instance) WaitingAt(i int) policies.Candidate {
	r := in.waiting.at(i)
	return policies.Candidate{ID: r.id, Computed: r.computed, Target: r.target}
}
func (in *Instance) FreeBlocks() int { return in.cfg.Blocks - in.usedBlocks }
func (in *Instance) BlocksFor(c policies.Candidate, tokens int) int {
	return in.blocksOf(c.Computed+tokens) - in.blocksOf(c.Computed)
}

var _ policies.View = (*Instance)(nil)

func (in *Instance) blocksOf(tokens int) int {
	return (tokens + in.cfg.BlockSize - 1) / in.cfg.BlockSize
}

// admitCheck returns a rejection reason, or "" if the request can be served.
func (in *Instance) admitCheck(r *request) string {
	if in.cfg.MaxModelLen > 0 && r.prompt+r.output > in.cfg.MaxModelLen {
		return RejectContext
	}
	// The longest KV the request ever holds: prompt + output − 1 tokens
	// (the last token is sampled, never written to the cache).
	if in.blocksOf(r.prompt+r.output-1) > in.cfg.Blocks {
		return RejectKVCapacity
	}
	if pl, ok := in.cfg.Batcher.(interface{ MaxPrompt(policies.Limits) int }); ok {
		if r.prompt+r.output > pl.MaxPrompt(in.cfg.Limits) {
			// A recompute after preemption prefills prompt + generated tokens
			// in one piece, so the whole request must fit the budget.
			return RejectBudget
		}
	}
	return ""
}

// enqueue adds an arrived request to the waiting queue and starts an
// iteration if the instance is idle.
func (in *Instance) enqueue(r *request, now sim.Time) {
	r.state = stateWaiting
	r.target = r.prompt
	in.waiting.pushBack(r)
	if !in.busy {
		in.startStep(now)
	}
}

// startStep asks the batcher for a decision, applies it and schedules the
// iteration's end.
func (in *Instance) startStep(now sim.Time) {
	in.dec.Reset()
	in.cfg.Batcher.Batch(in.view, in.cfg.Limits, &in.dec)
	if in.dec.Empty() {
		if in.running > 0 {
			panic(fmt.Sprintf("serve: instance %d: batcher %s ran nothing with %d requests running", in.id, in.cfg.Batcher.Name(), in.running))
		}
		in.busy = false
		return
	}
	in.busy = true
	in.started = now
	in.preempted = 0
	b := models.Batch{}
	if in.dec.Decode {
		// Blocks for this iteration's decode tokens; preempt the newest
		// running requests (recompute) until they fit, as vLLM does.
		for need := in.DecodeBlocks(); need > in.FreeBlocks(); need = in.DecodeBlocks() {
			in.preempt(in.tail, now)
		}
		in.usedBlocks += in.DecodeBlocks()
		b.Decodes = in.decodes
		b.DecodeCtx = in.sumKV + int64(in.decodes) // each decode attends over its KV plus its new token
	}
	in.stepChunk = in.stepChunk[:0]
	removed := 0
	for _, c := range in.dec.Prefill {
		var r *request
		if c.FromQueue {
			r = in.waiting.removeAt(c.Index + in.preempted - removed) // preemptions pushed requests in front
			removed++
			in.admit(r)
		} else {
			r = in.prefilling[c.Index]
			if r.state != statePrefill {
				continue // preempted above
			}
		}
		if r.id != c.ID {
			panic(fmt.Sprintf("serve: decision %v names request %d at a position holding %d", &in.dec, c.ID, r.id))
		}
		need := in.blocksOf(r.computed+c.Tokens) - in.blocksOf(r.computed)
		r.blocks += need
		in.usedBlocks += need
		p, ctx := c.Tokens, r.computed
		b.Prefills++
		b.PrefillTokens += p
		b.PrefillCtx += int64(ctx)
		b.PrefillPairs += float64(p) * (float64(ctx) + float64(p+1)/2)
		r.computed += p
		in.stepChunk = append(in.stepChunk, r)
	}
	if in.usedBlocks > in.cfg.Blocks {
		panic(fmt.Sprintf("serve: instance %d: KV blocks used %d > capacity %d", in.id, in.usedBlocks, in.cfg.Blocks))
	}
	in.batch = b
	sec, flops, bytes := in.cfg.Step.Step(b)
	in.flops, in.bytes = flops, bytes
	in.w.eng.ScheduleEvent(in.endEv, now+sim.FromSeconds(sec))
}

// admit moves a waiting request into the running set.
func (in *Instance) admit(r *request) {
	r.state = statePrefill
	r.pidx = len(in.prefilling)
	in.prefilling = append(in.prefilling, r)
	r.prev, r.next = in.tail, nil
	if in.tail != nil {
		in.tail.next = r
	} else {
		in.head = r
	}
	in.tail = r
	in.running++
}

func (in *Instance) unlink(r *request) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		in.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		in.tail = r.prev
	}
	r.prev, r.next = nil, nil
	in.running--
}

func (in *Instance) removePrefilling(r *request) {
	last := len(in.prefilling) - 1
	copy(in.prefilling[r.pidx:], in.prefilling[r.pidx+1:])
	in.prefilling[last] = nil
	in.prefilling = in.prefilling[:last]
	for i := r.pidx; i < last; i++ {
		in.prefilling[i].pidx = i
	}
}

// compactPrefilling drops the requests that are no longer prefilling, in
// one pass: O(prefilling), however many finished their prefill.
func (in *Instance) compactPrefilling() {
	j := 0
	for _, r := range in.prefilling {
		if r.state == statePrefill {
			r.pidx = j
			in.prefilling[j] = r
			j++
		}
	}
	clear(in.prefilling[j:])
	in.prefilling = in.prefilling[:j]
}

func (in *Instance) phaseOf(r *request) int {
	bs := int64(in.cfg.BlockSize)
	return int(((r.d0-int64(r.k0))%bs + bs) % bs)
}

// materialize writes a decoding request's derived counts into its fields.
func (in *Instance) materialize(r *request) {
	n := int(in.decCounter - r.d0)
	r.generated = r.g0 + n
	r.computed = r.k0 + n
	r.blocks = in.blocksOf(r.computed)
	if !r.newcomer {
		r.lastToken = in.lastDecode
	}
}

// leaveDecode removes a decoding request from the decode bookkeeping.
func (in *Instance) leaveDecode(r *request) {
	in.materialize(r)
	if r.hidx >= 0 {
		in.heap.remove(r.hidx)
	}
	in.phase[in.phaseOf(r)]--
	in.decodes--
	in.sumKV -= int64(r.computed)
	if r.newcomer {
		for i, x := range in.newcomers {
			if x == r {
				in.newcomers = append(in.newcomers[:i], in.newcomers[i+1:]...)
				break
			}
		}
		r.newcomer = false
	}
}

// preempt evicts a running request by recompute: its KV is freed and it goes
// back to the front of the queue to prefill its prompt and generated tokens.
func (in *Instance) preempt(r *request, now sim.Time) {
	switch r.state {
	case stateDecode:
		in.leaveDecode(r)
	case statePrefill:
		in.removePrefilling(r)
	default:
		panic("serve: preempting a request that is not running")
	}
	in.unlink(r)
	in.usedBlocks -= r.blocks
	r.blocks = 0
	r.computed = 0
	r.target = r.prompt + r.generated
	r.state = stateWaiting
	r.preemptions++
	in.preempted++
	in.w.preemptions++
	in.waiting.pushFront(r)
}

// endStep finishes the iteration in flight: tokens are emitted, finished
// requests leave, and the next iteration starts.
func (in *Instance) endStep(now sim.Time) {
	w := in.w
	if in.dec.Decode {
		in.decCounter++
		in.sumKV += int64(in.decodes)
		// ITL: decodes whose last token came at the last decode iteration's
		// end all see the same gap; newcomers see their own.
		if n := in.decodes - len(in.newcomers); n > 0 {
			w.coll.AddITL(now-in.lastDecode, n)
		}
		for _, r := range in.newcomers {
			w.coll.AddITL(now-r.lastToken, 1)
			r.newcomer = false
		}
		in.newcomers = in.newcomers[:0]
		in.lastDecode = now
		for len(in.heap) > 0 && in.heap[0].finishAt == in.decCounter {
			r := in.heap.remove(0)
			in.leaveDecode(r)
			r.lastToken = now
			in.finish(r, now)
		}
	}
	completed := false
	for _, r := range in.stepChunk {
		if r.state != statePrefill || r.computed < r.target {
			continue
		}
		completed = true // r leaves in.prefilling below, all at once
		// The prefill's last chunk samples a token.
		if r.generated == 0 {
			r.firstToken = now
		} else {
			w.coll.AddITL(now-r.lastToken, 1)
		}
		r.generated++
		r.lastToken = now
		if r.generated >= r.output {
			in.finish(r, now)
			continue
		}
		r.state = stateDecode
		r.d0, r.g0, r.k0 = in.decCounter, r.generated, r.computed
		r.finishAt = r.d0 + int64(r.output-r.g0)
		in.heap.push(r)
		in.phase[in.phaseOf(r)]++
		in.decodes++
		in.sumKV += int64(r.k0)
		if now != in.lastDecode {
			r.newcomer = true
			in.newcomers = append(in.newcomers, r)
		}
	}
	if completed {
		in.compactPrefilling()
	}
	w.step.Instance = in.id
	w.step.Start = in.started
	w.step.Duration = now - in.started
	w.step.Prefills = in.batch.Prefills
	w.step.PrefillTokens = in.batch.PrefillTokens
	w.step.Decodes = in.batch.Decodes
	w.step.KVBlocksUsed = in.usedBlocks
	w.step.KVBlocksTotal = in.cfg.Blocks
	w.step.Preempted = in.preempted
	w.step.FLOPs, w.step.Bytes = in.flops, in.bytes
	w.addStep()
	if checkAll {
		in.checkInvariants()
	}
	in.startStep(now)
}

// finish releases a finished request's blocks and records it.
func (in *Instance) finish(r *request, now sim.Time) {
	in.unlink(r)
	in.usedBlocks -= r.blocks
	r.blocks = 0
	r.state = stateDone
	w := in.w
	w.rec = metrics.Record{
		ID: r.id, Instance: in.id, Arrival: r.arrival, FirstToken: r.firstToken, Finish: now,
		PromptTokens: r.prompt, OutputTokens: r.generated, Preemptions: r.preemptions,
	}
	w.addRecord(r)
}
