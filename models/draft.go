package models

import "fmt"

// Speculative-decoding drafters built from the target model's shape, as
// vLLM V1 loads them (vllm/v1/spec_decode/eagle.py EagleProposer.load_model,
// which serves the eagle, eagle3 and mtp methods).

// Drafter methods whose draft is a head on the target (DraftHead).
const (
	DraftEagle  = "eagle"  // EAGLE-1/2: one decoder layer; fc 2·hidden → hidden; embedding and LM head shared with the target
	DraftEagle3 = "eagle3" // EAGLE-3: one decoder layer; fc 3·hidden → hidden; embedding shared, its own LM head over a draft vocabulary
	DraftMTP    = "mtp"    // multi-token prediction: one layer of the target's own shape; eh_proj 2·hidden → hidden; embedding and head shared
)

// DefaultEagle3DraftVocab is the draft vocabulary of the published EAGLE-3
// heads for Llama 3 (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B config.json:
// draft_vocab_size 32000).
const DefaultEagle3DraftVocab = 32000

// Draft is a drafter's shape: the model its forward passes are priced as,
// and the weights it adds beside the target's.
type Draft struct {
	Model *Model // one layer (Layers = 1) at the target's width; Vocab is the head it scores
	// SharedHead: its LM head is the target's (no weights of its own).
	SharedHead bool
	// FCIn is the input width of its fusing projection (fc / eh_proj) in
	// units of hidden: 2 (EAGLE, MTP) or 3 (EAGLE-3). The projection's
	// weights are counted in WeightBytesPerGPU; its GEMM is not priced.
	FCIn int
}

// DraftHead returns the drafter that method puts on m. draftVocab is
// EAGLE-3's draft vocabulary (0: DefaultEagle3DraftVocab; ignored by the
// other methods). The draft layer is dense for a dense target and, for
// MTP on an MoE target, an MoE layer (DeepSeek-V3's MTP module is one
// MoE decoder layer).
func (m *Model) DraftHead(method string, draftVocab int) (Draft, error) {
	d := *m
	d.Name = m.Name + "-" + method
	d.Layers = 1
	d.DenseLayers = 0
	d.TiedEmbeddings = true // one table: the head it scores (the embedding is the target's)
	switch method {
	case DraftEagle:
		if d.IsMoE() {
			// EAGLE heads for MoE targets are dense layers of their own width;
			// none is in the catalog.
			return Draft{}, fmt.Errorf("models: an EAGLE head for MoE model %q has no known shape: give a draft_model instead", m.Name)
		}
		return Draft{Model: &d, SharedHead: true, FCIn: 2}, nil
	case DraftEagle3:
		if d.IsMoE() {
			return Draft{}, fmt.Errorf("models: an EAGLE-3 head for MoE model %q has no known shape: give a draft_model instead", m.Name)
		}
		if draftVocab == 0 {
			draftVocab = DefaultEagle3DraftVocab
		}
		if draftVocab < 1 || draftVocab > m.Vocab {
			return Draft{}, fmt.Errorf("models: EAGLE-3 draft vocabulary %d must be in [1, %d] (the target's)", draftVocab, m.Vocab)
		}
		d.Vocab = draftVocab
		return Draft{Model: &d, FCIn: 3}, nil
	case DraftMTP:
		return Draft{Model: &d, SharedHead: true, FCIn: 2}, nil
	}
	return Draft{}, fmt.Errorf("models: no draft head for method %q (want %s, %s or %s)", method, DraftEagle, DraftEagle3, DraftMTP)
}

// WeightBytesPerGPU returns the weights the drafter adds on one GPU of p:
// its layer and head (less the head when shared) plus the fusing
// projection FCIn·hidden × hidden, replicated (vLLM's eagle fc is a
// ReplicatedLinear).
func (d Draft) WeightBytesPerGPU(p Parallel) float64 {
	w := d.Model.WeightBytesPerGPU(p)
	h := float64(d.Model.Hidden)
	if d.SharedHead {
		w -= float64(d.Model.Vocab) * h / float64(tpOf(p)) * p.Weights.Bytes()
	}
	return w + float64(d.FCIn)*h*h*p.Weights.Bytes()
}
