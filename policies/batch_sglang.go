package policies

// SGLang's scheduler, as a batcher: which batch runs next
// (python/sglang/srt/managers/scheduler.py Scheduler.get_next_batch_to_run
// and get_new_batch_prefill) and which requests a prefill batch admits
// (python/sglang/srt/managers/schedule_policy.py PrefillAdder), read from
// github.com/sgl-project/sglang. The new-token ratio's constants are
// python/sglang/srt/environ.py's defaults.

const (
	// SGLangInitNewTokenRatio is SGLANG_INIT_NEW_TOKEN_RATIO (0.7); the
	// scheduler multiplies it by --schedule-conservativeness (default 1).
	SGLangInitNewTokenRatio = 0.7
	// SGLangMinNewTokenRatioFactor is SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR
	// (0.14): the ratio's floor is init × 0.14.
	SGLangMinNewTokenRatioFactor = 0.14
	// SGLangNewTokenRatioDecaySteps is SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS
	// (600): the ratio falls from init to its floor in 600 decode steps.
	SGLangNewTokenRatioDecaySteps = 600
	// SGLangRetractDecodeSteps is SGLANG_RETRACT_DECODE_STEPS (20): after a
	// retraction the ratio is reset as if each surviving request will run
	// 20 more steps (ScheduleBatch.retract_decode).
	SGLangRetractDecodeSteps = 20
	// SGLangClipMaxNewTokens is SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION
	// (4096): no request reserves more than 4096 tokens of output.
	SGLangClipMaxNewTokens = 4096
	// SGLangMaxPrefillTokens is ServerArgs.max_prefill_tokens' default
	// (16384): a prefill batch's tokens at most.
	SGLangMaxPrefillTokens = 16384
)

// OutputView is what a batcher that reserves KV for the tokens running
// requests will still generate reads of an instance (SGLang's
// PrefillAdder), beside View. Implementations may take O(running).
type OutputView interface {
	View
	// DecodeLeft returns Σ min(output tokens left, clip) over the decoding
	// requests.
	DecodeLeft(clip int) int64
	// DecodeTotals returns Σ tokens generated and Σ output tokens (the
	// requests' max_new_tokens) over the decoding requests.
	DecodeTotals() (generated, output int64)
	// Preemptions returns the preemptions the instance has made so far.
	Preemptions() int64
}

// SGLangRatio is SGLang's new-token ratio schedule (Scheduler.__init__):
// init = min(0.7 × conservativeness, 1), floor = min(init × 0.14, 1),
// decay = (init − floor) / 600 a decode step.
type SGLangRatio struct{ Init, Min, Decay float64 }

// NewSGLangRatio returns the schedule for --schedule-conservativeness c.
func NewSGLangRatio(c float64) SGLangRatio {
	init := min(SGLangInitNewTokenRatio*c, 1)
	floor := min(init*SGLangMinNewTokenRatioFactor, 1)
	return SGLangRatio{Init: init, Min: floor, Decay: (init - floor) / SGLangNewTokenRatioDecaySteps}
}

// SGLang is SGLang's scheduler. A prefill batch runs whenever one can be
// formed (the partial prefill first, then the waiting queue in order),
// otherwise the running requests decode; prefill and decode run in
// separate batches unless Mixed (--enable-mixed-chunk). A prefill batch
// holds at most MaxPrefillTokens tokens and, when Chunked, at most
// Limits.MaxNumBatchedTokens (chunked_prefill_size); a request longer than
// what is left of the chunk is cut and continues in the next prefill batch.
//
// Admission by predicted tokens (PrefillAdder): the KV tokens free plus
// evictable, less ratio × Σ min(output left, 4096) over the decoding
// requests (_get_running_request_total_token_offset), must exceed a new
// request's prompt left + min(output, 4096) + one page (add_one_req:
// total_tokens ≥ rem_total_tokens is NO_TOKEN); each admitted request then
// takes its prompt left, its whole clipped output and a page from that
// budget (_update_prefill_budget; a cut one reserves no output yet). A
// NO_TOKEN result, or max_running_requests reached, marks the batch full:
// no prefill is tried again until the running requests shrink
// (ScheduleBatch.batch_is_full, cleared in update_running_batch).
//
// The ratio falls by Decay after every decode step down to Min
// (update_running_batch); when a decode step finds too little KV memory the
// engine retracts requests (the instance's preemption, victim
// "fewest-output", ScheduleBatch.retract_decode's order) and the ratio
// becomes min(1, (Σ generated + 20 × n) / (Σ max_new + 1)) over the n
// survivors; when nothing runs it returns to Init (the event loop's idle
// branch). The ratio is state of one instance: the engine takes a copy per
// instance (PerInstance). A View without OutputView reads no reservation.
type SGLang struct {
	Ratio            SGLangRatio
	MaxPrefillTokens int
	Chunked          bool // chunked_prefill_size > 0
	Mixed            bool // --enable-mixed-chunk
	PageSize         int  // tokens per KV block (page_size)

	ratio      float64
	lastDecode bool
	seen       int64
	full       bool
	fullAt     int
}

var _ Batcher = (*SGLang)(nil)

// PerInstance returns a fresh copy for one instance, its ratio at Init.
func (p *SGLang) PerInstance() Batcher {
	c := *p
	c.ratio, c.lastDecode, c.seen, c.full, c.fullAt = p.Ratio.Init, false, 0, false, 0
	return &c
}

// Name returns "sglang".
func (*SGLang) Name() string { return "sglang" }

// NewTokenRatio returns the ratio the next prefill batch is admitted with.
func (p *SGLang) NewTokenRatio() float64 { return p.ratio }

// Batch updates the ratio from the step that ended (a decode step: decay,
// or the retraction estimate) and forms the next batch. It has no
// MaxPrompt: without chunked prefill a batch's first request may exceed
// max_prefill_tokens (add_one_req), so only the KV pool bounds a prompt.
func (p *SGLang) Batch(v View, lim Limits, d *Decision) {
	ov, _ := v.(OutputView)
	if ov != nil {
		n := ov.Preemptions()
		if p.lastDecode {
			if n > p.seen {
				gen, out := ov.DecodeTotals()
				p.ratio = min(1, float64(gen+int64(SGLangRetractDecodeSteps)*int64(v.Decoding()))/float64(out+1))
			} else {
				p.ratio = max(p.ratio-p.Ratio.Decay, p.Ratio.Min)
			}
		}
		p.seen = n
	}
	p.lastDecode = false
	if p.full && (v.Running() < p.fullAt || v.Running() == 0) {
		p.full = false // the running batch shrank (or is gone)
	}
	if p.prefill(v, ov, lim, d) {
		if p.Mixed && v.Decoding() > 0 {
			d.Decode = true
		}
	} else if v.Decoding() > 0 {
		d.Decode, p.lastDecode = true, true
	}
	if d.Empty() {
		p.ratio = p.Ratio.Init
	}
}

// setFull marks the running batch full (batch_is_full) at its size now.
func (p *SGLang) setFull(v View) { p.full, p.fullAt = true, v.Running() }

// prefill forms a prefill batch in d (get_new_batch_prefill); false if none.
func (p *SGLang) prefill(v View, ov OutputView, lim Limits, d *Decision) bool {
	if (p.full || v.Waiting() == 0) && v.Prefilling() == 0 {
		return false
	}
	running := v.Decoding()
	if lim.MaxNumSeqs-running <= 0 && v.Prefilling() == 0 {
		p.setFull(v)
		return false
	}
	ps := max(p.PageSize, 1)
	mixed := 0
	if p.Mixed {
		mixed = running
	}
	remTotal := float64(v.FreeBlocks()*ps - mixed)
	if ov != nil {
		remTotal -= p.ratio * float64(ov.DecodeLeft(SGLangClipMaxNewTokens))
	}
	remInput := p.MaxPrefillTokens - mixed
	remChunk := lim.MaxNumBatchedTokens - mixed
	n := 0
	// The partial prefill continues first (add_chunked_req).
	for i := 0; i < v.Prefilling(); i++ {
		c := v.PrefillingAt(i)
		rem := c.Left()
		if p.Chunked {
			rem = min(remChunk, rem)
		}
		rem = min(rem, int(remTotal))
		if rem <= 0 {
			continue
		}
		reserve := rem
		if rem == c.Left() {
			reserve += min(max(c.Output, 0), SGLangClipMaxNewTokens) // its last chunk: the output is reserved now
		}
		d.Prefill = append(d.Prefill, Chunk{Index: i, ID: c.ID, Tokens: rem})
		remTotal -= float64(reserve)
		remInput -= rem
		remChunk -= rem
		n++
	}
	allocatable := lim.MaxNumSeqs - running
	for i := 0; i < v.Waiting(); i++ {
		if n >= allocatable {
			p.setFull(v)
			break
		}
		if remTotal <= 0 {
			p.setFull(v) // NO_TOKEN
			break
		}
		if remInput <= 0 || (p.Chunked && remChunk <= 0) {
			break // OTHER
		}
		c := v.WaitingAt(i)
		ext := c.Left()
		maxNew := min(max(c.Output, 0), SGLangClipMaxNewTokens)
		pinned := float64(c.Pinned * ps) // the cached prefix it locks leaves the evictable budget
		lone := n == 0 && v.Running() == 0
		if float64(ext+maxNew+ps) >= remTotal-pinned && !(lone && v.BlocksFor(c, ext) <= v.FreeBlocks()) {
			// NO_TOKEN. A request alone on an idle instance is let in when
			// its prompt's blocks are free (the engine admitted it: its KV
			// fits the pool), or it would wait forever.
			p.setFull(v)
			break
		}
		if !p.Chunked && n > 0 && ext >= remInput {
			break // OTHER: only the first request may exceed max_prefill_tokens
		}
		take, reserve := ext, ext+maxNew+ps
		if p.Chunked && ext > remChunk {
			take = remChunk / ps * ps // page-aligned cut; its output is reserved with its last chunk
			if take <= 0 {
				break
			}
			reserve = take + ps
		}
		d.Prefill = append(d.Prefill, Chunk{FromQueue: true, Index: i, ID: c.ID, Tokens: take})
		remTotal -= float64(reserve) + pinned
		remInput -= take
		remChunk -= take
		n++
	}
	return len(d.Prefill) > 0
}
