package hardware

import (
	"math"

	"github.com/servesim/servesim/models"
)

// TBO is two-batch overlap (SGLang --enable-two-batch-overlap, vLLM
// --enable-dbo "dual batch overlap"): a step's batch is split in two
// micro-batches A and B, and in every MoE layer one micro-batch's dispatch
// and combine all-to-all run while the other computes (SGLang
// python/sglang/srt/two_batch_overlap.py; vLLM vllm/v1/worker/ubatching.py
// with gpu_ubatch_wrapper.py). With per-layer compute c_A, c_B (each
// micro-batch priced on its own by the step model, so the smaller GEMMs'
// lower efficiency is paid) and per-MoE-layer all-to-all a_A, a_B, a step
// of L layers of which M are MoE layers takes
//
//	overhead + (L − M)(c_A + c_B) + M (max(c_A, a_A) + max(c_B, a_B)) + min(c_A, a_B)
//
// the last term being the un-overlapped edges: A's first compute before
// any all-to-all can hide behind it and B's last all-to-all after the
// last compute (for equal halves, 2M·max(c, a) + min(c, a): the exact
// length of two jobs alternating on a compute and a communication
// resource). The per-layer compute is the micro-batch's step compute
// spread evenly over the layers. A batch at or below the threshold runs
// whole, as the engines do.
type TBO struct {
	// DecodeThreshold: a batch of decodes only is split when its tokens
	// exceed it; PrefillThreshold: a batch with a prefill chunk is split
	// when its tokens exceed it.
	DecodeThreshold, PrefillThreshold int
}

// vLLM's defaults (vllm/config/parallel.py: dbo_decode_token_threshold =
// 32, dbo_prefill_token_threshold = 512; "if the number of tokens in the
// request is greater than this threshold, microbatching will be used").
const (
	DBODecodeThreshold  = 32
	DBOPrefillThreshold = 512
)

// SGLangTBO is SGLang's rule: two_batch_overlap.py compute_split_seq_index
// splits decodes at num_seqs // 2 and prefills by balanced token sums
// (two-chunk when the balance is off by more than
// tbo_token_distribution_threshold, so one long prompt is cut in two); a
// split leaving one micro-batch empty runs whole ("TODO: may smartly
// disable TBO when batch size is too small"): a batch needs 2 tokens.
var SGLangTBO = TBO{DecodeThreshold: 1, PrefillThreshold: 1}

// VLLMDBO is vLLM's rule at its default thresholds.
var VLLMDBO = TBO{DecodeThreshold: DBODecodeThreshold, PrefillThreshold: DBOPrefillThreshold}

// Splits reports whether the batch is split in two micro-batches.
func (t TBO) Splits(b models.Batch) bool {
	if b.PrefillTokens > 0 {
		return b.Tokens() > t.PrefillThreshold
	}
	return b.Decodes > t.DecodeThreshold
}

// SetTBO turns two-batch overlap on with the thresholds of t (nil: off).
func (e *ExpertStep) SetTBO(t *TBO) { e.tbo = t }

// SetGroupBatches makes the steps priced next split only if every rank of
// a DP lock-step group splits: the working ranks' batches and idle ranks
// running a one-token dummy batch (vLLM vllm/v1/worker/dp_utils.py
// _synchronize_dp_ranks: "either all ranks run with microbatching or none
// of them do"; SGLang's TboDPAttentionPreparer likewise gathers every
// rank's can-run-TBO). nil: each step decides on its own batch.
func (e *ExpertStep) SetGroupBatches(batches []models.Batch, idle int) {
	e.groupSplit = 0
	if batches == nil || e.tbo == nil {
		return
	}
	all := idle == 0 || e.tbo.Splits(models.Batch{Decodes: 1})
	for _, b := range batches {
		all = all && e.tbo.Splits(b)
	}
	e.groupSplit = 2
	if all {
		e.groupSplit = 1
	}
}

// splits reports whether the step of b is split, by the group's decision
// when one is set.
func (e *ExpertStep) splits(b models.Batch) bool {
	switch {
	case e.tbo == nil:
		return false
	case e.groupSplit == 1:
		return true
	case e.groupSplit == 2:
		return false
	}
	return e.tbo.Splits(b)
}

// TBO returns the two-batch overlap rule, nil when off.
func (e *ExpertStep) TBO() *TBO { return e.tbo }

// halves splits b in two micro-batches: A takes the larger half of the
// prefill tokens and of the decodes, the contexts, pairs and chunk counts
// in proportion (a chunk cut in two is in both, as SGLang's two-chunk
// split).
func halves(b models.Batch) (a, c models.Batch) {
	a.Decodes = b.Decodes - b.Decodes/2
	if b.Decodes > 0 {
		a.DecodeCtx = b.DecodeCtx * int64(a.Decodes) / int64(b.Decodes)
	}
	a.PrefillTokens = b.PrefillTokens - b.PrefillTokens/2
	if b.PrefillTokens > 0 {
		f := float64(a.PrefillTokens) / float64(b.PrefillTokens)
		a.Prefills = max(1, int(math.Round(float64(b.Prefills)*f)))
		a.PrefillCtx = int64(math.Round(float64(b.PrefillCtx) * f))
		a.PrefillPairs = b.PrefillPairs * f
	}
	c = models.Batch{
		Prefills: b.Prefills - a.Prefills, PrefillTokens: b.PrefillTokens - a.PrefillTokens,
		PrefillCtx: b.PrefillCtx - a.PrefillCtx, PrefillPairs: b.PrefillPairs - a.PrefillPairs,
		Decodes: b.Decodes - a.Decodes, DecodeCtx: b.DecodeCtx - a.DecodeCtx,
	}
	if c.PrefillTokens > 0 && c.Prefills == 0 {
		c.Prefills = 1
	}
	return a, c
}

// overlapped prices b split in two overlapped micro-batches: the compute
// seconds (both micro-batches, without the iteration overhead) and the
// all-to-all seconds left exposed (the step less overhead and compute).
func (e *ExpertStep) overlapped(b models.Batch) (compute, exposed float64) {
	mA, mB := halves(b)
	layers := float64(e.s.m.Layers)
	o := e.s.IterOverhead()
	var c, a [2]float64
	for i, h := range [2]models.Batch{mA, mB} {
		sec, _, _ := e.s.Step(h)
		sec -= o
		tokens := h.Tokens()
		if e.load > 0 {
			// Each micro-batch carries half the group's load (vLLM
			// coordinates the split across the DP ranks, dp_utils.py).
			g := max(1, int(math.Round(e.load*float64(tokens)/float64(b.Tokens()))))
			sec += e.moeSec(g) - e.moeSec(tokens)
			tokens = g
		}
		d, cb := e.AllToAll(tokens)
		c[i], a[i] = sec/layers, d+cb
		compute += sec
	}
	return compute, max(0, overlapStep(layers, e.layers, c, a)-compute)
}

// overlapStep is the length of a step of layers layers, moe of them MoE
// layers, run as two overlapped micro-batches of per-layer compute c and
// per-MoE-layer all-to-all a (see TBO), without the iteration overhead.
func overlapStep(layers, moe float64, c, a [2]float64) float64 {
	return (layers-moe)*(c[0]+c[1]) + moe*(math.Max(c[0], a[0])+math.Max(c[1], a[1])) + math.Min(c[0], a[1])
}
