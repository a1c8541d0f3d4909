package hardware

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/models"
)

// Pipeline is a pipeline-parallel layout of one instance: pp stages of a
// TP group each, holding contiguous decoder layers.
type Pipeline struct {
	// Layers are the decoder layers of each stage (models.StageLayers).
	Layers []int
	// GPUsPerNode places the stages: stage s holds GPUs s·TP … (s+1)·TP − 1
	// of a node-major numbering, and a boundary whose two stages sit on
	// different nodes sends over the scale-out network. 8 on an HGX node;
	// ≤ 0 means 8.
	GPUsPerNode int
	// Chunked is SGLang's chunked pipeline parallelism: the chunks of one
	// long prefill run in successive micro-batches while earlier chunks
	// are still in later stages (a chunk's attention needs only the KV of
	// earlier chunks, which the same stage wrote before). vLLM does not:
	// a request in an in-flight batch is not scheduled again until its
	// output returns (vllm/v1/core/sched/scheduler.py), so one request's
	// prefill never spans two micro-batches of a round.
	Chunked bool
	// MicroTokens is one micro-batch's token budget (the engine's
	// max_num_batched_tokens or SGLang's chunked_prefill_size): Chunked
	// cuts a round's prefill tokens into micro-batches of at most this.
	MicroTokens int
	// All2All is the all-to-all backend of the stages' expert parallelism
	// (see pipeline_expert.go), used when the Parallel given to
	// NewPipelineStep carries an EP layout; "" is allgather_reducescatter.
	All2All string
}

// PipelineStep prices one round of a pipeline-parallel instance: the
// iteration of the serving engine (every running request advances once)
// carried out as up to pp micro-batches in flight.
//
// vLLM V1 runs a PP instance with a batch queue of max_concurrent_batches
// = pp (vllm/v1/engine/core.py EngineCore.step_with_batch_queue): it
// schedules a new batch while the queue has room, and a request already in
// an in-flight batch is not scheduled again until its output returns, so
// the running requests split over up to pp micro-batches that cycle
// through the stages. A round here is one such cycle: its batch b (what
// the batcher chose) is split into m micro-batches,
//
//	m = min(pp, requests in b)                  vLLM
//	m = min(pp, max(requests, ⌈tokens / MicroTokens⌉))   Chunked (SGLang)
//
// with the decodes spread evenly (the steady state under steady arrivals:
// each returning micro-batch takes in the newcomers), vLLM's prefills kept
// whole and SGLang's prefill tokens cut evenly. Stage s of micro-batch i
// costs
//
//	t(s, i) = (its layers / all layers) × the layers' kernel time of i
//	          + the embedding on stage 0 + final norm, LM head on the last
//
// from the whole model's operators on the kernel model (so every kernel
// calibration and wrapper applies), and a boundary adds the activation
// send to the next stage, priced by the measured NCCL send/recv tables
// (SendRecvTable) at vLLM's message: hidden_states and residual, tokens ×
// hidden × 2 × 2 B (IntermediateTensors of llama.py's forward), of which
// each GPU of the TP group sends its 1/TP slice (send_tensor_dict with
// all_gather_group; the all-gather inside the receiving TP group is not
// priced). A send overlaps the sending stage's next work (asynchronous
// P2P), so it delays the micro-batch, not the stage.
//
// A round that starts an idle pipeline (Step) lasts the flow-shop makespan
// of its micro-batches in order: C(i, s) = max(C(i−1, s), C(i, s−1) +
// send) + t(s, i), the last micro-batch leaving the last stage. A round
// that follows another at once (StepPipelined) lasts the steady cycle,
// max(stage load, one micro-batch's trip) = max(max_s Σ_i t(s, i),
// max_i Σ_s (t(s, i) + send)): with m = pp balanced micro-batches the
// stages are never idle; with fewer the trip bounds it and the stages
// idle (the bubble). A micro-batch's trip bounds the cycle because its
// requests wait for their own output (a decode its token; under vLLM any
// request in flight); under Chunked a micro-batch of prefill chunks only
// waits for nothing but the KV its stages already wrote, so it enters
// stage 0 while the previous round drains and only the stage load bounds
// it (SGLang's chunked pipelining: C chunks from idle take (C + pp − 1)
// stage times, not ⌈C/pp⌉ trips). The CPU overhead of the step model (IterOverhead) is
// added once per round. The round's tokens come out at its end (the
// micro-batches' own exit times within a round are not kept: a token is up
// to (m−1)/m of a round early or late, while the gap between a request's
// tokens, one cycle, is kept).
//
// FLOPs and bytes are per GPU: the round's whole-model work over the pp
// stages. Stats accumulates every round priced. A PipelineStep is not
// safe for concurrent use.
type PipelineStep struct {
	s      *StepModel
	pl     Pipeline
	frac   []float64   // each stage's share of the layers
	send   []*SendRecv // per boundary s → s+1
	msg    float64     // bytes per token per GPU of a boundary message
	micro  []models.Batch
	t      []float64 // m × pp stage times, scratch
	sendT  []float64 // m × (pp−1) send times, scratch
	done   []float64 // pp, scratch: makespan recurrence
	stats  PipelineStats
	skip   int
	record bool
	// Expert parallelism (pipeline_expert.go); nil ex: none.
	ex                           []*ExpertStep // per stage
	moeLayers                    []float64     // per stage
	a2aT                         []float64     // m × pp all-to-all seconds, scratch
	grp                          bool          // a DP lock-step wave is set (SetGroupBatches)
	waveM                        int           // its micro-batches
	gt, gsend, ga2a              []float64     // its slowest (micro-batch, stage) times
	gload                        []float64     // its mean tokens per rank of each micro-batch
	gsplit                       []models.Batch
	gm                           []int
	scratchT, scratchS, scratchA []float64
}

// PipelineStats sums the rounds a PipelineStep priced.
type PipelineStats struct {
	Rounds       int64
	MicroBatches int64
	Tokens       int64     // Σ the rounds' tokens (the instance's own)
	Seconds      float64   // Σ round durations (pipeline only, no CPU overhead)
	StageBusy    []float64 // per stage, Σ its kernel seconds
	SendSeconds  []float64 // per boundary, Σ its transfers
	// AllToAllSeconds is per stage Σ its MoE layers' dispatch and combine
	// (inside StageBusy); nil without expert parallelism.
	AllToAllSeconds []float64
}

// Bubble returns the share of stage time idle over the rounds: 1 − Σ busy
// / (stages × Σ round durations). NaN when nothing ran.
func (st PipelineStats) Bubble() float64 {
	if st.Seconds <= 0 || len(st.StageBusy) == 0 {
		return math.NaN()
	}
	busy := 0.0
	for _, b := range st.StageBusy {
		busy += b
	}
	return 1 - busy/(float64(len(st.StageBusy))*st.Seconds)
}

// NewPipelineStep returns the round pricing of m on g at p over the
// stages of pl, with kernel model k and iteration overhead as
// NewStepModel's. It checks pl (at least two stages, each with a layer,
// the layers summing to the model's) and that every stage's weights fit one
// GPU (PlanMemory of the stage's models.StageModel at utilization 1).
func NewPipelineStep(m *models.Model, g *GPU, p models.Parallel, k KernelModel, iterOverhead float64, pl Pipeline) (*PipelineStep, error) {
	if m == nil || g == nil {
		return nil, fmt.Errorf("hardware: NewPipelineStep: nil model or GPU")
	}
	pp := len(pl.Layers)
	if _, err := models.StageLayersFrom(m.Layers, pp, pl.Layers); err != nil || pp < 2 {
		if err == nil {
			err = fmt.Errorf("hardware: a pipeline needs at least 2 stages, got %d", pp)
		}
		return nil, err
	}
	if pl.MicroTokens < 1 {
		return nil, fmt.Errorf("hardware: pipeline micro-batch token budget %d must be ≥ 1", pl.MicroTokens)
	}
	if pl.GPUsPerNode <= 0 {
		pl.GPUsPerNode = 8
	}
	s, err := newStepModel(m, g, p, k, iterOverhead, false)
	if err != nil {
		return nil, err
	}
	start := 0
	for i, n := range pl.Layers {
		sm := m.StageModel(start, n, i == 0, i == pp-1)
		if _, err := PlanMemory(sm, g, p, 1, DefaultBlockSize, 0); err != nil {
			return nil, fmt.Errorf("%w (pipeline stage %d, layers %d–%d)", err, i, start, start+n-1)
		}
		start += n
	}
	ps := &PipelineStep{s: s, pl: pl, record: true}
	ps.pl.Layers = append([]int(nil), pl.Layers...)
	ps.frac = make([]float64, pp)
	for i, n := range pl.Layers {
		ps.frac[i] = float64(n) / float64(m.Layers)
	}
	ps.send = make([]*SendRecv, pp-1)
	for i := range ps.send {
		a, b := i*p.TP/pl.GPUsPerNode, (i+1)*p.TP/pl.GPUsPerNode
		ps.send[i] = SendRecvTable(g, a != b)
	}
	ps.msg = 2 * float64(m.Hidden) * 2 / float64(p.TP) // hidden_states + residual, BF16, 1/TP per GPU
	ps.micro = make([]models.Batch, pp)
	ps.t = make([]float64, pp*pp)
	ps.sendT = make([]float64, pp*pp)
	ps.done = make([]float64, pp)
	ps.stats.StageBusy = make([]float64, pp)
	ps.stats.SendSeconds = make([]float64, pp-1)
	if p.EP.On() {
		if err := ps.setupExpert(pl.All2All, pl.GPUsPerNode); err != nil {
			return nil, err
		}
		ps.gt, ps.gsend, ps.ga2a = make([]float64, pp*pp), make([]float64, pp*pp), make([]float64, pp*pp)
		ps.gload = make([]float64, pp)
		ps.scratchT, ps.scratchS, ps.scratchA = make([]float64, pp), make([]float64, pp), make([]float64, pp)
	}
	return ps, nil
}

// Stages returns the layers of each stage.
func (ps *PipelineStep) Stages() []int { return ps.pl.Layers }

// Sends returns the send/recv table of each boundary.
func (ps *PipelineStep) Sends() []*SendRecv { return ps.send }

// StepModel returns the whole model's step model the stages are priced from.
func (ps *PipelineStep) StepModel() *StepModel { return ps.s }

// IterOverhead is the step model's fixed CPU overhead, added once per round.
func (ps *PipelineStep) IterOverhead() float64 { return ps.s.iterOverhead }

// Stats returns the sums over the rounds priced so far, less the first
// rounds Reset asked to leave out.
func (ps *PipelineStep) Stats() PipelineStats {
	st := ps.stats
	st.StageBusy = append([]float64(nil), st.StageBusy...)
	st.SendSeconds = append([]float64(nil), st.SendSeconds...)
	if st.AllToAllSeconds != nil {
		st.AllToAllSeconds = append([]float64(nil), st.AllToAllSeconds...)
	}
	return st
}

// Reset empties Stats and leaves the next skip rounds priced out of it:
// the probes an engine prices before it runs (serve prices one full-budget
// prefill per instance when it builds the instance, for its TTFT
// prediction). Call it before each run.
func (ps *PipelineStep) Reset(skip int) {
	ps.stats.Rounds, ps.stats.MicroBatches, ps.stats.Seconds, ps.stats.Tokens = 0, 0, 0, 0
	clear(ps.stats.StageBusy)
	clear(ps.stats.SendSeconds)
	clear(ps.stats.AllToAllSeconds)
	ps.skip = skip
}

// Step prices a round that starts an idle pipeline (the makespan).
func (ps *PipelineStep) Step(b models.Batch) (sec, flops, bytes float64) {
	return ps.round(b, false)
}

// StepPipelined prices a round that follows another at once (the cycle).
func (ps *PipelineStep) StepPipelined(b models.Batch) (sec, flops, bytes float64) {
	return ps.round(b, true)
}

// Round returns a round's duration, without the CPU overhead and without
// touching Stats, and its micro-batch count: for tests and reports.
func (ps *PipelineStep) Round(b models.Batch, back bool) (sec float64, micro int) {
	rec := ps.record
	ps.record = false
	defer func() { ps.record = rec }()
	sec, _, _ = ps.round(b, back)
	if sec > 0 {
		sec -= ps.s.iterOverhead
	}
	return sec, ps.split(b)
}

func (ps *PipelineStep) round(b models.Batch, back bool) (sec, flops, bytes float64) {
	if b.Tokens() <= 0 {
		return 0, 0, 0
	}
	pp := len(ps.frac)
	m := ps.split(b)
	for i := range m {
		f, by := ps.stageTimes(ps.micro[i], 0, ps.t[i*pp:(i+1)*pp], ps.sendT[i*pp:(i+1)*pp], ps.a2aRow(i))
		flops += f
		bytes += by
	}
	if ps.grp {
		// A DP lock-step wave: every rank's round runs the wave's stage times.
		m = ps.waveM
		copy(ps.t, ps.gt)
		copy(ps.sendT, ps.gsend)
		copy(ps.a2aT, ps.ga2a)
	}
	if back {
		for s := range pp {
			load := 0.0
			for i := range m {
				load += ps.t[i*pp+s]
			}
			sec = max(sec, load)
		}
		for i := range m {
			if ps.pl.Chunked && ps.micro[i].Decodes == 0 {
				continue // prefill chunks need only KV the stages already hold
			}
			trip := 0.0
			for s := range pp {
				trip += ps.t[i*pp+s]
				if s < pp-1 {
					trip += ps.sendT[i*pp+s]
				}
			}
			sec = max(sec, trip)
		}
	} else {
		clear(ps.done)
		for i := range m {
			ready := 0.0
			for s := range pp {
				ready = max(ready, ps.done[s]) + ps.t[i*pp+s]
				ps.done[s] = ready
				if s < pp-1 {
					ready += ps.sendT[i*pp+s]
				}
			}
		}
		sec = ps.done[pp-1]
	}
	if ps.record {
		if ps.skip > 0 {
			ps.skip--
		} else {
			st := &ps.stats
			st.Rounds++
			st.MicroBatches += int64(m)
			st.Tokens += int64(b.Tokens())
			st.Seconds += sec
			for i := range m {
				for s := range pp {
					st.StageBusy[s] += ps.t[i*pp+s]
					if s < pp-1 {
						st.SendSeconds[s] += ps.sendT[i*pp+s]
					}
					if ps.ex != nil {
						st.AllToAllSeconds[s] += ps.a2aT[i*pp+s]
					}
				}
			}
		}
	}
	return ps.s.iterOverhead + sec, flops / float64(pp), bytes / float64(pp)
}

// split cuts b into ps.micro[:m] and returns m (see PipelineStep).
func (ps *PipelineStep) split(b models.Batch) int {
	pp := len(ps.frac)
	reqs := b.Prefills + b.Decodes
	m := min(pp, reqs)
	if ps.pl.Chunked {
		chunks := (b.PrefillTokens + ps.pl.MicroTokens - 1) / ps.pl.MicroTokens
		m = min(pp, max(reqs, chunks))
	}
	m = max(m, 1)
	for i := range m {
		mb := models.Batch{}
		mb.Decodes = share(b.Decodes, m, i)
		if b.Decodes > 0 {
			mb.DecodeCtx = shareBy(b.DecodeCtx, b.Decodes, m, i)
		}
		mb.Prefills = share(b.Prefills, m, i)
		if ps.pl.Chunked {
			mb.PrefillTokens = share(b.PrefillTokens, m, i)
			if mb.PrefillTokens > 0 && mb.Prefills == 0 {
				mb.Prefills = 1 // a chunk of a prefill cut over micro-batches
			}
		} else if b.Prefills > 0 {
			mb.PrefillTokens = int(shareBy(int64(b.PrefillTokens), b.Prefills, m, i))
		}
		if b.PrefillTokens > 0 {
			r := float64(mb.PrefillTokens) / float64(b.PrefillTokens)
			mb.PrefillCtx = int64(math.Round(float64(b.PrefillCtx) * r))
			mb.PrefillPairs = b.PrefillPairs * r
		}
		ps.micro[i] = mb
	}
	return m
}

// share is the i-th of m near-equal integer parts of n (the first n mod m
// parts one larger).
func share(n, m, i int) int {
	q := n / m
	if i < n%m {
		q++
	}
	return q
}

// shareBy is part i of m of total in proportion to part i of n items
// (share(n, m, i) of them, each holding total/n); the parts sum to total
// exactly.
func shareBy(total int64, n, m, i int) int64 {
	before := 0
	for j := range i {
		before += share(n, m, j)
	}
	lo := total * int64(before) / int64(n)
	hi := total * int64(before+share(n, m, i)) / int64(n)
	return hi - lo
}

// a2aRow is micro-batch i's row of the all-to-all scratch; nil without
// expert parallelism.
func (ps *PipelineStep) a2aRow(i int) []float64 {
	if ps.ex == nil {
		return nil
	}
	pp := len(ps.frac)
	return ps.a2aT[i*pp : (i+1)*pp]
}

// stageTimes fills t with each stage's kernel seconds for micro-batch mb
// and send with each boundary's transfer (and, with expert parallelism,
// a2a with each stage's all-to-all, inside t; load is the DP group's mean
// tokens per rank of this micro-batch, 0 for mb's own), and returns mb's
// whole-model FLOPs and bytes on one GPU of the TP group.
func (ps *PipelineStep) stageTimes(mb models.Batch, load float64, t, send, a2a []float64) (flops, bytes float64) {
	pp := len(ps.frac)
	clear(t[:pp])
	clear(a2a)
	if mb.Tokens() <= 0 {
		clear(send[:pp])
		return 0, 0
	}
	// The token-only operators come from the step model's cache by token
	// count (their sum, and the embedding's share of it); attention and
	// the LM head are priced afresh, as StepModel.Step does.
	tok := ps.s.tokenPart(mb.Tokens())
	embed, head, layers := tok.embed, 0.0, tok.sec-tok.embed
	flops, bytes = tok.flops, tok.bytes
	ops, cached := ps.s.batchOps(&mb)
	for i := range ops {
		op := &ops[i]
		c := float64(op.Count)
		sec := 0.0
		if op.Count != 0 {
			sec = c * ps.s.k.OpTime(op)
		}
		switch op.Kind {
		case models.OpEmbed:
			embed += sec
		case models.OpLMHead:
			head += sec
		default:
			layers += sec
		}
		flops += c * op.FLOPs
		bytes += c * op.Bytes
	}
	if cached { // BatchOps' last operator, as StepModel.Step takes it
		head = tok.lm[0]
		flops += tok.lm[1]
		bytes += tok.lm[2]
	}
	for s := range pp {
		t[s] = layers * ps.frac[s]
	}
	t[0] += embed
	t[pp-1] += head
	if ps.ex != nil {
		ps.expertTimes(mb, load, t[:pp], a2a)
	}
	msg := ps.msg * float64(mb.Tokens())
	for s := range pp - 1 {
		send[s] = ps.send[s].Time(msg)
	}
	return flops, bytes
}
