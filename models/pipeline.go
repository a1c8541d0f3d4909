package models

import "fmt"

// Pipeline parallelism: how a model's layers split over pipeline stages,
// and what one stage holds.

// MaxPP bounds the pipeline-parallel degree a scenario may ask for. Real
// deployments run 2 to 8 stages (SGLang's PP4 × TP8 on four nodes, vLLM's
// multi-node examples at PP 2 to 4); 64 leaves room above them while
// keeping a stage's arrays small.
const MaxPP = 64

// StageLayers returns the decoder layers of each of pp pipeline stages as
// vLLM splits them (vllm/distributed/utils.py get_pp_indices without
// VLLM_PP_LAYER_PARTITION): layers // pp each, and the remainder one
// apiece from the second-to-last stage backwards (partitions[-i] += 1 for
// i in 2 … remainder+1), so that the last stage, which also runs the final
// norm, the LM head and sampling, gets no extra layer, nor the first
// (embedding) while the remainder allows. 61 layers over 4 stages are
// [15 15 16 15]; 22 over 4 are [5 6 6 5]. It returns an error when pp is
// below 1, above MaxPP or above the layer count (a stage with no layer).
func StageLayers(layers, pp int) ([]int, error) {
	if pp < 1 || pp > MaxPP {
		return nil, fmt.Errorf("models: pipeline-parallel size %d: must be in [1, %d]", pp, MaxPP)
	}
	if pp > layers {
		return nil, fmt.Errorf("models: pipeline-parallel size %d is more than the model's %d layers (every stage needs a layer)", pp, layers)
	}
	parts := make([]int, pp)
	for i := range parts {
		parts[i] = layers / pp
	}
	for i := 2; i < layers%pp+2; i++ {
		parts[pp-i]++
	}
	return parts, nil
}

// StageLayersFrom checks a user's partition (vLLM's VLLM_PP_LAYER_PARTITION,
// "32,29"): one count per stage, each ≥ 1, summing to the model's layers.
// An empty list means vLLM's default (StageLayers).
func StageLayersFrom(layers, pp int, parts []int) ([]int, error) {
	if len(parts) == 0 {
		return StageLayers(layers, pp)
	}
	if _, err := StageLayers(layers, pp); err != nil {
		return nil, err
	}
	if len(parts) != pp {
		return nil, fmt.Errorf("models: layer partition %v has %d stages, pipeline-parallel size is %d", parts, len(parts), pp)
	}
	sum := 0
	for i, n := range parts {
		if n < 1 {
			return nil, fmt.Errorf("models: layer partition %v: stage %d has %d layers, want ≥ 1", parts, i, n)
		}
		sum += n
	}
	if sum != layers {
		return nil, fmt.Errorf("models: layer partition %v sums to %d layers, the model has %d", parts, sum, layers)
	}
	return append([]int(nil), parts...), nil
}

// StageModel returns the model one pipeline stage holds, for memory
// planning: layers [start, start+n) of m, with the vocabulary table on the
// first stage (the input embedding) and on the last (the LM head: vLLM's
// last rank builds ParallelLMHead, and with tied embeddings also the
// embedding it ties to, vllm/model_executor/models/llama.py LlamaModel
// and LlamaForCausalLM under get_pp_group().is_first_rank / is_last_rank),
// none on the others. So a stage's WeightBytesPerGPU is its layers' weights
// plus one table on the first and on the last stage (two on a single
// stage of an untied model), and its KVBytesPerTokenPerGPU its layers'
// KV. Leading dense layers (DenseLayers) fall where they are: a stage
// gets those of its range. What it does not split: every stage keeps the
// final norm's weights (Hidden BF16 values, a few KiB, where only the last
// runs it), and sliding-window layers are shared out in proportion.
//
// The stage model is for memory only (it need not pass Validate: a middle
// stage has no vocabulary): step times come from the whole model's
// operators (hardware.PipelineStep). start and n must describe a
// range inside m's layers (a programmer error otherwise: it panics).
func (m *Model) StageModel(start, n int, first, last bool) *Model {
	if start < 0 || n < 1 || start+n > m.Layers {
		panic(fmt.Sprintf("models: StageModel(%d, %d) of model %q with %d layers", start, n, m.Name, m.Layers))
	}
	s := *m
	s.HFAliases = nil
	s.Layers = n
	if m.IsMoE() {
		s.DenseLayers = max(0, min(m.DenseLayers, start+n)-start)
	}
	if m.SlidingLayers > 0 {
		s.SlidingLayers = min(n, m.SlidingLayers*n/m.Layers)
		if s.SlidingLayers == 0 {
			s.SlidingWindow = 0
		}
	}
	switch {
	case first && last: // the whole model
	case first || last:
		s.TiedEmbeddings = true // one table
	default:
		s.Vocab = 0
	}
	return &s
}
