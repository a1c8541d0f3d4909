package scenario

import (
	"fmt"
	"io"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// Pipeline parallelism in a plan: the stages' memory, the round pricing
// (hardware.PipelineStep) and what the header and summary.json say of
// them. With pp = 1 (the default) nothing here runs.

// StagePlan is one pipeline stage's memory on each of its GPUs.
type StagePlan struct {
	Stage        int     `json:"stage"`
	FirstLayer   int     `json:"first_layer"`
	Layers       int     `json:"layers"`
	WeightGB     float64 `json:"weight_gb_per_gpu"`
	KVBytesToken float64 `json:"kv_bytes_per_token_per_gpu"`
	KVGB         float64 `json:"kv_gb_per_gpu"`
	Blocks       int     `json:"kv_blocks_fit"` // blocks its own memory holds; the instance runs the fewest of all stages'
}

// PipelineSummary is summary.json's "pipeline": the layout and, after a
// run, the stage times and bubble share of its rounds.
type PipelineSummary struct {
	PP             int         `json:"pp"`
	GPUsPerReplica int         `json:"gpus_per_replica"`
	Chunked        bool        `json:"chunked_prefill_pipelining"`
	Stages         []StagePlan `json:"stages"`
	KVBlocks       int         `json:"kv_blocks"` // per GPU, equal on every stage (the fewest any stage holds)
	Rounds         int64       `json:"rounds"`
	MicroBatches   float64     `json:"micro_batches_per_round"`
	StageMs        []float64   `json:"stage_ms_per_micro_batch"`
	SendMs         []float64   `json:"send_ms_per_micro_batch"`
	Sends          []string    `json:"send_tables"`
	AllToAllMs     []float64   `json:"all2all_ms_per_micro_batch,omitempty"` // per stage, inside StageMs; expert parallelism only
	Bubble         float64     `json:"bubble_share"`
}

// pp returns the scenario's pipeline-parallel degree, 1 when omitted: the
// colocated or prefill pool's.
func (s *Scenario) pp() int { return max(1, s.PP) }

// pp returns the pool's pipeline stages, 1 without a pipeline.
func (p *PoolPlan) pp() int { return max(1, len(p.Stages)) }

// checkDecodePP validates disagg.decode_pp, the decode pool's stages
// (vLLM's default layer partition; chunked pipelining is a prefill
// matter), and returns their layers (nil at 1).
func (s *Scenario) checkDecodePP(m *models.Model) ([]int, error) {
	n := s.Disagg.DecodePP
	if n < 0 || (n == 0 && s.Explicit("disagg.decode_pp")) {
		return nil, s.fieldError("disagg.decode_pp", "decode-pp", "%d must be in [1, %d]; omit it for the default (1, no pipeline)", n, models.MaxPP)
	}
	if n <= 1 {
		return nil, nil
	}
	layers, err := models.StageLayers(m.Layers, n)
	if err != nil {
		return nil, s.fieldError("disagg.decode_pp", "decode-pp", "%v", err)
	}
	return layers, nil
}

// checkPP validates the pipeline fields.
func (s *Scenario) checkPP(m *models.Model) ([]int, error) {
	if s.PP < 0 || (s.PP == 0 && s.Explicit("pp")) {
		return nil, s.fieldError("pp", "pp", "%d must be in [1, %d]; omit it for the default (1, no pipeline)", s.PP, models.MaxPP)
	}
	if s.pp() == 1 {
		if len(s.PPLayers) > 1 {
			return nil, s.fieldError("pp_layers", "pp-layers", "%v gives %d stages but pp is 1", s.PPLayers, len(s.PPLayers))
		}
		if s.PPChunked {
			return nil, s.fieldError("pp_chunked", "pp-chunked", "chunked pipelining needs pp ≥ 2")
		}
		return nil, nil
	}
	layers, err := models.StageLayersFrom(m.Layers, s.pp(), s.PPLayers)
	if err != nil {
		field, flag := "pp", "pp"
		if len(s.PPLayers) > 0 {
			field, flag = "pp_layers", "pp-layers"
		}
		return nil, s.fieldError(field, flag, "%v", err)
	}
	return layers, nil
}

// planStages sizes each stage's KV cache with the pool's memory plan
// (planMemory) on the stage's models.StageModel, and keeps the fewest
// blocks: vLLM sizes every PP rank's cache itself and then gives all the
// smallest block count (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs:
// "Change the num_blocks of each rank to the smallest among all ranks"), so
// a block holds the same tokens on every stage. p.Memory becomes the plan
// of the stage that set the count, with that count.
//
// Under vllm-v1's memory profile each stage is planned as a whole model
// of its layers would be: the first stage (which holds the vocabulary as
// its embedding) also counts the sampler's profiling activation, which
// only vLLM's last rank runs (max_num_seqs × vocab × 8 B, 0.25 GiB for
// 256 sequences of a 128K vocabulary: an overestimate), and the non-torch
// default is the TP group's (hardware.DefaultNonTorch(tp)): at TP 1 the
// pipeline's own NCCL communicator is not counted (an assumption; no
// measured PP log here).
func (s *Scenario) planStages(p *PoolPlan, m *models.Model, b *Batch, layers []int, prefix string) error {
	p.Stages = make([]StagePlan, len(layers))
	start, best := 0, -1
	var sg hardware.SGLangMemoryPlan
	for i, n := range layers {
		sp := *p
		sm := m.StageModel(start, n, i == 0, i == len(layers)-1)
		if err := s.planMemory(&sp, sm, b, prefix); err != nil {
			return fmt.Errorf("%w (pipeline stage %d of %d, layers %d–%d)", err, i, len(layers), start, start+n-1)
		}
		p.Stages[i] = StagePlan{Stage: i, FirstLayer: start, Layers: n, WeightGB: sp.Memory.WeightBytesPerGPU / 1e9,
			KVBytesToken: sp.Memory.KVBytesPerTokenPerGPU, KVGB: sp.Memory.KVBytesPerGPU / 1e9, Blocks: sp.Memory.Blocks}
		if best < 0 || sp.Memory.Blocks < p.Memory.Blocks {
			best = i
			p.Memory, p.VLLMMemory = sp.Memory, sp.VLLMMemory
			if p.SGLang != nil {
				sg = p.SGLang.Memory // planMemorySGLang set this stage's on the shared plan
			}
		}
		start += n
	}
	if p.SGLang != nil {
		p.SGLang.Memory = sg
		s.sglangRunning(p, b)
	}
	return nil
}

// MaxGPUsPerNode bounds hardware.gpus_per_node: 576 GPUs, the largest
// NVLink domain NVIDIA announces (Rubin Ultra NVL576); today's are 8 (HGX)
// and 72 (GB200 NVL72).
const MaxGPUsPerNode = 576

// NodeGPUs is the NVLink domain the stages are placed in: the
// scenario's hardware.gpus_per_node, else 72 for a GB200 (its catalog
// entry's NVLink Switch joins a 72-GPU domain, hardware/gpus.toml link_bw
// source) and 8 for every other GPU (an HGX or DGX node).
func (s *Scenario) NodeGPUs(g *hardware.GPU) (int, error) {
	n := s.Hardware.GPUsPerNode
	if n < 0 || n > MaxGPUsPerNode || (n == 0 && s.Explicit("hardware.gpus_per_node")) {
		return 0, s.fieldError("hardware.gpus_per_node", "", "%d must be in [1, %d]; omit it for the GPU's default (72 on gb200, else 8)", n, MaxGPUsPerNode)
	}
	switch {
	case n > 0:
		return n, nil
	case g.Name == "gb200":
		return 72, nil
	}
	return 8, nil
}

// newPipeline builds the pool's round pricing (with the pool's expert
// parallelism inside each stage when p.Parallel has an EP layout).
func (s *Scenario) newPipeline(p *PoolPlan, m *models.Model, kern hardware.KernelModel, overhead float64, layers []int, chunked bool, pe poolEP) error {
	node, err := s.NodeGPUs(p.GPU)
	if err != nil {
		return err
	}
	p.chunked = chunked
	p.Pipeline, err = hardware.NewPipelineStep(m, p.GPU, p.Parallel, kern, overhead, hardware.Pipeline{
		Layers: layers, GPUsPerNode: node, Chunked: chunked, MicroTokens: p.Limits.MaxNumBatchedTokens, All2All: pe.all2all,
	})
	if err != nil {
		if pe.prefix != "" {
			return fmt.Errorf("%w (fields \"disagg.decode_pp\", \"disagg.decode_tp\": flags --decode-pp, --decode-tp)", err)
		}
		return fmt.Errorf("%w (fields \"pp\", \"tp\": flags --pp, --tp)", err)
	}
	p.Step = p.Pipeline.StepModel()
	return nil
}

// pipelinePools returns the pools with a pipeline and their labels: the
// colocated (or prefill) pool's, and the decode pool's when disaggregated.
func (p *Plan) pipelinePools() (pools []*PoolPlan, labels []string) {
	if p.Pipeline != nil {
		pools, labels = append(pools, &p.PoolPlan), append(labels, "")
	}
	if p.Decode != nil && p.Decode.Pipeline != nil {
		pools, labels = append(pools, p.Decode), append(labels, "Decode pool: ")
	}
	return pools, labels
}

// describePipeline writes the header's pipeline lines: each pool's layout
// and each stage's memory per GPU.
func (p *Plan) describePipeline(w io.Writer) error {
	pools, labels := p.pipelinePools()
	for i, pool := range pools {
		if err := describePoolPipeline(w, pool, labels[i]); err != nil {
			return err
		}
	}
	return nil
}

func describePoolPipeline(w io.Writer, p *PoolPlan, label string) error {
	pp := len(p.Stages)
	how := "vLLM's batch queue: a request's prefill stays in one micro-batch"
	if p.chunked {
		how = "SGLang's chunked pipelining: a prefill's chunks fill successive micro-batches"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%sPipeline: pp %d × tp %d = %d GPUs per instance, up to %d micro-batches in flight of max_num_batched_tokens %d each (%s).\n",
		label, pp, p.Parallel.TP, pp*p.Parallel.TP, pp, p.Limits.MaxNumBatchedTokens, how)
	for _, st := range p.Stages {
		fmt.Fprintf(&b, "  stage %d: layers %d–%d (%d), %.2f GB weights/GPU, KV %.0f B/token/GPU, %.2f GB for KV = %d blocks",
			st.Stage, st.FirstLayer, st.FirstLayer+st.Layers-1, st.Layers, st.WeightGB, st.KVBytesToken, st.KVGB, st.Blocks)
		if e := p.Pipeline.Expert(st.Stage); e != nil {
			span, dom := e.Placement()
			fmt.Fprintf(&b, "; %d MoE layers, their experts over the stage's EP group of %d GPUs (%d in its fullest NVLink domain, %d domains)",
				int(p.Pipeline.MoELayers()[st.Stage]), p.Parallel.EP.Size, span, dom)
		}
		if st.Stage < pp-1 {
			fmt.Fprintf(&b, "; sends to stage %d over %s", st.Stage+1, p.Pipeline.Sends()[st.Stage].Name)
		}
		b.WriteString(".\n")
	}
	fmt.Fprintf(&b, "  every stage runs %d KV blocks per GPU (the fewest any stage holds, as vLLM does).\n", p.Memory.Blocks)
	_, err := io.WriteString(w, b.String())
	return err
}

// pipelineSummary is summary.json's "pipeline" after a run; nil at pp = 1.
func (r *Report) pipelineSummary() *PipelineSummary {
	if r.Plan.Pipeline == nil {
		return nil
	}
	return poolPipelineSummary(&r.Plan.PoolPlan, r.PipelineStats)
}

// decodePipelineSummary is summary.json's "decode_pipeline"; nil unless
// the decode pool has stages.
func (r *Report) decodePipelineSummary() *PipelineSummary {
	if r.Plan.Decode == nil || r.Plan.Decode.Pipeline == nil {
		return nil
	}
	return poolPipelineSummary(r.Plan.Decode, r.DecodePipelineStats)
}

func poolPipelineSummary(p *PoolPlan, st hardware.PipelineStats) *PipelineSummary {
	ps := &PipelineSummary{PP: len(p.Stages), GPUsPerReplica: len(p.Stages) * p.Parallel.TP, Chunked: p.chunked,
		Stages: p.Stages, KVBlocks: p.Memory.Blocks, Rounds: st.Rounds, Bubble: st.Bubble()}
	for _, t := range p.Pipeline.Sends() {
		ps.Sends = append(ps.Sends, t.Name)
	}
	if st.MicroBatches > 0 {
		n := float64(st.MicroBatches)
		ps.MicroBatches = n / float64(st.Rounds)
		for _, v := range st.StageBusy {
			ps.StageMs = append(ps.StageMs, 1e3*v/n)
		}
		for _, v := range st.SendSeconds {
			ps.SendMs = append(ps.SendMs, 1e3*v/n)
		}
		for _, v := range st.AllToAllSeconds {
			ps.AllToAllMs = append(ps.AllToAllMs, 1e3*v/n)
		}
	}
	return ps
}

// writePipelineResults writes each pool's stage times and bubble share.
func (r *Report) writePipelineResults(w io.Writer) error {
	for i, ps := range []*PipelineSummary{r.pipelineSummary(), r.decodePipelineSummary()} {
		if ps == nil || ps.Rounds == 0 {
			continue
		}
		var b strings.Builder
		if i == 1 {
			b.WriteString("Decode pool: ")
		}
		fmt.Fprintf(&b, "Pipeline: %d rounds, %.2f micro-batches per round; stage time per micro-batch (ms):", ps.Rounds, ps.MicroBatches)
		for i, v := range ps.StageMs {
			fmt.Fprintf(&b, " %d: %.3f", i, v)
		}
		if ps.AllToAllMs != nil {
			b.WriteString(", of which all-to-all:")
			for i, v := range ps.AllToAllMs {
				fmt.Fprintf(&b, " %d: %.3f", i, v)
			}
		}
		b.WriteString("; send (ms):")
		for i, v := range ps.SendMs {
			fmt.Fprintf(&b, " %d→%d: %.4f", i, i+1, v)
		}
		fmt.Fprintf(&b, "; bubble share %.1f %% of stage time.\n", 100*ps.Bubble)
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// kvLanes is how many times one stage's GPUs the prefill instance's KV
// link carries: the KV of a stage's layers leaves from that stage's GPUs
// (vLLM's KV connectors and SGLang's PD transfer each rank's own cache),
// every stage at once over its own NICs, so a transfer ends when the stage
// with the most layers has sent its share: layers / max stage layers (1
// without a pipeline). 61 layers over 15/15/16/15: 3.81 × one stage's
// bandwidth. The decode side's receive links are not priced (as at pp 1).
func kvLanes(layers int, stages []StagePlan) float64 {
	most := 0
	for _, st := range stages {
		most = max(most, st.Layers)
	}
	if most == 0 {
		return 1
	}
	return float64(layers) / float64(most)
}
