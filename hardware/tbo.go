package hardware

import (
	"fmt"
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
//
// SM contention: the communication kernels of some backends run on SMs
// while the other micro-batch computes (CommSMs), and the engines hand the
// compute the rest (vLLM gpu_ubatch_wrapper.py SMControlContextManager:
// DeepGEMM set_num_sms(total − comm_sms) for the overlapped span; SGLang
// operations_strategy.py _compute_moe_deepseek_blog_prefill:
// deep_gemm_num_sms = total − DeepEPConfig.num_sms). Compute that runs
// beside an all-to-all is slowed by f = SMs / (SMs − comm SMs) for as long
// as the all-to-all lasts, and runs at full speed after it, so a stage of
// compute c beside communication a takes
//
//	a                    if c·f ≤ a (the compute ends inside the all-to-all)
//	c + a·(1 − 1/f)      otherwise (a/f of the work done in the span a)
//
// which is max(c, a) at f = 1, never less than max(c, a) and never more
// than c + a. The GEMMs, attention and the rest alike (a kernel given
// fewer SMs takes proportionally longer: the simplest form, exact for a
// compute-bound kernel, pessimistic for a memory-bound one that still
// saturates HBM on the remaining SMs). The edges run alone.
type TBO struct {
	// DecodeThreshold: a batch of decodes only is split when its tokens
	// exceed it; PrefillThreshold: a batch with a prefill chunk is split
	// when its tokens exceed it.
	DecodeThreshold, PrefillThreshold int
	// Schedule is the engine's stage schedule (tbo_stages.go):
	// TBOScheduleVLLM (also "") or TBOScheduleSGLang.
	Schedule string
}

// The two-batch overlap schedules (tbo_stages.go).
const (
	TBOScheduleVLLM   = "vllm"
	TBOScheduleSGLang = "sglang"
)

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
var SGLangTBO = TBO{DecodeThreshold: 1, PrefillThreshold: 1, Schedule: TBOScheduleSGLang}

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

// SMs the all-to-all kernels hold while they run beside the other
// micro-batch's compute, by backend (DefaultCommSMs):
//   - DeepEP high-throughput (normal) kernels: 20, DeepEP V1's
//     Buffer.num_sms default (deep_ep/buffers/legacy.py, DeepEP dd758ca),
//     which vLLM's DeepEPHTAll2AllManager keeps ("This is the DeepEP
//     default") and caps VLLM_DBO_COMM_SMS = 20 with (vllm/envs.py,
//     all2all.py max_sms_used), and SGLang's DeepEPConfig.num_sms without
//     --deepep-config (token_dispatcher/deepep.py);
//   - DeepEP low-latency kernels: 0 (pure RDMA with a receive hook, "does
//     not occupy any SM resource", DeepEP docs/legacy.md; vLLM
//     DeepEPLLAll2AllManager.max_sms_used returns 0; SGLang's decode
//     strategy leaves deep_gemm_num_sms None);
//   - all-gather/reduce-scatter (NCCL): 20, vLLM's VLLM_DBO_COMM_SMS
//     reserve, which still takes the SMs from DeepGEMM when the manager
//     reports no count (gpu_ubatch_wrapper.py; vLLM asserts a DeepEP
//     backend for DBO, so this pairing is servesim's, not an engine's).
const (
	DeepEPNormalSMs = 20
	DBOCommSMs      = 20
)

// DefaultCommSMs returns the SMs a backend's kernels hold under two-batch
// overlap (see DeepEPNormalSMs).
func DefaultCommSMs(backend string) int {
	switch backend {
	case DeepEPLowLatency:
		return 0
	case DeepEPHighThroughput:
		return DeepEPNormalSMs
	}
	return DBOCommSMs
}

// SetCommSMs sets the SMs the all-to-all kernels hold beside the other
// micro-batch's compute (SGLang --deepep-config num_sms, vLLM
// VLLM_DBO_COMM_SMS); n < 0 restores the backend's default. A GPU whose
// SM count is unknown (0) or n ≥ its SMs is an error.
func (e *ExpertStep) SetCommSMs(n int) error {
	if n < 0 {
		n = DefaultCommSMs(e.backend)
	}
	sms := e.s.g.SMs
	switch {
	case n == 0:
		e.commSMs, e.slow = 0, 1
		return nil
	case sms <= 0:
		e.commSMs, e.slow = 0, 1
		return fmt.Errorf("hardware: %d communication SMs: GPU %q has no SM count (sms), so the contention cannot be priced", n, e.s.g.Name)
	case n >= sms:
		return fmt.Errorf("hardware: %d communication SMs must be fewer than GPU %q's %d", n, e.s.g.Name, sms)
	}
	e.commSMs, e.slow = n, float64(sms)/float64(sms-n)
	return nil
}

// CommSMs returns the SMs the all-to-all holds under two-batch overlap and
// the slow-down f of the compute beside it.
func (e *ExpertStep) CommSMs() (sms int, slowdown float64) { return e.commSMs, e.slow }

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

// overlapped prices b split in two overlapped micro-batches, whole the
// compute of b run whole (without the iteration overhead): the compute
// seconds (without the iteration overhead) and the all-to-all seconds
// left exposed (the step less overhead and compute). On SGLang's schedule
// the leading dense layers run whole, before the split
// (DeepseekV2Model.forward runs layers [start_layer,
// first_k_dense_replace) unsplit and hands the rest to
// model_forward_maybe_tbo; operations_strategy.py: "dense layer TBO not
// yet implemented"), at the whole batch's per-layer compute; vLLM's
// UBatchWrapper splits the whole forward (gpu_ubatch_wrapper.py).
func (e *ExpertStep) overlapped(b models.Batch, whole float64) (compute, exposed float64) {
	mA, mB := halves(b)
	layers := float64(e.s.m.Layers)
	o := e.s.IterOverhead()
	var p, c, x, d, k [2]float64
	for i, h := range [2]models.Batch{mA, mB} {
		sec, _, _ := e.s.Step(h)
		sec -= o
		tokens := h.Tokens()
		n := tokens
		if e.load > 0 {
			// Each micro-batch carries half the group's load (vLLM
			// coordinates the split across the DP ranks, dp_utils.py).
			n = max(1, int(math.Round(e.load*float64(tokens)/float64(b.Tokens()))))
		}
		moe := e.moeSec(tokens)
		if e.load > 0 || e.ls != nil {
			sec += e.moeAt(n) - moe
			moe = e.moeAt(n)
		}
		p[i], c[i], x[i] = e.stageParts(h, sec, moe, layers)
		d[i], k[i] = e.AllToAll(n)
		if a := e.a2aPerLayer(n); d[i]+k[i] > 0 {
			// per-layer skews: the mean layer's, in the same proportion
			r := a / (d[i] + k[i])
			d[i], k[i] = d[i]*r, k[i]*r
		}
		compute += sec
	}
	sglang := e.tbo.Schedule == TBOScheduleSGLang
	step := stagedStep(layers, e.layers, p, c, x, d, k, e.slow, b.PrefillTokens > 0 || !sglang)
	if sglang && layers > e.layers {
		// the dense layers: whole, not the two halves
		dense := (layers - e.layers) / layers
		step += dense * (whole - compute)
		compute += dense * (whole - compute)
	}
	return compute, max(0, step-compute)
}

// overlapStep is the length of a step of layers layers, moe of them MoE
// layers, run as two overlapped micro-batches of per-layer compute c and
// per-MoE-layer all-to-all a (see TBO), with the compute beside an
// all-to-all slowed by f (1: no SM contention), without the iteration
// overhead.
// It is never more than the two micro-batches' compute and all-to-all run
// back to back (at f = 1 it never is; with heavy contention the edges
// could make it so).
func overlapStep(layers, moe float64, c, a [2]float64, f float64) float64 {
	serial := layers*(c[0]+c[1]) + moe*(a[0]+a[1])
	return math.Min(serial, (layers-moe)*(c[0]+c[1])+moe*(contended(c[0], a[0], f)+contended(c[1], a[1], f))+math.Min(c[0], a[1]))
}

// contended is a stage of compute c beside an all-to-all of a whose
// kernels slow the compute by f while they run (see TBO); max(c, a) at
// f ≤ 1.
func contended(c, a, f float64) float64 {
	if f <= 1 || a <= 0 {
		return math.Max(c, a)
	}
	if c*f <= a {
		return a
	}
	return c + a*(1-1/f)
}
