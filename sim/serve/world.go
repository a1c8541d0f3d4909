package serve

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/workload"
)

// Event priorities at equal times: arrivals first, so that a request
// arriving exactly when an iteration ends joins the next one.
const (
	prioArrival = iota
	prioStepEnd
)

// Random streams of the serving world (workload streams are 1–3).
const (
	StreamRouting   = 10
	StreamPredictor = 11
)

// Sink receives the run's records as they are produced: one per request when
// it finishes or is rejected, and one per iteration. Records are reused:
// a sink must copy what it keeps.
type Sink interface {
	Record(r *metrics.Record) error
	Step(s *metrics.Step) error
}

// Config is one simulation: a workload served by one or more identical
// instances behind a router.
type Config struct {
	Instance  InstanceConfig
	Replicas  int // instances (default 1)
	Source    workload.Source
	Collector *metrics.Collector
	Sink      Sink // optional

	Router    policies.Router    // default round-robin
	Scheduler policies.Scheduler // queue order (default FCFS)
	Admission policies.Admission // default admit all
	// RouterStaleness is how old the router's view of the instances may
	// be: it is refreshed when older than this (0 = always current).
	RouterStaleness sim.Time
	// PredictError is the σ of the output-length predictor's multiplicative
	// lognormal error (0 = exact), for SJF by prediction.
	PredictError float64
	// TTFTSLO is the default TTFT objective that sets request deadlines
	// (EDF, SLO-aware admission) when a request has none of its own.
	TTFTSLO sim.Time
	Seed    uint64
	// Disagg, when set, makes Instance, Replicas and Router describe the
	// prefill pool of a disaggregated deployment, and gives the decode pool
	// and the KV link between them.
	Disagg *Disagg
	// Engine is the serving stack between the router and the kernels
	// (default Ideal: kernels only).
	Engine Engine
	// DPLockstep, when its Ranks > 1, makes groups of that many colocated
	// instances (DP ranks) step in lock-step (dpgroup.go).
	DPLockstep DPLockstep
	// Done, when set, stops the run when it is closed (a context's Done):
	// Run checks it every StopCheckEvents events and returns an error
	// wrapping ErrStopped.
	Done <-chan struct{}
}

// ErrStopped is wrapped by Run's error when Config.Done closed.
var ErrStopped = errors.New("stopped")

// StopCheckEvents is how many events Run fires between looks at
// Config.Done: a look costs a few nanoseconds, an event about a hundred.
const StopCheckEvents = 1024

// Result counts what happened in a run.
type Result struct {
	Arrived, Finished, Rejected int64
	Deferrals                   int64
	Preemptions                 int64
	RecomputeTokens             int64   // tokens whose KV was dropped by recompute preemptions and recomputed
	SwapOuts                    int64   // preemptions by swap
	SwapOutSeconds              float64 // host-link time spent swapping out
	SwapInSeconds               float64 // and in
	PromptTokensAdmitted        int64   // prompt tokens of first admissions
	PrefixHitTokens             int64   // prompt tokens served from the prefix cache
	PreemptHitTokens            int64   // tokens a recompute-preempted request found in its own cached blocks
	PrefixEvictions             int64   // cached prefix units evicted
	// KV offload tiers (InstanceConfig.Tiers; kvtier.go), per tier: prompt
	// tokens loaded from it, bytes written into it (the first tier: from
	// the GPU over the host link's device-to-host direction) and that
	// write link's seconds, bytes read over its read link (the first
	// tier's: every load's bytes, the host link into the GPU) and those
	// seconds, and units evicted. TierLoads counts the requests that
	// loaded, TierLoadWaitSeconds their time from admission to the load's
	// end.
	TierHitTokens [MaxTiers]int64
	// TierPreemptHitTokens are the tokens of recompute-preempted
	// requests' own blocks loaded back from each tier on readmission
	// (instead of recomputed); TierPreemptLoads counts those loads.
	TierPreemptHitTokens             [MaxTiers]int64
	TierPreemptLoads                 int64
	TierStoreBytes, TierStoreSeconds [MaxTiers]float64
	TierLoadBytes, TierLoadSeconds   [MaxTiers]float64
	TierEvictions                    [MaxTiers]int64
	TierLoads                        int64
	TierLoadsDropped                 int64 // loaded KV freed again before its prefill (kvtier_engine.go dropLoaded)
	TierLoadWaitSeconds              float64
	TransferBytes                    float64 // KV bytes moved from the prefill to the decode pool
	Transfers                        int64
	LinkBusySeconds                  float64 // Σ over links of the time with a transfer in flight
	Steps                            int64
	// DPWaves and DPDummySteps count the DP lock-step groups' waves (each
	// one step on every rank) and the dummy batches idle ranks ran.
	DPWaves, DPDummySteps int64
	// DPRankSteps counts the ranks' real steps in those waves; the Decode
	// ones count the decode pool's groups apart (disaggregated; the
	// others then count the prefill pool's).
	DPRankSteps                                          int64
	DecodeDPWaves, DecodeDPDummySteps, DecodeDPRankSteps int64
	// Spec counts speculative decoding (nil with it off).
	Spec   *SpecStats
	Events uint64
	End    sim.Time // time of the last event
}

// World is the serving world of one run: the engine, the arrival stream,
// the router and the instances. It implements policies.RouteView.
type World struct {
	eng      sim.Engine
	src      workload.Source
	cfg      Config
	coll     *metrics.Collector
	sink     Sink
	inst     []*Instance // all instances, indexed by id
	front    *pool       // where requests arrive: the colocated or the prefill pool
	decode   *pool       // the decode pool when disaggregated
	links    []*link     // per prefill instance, when disaggregated
	groups   []*dpGroup  // DP lock-step groups (Config.DPLockstep)
	free     []*request
	next     workload.Request
	arriveEv *sim.Event
	// fb is the source when it is a workload.Feedback (closed-loop
	// clients, draining stages): told of every finish; blocked while it
	// waits for one.
	fb      workload.Feedback
	blocked bool
	rec     metrics.Record
	step    metrics.Step
	err     error
	res     Result

	predict *rand.Rand

	engine  Engine   // cfg.Engine
	joinLag int      // engine.JoinLag()
	egress  sim.Time // engine.Egress()
}

// Validate checks an instance configuration.
func (c *InstanceConfig) Validate() error {
	switch {
	case c.Step == nil:
		return fmt.Errorf("serve: no step-time model")
	case c.Batcher == nil:
		return fmt.Errorf("serve: no batching policy")
	case c.BlockSize <= 0:
		return fmt.Errorf("serve: block size %d: must be > 0", c.BlockSize)
	case c.Blocks <= 0:
		return fmt.Errorf("serve: KV cache has %d blocks: must be > 0", c.Blocks)
	case c.Limits.MaxNumSeqs <= 0:
		return fmt.Errorf("serve: max_num_seqs %d: must be > 0", c.Limits.MaxNumSeqs)
	case c.Limits.MaxNumBatchedTokens <= 0:
		return fmt.Errorf("serve: max_num_batched_tokens %d: must be > 0", c.Limits.MaxNumBatchedTokens)
	case c.Preempt != "" && c.Preempt != PreemptRecompute && c.Preempt != PreemptSwap:
		return fmt.Errorf("serve: preemption %q: want %s or %s", c.Preempt, PreemptRecompute, PreemptSwap)
	case c.Victim != "" && c.Victim != VictimNewest && c.Victim != VictimLowestPriority && c.Victim != VictimFewestOutput:
		return fmt.Errorf("serve: victim %q: want %s, %s or %s", c.Victim, VictimNewest, VictimLowestPriority, VictimFewestOutput)
	case c.Preempt == PreemptSwap && !(c.HostBW > 0 && c.KVBytesPerToken > 0 && c.SwapSpace >= 0):
		return fmt.Errorf("serve: swap preemption needs host bandwidth > 0, KV bytes per token > 0 and swap space ≥ 0")
	}
	return validateTiers(c)
}

// Run simulates cfg to the end of its workload and returns what happened.
// Every request that arrives either finishes or is rejected with a reason;
// a request left over at the end is a bug and returns an error.
func Run(cfg Config) (Result, error) {
	if err := cfg.Instance.Validate(); err != nil {
		return Result{}, err
	}
	if cfg.Source == nil || cfg.Collector == nil {
		return Result{}, fmt.Errorf("serve: config needs a workload source and a collector")
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Replicas < 0 {
		return Result{}, fmt.Errorf("serve: %d replicas", cfg.Replicas)
	}
	if len(cfg.Instance.Tiers) > 0 && (cfg.Disagg != nil || cfg.DPLockstep.Ranks > 1) {
		return Result{}, fmt.Errorf("serve: KV offload tiers are modelled on colocated instances that step on their own (not disaggregated, not DP lock-step)")
	}
	if cfg.Router == nil {
		cfg.Router = &policies.RoundRobin{}
	}
	if cfg.Scheduler == nil {
		cfg.Scheduler = policies.FCFS{}
	}
	if cfg.Admission == nil {
		cfg.Admission = policies.AdmitAll{}
	}
	if !(cfg.PredictError >= 0) || math.IsInf(cfg.PredictError, 0) {
		return Result{}, fmt.Errorf("serve: predictor error σ %v: must be ≥ 0", cfg.PredictError)
	}
	specTimer, _ := cfg.Instance.Step.(*SpecStep) // before the engine wraps it
	setupEngine(&cfg)
	w := &World{src: cfg.Source, cfg: cfg, coll: cfg.Collector, sink: cfg.Sink}
	w.engine, w.joinLag, w.egress = cfg.Engine, cfg.Engine.JoinLag(), cfg.Engine.Egress()
	w.predict = rand.New(rand.NewPCG(cfg.Seed, StreamPredictor))
	if sp := specOf(&cfg); sp != nil {
		if err := sp.Validate(); err != nil {
			return Result{}, err
		}
		w.res.Spec = &SpecStats{K: sp.K, AcceptedPerPos: make([]int64, sp.K)}
	}
	w.front = &pool{w: w, router: cfg.Router, staleness: cfg.RouterStaleness}
	role := roleColocated
	if cfg.Disagg != nil {
		role = rolePrefill
	}
	for range cfg.Replicas {
		in := newInstance(len(w.inst), cfg.Instance, w)
		in.role = role
		w.inst = append(w.inst, in)
		w.front.insts = append(w.front.insts, in)
	}
	if specTimer != nil {
		specTimer.verify, specTimer.draft = 0, 0 // newInstance priced a probe step
	}
	w.setupDPGroups()
	if err := w.setupDisagg(); err != nil {
		return Result{}, err
	}
	w.arriveEv = sim.NewEvent(prioArrival, (*arriveHandler)(w))
	w.fb, _ = w.src.(workload.Feedback)
	if w.src.Next(&w.next) {
		w.eng.ScheduleEvent(w.arriveEv, w.next.Arrival)
	} else {
		w.blocked = w.fb != nil && w.fb.Blocked()
	}
	if cfg.Done == nil {
		for w.eng.Steps(math.MaxInt) == math.MaxInt { // an error stops the engine (fail)
		}
	} else {
		w.runUntilDone(cfg.Done)
	}
	if w.err != nil {
		return w.res, w.err
	}
	if w.blocked {
		return w.res, fmt.Errorf("serve: the workload waits for a request to finish, but none is in flight (a bug in the source)")
	}
	if err := workload.SourceErr(w.src); err != nil {
		return w.res, err
	}
	w.res.Events = w.eng.Fired()
	w.res.End = w.eng.Now()
	if specTimer != nil && w.res.Spec != nil {
		w.res.Spec.VerifySeconds, w.res.Spec.DraftSeconds = specTimer.verify, specTimer.draft
	}
	for _, g := range w.groups {
		if g.ranks[0].role == roleDecode {
			w.res.DecodeDPWaves += g.waves
			w.res.DecodeDPDummySteps += g.dummies
			w.res.DecodeDPRankSteps += g.rankSteps
			continue
		}
		w.res.DPWaves += g.waves
		w.res.DPDummySteps += g.dummies
		w.res.DPRankSteps += g.rankSteps
	}
	if w.res.Arrived != w.res.Finished+w.res.Rejected {
		return w.res, fmt.Errorf("serve: %d requests arrived but %d finished and %d were rejected: requests lost (a bug)",
			w.res.Arrived, w.res.Finished, w.res.Rejected)
	}
	return w.res, nil
}

// runUntilDone fires events until none is left, an error, or done closes.
func (w *World) runUntilDone(done <-chan struct{}) {
	// Steps returns fewer events when none is left or an error stopped
	// the engine (fail).
	for w.eng.Steps(StopCheckEvents) == StopCheckEvents {
		select {
		case <-done:
			// fail: the event that ended the batch may have failed the
			// run already, and the first error wins.
			w.fail(fmt.Errorf("serve: %w at simulated %v after %d events", ErrStopped, w.eng.Now(), w.eng.Fired()))
			return
		default:
		}
	}
}

// fail stops the run with err (the first error wins): the engine fires no
// more events (sim.Engine.Stop). Every error of a run is set through it.
func (w *World) fail(err error) {
	if w.err == nil {
		w.err = err
	}
	w.eng.Stop()
}

// arrive takes the pending arrival, offers it to the cluster and schedules
// the next one.
func (w *World) arrive(now sim.Time) {
	q := &w.next
	r := w.alloc()
	r.id, r.arrival, r.prompt, r.output = q.ID, now, q.PromptTokens, q.OutputTokens
	r.class, r.ttftSLO, r.tpotSLO = q.Class, q.TTFTSLO, q.TPOTSLO
	if r.ttftSLO == 0 {
		r.ttftSLO = w.cfg.TTFTSLO
	}
	if r.ttftSLO > 0 {
		if r.ttftSLO >= sim.Forever-now {
			w.fail(fmt.Errorf("serve: request %d arriving at %v: its TTFT deadline (%v later) would pass the clock's range (%.3g s, about 292 years)",
				r.id, now, r.ttftSLO, sim.MaxSeconds))
			return
		}
		r.deadline = now + r.ttftSLO
	}
	if len(q.Prefix) > 0 && q.PrefixBlockTokens > 0 && q.PrefixBlockTokens%w.cfg.Instance.BlockSize == 0 {
		r.hashes = append(r.hashes, q.Prefix...)
		r.unitToks = q.PrefixBlockTokens
	}
	r.predOut = r.output
	if w.cfg.PredictError > 0 {
		r.predOut = max(1, int(math.Round(float64(r.output)*math.Exp(w.cfg.PredictError*w.predict.NormFloat64()))))
	}
	w.res.Arrived++
	w.pull(r.id, now)
	w.ingress(r, now)
}

// pull fetches the next arrival after request id (arrived at now) and
// schedules it.
func (w *World) pull(id int64, now sim.Time) {
	if w.src.Next(&w.next) {
		if w.next.Arrival < now {
			w.fail(fmt.Errorf("serve: request %d arrives at %v, before request %d at %v: the workload must be in arrival order",
				w.next.ID, w.next.Arrival, id, now))
			return
		}
		w.eng.ScheduleEvent(w.arriveEv, w.next.Arrival)
		return
	}
	w.blocked = w.fb != nil && w.fb.Blocked()
}

// done tells a feedback source that request id finished or was rejected,
// and pulls the next arrival if the source was waiting for it.
func (w *World) done(id int64, now sim.Time) {
	w.fb.Finished(id, now+w.egress) // the client sees the finish after the egress delay
	if w.blocked {
		w.blocked = false
		w.pull(id, now)
	}
}

// offer routes a request and asks admission control; it is called again for
// a deferred request.
func (w *World) offer(r *request, now sim.Time) {
	item := policies.QueueItem{ID: r.id, Arrival: r.arrival, Prompt: r.prompt, PredictedOutput: r.predOut, Deadline: r.deadline, Class: r.class}
	in := w.front.route(r, item)
	if r.prompt < 1 || r.output < 1 {
		w.reject(r, in.id, RejectEmpty)
		return
	}
	if reason := in.admitCheck(r); reason != "" {
		w.reject(r, in.id, reason)
		return
	}
	if w.decode != nil {
		if reason := w.decode.insts[0].admitCheck(r); reason != "" {
			w.reject(r, in.id, "decode-"+reason)
			return
		}
	}
	v := w.cfg.Admission.Admit(in, item)
	switch {
	case v.Admit:
		r.key = w.cfg.Scheduler.Key(item)
		in.enqueue(r, now)
	case v.RetryAt > now:
		r.deferrals++
		w.res.Deferrals++
		w.eng.Schedule(v.RetryAt, prioArrival, sim.HandlerFunc(func(t sim.Time) { w.offer(r, t) }))
	default:
		reason := v.Reason
		if reason == "" {
			reason = "rejected-by-" + w.cfg.Admission.Name()
		}
		w.reject(r, in.id, reason)
	}
}

// pool is a set of identical instances behind a router; it implements
// policies.RouteView, with the router's view refreshed at most once per
// staleness interval.
type pool struct {
	w         *World
	insts     []*Instance
	router    policies.Router
	staleness sim.Time
	snap      []policies.InstanceState
	snapAt    sim.Time
	snapped   bool
	routeReq  *request // the request being routed (for PrefixMatch)
}

// route picks an instance for r.
func (p *pool) route(r *request, item policies.QueueItem) *Instance {
	p.routeReq = r
	i := p.router.Route(p, item)
	p.routeReq = nil
	if i < 0 || i >= len(p.insts) {
		panic(fmt.Sprintf("serve: router %s chose instance %d of %d", p.router.Name(), i, len(p.insts)))
	}
	return p.insts[i]
}

// Instances returns the number of instances.
func (p *pool) Instances() int { return len(p.insts) }

// State returns instance i's state as the router sees it: current, or as
// of the last refresh when a staleness interval is set.
func (p *pool) State(i int) policies.InstanceState {
	if p.staleness == 0 {
		return p.insts[i].state()
	}
	now := p.w.eng.Now()
	if !p.snapped || now-p.snapAt >= p.staleness {
		if p.snap == nil {
			p.snap = make([]policies.InstanceState, len(p.insts))
		}
		for j, in := range p.insts {
			p.snap[j] = in.state()
		}
		p.snapAt, p.snapped = now, true
	}
	return p.snap[i]
}

// Counts returns State(i)'s Outstanding and Waiting (policies.CountView):
// computed directly when current, from the snapshot when stale.
func (p *pool) Counts(i int) (outstanding, waiting int) {
	if p.staleness != 0 {
		st := p.State(i)
		return st.Outstanding, st.Waiting
	}
	return p.insts[i].counts()
}

// PrefixMatch returns the leading prefix units of the request being routed
// that instance i has cached (always current: a router asks the cache).
func (p *pool) PrefixMatch(i int) int {
	in, r := p.insts[i], p.routeReq
	if in.cache == nil || r == nil || r.unitToks == 0 {
		return 0
	}
	return in.cache.match(r.hashes, len(r.hashes))
}

// TierMatch returns the request's prefix units after instance i's GPU
// match that its offload tiers hold (always current, as PrefixMatch).
func (p *pool) TierMatch(i int) int {
	in, r := p.insts[i], p.routeReq
	if in.tiers == nil || r == nil || r.unitToks == 0 {
		return 0
	}
	n := in.cache.match(r.hashes, len(r.hashes))
	return in.tiers.match(r.hashes[n:], len(r.hashes)-n)
}

// UnitTokens returns the tokens per prefix unit of the request being
// routed (0 without hashes).
func (p *pool) UnitTokens() int {
	if p.routeReq == nil {
		return 0
	}
	return p.routeReq.unitToks
}

// BlockSize returns the instances' KV block size.
func (p *pool) BlockSize() int { return p.insts[0].cfg.BlockSize }

// ActiveBlocks returns instance i's KV blocks in use and those its queued,
// held and swapped requests will need (their tokens still to compute or
// bring back): O(queue).
func (p *pool) ActiveBlocks(i int) int {
	in := p.insts[i]
	n := in.cfg.Blocks - in.FreeBlocks()
	for _, q := range []*queue{&in.waiting, &in.held, &in.swapped, &in.pulls} {
		for j := 0; j < q.len(); j++ {
			r := q.at(j)
			n += in.blocksOf(max(r.target, r.prompt)) - in.blocksOf(r.computed)
			if r.state == stateSwapped {
				n += in.blocksOf(r.computed) // its KV comes back
			}
		}
	}
	return n
}

var (
	_ policies.CacheView = (*pool)(nil)
	_ policies.CountView = (*pool)(nil)
)

func (in *Instance) state() policies.InstanceState {
	used := in.cfg.Blocks - in.FreeBlocks()
	out, wait := in.counts()
	return policies.InstanceState{
		Outstanding:  out,
		Waiting:      wait,
		KVUse:        float64(used) / float64(in.cfg.Blocks),
		KVBlocksUsed: used,
	}
}

// counts returns the instance's outstanding and waiting requests as the
// router sees them.
func (in *Instance) counts() (outstanding, waiting int) {
	return in.outstanding + in.pulls.len() + in.incoming,
		in.waiting.len() + in.swapped.len() + in.pulls.len() + in.held.len()
}

func (w *World) alloc() *request {
	if n := len(w.free); n > 0 {
		r := w.free[n-1]
		w.free = w.free[:n-1]
		return r
	}
	return &request{hidx: -1}
}

func (w *World) reject(r *request, inst int, reason string) {
	w.rec = metrics.Record{ID: r.id, Instance: inst, Arrival: r.arrival, PromptTokens: r.prompt, OutputTokens: r.output, Rejected: reason,
		Class: r.class, SLO: metrics.SLO{TTFT: r.ttftSLO, TPOT: r.tpotSLO}}
	w.res.Rejected++
	w.emit()
	if w.fb != nil {
		w.done(r.id, w.eng.Now())
	}
	r.reset()
	w.free = append(w.free, r)
}

// finish records a finished request and recycles it.
func (w *World) finish(r *request, inst int, now sim.Time) {
	// Field by field into the reused record, cleared in place: a composite
	// literal is built on the stack and copied over in 16-byte moves that
	// read the 8-byte stores just made, stalling each (store forwarding
	// fails), as the profile showed.
	rec := &w.rec
	*rec = metrics.Record{}
	rec.ID, rec.Instance, rec.Arrival = r.id, inst, r.arrival
	rec.FirstToken, rec.Finish = r.firstToken+w.egress, now+w.egress
	rec.PromptTokens, rec.OutputTokens, rec.Preemptions = r.prompt, r.generated, r.preemptions
	rec.Class, rec.SLO = r.class, metrics.SLO{TTFT: r.ttftSLO, TPOT: r.tpotSLO}
	rec.Scheduled, rec.TransferStart, rec.TransferEnd = r.scheduled, r.xferStart, r.xferEnd
	w.res.Finished++
	w.emit()
	if w.fb != nil {
		w.done(r.id, now)
	}
	r.reset()
	w.free = append(w.free, r)
}

func (w *World) emit() {
	w.coll.Add(&w.rec)
	if w.sink != nil && w.err == nil {
		if err := w.sink.Record(&w.rec); err != nil {
			w.fail(err)
		}
	}
}
