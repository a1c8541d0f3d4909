package serve

import (
	"fmt"
	"sort"

	"github.com/servesim/servesim/models"
)

// How vllm-v1 prices a step: the CPU side (the kernel model's fixed
// per-iteration overhead, the per-request CPU, kernel launches), the GPU
// side (the kernels, on the batch a CUDA graph pads), and how the two
// combine (in series, or overlapped under async scheduling).

// PipelinedTimer is a StepTimer whose step costs less when it follows
// another step at once (its CPU work ran while the previous step's
// kernels did). Step is the cost of a step that starts an idle engine,
// or of any step under synchronous scheduling; StepPipelined that of a
// step that starts the moment the previous one ends. An Instance calls
// StepPipelined for a step that starts in the event that ended the
// previous one, Step otherwise.
type PipelinedTimer interface {
	StepTimer
	StepPipelined(b models.Batch) (seconds, flops, bytes float64)
}

// iterOverheader is what hardware.StepModel reports of the fixed
// per-iteration CPU overhead it adds to every step (its IterOverhead).
type iterOverheader interface{ IterOverhead() float64 }

// CUDAGraphs is vLLM V1's CUDA-graph dispatch under its default
// cudagraph_mode FULL_AND_PIECEWISE (vllm/config/compilation.py
// CUDAGraphMode; vllm/v1/cudagraph_dispatcher.py; the model runner's
// execute_model pads the batch to the dispatched size):
//
//   - a uniform-decode batch (every request one new token) of n ≤ the
//     largest captured size runs one FULL graph padded to the next
//     captured size: one launch, and the padded rows cost GEMM time;
//   - any other batch of t ≤ the largest captured size tokens runs the
//     PIECEWISE graphs padded to the next captured size in tokens: the
//     pieces between attention layers replay as graphs and attention
//     runs eagerly, PiecewiseLaunches launches a step;
//   - a batch of more tokens runs eagerly: EagerLaunches launches, no
//     padding.
//
// Padded rows are priced as decodes with no context (they pass through
// every GEMM; their attention reads no KV). Eager (vLLM's
// --enforce-eager, cudagraph_mode NONE) runs every step eagerly.
type CUDAGraphs struct {
	Eager bool
	// Sizes are the captured batch sizes in tokens, ascending (see
	// CaptureSizes).
	Sizes []int
	// EagerLaunches and PiecewiseLaunches are the kernel launches of a
	// step run eagerly and of one run as piecewise graphs.
	EagerLaunches, PiecewiseLaunches int
	// Launch is the CPU seconds of one launch (a kernel or a graph).
	Launch float64
	// DecodeOnly captures decode batches only, so every batch with a
	// prefill runs eagerly (no piecewise graphs): SGLang's cuda_graph_bs
	// (CudaGraphRunner.can_run) and TensorRT-LLM's decode CUDA graphs.
	// ExactOnly replays a graph only for a batch of exactly a captured size
	// (no padding): TensorRT-LLM's (serve.TRTLLM). Both false is vLLM's
	// dispatch.
	DecodeOnly, ExactOnly bool

	// padded[n] is the first size ≥ n, for n up to the largest size
	// (graphs_index.go; nil: searched).
	padded []uint32
}

// CaptureSizes returns vLLM's default cudagraph_capture_sizes
// (vllm/config/vllm.py VllmConfig._set_cudagraph_sizes, vLLM ≥ 0.11):
// max_cudagraph_capture_size = min(max_num_seqs·2, 512, max_num_batched_tokens),
// sizes [1, 2, 4] + range(8, min(max+1, 256), 8) + range(256, max+1, 16),
// each ≤ max.
func CaptureSizes(maxNumSeqs, maxNumBatchedTokens int) []int {
	m := min(maxNumSeqs*2, 512, maxNumBatchedTokens)
	var s []int
	for _, v := range []int{1, 2, 4} {
		if v <= m {
			s = append(s, v)
		}
	}
	for v := 8; v < min(m+1, 256); v += 8 {
		s = append(s, v)
	}
	for v := 256; v <= m; v += 16 {
		s = append(s, v)
	}
	return s
}

// CaptureSizesSpec returns vLLM's capture sizes under speculative decoding
// with k drafts a request: the default sizes for a maximum of
// min(max_num_seqs·(1+k)·2, 512, max_num_batched_tokens)
// (VllmConfig._set_cudagraph_sizes, decode_query_len = 1 + k), each rounded
// up to a multiple of 1 + k and kept if still within that maximum, or
// [1 + k] if none is (vllm/config/compilation.py
// CompilationConfig.adjust_cudagraph_sizes_for_spec_decode). k = 0 gives
// CaptureSizes.
func CaptureSizesSpec(maxNumSeqs, maxNumBatchedTokens, k int) []int {
	q := 1 + k
	m := min(maxNumSeqs*q*2, 512, maxNumBatchedTokens)
	base := CaptureSizes(m/2+m%2, m) // CaptureSizes caps at min(2·seqs, 512, tokens) = m
	if q == 1 {
		return base
	}
	var s []int
	for _, v := range base {
		r := (v + q - 1) / q * q
		if r <= m && (len(s) == 0 || s[len(s)-1] != r) {
			s = append(s, r)
		}
	}
	if len(s) == 0 && q <= m {
		s = []int{q}
	}
	return s
}

// Validate checks the sizes ascend and are ≥ 1 and the costs are ≥ 0.
func (g *CUDAGraphs) Validate() error {
	if !sort.IntsAreSorted(g.Sizes) || (len(g.Sizes) > 0 && g.Sizes[0] < 1) {
		return fmt.Errorf("serve: engine vllm-v1: CUDA-graph capture sizes %v must be ≥ 1 and ascending", g.Sizes)
	}
	if g.EagerLaunches < 0 || g.PiecewiseLaunches < 0 || !(g.Launch >= 0) || g.Launch > 1 {
		return fmt.Errorf("serve: engine vllm-v1: kernel launches (%d eager, %d piecewise) and launch cost %g s must be ≥ 0 (and the cost below 1 s)",
			g.EagerLaunches, g.PiecewiseLaunches, g.Launch)
	}
	return nil
}

// dispatch returns the batch the GPU runs and the step's launches.
func (g *CUDAGraphs) dispatch(b models.Batch) (models.Batch, int) {
	pad, launches := g.padding(&b)
	b.Decodes += pad
	return b, launches
}

// padding returns the padded rows dispatch adds to b's decodes and the
// step's launches. It reads b through a pointer: the hot path (v1Step.parts)
// then never copies a Batch whole (see parts). A batch the table covers
// (graphs_index.go) is padded by one lookup; others go to searchPadding.
func (g *CUDAGraphs) padding(b *models.Batch) (pad, launches int) {
	q := max(b.DecodeQuery, 1) // b.Query(), and below b.Tokens(), without copying b for the value receivers
	n := b.PrefillTokens + b.Decodes*q
	if uint(n) >= uint(len(g.padded)) || (g.DecodeOnly && b.Prefills > 0) {
		return g.searchPadding(b.Prefills, n, q)
	}
	size := int(g.padded[n])
	if g.ExactOnly && size != n {
		return 0, g.EagerLaunches
	}
	return g.padTo(b.Prefills, size-n, q)
}

// searchPadding is padding without the table: eager, or the padded size
// searched for.
func (g *CUDAGraphs) searchPadding(prefills, n, q int) (pad, launches int) {
	if g.Eager || len(g.Sizes) == 0 || n > g.Sizes[len(g.Sizes)-1] || (g.DecodeOnly && prefills > 0) {
		return 0, g.EagerLaunches
	}
	i := sort.SearchInts(g.Sizes, n)
	if g.ExactOnly && g.Sizes[i] != n {
		return 0, g.EagerLaunches
	}
	return g.padTo(prefills, g.Sizes[i]-n, q)
}

// padTo returns the rows of pad tokens and the launches of a batch with
// prefills prefill chunks run as a graph.
func (g *CUDAGraphs) padTo(prefills, pad, q int) (int, int) {
	if q > 1 {
		// Under speculation a padded row is a request of q tokens (the
		// sizes are multiples of q: CaptureSizesSpec); a mixed batch
		// pads to the next whole request.
		pad = (pad + q - 1) / q
	}
	if prefills == 0 {
		return pad, 1 // FULL graph
	}
	return pad, g.PiecewiseLaunches
}

// v1Step prices a step of the vllm-v1 engine in series: the CPU work
// (fixed + per request) before and after the kernels, and the kernels
// overlapped with their own launches (the GPU runs each kernel as soon as
// it is launched, so the step's kernel span is max(GPU, launch CPU)).
// With no launches it is k's time plus the per-request CPU.
type v1Step struct {
	k          StepTimer
	kb         StepTimer // k's price of a step that follows another at once: k, or k's StepPipelined (pipeline parallelism)
	fixed      float64   // k's own fixed CPU overhead per iteration (iterOverheader), 0 if unknown
	perRequest float64
	graphs     *CUDAGraphs // nil: no launch model
}

// parts returns the step's kernel seconds (without k's fixed overhead),
// its CPU seconds other than launches, its launch seconds, and its work.
// It reads b through a pointer to the caller's copy.
func (s *v1Step) parts(b *models.Batch, k StepTimer) (gpu, cpu, launch, flops, bytes float64) {
	// The padded batch is built field by field in the call, from b's
	// fields: a Batch (seven words) lives in memory, and copying one whole
	// (b into a padded copy, dispatch's result into it, or k.Step(*b))
	// reads its 8-byte stores with 16-byte loads, a store-forwarding stall.
	pad := 0
	if s.graphs != nil {
		var launches int
		pad, launches = s.graphs.padding(b)
		launch = float64(launches) * s.graphs.Launch
	}
	sec, flops, bytes := k.Step(models.Batch{Prefills: b.Prefills, PrefillTokens: b.PrefillTokens,
		PrefillCtx: b.PrefillCtx, PrefillPairs: b.PrefillPairs, Decodes: b.Decodes + pad,
		DecodeCtx: b.DecodeCtx, DecodeQuery: b.DecodeQuery})
	cpu = s.perRequest * float64(b.Prefills+b.Decodes)
	if sec > 0 {
		gpu, cpu = sec-s.fixed, cpu+s.fixed
	}
	return gpu, cpu, launch, flops, bytes
}

func (s *v1Step) Step(b models.Batch) (seconds, flops, bytes float64) {
	return s.price(b, s.k)
}

// price is Step with kernel timer k.
func (s *v1Step) price(b models.Batch, k StepTimer) (seconds, flops, bytes float64) {
	if s.graphs == nil {
		sec, flops, bytes := k.Step(b)
		return sec + s.perRequest*float64(b.Prefills+b.Decodes), flops, bytes
	}
	gpu, cpu, launch, flops, bytes := s.parts(&b, k)
	return cpu + max(gpu, launch), flops, bytes
}

// v1Back is v1Step over a kernel timer that prices back-to-back steps
// apart (a pipeline-parallel instance: a round that follows another finds
// its stages busy, not idle), in series as v1Step.
type v1Back struct{ v1Step }

func (s *v1Back) StepPipelined(b models.Batch) (seconds, flops, bytes float64) {
	return s.price(b, s.kb)
}

// backTimer prices every step as its PipelinedTimer's back-to-back step.
type backTimer struct{ p PipelinedTimer }

func (t backTimer) Step(b models.Batch) (seconds, flops, bytes float64) { return t.p.StepPipelined(b) }

// v1Overlap is v1Step under async scheduling with CPU/GPU overlap: a step
// that follows another at once costs max(GPU, CPU), its CPU work (all of
// it, launches included) having run while the previous step's kernels did.
type v1Overlap struct{ v1Step }

// StepPipelined is the step of nearly every iteration of a loaded engine:
// with graphs, parts and padding's table path are written out in it (no
// calls between the engine and the kernel timer, and b stays in
// registers); TestPartsMatchesDispatch checks it against parts.
func (s *v1Overlap) StepPipelined(b models.Batch) (seconds, flops, bytes float64) {
	g := s.graphs
	if g == nil {
		gpu, cpu, launch, flops, bytes := s.parts(&b, s.kb)
		return max(gpu, cpu+launch), flops, bytes
	}
	q := max(b.DecodeQuery, 1)
	n := b.PrefillTokens + b.Decodes*q
	var pad, launches int
	if uint(n) < uint(len(g.padded)) && !(g.DecodeOnly && b.Prefills > 0) {
		size := int(g.padded[n])
		if g.ExactOnly && size != n {
			launches = g.EagerLaunches
		} else {
			pad, launches = g.padTo(b.Prefills, size-n, q)
		}
	} else {
		pad, launches = g.searchPadding(b.Prefills, n, q)
	}
	launch := float64(launches) * g.Launch
	sec, flops, bytes := s.kb.Step(models.Batch{Prefills: b.Prefills, PrefillTokens: b.PrefillTokens,
		PrefillCtx: b.PrefillCtx, PrefillPairs: b.PrefillPairs, Decodes: b.Decodes + pad,
		DecodeCtx: b.DecodeCtx, DecodeQuery: b.DecodeQuery})
	gpu, cpu := 0.0, s.perRequest*float64(b.Prefills+b.Decodes)
	if sec > 0 {
		gpu, cpu = sec-s.fixed, cpu+s.fixed
	}
	return max(gpu, cpu+launch), flops, bytes
}

var (
	_ StepTimer      = (*v1Step)(nil)
	_ PipelinedTimer = (*v1Overlap)(nil)
	_ PipelinedTimer = (*v1Back)(nil)
)
