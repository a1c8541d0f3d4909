package serve

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servesim/servesim/models"
)

// Speculative decoding as vLLM V1 runs it. Every decoding request carries
// K draft tokens into a step (the scheduler schedules 1 + K tokens for it:
// vllm/v1/core/sched/scheduler.py schedule(), num_new_tokens =
// request.num_tokens_with_spec − num_computed_tokens, and allocate_slots
// reserves their KV slots, num_lookahead_tokens); the target verifies them
// in one pass over 1 + K query tokens a request (gpu_model_runner.py
// _calc_spec_decode_metadata); the rejection sampler accepts the drafts
// left to right up to the first rejection and adds one token sampled from
// the target (vllm/v1/sample/rejection_sampler.py, rejection_sample: a
// position counts only if all before it were accepted); the scheduler then
// rolls back the rejected tokens (update_from_output: num_computed_tokens
// −= num_rejected), and the drafter proposes the next K (EagleProposer.propose
// in vllm/v1/spec_decode/eagle.py, NgramProposer, DraftModelProposer).
//
// A step therefore emits 1 + a tokens per decoding request, a the accepted
// drafts, and the client receives them in one streamed chunk: TPOT falls,
// ITL (one gap per chunk, vLLM bench serve's convention) does not.

// Speculation configures speculative decoding on an instance (nil: off).
type Speculation struct {
	// K is num_speculative_tokens: drafts per decoding request a step.
	K int
	// Lookahead is the scheduler's num_lookahead_tokens: KV slots a
	// verification reserves past its 1 + K tokens, for a drafter that
	// caches KV (K for eagle, eagle3, mtp and draft_model; 0 for ngram:
	// scheduler.py Scheduler.__init__, use_eagle() / uses_draft_model()).
	Lookahead int
	// Accept draws the accepted drafts of each verification.
	Accept Acceptance
}

// Acceptance says how many of a step's K drafts the target accepts.
type Acceptance interface {
	// Accepted returns the accepted drafts (0..k) of request id's (of
	// workload class class) step-th verification (from 0); u is a uniform
	// draw in [0, 1) from the request's own stream.
	Accepted(id int64, class string, step int, u float64, k int) int
}

// PositionRates are per-position acceptance rates as vLLM reports them
// (vllm/v1/spec_decode/metrics.py SpecDecodingLogging: "Per-position
// acceptance rate", accepted tokens at position i over drafts): the share
// of drafts whose i-th token was accepted, which under sequential
// rejection is the probability that positions 1..i all were. They are
// non-increasing; the conditional rate of position i given 1..i−1 is
// rate_i / rate_{i−1}. A draw u accepts the positions with u < rate_i (one
// inverse-CDF draw of the sequential test: P(a ≥ i) = rate_i), so
// E[tokens a step] = 1 + Σ_i rate_i.
type PositionRates []float64

// Accepted implements Acceptance.
func (p PositionRates) Accepted(_ int64, _ string, _ int, u float64, k int) int {
	n := 0
	for n < k && n < len(p) && u < p[n] {
		n++
	}
	return n
}

// Validate checks the rates are in [0, 1], non-increasing, and cover k
// positions.
func (p PositionRates) Validate(k int) error {
	if len(p) < k {
		return fmt.Errorf("serve: speculative decoding: %d acceptance rates for %d speculative tokens: give one a position", len(p), k)
	}
	for i, r := range p {
		if !(r >= 0 && r <= 1) {
			return fmt.Errorf("serve: speculative decoding: acceptance rate %g at position %d must be in [0, 1]", r, i+1)
		}
		if i > 0 && r > p[i-1] {
			return fmt.Errorf("serve: speculative decoding: acceptance rate %g at position %d exceeds %g at position %d: vLLM's per-position rates count a position only when all before it were accepted, so they cannot rise", r, i+1, p[i-1], i)
		}
	}
	return nil
}

// ExpectedTokens returns the expected tokens a verification emits with k
// drafts: 1 + Σ_{i≤k} rate_i.
func (p PositionRates) ExpectedTokens(k int) float64 {
	e := 1.0
	for i := 0; i < k && i < len(p); i++ {
		e += p[i]
	}
	return e
}

// ClassRates are per-position rates by workload class (acceptance
// differs by task: SpecDecode-Bench's per-dataset acceptance), with
// Default for a class not listed.
type ClassRates struct {
	Default PositionRates
	ByClass map[string]PositionRates
}

// Accepted implements Acceptance.
func (c ClassRates) Accepted(id int64, class string, step int, u float64, k int) int {
	if r, ok := c.ByClass[class]; ok {
		return r.Accepted(id, class, step, u, k)
	}
	return c.Default.Accepted(id, class, step, u, k)
}

// AcceptTrace replays accepted draft counts: one row per request (request
// id modulo the rows), read in order, a request's step-th verification
// taking its row's step-th count (cycling).
type AcceptTrace [][]int

// Accepted implements Acceptance; a count above k is k.
func (t AcceptTrace) Accepted(id int64, _ string, step int, _ float64, k int) int {
	row := t[int(uint64(id)%uint64(len(t)))]
	return min(row[step%len(row)], k)
}

// ReadAcceptTrace parses an acceptance trace: a line a request, each the
// accepted drafts of its verifications in order (integers ≥ 0 separated by
// spaces or commas); blank lines and lines starting with '#' are skipped.
// Counts above k are refused. name labels errors.
func ReadAcceptTrace(r io.Reader, name string, k int) (AcceptTrace, error) {
	var t AcceptTrace
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f := strings.FieldsFunc(s, func(c rune) bool { return c == ' ' || c == '\t' || c == ',' })
		row := make([]int, 0, len(f))
		for i, x := range f {
			n, err := strconv.Atoi(x)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("serve: %s:%d: field %d %q: want an accepted-draft count ≥ 0", name, line, i+1, x)
			}
			if n > k {
				return nil, fmt.Errorf("serve: %s:%d: field %d: %d accepted drafts, more than num_speculative_tokens %d", name, line, i+1, n, k)
			}
			row = append(row, n)
		}
		if len(row) == 0 {
			return nil, fmt.Errorf("serve: %s:%d: no counts", name, line)
		}
		t = append(t, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("serve: %s:%d: %v", name, line+1, err)
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("serve: %s: no requests (want a line of accepted-draft counts a request)", name)
	}
	return t, nil
}

// Validate checks the configuration.
func (s *Speculation) Validate() error {
	switch {
	case s.K < 1:
		return fmt.Errorf("serve: speculative decoding: num_speculative_tokens %d must be ≥ 1", s.K)
	case s.Lookahead < 0:
		return fmt.Errorf("serve: speculative decoding: lookahead %d must be ≥ 0", s.Lookahead)
	case s.Accept == nil:
		return fmt.Errorf("serve: speculative decoding: no acceptance model")
	}
	switch a := s.Accept.(type) {
	case PositionRates:
		return a.Validate(s.K)
	case ClassRates:
		if err := a.Default.Validate(s.K); err != nil {
			return err
		}
		for _, c := range slices.Sorted(maps.Keys(a.ByClass)) {
			if err := a.ByClass[c].Validate(s.K); err != nil {
				return fmt.Errorf("%w (class %q)", err, c)
			}
		}
	}
	return nil
}

// SpecStep prices a speculative step: the target's verification of the
// batch (whose decodes carry 1 + K query tokens, models.Batch.DecodeQuery)
// plus the drafter's work. A GPU drafter (EAGLE head, MTP layer, draft
// model) runs as vLLM's proposers do (eagle.py EagleProposer.propose;
// draft_model.py reuses it): one forward pass over the step's tokens (every
// prefill chunk and every decode's 1 + K tokens, sampling one row a
// request), then K − 1 passes of one token a request; Draft prices those
// passes on its own kernel times (a StepTimer with no per-iteration
// overhead of its own). An n-gram drafter (ngram_proposer.py, on the CPU)
// costs ProposerCPU seconds a decoding request, in series with the step.
//
// Expand prices the verification as vLLM V0's BatchExpansionTop1Scorer
// ran it (vllm/spec_decode/batch_expansion.py, v0.7: each request's 1 + K
// tokens become 1 + K single-token sequences, row j attending over the
// context plus j drafts, so the KV is read 1 + K times). V0 took it
// whenever the target's attention backend was not FLASH_ATTN (an MLA
// model's was not) or CUDA graphs were on (spec_decode_worker.py
// create_worker: disable_mqa_scorer). Off, a verification is one decode of
// 1 + K query tokens reading the KV once: V1's path for MLA backends with
// QueryLenSupport.UNIFORM (FlashMLA, FlashInfer-MLA:
// vllm/v1/attention/backends/mla/*.py raise reorder_batch_threshold to
// 1 + K so verifications stay decodes).
//
// It sums the seconds it priced for the verification (the target's, less
// its fixed per-iteration overhead) and for the drafter, which a run
// reports (SpecStats); a run resets the sums when it starts.
type SpecStep struct {
	Target      StepTimer
	Draft       StepTimer // nil: no GPU drafter
	K           int
	ProposerCPU float64
	Expand      bool

	verify, draft float64 // seconds priced since the last reset
}

// Step implements StepTimer. It reads b's fields and builds the batches it
// prices field by field in the calls: a Batch (seven words) lives in
// memory, and copying one whole (into ExpandVerify, or draftWork, or out of
// them) reads its 8-byte stores with 16-byte loads, a store-forwarding
// stall every step.
func (s *SpecStep) Step(b models.Batch) (seconds, flops, bytes float64) {
	q := max(b.DecodeQuery, 1) // b.Query()
	if s.Expand && q > 1 {
		// ExpandVerify(b), written out.
		seconds, flops, bytes = s.Target.Step(models.Batch{Prefills: b.Prefills, PrefillTokens: b.PrefillTokens,
			PrefillCtx: b.PrefillCtx, PrefillPairs: b.PrefillPairs, Decodes: b.Decodes * q,
			DecodeCtx: int64(q)*b.DecodeCtx + int64(b.Decodes)*int64(q*(q-1)/2)})
	} else {
		seconds, flops, bytes = s.Target.Step(b)
	}
	if b.PrefillTokens+b.Decodes*q == 0 { // b.Tokens() == 0
		return
	}
	s.verify += seconds - s.IterOverhead()
	d := s.ProposerCPU * float64(b.Decodes)
	if s.Draft != nil {
		sec, f, by := s.draftWork(&b)
		d += sec
		flops, bytes = flops+f, bytes+by
	}
	s.draft += d
	return seconds + d, flops, bytes
}

// ExpandVerify returns b's verification as batch expansion runs it: each
// decode's q = 1 + K query tokens as q decodes of one token, the j-th
// (from 0) over the decode's context plus j, so the KV read is
// q·Σc + decodes·q(q−1)/2 tokens (Σc is b.DecodeCtx). A batch without
// speculative decodes is returned as it is.
func ExpandVerify(b models.Batch) models.Batch {
	q := b.Query()
	if q == 1 {
		return b
	}
	d := int64(b.Decodes)
	b.DecodeCtx = int64(q)*b.DecodeCtx + d*int64(q*(q-1)/2)
	b.Decodes *= q
	b.DecodeQuery = 0
	return b
}

// draftWork prices the drafter's K passes over *b (read field by field,
// as Step does).
func (s *SpecStep) draftWork(b *models.Batch) (sec, flops, bytes float64) {
	qi := max(b.DecodeQuery, 1) // b.Query()
	dtoks := b.Decodes * qi     // b.DecodeTokens()
	q := float64(qi)
	d := float64(b.Decodes)
	// The first pass: prefill chunks as they are, each decode's query
	// tokens as a chunk over its context; one sampled row a request.
	sec, flops, bytes = s.Draft.Step(models.Batch{
		Prefills:      b.Prefills + b.Decodes,
		PrefillTokens: b.PrefillTokens + dtoks,
		PrefillCtx:    b.PrefillCtx + b.DecodeCtx,
		PrefillPairs:  b.PrefillPairs + q*float64(b.DecodeCtx) + d*q*(q+1)/2,
	})
	if s.K > 1 {
		reqs := b.Prefills + b.Decodes
		ctx := b.PrefillCtx + int64(b.PrefillTokens) + b.DecodeCtx + int64(dtoks)
		sec1, f1, by1 := s.Draft.Step(models.Batch{Decodes: reqs, DecodeCtx: ctx})
		n := float64(s.K - 1)
		sec, flops, bytes = sec+n*sec1, flops+n*f1, bytes+n*by1
	}
	return sec, flops, bytes
}

// IterOverhead passes the target's fixed per-iteration overhead through
// (the vllm-v1 engine splits a step's CPU from its kernels by it).
func (s *SpecStep) IterOverhead() float64 {
	if f, ok := s.Target.(iterOverheader); ok {
		return f.IterOverhead()
	}
	return 0
}

var _ StepTimer = (*SpecStep)(nil)

// uniform turns 64 random bits into a float64 in [0, 1).
func uniform(x uint64) float64 { return float64(x>>11) * 0x1p-53 }

// streamSpec tags the per-request acceptance streams (seed, streamSpec ^ id).
const streamSpec = 12 << 56

// SpecStats counts speculative decoding over a run (vLLM's
// SpecDecodingStats: num_drafts, num_draft_tokens, num_accepted_tokens,
// num_accepted_tokens_per_pos).
type SpecStats struct {
	K              int
	Drafts         int64   // verifications (request-steps)
	DraftTokens    int64   // Drafts × K
	Accepted       int64   // accepted drafts, as the rejection sampler accepted them
	AcceptedPerPos []int64 // accepted drafts at each position
	Emitted        int64   // tokens the verifications emitted (accepted + bonus, less any past a request's end)
	// VerifySeconds and DraftSeconds are the step time priced for the
	// target's verification (its kernels) and for the drafter (its passes,
	// or the n-gram proposer's CPU), summed over the run's steps as the
	// step model priced them (before CPU/GPU overlap).
	VerifySeconds, DraftSeconds float64
}

// VerifyShare is the verification's share of verification + drafting.
func (s *SpecStats) VerifyShare() float64 {
	return s.VerifySeconds / (s.VerifySeconds + s.DraftSeconds)
}

// MeanAcceptanceLength is vLLM's mean acceptance length, 1 + accepted /
// drafts (metrics.py): the tokens a verification yields.
func (s *SpecStats) MeanAcceptanceLength() float64 {
	if s.Drafts == 0 {
		return math.NaN()
	}
	return 1 + float64(s.Accepted)/float64(s.Drafts)
}

// PositionRates returns the per-position acceptance rates measured.
func (s *SpecStats) PositionRates() []float64 {
	r := make([]float64, len(s.AcceptedPerPos))
	for i, n := range s.AcceptedPerPos {
		r[i] = float64(n) / float64(max(s.Drafts, 1))
	}
	return r
}

// The instance's side: lookahead KV slots, the verification batch and the
// acceptance draws.

// specNeed is the KV blocks a decoding request of kv cached tokens needs
// for a verification: slots for its 1 + K query tokens and the lookahead
// (allocate_slots(request, 1 + K, num_lookahead_tokens)).
func (in *Instance) specNeed(kv int) int {
	return in.blocksOf(kv+in.specSlots()) - in.blocksOf(kv)
}

// specSlots is the KV slots a verification takes past the cached KV.
func (in *Instance) specSlots() int { return 1 + in.cfg.Spec.K + in.cfg.Spec.Lookahead }

// freeLookahead returns n private blocks that held rejected drafts' KV.
func (in *Instance) freeLookahead(n int) {
	if n <= 0 {
		return
	}
	if in.cache == nil {
		in.usedBlocks -= n
		return
	}
	in.cache.freeAnon(n)
}

// specAdvance draws every decoding request's accepted drafts at the end of
// a verification step (after the decode counter has advanced each by its
// one sampled token), advances each by them, frees the KV slots of its
// rejected drafts, and sums the blocks the next verification needs. It
// touches every decoding request: O(decodes) a step, only with
// speculation on.
func (in *Instance) specAdvance() {
	sp := in.cfg.Spec
	st := in.w.res.Spec
	k := sp.K
	need := 0
	for i := range in.heap {
		r := in.heap[i].r
		cur := r.k0 + int(in.decCounter-r.d0) // KV after the step's sampled token
		if r.specSteps == 0 {
			r.spec.Seed(in.w.cfg.Seed, streamSpec^uint64(r.id))
		}
		a := sp.Accept.Accepted(r.id, r.class, r.specSteps, uniform(r.spec.Uint64()), k)
		r.specSteps++
		st.Drafts++
		st.DraftTokens += int64(k)
		st.Accepted += int64(a)
		for i := range a {
			st.AcceptedPerPos[i]++
		}
		a = min(a, int(r.finishAt-in.decCounter)) // tokens past the request's end are dropped
		st.Emitted += int64(1 + a)
		if a > 0 {
			in.phase[in.phaseOf(r)]--
			r.k0 += a
			r.g0 += a
			r.finishAt -= int64(a)
			in.heap[i].at = r.finishAt
			in.phase[in.phaseOf(r)]++
			in.sumKV += int64(a)
		}
		// Slots for kv + specSlots were taken (kv = cur − 1); those past the
		// accepted tokens go back, to be taken again by the next
		// verification (which the batcher counts first: DecodeBlocks).
		in.freeLookahead(in.blocksOf(cur-1+in.specSlots()) - in.blocksOf(cur+a))
		need += in.specNeed(cur + a)
	}
	in.specBlocks = need
	for i := len(in.heap)/2 - 1; i >= 0; i-- {
		in.heap.down(i)
	}
}

// specOf returns the run's speculation: the colocated instances', or the
// decode pool's when disaggregated (a prefill instance never decodes).
func specOf(cfg *Config) *Speculation {
	if cfg.Disagg != nil && cfg.Disagg.Decode.Spec != nil {
		return cfg.Disagg.Decode.Spec
	}
	return cfg.Instance.Spec
}
