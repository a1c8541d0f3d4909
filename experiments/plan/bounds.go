package plan

import (
	"fmt"
	"math"
	"sync"

	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/models"
)

// boundSlack is the factor by which a deployment's analytic capacity bound
// is loosened before it prunes: the bound uses the output distribution's
// mean, and one run's sample mean (clamped by max_model_len) may fall below
// it. A prune needs the target rate above twice the bound.
const boundSlack = 2

// capacityBound is what a deployment can do at best, from its step model
// alone (the roofline or calibrated kernel times; the engine model and
// every queue only add time):
//   - Rate: an upper bound on the request rate it sustains, the lower of
//     the decode bound (the most output tokens per second of any decode
//     batch up to max_num_seqs, over the mean output tokens after the
//     first) and the prefill bound (the most prompt tokens per second of a
//     prefill of up to max_num_batched_tokens, over the mean prompt);
//     +Inf when the workload is not synthetic (a trace or a class mix,
//     whose lengths the bound does not read);
//   - TTFT, TPOT: lower bounds on every request's TTFT and TPOT, the step
//     time of a lone one-token prefill and of a lone decode, in seconds.
//
// Pruning with Rate is sound only when queueing makes a request miss its
// SLO: above twice the bound the queue grows by at least the bound per
// second, so a request arriving t s into the run waits about t s, and with
// a TTFT or E2E objective well under the run's length most requests miss.
// A TPOT-only SLO is indifferent to queueing: ratePrunes is false then.
//
// A pipeline-parallel instance (pp > 1) gets the lone-request bounds only:
// its step model (hardware.PipelineStep.StepModel) is the whole model on
// one TP group, and a lone request's round is one micro-batch's trip
// through every stage, the stages' kernel times summing to that step's
// (TestPipelineStagesSumToStep) plus the sends, so TTFT and TPOT stay lower
// bounds. Its Rate is +Inf and ratePrunes false: up to pp micro-batches
// are in flight and a round's token budget is pp × max_num_batched_tokens,
// so one step's tokens per second are no upper bound on a round's, and a
// bound of pp × that would hold only if splitting a batch never shortened
// its kernel time (true of the roofline, not shown for calibrated
// efficiencies). Pipeline layouts are searched unpruned by rate.
type capacityBound struct {
	Rate       float64 // req/s, the whole deployment
	TTFT, TPOT float64 // s
	ratePrunes bool
	// prefill and decode are one instance's bounds of each pool (req/s;
	// +Inf when the workload gives none).
	prefill, decode float64
}

// poolBound is one pool's bound per instance.
type poolBound struct {
	decodeTokPerS, prefillTokPerS float64
	lonePrefill, loneDecode       float64 // s
}

func poolBoundOf(pp *scenario.PoolPlan) poolBound {
	st := pp.Step
	b := poolBound{
		lonePrefill: st.StepTime(models.Batch{Prefills: 1, PrefillTokens: 1, PrefillPairs: 1}),
		loneDecode:  st.StepTime(models.Batch{Decodes: 1, DecodeCtx: 1}),
	}
	if pp.Pipeline != nil {
		return b // no rate bound for a pipeline (see capacityBound)
	}
	// Decode: d requests each at context ≥ 1 produce d tokens a step.
	seqs := pp.Limits.MaxNumSeqs
	if seqs <= 0 {
		seqs = 256
	}
	for d := 1; d <= seqs; d++ {
		if t := st.StepTime(models.Batch{Decodes: d, DecodeCtx: int64(d)}); t > 0 {
			b.decodeTokPerS = math.Max(b.decodeTokPerS, float64(d)/t)
		}
	}
	// Prefill: n prompt tokens in one chunk with no prior context and n
	// query–key pairs (each token with itself only: the fewest any n
	// prompt tokens have), up to the token budget.
	budget := pp.Limits.MaxNumBatchedTokens
	if budget <= 0 {
		budget = 8192
	}
	for n := 1; n <= budget; n++ {
		if t := st.StepTime(models.Batch{Prefills: 1, PrefillTokens: n, PrefillPairs: float64(n)}); t > 0 {
			b.prefillTokPerS = math.Max(b.prefillTokPerS, float64(n)/t)
		}
	}
	return b
}

// boundOf computes the bound of a resolved plan.
func boundOf(p *scenario.Plan) capacityBound {
	b := capacityBound{Rate: math.Inf(1), prefill: math.Inf(1), decode: math.Inf(1)}
	pre := poolBoundOf(&p.PoolPlan)
	dec := pre
	prefillReps, decodeReps := float64(p.Replicas), float64(p.Replicas)
	if p.Decode != nil {
		dec = poolBoundOf(p.Decode)
		decodeReps = float64(p.DecodeInstances)
	}
	b.TTFT, b.TPOT = pre.lonePrefill, dec.loneDecode
	sloTime := math.Inf(1)
	for _, v := range []float64{p.Scenario.SLO.TTFTms, p.Scenario.SLO.E2Ems} {
		if v > 0 {
			sloTime = math.Min(sloTime, v/1e3)
		}
	}
	synthetic := p.Trace == nil && p.Mix == nil && p.Replay == nil && p.MaxConcurrency == 0
	// A run shorter than 4 × the objective leaves too little queue growth
	// for the argument above: no pruning by rate.
	b.ratePrunes = synthetic && sloTime*4 <= float64(p.Workload.Duration)/1e9 && p.Pipeline == nil
	if !synthetic || p.Pipeline != nil {
		return b
	}
	if out := p.Workload.Output.Mean() - 1; out > 0 && dec.decodeTokPerS > 0 {
		b.decode = dec.decodeTokPerS / out
	}
	// A shared prefix may be served from the prefix cache: no prefill bound.
	if in := p.Workload.Prompt.Mean(); in > 0 && pre.prefillTokPerS > 0 && p.Workload.SharedPrefix == 0 {
		b.prefill = pre.prefillTokPerS / in
	}
	b.Rate = math.Min(prefillReps*b.prefill, decodeReps*b.decode)
	return b
}

// missesUnloaded says why no request can meet the SLO however few arrive
// (a lone request's TTFT or TPOT already misses), or "" when one may.
func (b capacityBound) missesUnloaded(slo scenario.SLO) string {
	ms := func(s float64) string { return fmt.Sprintf("%.3g ms", 1e3*s) }
	switch {
	case slo.TTFTms > 0 && b.TTFT*1e3 > slo.TTFTms:
		return fmt.Sprintf("%s any rate: a lone request's TTFT is at least %s (one prefill step), above the TTFT SLO %g ms", missesPrefix, ms(b.TTFT), slo.TTFTms)
	case slo.E2Ems > 0 && b.TTFT*1e3 > slo.E2Ems:
		return fmt.Sprintf("%s any rate: a lone request's E2E is at least %s (one prefill step), above the E2E SLO %g ms", missesPrefix, ms(b.TTFT), slo.E2Ems)
	case slo.TPOTms > 0 && b.TPOT*1e3 > slo.TPOTms:
		return fmt.Sprintf("%s any rate: a lone decode step takes %s, above the TPOT SLO %g ms", missesPrefix, ms(b.TPOT), slo.TPOTms)
	}
	return ""
}

// cannotServe reports whether the bound proves the deployment cannot serve
// rate within a TTFT or E2E objective (see capacityBound).
func (b capacityBound) cannotServe(rate float64) bool {
	return b.ratePrunes && rate > boundSlack*b.Rate
}

// probeCache memoizes simulated (deployment, rate) points within one plan
// or placement search, so that a point the search visits twice (a step
// down to a replica count already tried, a bisection's end already run)
// is simulated once. Keys name everything the search varies; the base
// scenario is fixed for the cache's life. Safe for concurrent use; a key
// being computed is waited for, not run twice.
type probeCache struct {
	mu     sync.Mutex
	m      map[string]*probe
	noMemo bool // count only: every get runs (NoPrune)
	runs   int  // simulations run (for tests)
	hits   int
}

type probe struct {
	once sync.Once
	rep  *scenario.Report
	err  error
}

// newProbeCache is an empty cache; noMemo (a search's NoPrune) makes it
// count the runs only, every get running its fn.
func newProbeCache(noMemo bool) *probeCache {
	return &probeCache{m: map[string]*probe{}, noMemo: noMemo}
}

// get returns key's report, running fn the first time.
func (c *probeCache) get(key string, fn func() (*scenario.Report, error)) (*scenario.Report, error) {
	if c == nil {
		return fn()
	}
	if c.noMemo {
		c.mu.Lock()
		c.runs++
		c.mu.Unlock()
		return fn()
	}
	c.mu.Lock()
	p, ok := c.m[key]
	if !ok {
		p = &probe{}
		c.m[key] = p
		c.runs++
	} else {
		c.hits++
	}
	c.mu.Unlock()
	p.once.Do(func() { p.rep, p.err = fn() })
	return p.rep, p.err
}

// probeKey names a deployment of base at rate for the cache.
func probeKey(kind string, base scenario.Scenario, c *Placement, rate float64) string {
	return fmt.Sprintf("%s|%s|%d|%d|%d|%d|%d|%v|%v|%d|%d|%x", kind, base.GPU, base.Batch.MaxNumSeqs, c.Replicas, c.TP, max(1, c.PP), max(1, c.DP), c.EP, c.Disagg, c.DecodeRep, c.DecodeTP, math.Float64bits(rate))
}
