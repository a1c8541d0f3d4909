package serve

import (
	"fmt"
	"math/bits"

	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
)

// StepTimer prices one iteration of a batch (hardware.StepModel implements
// it): its duration in seconds, and its FLOPs and HBM bytes per GPU for MFU
// and MBU.
type StepTimer interface {
	Step(b models.Batch) (seconds, flops, bytes float64)
}

// Preemption modes.
const (
	PreemptRecompute = "recompute" // free the KV, prefill prompt and generated tokens again
	PreemptSwap      = "swap"      // copy the KV to host memory and back over the host link
)

// Victim selection.
const (
	VictimNewest         = "newest"          // the most recently admitted request (vLLM)
	VictimLowestPriority = "lowest-priority" // the request with the largest queue key, newest on ties
	VictimFewestOutput   = "fewest-output"   // the decoding request with the fewest output tokens, longest prompt on ties (SGLang)
)

// InstanceConfig describes one serving instance: a model on a TP group of
// GPUs with a paged KV cache and its policies.
type InstanceConfig struct {
	Step      StepTimer
	Blocks    int // KV blocks in the cache (per GPU; all GPUs of the group hold the same blocks)
	BlockSize int // tokens per block
	Limits    policies.Limits
	Batcher   policies.Batcher
	// MaxModelLen is the longest prompt+output a request may have (vLLM's
	// max_model_len); longer requests are rejected on arrival.
	MaxModelLen int

	// Preempt is PreemptRecompute ("" too) or PreemptSwap; Victim is
	// VictimNewest ("" too), VictimLowestPriority or VictimFewestOutput.
	Preempt, Victim string
	// Swap needs the host link's bandwidth (bytes/s per GPU), the host
	// memory set aside for swapped KV (bytes per GPU; when full, preemption
	// falls back to recompute) and the KV bytes per token per GPU.
	HostBW, SwapSpace, KVBytesPerToken float64

	// PrefixCache enables prefix caching (requests with prefix hashes
	// reuse cached KV of equal leading blocks).
	PrefixCache bool

	// Spec turns on speculative decoding (specdec.go); nil: off. Step
	// should then price the drafter too (SpecStep).
	Spec *Speculation
	// Tiers are KV offload tiers below the GPU (host memory, then disk;
	// kvtier.go); none: the GPU's cache only.
	Tiers []KVTier
}

// Rejection reasons of the engine.
const (
	RejectContext    = "exceeds-max-model-len"
	RejectKVCapacity = "exceeds-kv-capacity"
	RejectBudget     = "prompt-exceeds-token-budget"
	RejectEmpty      = "empty-request"
)

// Instance is one serving instance: waiting queue, running set, paged KV
// cache and the iteration loop. It implements policies.View for its batcher
// and policies.AdmitView for admission control.
//
// Decoding requests are not touched per iteration. Every decode iteration
// advances each of them by one token, so the instance keeps a decode
// counter D and, for each request, the counter value, tokens and KV length
// at which it started decoding. Its finish is the counter value
// d0 + output − g0, kept in a timing wheel (finishwheel.go); the KV blocks the iteration needs are
// the number of requests whose KV length is a multiple of the block size,
// kept per phase (d0 − k0) mod blockSize; the context sum grows by the
// number of decodes. An iteration therefore costs O(prefill chunks +
// finishing requests + log n), not O(batch).
type Instance struct {
	id  int
	cfg InstanceConfig
	w   *World

	waiting     queue
	held        queue          // arrived, not yet shown to the batcher (Engine.JoinLag)
	stepSeq     int64          // steps started
	pipe        PipelinedTimer // cfg.Step when it prices back-to-back steps apart (Engine.Kernels); else nil
	swapped     queue
	running     int      // requests in the running list
	head, tail  *request // running list, admission order (tail = newest)
	prefilling  []*request
	wheel       finishWheel // decoding requests by finish (without speculation)
	heap        finishHeap  // the same under speculation (specheap.go)
	outstanding int         // admitted, not finished (waiting, swapped or running)

	// Disaggregation: a prefill instance's finished prefills awaiting or in
	// transfer (handoffs, at most maxPending before it stops admitting) and
	// its KV link; a decode instance's handoffs waiting for room (pulls)
	// and transfers it has reserved blocks for (incoming).
	role           uint8
	maxPending     int
	kvLink         *link
	pulls          queue
	incoming       int
	incomingBlocks int        // blocks reserved for incoming transfers
	handoffs       []*request // a prefill instance's finished prefills holding their KV
	ready          []*request // a decode instance's delivered transfers, to join at the next iteration

	usedBlocks int // occupied: requests' private blocks and all cached prefix units
	cache      *prefixCache
	tiers      *kvTiers   // offload tiers (cfg.Tiers); nil: none
	loading    []*request // admitted, loading their prefix from a tier (kvtier_engine.go)
	loadEv     *sim.Event
	swapBytes  float64 // host memory holding swapped KV
	decodes    int     // requests decoding
	decCounter int64   // D: decode iterations run
	decPhase   int     // D mod blockSize
	phase      []int   // decoding requests per (d0 − k0) mod blockSize
	bsShift    int     // log2 of the block size when a power of two, else −1 (blocksOf, phaseOf)
	sumKV      int64   // Σ KV length of decoding requests
	lastDecode sim.Time
	newcomers  []*request
	prefillTPS float64 // prefill tokens per second at a full budget (for PredictTTFT)

	// The iteration in flight.
	busy      bool
	dec       policies.Decision
	started   sim.Time
	stepReqs  []*request   // requests of dec.Prefill, resolved at start
	batch     models.Batch // a DP group's rank: the step's batch; else its Prefills, PrefillTokens and Decodes only
	preempted int
	retracted int64   // preemptions so far (policies.OutputView)
	swapSec   float64 // host-link transfer time added to the iteration
	flops     float64 // per GPU, of the iteration in flight
	bytes     float64
	endEv     *sim.Event
	wakeEv    *sim.Event
	view      policies.View
	grp       *dpGroup // the DP lock-step group (Config.DPLockstep); nil: steps on its own
	back      bool     // the step in flight follows the previous one at once (for the group's pricing)

	specBlocks int // with speculation: KV blocks the decodes' next verification needs (specNeed summed)

	// The batcher's optional limits (admitCheck), asserted once, not per
	// arrival; nil: none.
	maxPrompt  interface{ MaxPrompt(policies.Limits) int }
	maxContext interface{ MaxContext(policies.Limits) int }
	chunked    bool // the batcher is policies.Chunked: batchChunked decides (batch_chunked.go)
}

func newInstance(id int, cfg InstanceConfig, w *World) *Instance {
	if p, ok := cfg.Batcher.(interface{ PerInstance() policies.Batcher }); ok {
		cfg.Batcher = p.PerInstance() // a batcher with state of its own instance (policies.SGLang)
	}
	in := &Instance{id: id, cfg: cfg, w: w, phase: make([]int, cfg.BlockSize), bsShift: -1}
	if bs := cfg.BlockSize; bs&(bs-1) == 0 {
		in.bsShift = bits.TrailingZeros(uint(bs))
	}
	in.pipe, _ = cfg.Step.(PipelinedTimer)
	in.maxPrompt, _ = cfg.Batcher.(interface{ MaxPrompt(policies.Limits) int })
	in.maxContext, _ = cfg.Batcher.(interface{ MaxContext(policies.Limits) int })
	in.view = in
	in.chunked = isChunked(cfg.Batcher)
	in.endEv = sim.NewEvent(prioStepEnd, (*stepEndHandler)(in))
	in.wakeEv = sim.NewEvent(prioStepEnd, (*wakeHandler)(in))
	if cfg.PrefixCache {
		in.cache = newPrefixCache()
	}
	if len(cfg.Tiers) > 0 {
		in.tiers = newKVTiers(cfg.Tiers, &w.res)
		in.loadEv = sim.NewEvent(prioStepEnd, sim.HandlerFunc(in.loadDone))
	}
	// Prefill throughput at a full token budget of one long prompt, for
	// admission's TTFT prediction.
	b := min(cfg.Limits.MaxNumBatchedTokens, 8192)
	sec, _, _ := cfg.Step.Step(models.Batch{Prefills: 1, PrefillTokens: b, PrefillPairs: float64(b) * float64(b+1) / 2})
	if sec > 0 {
		in.prefillTPS = float64(b) / sec
	}
	return in
}

// admitCheck returns a rejection reason, or "" if the request can be served.
func (in *Instance) admitCheck(r *request) string {
	if in.cfg.MaxModelLen > 0 && r.prompt+r.output > in.cfg.MaxModelLen {
		return RejectContext
	}
	// The longest KV the request ever holds: prompt + output − 1 tokens
	// (the last token is sampled, never written to the cache).
	// Under speculation its last verification also holds slots for k
	// drafts and the lookahead (a request that could never get them
	// would be preempted for ever).
	lookahead := 0
	if in.cfg.Spec != nil {
		lookahead = in.specSlots() - 1
	}
	if in.blocksOf(r.prompt+r.output-1+lookahead) > in.cfg.Blocks {
		return RejectKVCapacity
	}
	if pl := in.maxPrompt; pl != nil {
		if r.prompt+r.output > pl.MaxPrompt(in.cfg.Limits) {
			// A recompute after preemption prefills prompt + generated tokens
			// in one piece, so the whole request must fit the budget.
			return RejectBudget
		}
	}
	if pl := in.maxContext; pl != nil && r.prompt > pl.MaxContext(in.cfg.Limits) {
		return RejectBudget // a prompt that no step's token budget holds (TensorRT-LLM without chunked prefill)
	}
	return ""
}

// enqueue adds an admitted request to the waiting queue and, if the
// instance is idle, has it start an iteration at this instant, but only
// after every arrival of the instant is queued: the wake-up event fires
// after arrivals at equal times (prioStepEnd > prioArrival), so the batcher
// sees all the requests that arrived together, as vLLM's engine loop sees
// every request added before it schedules. (Starting at once would run the
// first of 8 simultaneous arrivals alone, and static batching would then
// keep the other 7 waiting for its whole batch.)
func (in *Instance) enqueue(r *request, now sim.Time) {
	r.state = stateWaiting
	r.target = r.prompt
	r.inst = in
	in.outstanding++
	if in.busy && in.w.joinLag > 0 {
		in.hold(r)
		return
	}
	in.waiting.insert(r)
	if !in.busy && !(in.wakeEv.Pending() && in.wakeEv.Time() == now) {
		in.w.eng.ScheduleEvent(in.wakeEv, now)
	}
}

// wake is the batcher's requested wake-up (Decision.WakeAt).
func (in *Instance) wake(now sim.Time) {
	if !in.busy {
		in.startStep(now)
	}
}

// startStep asks the batcher for a decision, applies it and schedules the
// iteration's end.
func (in *Instance) startStep(now sim.Time) {
	if in.grp != nil && !in.grp.starting {
		in.grp.request(in.w, now) // the group starts every rank's step
		return
	}
	if len(in.ready) > 0 {
		for i, r := range in.ready {
			in.incomingBlocks -= r.blocks
			in.incoming--
			in.link(r)
			in.enterDecode(r)
			in.ready[i] = nil
		}
		in.ready = in.ready[:0]
	}
	if in.swapped.len() > 0 {
		in.swapIn(now)
	}
	in.dec.Reset()
	if in.chunked {
		in.batchChunked(&in.dec)
		if checkAll {
			in.checkChunked()
		}
	} else {
		in.cfg.Batcher.Batch(in.view, in.cfg.Limits, &in.dec)
	}
	if in.dec.Empty() {
		if in.held.len() > 0 {
			// Nothing else to run: the pipeline had planned no next step,
			// so held requests are scheduled at once.
			in.showHeld(true)
			in.startStep(now)
			return
		}
		if in.tiers != nil && len(in.loading) == 0 && (in.running == 1 || in.running == 0 && in.waiting.len() > 0 && in.dec.WakeAt <= now) && in.dropLoaded() {
			in.startStep(now) // loaded requests in the queue held the blocks needed
			return
		}
		if in.running > 0 {
			if len(in.handoffs) > 0 || in.incoming > 0 || len(in.loading) > 0 {
				// Blocks are held by finished prefills awaiting transfer
				// (prefill instance), reserved for incoming transfers
				// (decode instance) or by loads from an offload tier: the
				// next delivery, or the load's end, wakes it.
				in.busy = false
				return
			}
			if in.running == 1 {
				panic(fmt.Sprintf("serve: instance %d: a lone request cannot progress (a bug: admission checks that every request fits)", in.id))
			}
			// Partial prefills hold all the blocks and none can grow:
			// preempt the newest, as vLLM does when a running request
			// cannot get a slot, and decide again.
			in.preempt(in.victim(), now)
			in.startStep(now)
			return
		}
		in.busy = false
		if in.dec.WakeAt > now {
			in.w.eng.ScheduleEvent(in.wakeEv, in.dec.WakeAt)
		}
		return
	}
	if in.wakeEv.Pending() {
		in.w.eng.Cancel(in.wakeEv)
	}
	back := in.busy // the previous step ended now: this one follows it at once
	in.busy = true
	in.started = now

	// The decision's prefill chunks are taken apart from its decodes
	// (instance_chunks.go), and only when there are some: most steps of a
	// run decode only.
	in.stepReqs = in.stepReqs[:0]
	if len(in.dec.Prefill) > 0 {
		in.resolveChunks()
	}

	// The batch's sums are kept in scalars and the Batch built once they
	// are done: a struct of more than four fields lives in memory, and
	// copying one just filled field by field (into in.batch, or for the
	// call) reads its 8-byte stores with 16-byte loads, a store-forwarding
	// stall.
	var decodes, query, prefills, ptoks int
	var dctx, pctx int64
	var pairs float64
	if in.dec.Decode {
		// Blocks for this iteration's decode tokens; preempt until they fit.
		need := in.DecodeBlocks()
		for need > in.FreeBlocks() {
			in.preempt(in.victim(), now)
			need = in.DecodeBlocks()
		}
		in.allocate(need)
		decodes = in.decodes
		dctx = in.sumKV + int64(in.decodes) // each decode attends over its KV plus its new token
		if in.cfg.Spec != nil {
			// A verification: each decode's sampled token and its K drafts.
			query = 1 + in.cfg.Spec.K
		}
	}
	if len(in.stepReqs) > 0 {
		prefills, ptoks, pctx, pairs = in.takeChunks()
	}
	if ptoks == 0 && decodes == 0 { // the batch's Tokens() == 0
		// Everything chosen was preempted: an empty iteration of only the
		// swap traffic would be odd; start over.
		if in.tiers != nil && in.running == 0 && !in.dropLoaded() && len(in.loading) > 0 {
			// Loads hold the blocks the swapped or queued requests need:
			// the first load's end wakes the instance.
			in.busy = false
			return
		}
		in.busy = false
		in.startStep(now)
		return
	}
	b := models.Batch{Prefills: prefills, PrefillTokens: ptoks, PrefillCtx: pctx, PrefillPairs: pairs,
		Decodes: decodes, DecodeCtx: dctx, DecodeQuery: query}
	if in.grp != nil {
		in.batch = b
		in.back = back
		in.grp.working = append(in.grp.working, in) // priced and ended by the group
		return
	}
	var sec, flops, bytes float64
	if in.pipe != nil && back {
		sec, flops, bytes = in.pipe.StepPipelined(b)
	} else {
		sec, flops, bytes = in.cfg.Step.Step(b)
	}
	// What endStep records of the batch, after the pricing call (its
	// stores long retired); a DP group's rank keeps the whole batch above.
	in.batch.Prefills, in.batch.PrefillTokens, in.batch.Decodes = prefills, ptoks, decodes
	in.flops, in.bytes = flops, bytes
	in.stepSeq++
	end, ok := now.AddSeconds(sec + in.swapSec)
	if !ok {
		in.w.fail(in.stepTimeError(now, sec))
		return
	}
	if eng := &in.w.eng; !eng.ScheduleFront(in.endEv, end) {
		eng.ScheduleEvent(in.endEv, end)
	}
}

// stepTimeError explains a step whose end the clock cannot hold: a step
// time that is not a number ≥ 0, or one so long (a very slow GPU, a broken
// profile) that simulated time would pass the clock's range.
func (in *Instance) stepTimeError(now sim.Time, sec float64) error {
	d := sec + in.swapSec
	if !(d >= 0) {
		return fmt.Errorf("serve: instance %d, step %d at %v: the step time is %g s (kernel %g s + swap %g s), not a duration ≥ 0; check the GPU and profile numbers",
			in.id, in.w.res.Steps+1, now, d, sec, in.swapSec)
	}
	return fmt.Errorf("serve: simulated time would pass the clock's range (%.3g s, about 292 years) at step %d of instance %d: a step of %g s starting at %v; check the GPU and profile numbers (a GPU this slow cannot serve the workload)",
		sim.MaxSeconds, in.w.res.Steps+1, in.id, d, now)
}

// allocate takes n blocks: never-used ones first, then (with prefix
// caching) from the LRU head, the least recently freed first, evicting
// what they cached (vLLM's BlockPool.get_new_blocks pops the free queue's
// front). It inlines (a step calls it for the decodes and each prefill
// chunk): blocks that are free are taken here; eviction, and the panic
// when even that leaves too few, are a call.
func (in *Instance) allocate(n int) {
	if in.cfg.Blocks-in.usedBlocks < n {
		in.allocateEvicting(n)
		return
	}
	in.usedBlocks += n
}

// allocateEvicting is allocate when fewer than n blocks are free.
func (in *Instance) allocateEvicting(n int) {
	for in.cfg.Blocks-in.usedBlocks < n && in.cache != nil {
		freed, prefix := in.cache.evict(n - (in.cfg.Blocks - in.usedBlocks))
		if freed == 0 {
			break
		}
		in.usedBlocks -= freed
		if prefix {
			in.w.res.PrefixEvictions++
		}
	}
	in.usedBlocks += n
	if in.usedBlocks > in.cfg.Blocks {
		panic(fmt.Sprintf("serve: instance %d: KV blocks used %d > capacity %d", in.id, in.usedBlocks, in.cfg.Blocks))
	}
}

// admit moves a waiting request into the running set, taking its cached
// prefix.
func (in *Instance) admit(r *request) {
	in.waiting.remove(r)
	loaded := r.loadToks > 0 // back from a tier load, with its prefix in place
	if in.cache != nil && !loaded {
		in.takeHits(r)
	}
	r.loadToks = min(r.loadToks, 0)
	if !r.wasScheduled {
		r.scheduled, r.wasScheduled = in.Now(), true
		in.w.res.PromptTokensAdmitted += int64(r.prompt)
	}
	if in.tiers != nil && !loaded {
		if m, j := in.tierHits(r, len(r.units)-r.nSelf, r.nSelf); m+j > 0 {
			in.beginLoad(r, m, j, in.Now())
			return
		}
	}
	r.dropped = 0 // what no load brings back is recomputed
	r.state = statePrefill
	r.pidx = len(in.prefilling)
	in.prefilling = append(in.prefilling, r)
	in.link(r)
}

// endStep finishes the iteration in flight: tokens are emitted, finished
// requests leave, and the next iteration starts. It is the step-end
// event's handler itself (stepEndHandler.Fire), not a call from it: one
// call a step fewer.
func (h *stepEndHandler) Fire(now sim.Time) {
	in := (*Instance)(h)
	w := in.w
	if in.dec.Decode {
		in.decCounter++
		if in.decPhase++; in.decPhase == in.cfg.BlockSize {
			in.decPhase = 0
		}
		in.sumKV += int64(in.decodes)
		// ITL: decodes whose last token came at the last decode iteration's
		// end all see the same gap; newcomers see their own.
		if n := in.decodes - len(in.newcomers); n > 0 {
			w.coll.AddITL(now-in.lastDecode, n)
		}
		if len(in.newcomers) > 0 {
			for _, r := range in.newcomers {
				w.coll.AddITL(now-r.lastToken, 1)
				r.newcomer = false
			}
			in.newcomers = in.newcomers[:0]
		}
		in.lastDecode = now
		// The decodes whose last token this was: from the heap under
		// speculation, else from the wheel (enterDecode files each in one).
		if in.cfg.Spec != nil {
			in.specAdvance()
			for len(in.heap) > 0 && in.heap[0].at == in.decCounter {
				r := in.heap.remove(0)
				in.leaveDecode(r)
				r.lastToken = now
				in.finish(r, now)
			}
		} else {
			for r := in.wheel.first(in.decCounter); r != nil; r = in.wheel.first(in.decCounter) {
				in.leaveDecode(r)
				r.lastToken = now
				in.finish(r, now)
			}
		}
	}
	if len(in.stepReqs) > 0 {
		in.endChunks(now)
	}
	evictable := 0
	if in.cache != nil {
		evictable = in.cache.evictable
	}
	// Field by field into the reused record (see World.finish), every
	// field of it, so not cleared first (TestStepRecordFields).
	st := &w.step
	st.Instance, st.Start, st.Duration = in.id, in.started, now-in.started
	st.Prefills, st.PrefillTokens, st.Decodes = in.batch.Prefills, in.batch.PrefillTokens, in.batch.Decodes
	st.KVBlocksUsed, st.KVBlocksTotal = in.usedBlocks-evictable, in.cfg.Blocks
	st.Preempted, st.FLOPs, st.Bytes = in.preempted, in.flops, in.bytes
	w.res.Steps++
	w.coll.AddStep(st)
	if w.sink != nil && w.err == nil {
		if err := w.sink.Step(st); err != nil {
			w.fail(err)
		}
	}
	in.preempted, in.swapSec = 0, 0
	if in.pulls.len() > 0 {
		in.tryPulls(now)
	}
	if checkAll {
		in.checkInvariants()
	}
	if in.held.len() > 0 {
		in.showHeld(false)
	}
	in.startStep(now)
}

// finish releases a finished request's blocks and records it.
func (in *Instance) finish(r *request, now sim.Time) {
	in.unlink(r)
	if in.tiers != nil {
		in.storeTiers(r) // its decode blocks
	}
	in.release(r)
	in.outstanding--
	r.state = stateDone
	in.w.finish(r, in.id, now)
}
