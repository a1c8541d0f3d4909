package hardware

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/models"
)

// All-to-all backends of vLLM's expert parallelism (--all2all-backend;
// vllm/distributed/device_communicators/all2all.py).
const (
	// AllGatherReduceScatter is vLLM's AgRsAll2AllManager (and the older
	// NaiveAll2AllManager, which does the same with an all-reduce): the
	// dispatch all-gathers every DP rank's hidden states (and router
	// logits) to every rank, whatever the routing, and the combine
	// reduce-scatters the expert outputs back.
	AllGatherReduceScatter = "allgather_reducescatter"
	// DeepEPHighThroughput is DeepEP's normal kernels
	// (DeepEPHTAll2AllManager): each token goes once to every remote GPU
	// holding one of its experts inside the NVLink domain and once to
	// every remote node (RDMA), forwarded inside that node over NVLink.
	DeepEPHighThroughput = "deepep_high_throughput"
	// DeepEPLowLatency is DeepEP's low-latency kernels
	// (DeepEPLLAll2AllManager): each token goes straight to every remote
	// GPU holding one of its experts (RDMA across nodes, no per-node
	// deduplication), with FP8 dispatch.
	DeepEPLowLatency = "deepep_low_latency"
)

// All2AllBackends lists the backends, for messages.
var All2AllBackends = []string{AllGatherReduceScatter, DeepEPHighThroughput, DeepEPLowLatency}

// ScaleOutBW is the scale-out (inter-node) bandwidth per GPU in bytes/s per
// direction: one 400 Gb/s ConnectX-7 InfiniBand NIC per GPU, as on DGX
// H100 (NVIDIA DGX H100 datasheet: 8 × single-port ConnectX-7, 400 Gb/s)
// and GB200 NVL72's compute trays (ConnectX-7 400 Gb/s per GPU, NVIDIA
// GB200 NVL72 reference architecture). The all-gather backend's
// inter-node traffic takes it as is; the DeepEP backends take DeepEP's
// measured bandwidths instead (deepep.go), scaled by ScaleOutBW / 50 GB/s.
const ScaleOutBW = 50e9

// ExpertStep prices the steps of an expert-parallel instance: the step
// model's operators (built with the EP layout, so the routed experts are
// priced at the rows the busiest GPU computes, models.ExpertParallel) plus,
// in each MoE layer, the dispatch and combine all-to-all of the backend.
// A step's all-to-all is per GPU, for a DP rank of b.Tokens() tokens:
//
//	allgather_reducescatter: dispatch receives (DP−1) × T × (hidden + experts) × 2 B
//	                         (hidden states and router logits, BF16), combine
//	                         reduce-scatters (DP−1) × T × hidden × 2 B
//	DeepEP (both):           each of the GPU's T/TP tokens goes to the remote
//	                         GPUs holding its experts; the busiest receiver takes
//	                         Skew × the mean: bytes = T/TP × remote × hidden × e × Skew
//
// with e = 1 B + a 4-B scale per 128 (FP8 dispatch) when the weights are FP8
// or for DeepEP low-latency, else 2 B, and 2 B for every combine; remote
// counts the expected distinct remote GPUs (or, high-throughput across
// nodes, nodes) a token's TopK experts fall on, under uniform placement:
// (n − 1)(1 − (1 − 1/G)^K) GPUs inside an NVLink domain of n of the G GPUs,
// and across domains (G − n)(1 − (1 − 1/G)^K) GPUs (low-latency) or
// (D − 1)(1 − (1 − 1/D)^K) domains (high-throughput, D domains): the
// bytes that cross a wire (Bytes). The all-gather backend's directions take
//
//	latency + max(intra bytes / link_bw, inter bytes / ScaleOutBW)
//
// (the NVLink and the NIC run at once), latency the GPU's measured
// link_latency (NCCL's small-message all-reduce time). The DeepEP backends
// take DeepEP's measured bandwidths instead (deepep.go: its logical bytes,
// own GPU and node included, over the figures its README publishes for
// H800 with a 400 Gb/s NIC, transferred as said there): the same max over
// the two links, plus the link latency for the normal kernels; for the
// low-latency kernels across domains the measured latencies hold the fixed
// cost, and the link latency is only a floor. With DP = 1 the all-gather
// backend moves nothing (the TP all-reduce already sums the experts'
// outputs, as in vLLM).
//
// Without two-batch overlap (SetTBO) the all-to-all adds to the step; with
// it, a step above the overlap's threshold is split in two micro-batches
// whose all-to-all hides behind the other's compute (see TBO). An
// ExpertStep is not safe for concurrent use.
type ExpertStep struct {
	s       *StepModel
	backend string
	node    int
	layers  float64 // MoE layers
	// per token of the rank: seconds of bytes over each link, per layer,
	// dispatch and combine
	dIntra, dInter, cIntra, cInter float64
	lat                            float64
	floor                          bool // lat is a floor, not a term (DeepEP low-latency across domains: measured latencies)
	stats                          ExpertStats
	skip                           int
	load                           float64   // the DP group's tokens per rank (SetGroupLoad); 0: the rank's own
	moe                            []float64 // MoE operators' seconds by token count, cached
	ops                            []models.Op
	tbo                            *TBO        // two-batch overlap; nil: off
	commSMs                        int         // SMs the all-to-all holds beside compute under TBO (SetCommSMs)
	slow                           float64     // the compute's slow-down beside it: SMs / (SMs − commSMs)
	groupSplit                     int8        // the DP group's split decision (SetGroupBatches): 0 none, 1 split, 2 whole
	ls                             *layerSkews // per-layer skews (SetLayerSkews); nil: the step model's one skew
	span, domains                  int         // the group's GPUs in its fullest NVLink domain and the domains it spans (place); 0: contiguous
}

// ExpertStats sums the steps an ExpertStep priced.
type ExpertStats struct {
	Steps          int64
	Tokens         int64   // Σ tokens of the rank's steps
	Seconds        float64 // Σ step times
	AllToAllSecond float64 // Σ dispatch + combine times not hidden behind compute
	OverlapSteps   int64   // steps split in two overlapped micro-batches (TBO)
}

// Share returns the all-to-all's share of the step time; NaN when nothing ran.
func (st ExpertStats) Share() float64 {
	if st.Seconds <= 0 {
		return math.NaN()
	}
	return st.AllToAllSecond / st.Seconds
}

// NewExpertStep returns the expert-parallel step pricing over s (whose
// Parallel carries the EP layout) with the backend and gpusPerNode GPUs per
// NVLink domain (≤ 0: 8). The EP group sits on the first GPUs of a
// node-major numbering.
func NewExpertStep(s *StepModel, backend string, gpusPerNode int) (*ExpertStep, error) {
	if s == nil {
		return nil, fmt.Errorf("hardware: NewExpertStep: nil step model")
	}
	p, m, g := s.p, s.m, s.g
	if !p.EP.On() || !m.IsMoE() {
		return nil, fmt.Errorf("hardware: NewExpertStep: the step model has no expert-parallel layout (ep %d, model %q)", p.EP.Size, m.Name)
	}
	if gpusPerNode <= 0 {
		gpusPerNode = 8
	}
	switch backend {
	case "":
		backend = AllGatherReduceScatter
	case AllGatherReduceScatter, DeepEPHighThroughput, DeepEPLowLatency:
	default:
		return nil, fmt.Errorf("hardware: unknown all-to-all backend %q (known: %v)", backend, All2AllBackends)
	}
	e := &ExpertStep{s: s, backend: backend, node: gpusPerNode, lat: g.LinkLatency}
	ml := m.Layers - m.DenseLayers
	e.layers = float64(ml)
	e.price()
	if err := e.SetCommSMs(-1); err != nil {
		// No SM count: price the overlap without contention (the
		// header says so); SetCommSMs with an explicit count refuses.
		e.commSMs, e.slow = 0, 1
	}
	return e, nil
}

type linkBytes struct{ intra, inter float64 }

// price sets the all-to-all's seconds per token by link from the backend
// and the group's placement: bytes over the links' bandwidths for
// allgather-reducescatter, DeepEP's measured rates for its backends.
func (e *ExpertStep) price() {
	if e.backend == AllGatherReduceScatter {
		g := e.s.g
		d, c := e.bytesPerToken()
		e.dIntra, e.dInter = d.intra/g.LinkBW, d.inter/ScaleOutBW
		e.cIntra, e.cInter = c.intra/g.LinkBW, c.inter/ScaleOutBW
		return
	}
	d, c, floor := e.deepEPSeconds()
	e.dIntra, e.dInter, e.cIntra, e.cInter, e.floor = d.intra, d.inter, c.intra, c.inter, floor
}

// bytesPerToken returns the dispatch and combine bytes per GPU per MoE
// layer per token of the DP rank, split by link (see ExpertStep).
func (e *ExpertStep) bytesPerToken() (dispatch, combine linkBytes) {
	p, m := e.s.p, e.s.m
	h := float64(m.Hidden)
	G := p.EP.Size
	dp := float64(p.EP.DP)
	n, dom := e.placement() // the group's GPUs inside one NVLink domain, and its domains
	cross := G > n
	if e.backend == AllGatherReduceScatter {
		if p.EP.DP <= 1 {
			return linkBytes{}, linkBytes{}
		}
		d := (dp - 1) * (h + float64(m.Experts)) * 2
		c := (dp - 1) * h * 2
		if cross {
			return linkBytes{inter: d}, linkBytes{inter: c}
		}
		return linkBytes{intra: d}, linkBytes{intra: c}
	}
	elem := 2.0
	if e.backend == DeepEPLowLatency || p.Weights == models.FP8 {
		elem = 1 + 4.0/128 // FP8 with one FP32 scale per 128-element block
	}
	k := float64(m.TopK)
	g := float64(G)
	hit := 1 - math.Pow(1-1/g, k) // a given GPU holds one of the token's experts
	perGPU := p.EP.Skew
	if perGPU < 1 {
		perGPU = 1
	}
	tok := perGPU / float64(p.TP) // the GPU's share of the rank's tokens, at the busiest receiver's load
	intraN := float64(n-1) * hit
	var interN float64
	if cross {
		if e.backend == DeepEPLowLatency {
			interN = float64(G-n) * hit
		} else {
			interN = (dom - 1) * (1 - math.Pow(1-1/dom, k))
		}
	}
	dispatch = linkBytes{intra: tok * intraN * h * elem, inter: tok * interN * h * elem}
	combine = linkBytes{intra: tok * intraN * h * 2, inter: tok * interN * h * 2}
	return dispatch, combine
}

// Backend returns the all-to-all backend.
func (e *ExpertStep) Backend() string { return e.backend }

// StepModel returns the step model the compute is priced by.
func (e *ExpertStep) StepModel() *StepModel { return e.s }

// AllToAll returns the dispatch and combine seconds of one MoE layer for a
// DP rank of tokens tokens (0 for no tokens).
func (e *ExpertStep) AllToAll(tokens int) (dispatch, combine float64) {
	if tokens <= 0 {
		return 0, 0
	}
	t := float64(tokens)
	if e.dIntra == 0 && e.dInter == 0 {
		return 0, 0
	}
	if e.floor {
		return math.Max(e.lat, t*math.Max(e.dIntra, e.dInter)), math.Max(e.lat, t*math.Max(e.cIntra, e.cInter))
	}
	return e.lat + t*math.Max(e.dIntra, e.dInter), e.lat + t*math.Max(e.cIntra, e.cInter)
}

// Bytes returns the dispatch and combine bytes per GPU of one MoE layer for
// a DP rank of tokens tokens, summed over the links: for tests and reports.
func (e *ExpertStep) Bytes(tokens int) (dispatch, combine float64) {
	d, c := e.bytesPerToken()
	t := float64(tokens)
	return t * (d.intra + d.inter), t * (c.intra + c.inter)
}

// SetGroupLoad sets the DP group's mean tokens per rank for the steps
// priced next (0: each step's own tokens). Under DP lock-step every rank's
// MoE layers serve the whole group's routed rows and its all-to-all moves
// the group's traffic, so a rank's step is priced with its own attention,
// dense and token-wise operators and the MoE operators (router, expert
// up, activation, down) and all-to-all at the group's load: the step
// model's time, less its MoE operators at the rank's tokens, plus them at
// the group's. The FLOPs and bytes stay the rank's own. (A model with
// leading dense layers has their MLP blended into the MoE operators,
// models.Model.Ops; they move with the group's load too: 3 of DeepSeek-V3's
// 61 layers.)
func (e *ExpertStep) SetGroupLoad(tokensPerRank float64) { e.load = tokensPerRank }

// moeSec returns the MoE operators' seconds for n tokens per rank at the
// step model's one skew.
func (e *ExpertStep) moeSec(n int) float64 {
	if n < len(e.moe) && e.moe[n] > 0 {
		return e.moe[n]
	}
	sec := e.moeOps(n, e.s.p)
	cacheSec(&e.moe, n, sec)
	return sec
}

// Step prices one step: the operators plus every MoE layer's all-to-all.
func (e *ExpertStep) Step(b models.Batch) (sec, flops, bytes float64) {
	sec, flops, bytes = e.s.Step(b)
	if sec == 0 {
		return 0, 0, 0
	}
	a2aTokens := b.Tokens()
	if e.load > 0 {
		a2aTokens = max(1, int(math.Round(e.load)))
	}
	if e.load > 0 || e.ls != nil {
		sec += e.moeAt(a2aTokens) - e.moeSec(b.Tokens())
	}
	a := e.a2aLayers(a2aTokens)
	split := e.splits(b)
	if split {
		var compute float64
		compute, a = e.overlapped(b, sec-e.s.IterOverhead())
		sec = e.s.IterOverhead() + compute + a
	} else {
		sec += a
	}
	if e.skip > 0 {
		e.skip--
		return sec, flops, bytes
	}
	e.stats.Steps++
	e.stats.Tokens += int64(b.Tokens())
	e.stats.Seconds += sec
	e.stats.AllToAllSecond += a
	if split {
		e.stats.OverlapSteps++
	}
	return sec, flops, bytes
}

// Stats returns the sums over the steps priced since Reset.
func (e *ExpertStep) Stats() ExpertStats { return e.stats }

// Reset empties Stats and leaves the next skip steps out of it (the probe
// step serve prices per instance as it builds it).
func (e *ExpertStep) Reset(skip int) {
	e.stats = ExpertStats{}
	e.skip = skip
}
