package models

import (
	"fmt"
	"strconv"
)

// Model is the shape of a decoder-only transformer: what the simulator needs
// to size its weights and KV cache and to cost one forward pass. Field
// meanings follow HuggingFace config.json; the TOML keys are the snake_case
// tags. See doc.go for what is modelled and what is ignored.
type Model struct {
	// Name is the catalog key: lower-case letters, digits, '.', '_' and '-',
	// e.g. "llama-3.1-8b".
	Name string `toml:"name"`
	// HFName is the HuggingFace repository, e.g. "meta-llama/Llama-3.1-8B".
	HFName string `toml:"hf_name"`
	// HFAliases are other HuggingFace repositories with exactly this shape
	// (instruction-tuned variants of a base model: same config.json shape
	// fields), which Catalog.ByHFName also accepts.
	HFAliases []string `toml:"hf_aliases"`
	// Source cites where the numbers come from: the URL of the published
	// config.json, plus any paper or model card.
	Source string `toml:"source"`

	Layers  int `toml:"layers"`   // num_hidden_layers
	Hidden  int `toml:"hidden"`   // hidden_size
	Heads   int `toml:"heads"`    // num_attention_heads (query heads)
	KVHeads int `toml:"kv_heads"` // num_key_value_heads; 0 means Heads (filled by Validate)
	HeadDim int `toml:"head_dim"` // head_dim; 0 means Hidden/Heads (filled by Validate)
	FFN     int `toml:"ffn"`      // intermediate_size of a dense MLP; 0 for MoE models
	Vocab   int `toml:"vocab"`    // vocab_size

	// Experts and TopK are num_local_experts and num_experts_per_tok; both 0
	// for a dense model. Every layer of an MoE model has an MoE MLP, except
	// the first DenseLayers.
	Experts int `toml:"experts"`
	TopK    int `toml:"top_k"`
	// ExpertFFN is the intermediate size of one expert (MoE only).
	ExpertFFN int `toml:"expert_ffn"`
	// SharedExperts is the number of shared experts of width ExpertFFN that
	// every token runs besides its TopK routed ones (DeepSeek-V3
	// n_shared_experts = 1; Llama 4's shared expert). MoE only.
	SharedExperts int `toml:"shared_experts"`
	// DenseLayers is the number of leading layers whose MLP is dense, of
	// width FFN, in an MoE model (DeepSeek-V3 first_k_dense_replace = 3).
	DenseLayers int `toml:"dense_layers"`

	// QKNorm is true when Q and K are RMS-normalized per head before RoPE
	// (Qwen3 q_norm/k_norm, head_dim weights each; Llama 4's weightless
	// L2 norm, counted with the same weights).
	QKNorm bool `toml:"qk_norm"`

	// Multi-head latent attention (DeepSeek-V2/V3), all 0 for standard
	// attention. KVLoRARank > 0 selects MLA: K and V are projected from a
	// cached latent of KVLoRARank elements plus a shared RoPE key of
	// RopeHeadDim elements per token per layer. HeadDim is then the query
	// and key head size qk_nope_head_dim + qk_rope_head_dim, VHeadDim the
	// value head size, and QLoRARank the query's low-rank size (0: a full
	// Hidden × Heads·HeadDim query projection). See doc.go and mla.go.
	QLoRARank   int `toml:"q_lora_rank"`
	KVLoRARank  int `toml:"kv_lora_rank"`
	RopeHeadDim int `toml:"rope_head_dim"`
	VHeadDim    int `toml:"v_head_dim"`

	// GatedMLP is true for a gated MLP (SwiGLU: gate, up and down matrices)
	// and false for a 2-matrix MLP (up, activation, down: GELU in phi-2).
	GatedMLP bool `toml:"gated_mlp"`
	// TiedEmbeddings is true when the LM head reuses the embedding table.
	TiedEmbeddings bool `toml:"tied_embeddings"`
	// MaxContext is max_position_embeddings: the longest sequence served.
	MaxContext int `toml:"max_context"`

	// QKVBias is true when the Q, K and V projections carry biases
	// (Qwen, phi-2, gpt-oss).
	QKVBias bool `toml:"qkv_bias"`
	// Bias is true when the attention output projection, the MLP or expert
	// matrices and the MoE router carry biases (phi-2, gpt-oss). An LM-head
	// bias (phi-2: Vocab elements) is not counted.
	Bias bool `toml:"bias"`
	// Norm is "rmsnorm" (weight only) or "layernorm" (weight and bias);
	// empty means "rmsnorm" (filled by Validate).
	Norm string `toml:"norm"`
	// ParallelBlock is true when attention and MLP read the same normed
	// input and are summed (phi-2): one norm per layer instead of two.
	ParallelBlock bool `toml:"parallel_block"`

	// SlidingWindow is the attention window of the SlidingLayers layers that
	// use one (gpt-oss: 128 tokens in 18 of 36 layers). Recorded, not yet
	// modelled: attention and KV are costed as full attention in every layer,
	// an upper bound (see doc.go).
	SlidingWindow int `toml:"sliding_window"`
	SlidingLayers int `toml:"sliding_layers"`

	// Inferred is what Catalog.Lookup or ParseHFConfig inferred about the
	// checkpoint (its weight precision, notes for the run header); not a
	// catalog field.
	Inferred Inferred
}

// Norm kinds.
const (
	NormRMS   = "rmsnorm"
	NormLayer = "layernorm"
)

// maxDim bounds every size field, so that no product of a few of them can
// overflow or lose precision in float64 arithmetic. The largest real value
// in the catalog is 201088 (gpt-oss vocabulary).
const maxDim = 1 << 24

// maxContext bounds MaxContext and SlidingWindow (2^30 tokens).
const maxContext = 1 << 30

// FieldError is the error of an invalid model description: returned by
// Validate, by Catalog.Add and by the TOML loader, which also fills File and
// Line. Field is the TOML key ("heads"); it is empty for errors that concern
// the file as a whole (a TOML syntax error).
type FieldError struct {
	File  string // file name, or "" when the model was not read from a file
	Line  int    // 1-based line, or 0 when unknown
	Model string // model name, or "" when unknown
	Field string // TOML key, or ""
	Msg   string
}

// Error formats as
//
//	models: models.toml line 7: model "x": field "heads": must be > 0
//
// leaving out the parts that are unknown.
func (e *FieldError) Error() string {
	s := "models: "
	if e.File != "" {
		s += e.File
		if e.Line > 0 {
			s += " line " + strconv.Itoa(e.Line)
		}
		s += ": "
	}
	if e.Model != "" {
		s += "model " + strconv.Quote(e.Model) + ": "
	}
	if e.Field != "" {
		s += "field " + strconv.Quote(e.Field) + ": "
	}
	return s + e.Msg
}

func (m *Model) fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Model: m.Name, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// IsMoE reports whether the model's MLPs are mixtures of experts.
func (m *Model) IsMoE() bool { return m.Experts > 0 }

// Validate checks every field and fills the defaults documented on the
// fields (KVHeads = Heads, HeadDim = Hidden/Heads, Norm = "rmsnorm"). Its
// error is a *FieldError naming the field.
func (m *Model) Validate() error {
	if m.Name == "" {
		return m.fieldErr("name", "must not be empty")
	}
	for _, r := range m.Name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return m.fieldErr("name", "%q: use lower-case letters, digits, '.', '_' and '-' only", m.Name)
		}
	}
	positive := []struct {
		key string
		v   int
		max int
	}{
		{"layers", m.Layers, maxDim},
		{"hidden", m.Hidden, maxDim},
		{"heads", m.Heads, maxDim},
		{"vocab", m.Vocab, maxDim},
		{"max_context", m.MaxContext, maxContext},
	}
	for _, f := range positive {
		if f.v <= 0 {
			return m.fieldErr(f.key, "must be > 0, not %d", f.v)
		}
		if f.v > f.max {
			return m.fieldErr(f.key, "%d is larger than the limit %d", f.v, f.max)
		}
	}
	nonNegative := []struct {
		key string
		v   int
		max int
	}{
		{"kv_heads", m.KVHeads, maxDim},
		{"head_dim", m.HeadDim, maxDim},
		{"ffn", m.FFN, maxDim},
		{"experts", m.Experts, maxDim},
		{"top_k", m.TopK, maxDim},
		{"expert_ffn", m.ExpertFFN, maxDim},
		{"sliding_window", m.SlidingWindow, maxContext},
		{"sliding_layers", m.SlidingLayers, maxDim},
		{"shared_experts", m.SharedExperts, maxDim},
		{"dense_layers", m.DenseLayers, maxDim},
		{"q_lora_rank", m.QLoRARank, maxDim},
		{"kv_lora_rank", m.KVLoRARank, maxDim},
		{"rope_head_dim", m.RopeHeadDim, maxDim},
		{"v_head_dim", m.VHeadDim, maxDim},
	}
	for _, f := range nonNegative {
		if f.v < 0 {
			return m.fieldErr(f.key, "must be >= 0, not %d", f.v)
		}
		if f.v > f.max {
			return m.fieldErr(f.key, "%d is larger than the limit %d", f.v, f.max)
		}
	}
	if m.KVHeads == 0 {
		m.KVHeads = m.Heads
	}
	if m.KVHeads > m.Heads || m.Heads%m.KVHeads != 0 {
		return m.fieldErr("kv_heads", "%d must divide heads %d", m.KVHeads, m.Heads)
	}
	if m.HeadDim == 0 {
		if m.Hidden%m.Heads != 0 {
			return m.fieldErr("head_dim", "not set, and heads %d does not divide hidden %d: set it", m.Heads, m.Hidden)
		}
		m.HeadDim = m.Hidden / m.Heads
	}
	if m.Experts > 0 {
		if m.TopK < 1 || m.TopK > m.Experts {
			return m.fieldErr("top_k", "must be in [1, experts=%d] for an MoE model, not %d", m.Experts, m.TopK)
		}
		if m.ExpertFFN == 0 {
			return m.fieldErr("expert_ffn", "must be > 0 for an MoE model (experts = %d)", m.Experts)
		}
		if m.DenseLayers >= m.Layers {
			return m.fieldErr("dense_layers", "%d must be less than layers %d (an MoE model has MoE layers)", m.DenseLayers, m.Layers)
		}
		if m.DenseLayers == 0 && m.FFN != 0 {
			return m.fieldErr("ffn", "must be 0 for an MoE model with no dense_layers: every layer's MLP is MoE, sized by expert_ffn")
		}
		if m.DenseLayers > 0 && m.FFN == 0 {
			return m.fieldErr("ffn", "must be > 0: it is the width of the %d dense_layers", m.DenseLayers)
		}
	} else {
		if m.SharedExperts != 0 {
			return m.fieldErr("shared_experts", "must be 0 for a dense model (experts = 0), not %d", m.SharedExperts)
		}
		if m.DenseLayers != 0 {
			return m.fieldErr("dense_layers", "must be 0 for a dense model (experts = 0), not %d", m.DenseLayers)
		}
		if m.TopK != 0 {
			return m.fieldErr("top_k", "must be 0 for a dense model (experts = 0), not %d", m.TopK)
		}
		if m.ExpertFFN != 0 {
			return m.fieldErr("expert_ffn", "must be 0 for a dense model (experts = 0), not %d", m.ExpertFFN)
		}
		if m.FFN == 0 {
			return m.fieldErr("ffn", "must be > 0 for a dense model (experts = 0)")
		}
	}
	switch m.Norm {
	case "":
		m.Norm = NormRMS
	case NormRMS, NormLayer:
	default:
		return m.fieldErr("norm", "%q: want %q or %q", m.Norm, NormRMS, NormLayer)
	}
	if m.SlidingLayers > m.Layers {
		return m.fieldErr("sliding_layers", "%d is more than layers %d", m.SlidingLayers, m.Layers)
	}
	if (m.SlidingWindow > 0) != (m.SlidingLayers > 0) {
		return m.fieldErr("sliding_window", "sliding_window (%d) and sliding_layers (%d) must be set together", m.SlidingWindow, m.SlidingLayers)
	}
	return m.validateMLA()
}

// CheckParallel reports whether the model can run with p: TP ≥ 1, TP divides
// the query heads, TP and the KV heads divide one another (when TP exceeds
// the KV heads each GPU holds a replica of one KV head, as vLLM does), TP
// divides the MLP or expert intermediate size, and both precisions are valid.
func (m *Model) CheckParallel(p Parallel) error {
	if p.TP < 1 {
		return fmt.Errorf("models: model %q: tp %d: must be >= 1", m.Name, p.TP)
	}
	if !p.Weights.Valid() {
		return fmt.Errorf("models: model %q: weight precision %s: want bf16, fp8 or fp4", m.Name, p.Weights)
	}
	if !p.KV.Valid() {
		return fmt.Errorf("models: model %q: KV-cache precision %s: want bf16, fp8 or fp4", m.Name, p.KV)
	}
	if m.Heads%p.TP != 0 {
		return fmt.Errorf("models: model %q: tp %d does not divide heads %d", m.Name, p.TP, m.Heads)
	}
	if m.KVHeads%p.TP != 0 && p.TP%m.KVHeads != 0 {
		return fmt.Errorf("models: model %q: tp %d and kv_heads %d: one must divide the other (KV heads are split by tp, or replicated when tp > kv_heads)", m.Name, p.TP, m.KVHeads)
	}
	if m.FFN%p.TP != 0 {
		return fmt.Errorf("models: model %q: tp %d does not divide ffn %d", m.Name, p.TP, m.FFN)
	}
	if m.ExpertFFN%p.TP != 0 {
		return fmt.Errorf("models: model %q: tp %d does not divide expert_ffn %d", m.Name, p.TP, m.ExpertFFN)
	}
	return m.checkEP(p.EP)
}

// tpOf returns p.TP, panicking when it is below 1: Ops and the per-GPU sizes
// require a Parallel that passed CheckParallel.
func tpOf(p Parallel) int {
	if p.TP < 1 {
		panic("models: Parallel.TP < 1 (check it with Model.CheckParallel)")
	}
	return p.TP
}

// kvHeadsPerGPU is the number of KV heads one GPU of a TP group holds:
// KVHeads/TP (rounded up), or one replicated head when TP > KVHeads.
func (m *Model) kvHeadsPerGPU(tp int) int {
	if tp >= m.KVHeads {
		return 1
	}
	return (m.KVHeads + tp - 1) / tp
}

// Parameter counts, as float64 (exact below 2^53, far above any model).

func (m *Model) qDim() float64  { return float64(m.Heads) * float64(m.HeadDim) }
func (m *Model) kvDim() float64 { return float64(m.KVHeads) * float64(m.HeadDim) }

// normElems is the number of weights of one norm: weight, plus bias for
// LayerNorm.
func (m *Model) normElems() float64 {
	if m.Norm == NormLayer {
		return 2 * float64(m.Hidden)
	}
	return float64(m.Hidden)
}

// normsPerLayer is 2 (before attention and before the MLP), or 1 for a
// parallel block.
func (m *Model) normsPerLayer() int {
	if m.ParallelBlock {
		return 1
	}
	return 2
}

// upMatrices is the number of Hidden×F matrices on the way in: gate and up,
// or up only.
func (m *Model) upMatrices() float64 {
	if m.GatedMLP {
		return 2
	}
	return 1
}

// mlpMatrix is the matrix parameters of one MLP (or expert) of
// intermediate size f.
func (m *Model) mlpMatrix(f int) float64 {
	return (m.upMatrices() + 1) * float64(m.Hidden) * float64(f)
}

// mlpBias is the bias parameters of one MLP (or expert): up (and gate)
// outputs plus the down output.
func (m *Model) mlpBias(f int) float64 {
	if !m.Bias {
		return 0
	}
	return m.upMatrices()*float64(f) + float64(m.Hidden)
}

// attnMatrix is Q, K, V and output projections of one layer (MLA: its
// low-rank projections, see mla.go).
func (m *Model) attnMatrix() float64 {
	if m.IsMLA() {
		return m.mlaMatrix()
	}
	h := float64(m.Hidden)
	return 2*h*m.qDim() + 2*h*m.kvDim()
}

// attnBias is the Q, K, V biases and the output-projection bias of one layer.
func (m *Model) attnBias() float64 {
	b := 0.0
	if m.QKVBias {
		b += m.qDim() + 2*m.kvDim()
	}
	if m.Bias {
		b += float64(m.Hidden)
	}
	return b
}

// attnNorms is the weights of the norms inside attention: Qwen3's per-head
// q_norm and k_norm (head_dim each) and MLA's q_a and kv_a latent norms.
func (m *Model) attnNorms() float64 {
	n := 0.0
	if m.QKNorm {
		n += 2 * float64(m.HeadDim)
	}
	if m.IsMLA() {
		n += float64(m.QLoRARank) + float64(m.KVLoRARank)
	}
	return n
}

// routerBias is the router's bias, one per expert.
func (m *Model) routerBias() float64 {
	if m.Bias {
		return float64(m.Experts)
	}
	return 0
}

// moeLayers and denseLayers count the layers with an MoE and a dense MLP.
func (m *Model) moeLayers() int {
	if m.IsMoE() {
		return m.Layers - m.DenseLayers
	}
	return 0
}

func (m *Model) denseLayers() int { return m.Layers - m.moeLayers() }

// moeMatrix and moeSmall are the parameters of one MoE MLP: routed and
// shared experts and the Hidden×Experts router.
func (m *Model) moeMatrix() float64 {
	return float64(m.Experts+m.SharedExperts)*m.mlpMatrix(m.ExpertFFN) + float64(m.Hidden)*float64(m.Experts)
}

func (m *Model) moeSmall() float64 {
	return float64(m.Experts+m.SharedExperts)*m.mlpBias(m.ExpertFFN) + m.routerBias()
}

// allMatrix and allSmall split the layers' parameters into matrices (stored
// at the weight precision) and small vectors (norms, biases: BF16).
func (m *Model) allMatrix() float64 {
	l := float64(m.Layers)
	return l*m.attnMatrix() + float64(m.denseLayers())*m.mlpMatrix(m.FFN) + float64(m.moeLayers())*m.moeMatrix()
}

func (m *Model) allSmall() float64 {
	l := float64(m.Layers)
	s := l * (m.attnBias() + m.attnNorms() + float64(m.normsPerLayer())*m.normElems())
	return s + float64(m.denseLayers())*m.mlpBias(m.FFN) + float64(m.moeLayers())*m.moeSmall()
}

// embedTables is the embedding table plus the LM head unless tied.
func (m *Model) embedTables() float64 {
	t := float64(m.Vocab) * float64(m.Hidden)
	if m.TiedEmbeddings {
		return t
	}
	return 2 * t
}

// Params returns the total number of parameters: per layer the Q, K, V and
// output projections (or MLA's), the norms inside attention, the MLP (or
// every routed and shared expert and the router), the norms and the biases
// the model has; plus the embedding table, the LM head unless tied, and the
// final norm. Ignored: an LM-head bias, gpt-oss's attention sinks (one
// scalar per head per layer), DeepSeek-V3's router score-correction bias
// (one per expert per layer) and multi-token-prediction layers.
func (m *Model) Params() float64 {
	return m.allMatrix() + m.allSmall() + m.normElems() + m.embedTables()
}

// ActiveParams returns the parameters one token multiplies in a forward
// pass: Params less the experts it does not route to (Experts − TopK per
// MoE layer) and less the input embedding table, which is gathered, not
// multiplied (unless tied to the LM head, which every sampled token uses).
// This is the convention of the gpt-oss model card (5.1B active of 116.8B);
// Mistral's 12.9B active for Mixtral-8x7B also counts the embedding table.
func (m *Model) ActiveParams() float64 {
	a := m.Params()
	if !m.TiedEmbeddings {
		a -= float64(m.Vocab) * float64(m.Hidden)
	}
	if m.IsMoE() {
		a -= float64(m.moeLayers()) * float64(m.Experts-m.TopK) * (m.mlpMatrix(m.ExpertFFN) + m.mlpBias(m.ExpertFFN))
	}
	return a
}

// WeightBytes returns the bytes of the whole model (all GPUs together) with
// its matrices and embedding tables stored at precision w. Norm weights and
// biases are counted at 2 bytes (BF16) whatever w, as quantized checkpoints
// keep them; they are under 0.01 % of any catalog model. Quantization scales
// are not counted.
func (m *Model) WeightBytes(w DType) float64 {
	matrices := m.allMatrix() + m.embedTables()
	small := m.allSmall() + m.normElems()
	return matrices*w.Bytes() + small*2
}

// WeightBytesPerGPU returns the weight bytes one GPU of the tensor-parallel
// group holds, at p.Weights, with vLLM's sharding: Q and output projections,
// MLP and each expert's matrices, the embedding table and the LM head are
// split by TP; K and V projections are split by TP, or one KV head replicated
// on each GPU when TP > KVHeads; norms, the MoE router and the biases of
// row-parallel layers (output projection, MLP down) are replicated. MLA's
// down-projections (q_a, kv_a) are replicated and its up-projections (q_b,
// kv_b) split by TP. At TP = 1 it equals WeightBytes(p.Weights). It panics
// if p.TP < 1.
func (m *Model) WeightBytesPerGPU(p Parallel) float64 {
	tp := tpOf(p)
	t := float64(tp)
	h := float64(m.Hidden)
	kvd := float64(m.kvHeadsPerGPU(tp)) * float64(m.HeadDim)

	// Per layer, matrices at the weight precision.
	mat := 2*h*m.qDim()/t + 2*h*kvd
	if m.IsMLA() {
		mat = m.mlaMatrixPerGPU(t)
	}
	// Per layer, small vectors at BF16.
	small := float64(m.normsPerLayer())*m.normElems() + m.attnNorms()
	if m.QKVBias {
		small += m.qDim()/t + 2*kvd
	}
	if m.Bias {
		small += h // output-projection bias (row-parallel: replicated)
	}
	mlpSmall := func(f int) float64 {
		if !m.Bias {
			return 0
		}
		return m.upMatrices()*float64(f)/t + h // up biases split, down bias replicated
	}
	l := float64(m.Layers)
	mat, small = l*mat, l*small
	if m.IsMoE() && p.EP.On() {
		// Expert parallelism: each GPU holds its share of the routed
		// experts whole (vLLM's expert_map, determine_expert_map); shared
		// experts and the router follow the TP rule.
		e := float64(m.Experts)
		sh := float64(m.SharedExperts)
		loc := float64(m.LocalExperts(p))
		ml := float64(m.moeLayers())
		mat += ml * (loc*m.mlpMatrix(m.ExpertFFN) + sh*m.mlpMatrix(m.ExpertFFN)/t + h*e)
		small += ml * (loc*m.mlpBias(m.ExpertFFN) + sh*mlpSmall(m.ExpertFFN) + m.routerBias())
	} else if m.IsMoE() {
		e := float64(m.Experts)
		es := float64(m.Experts + m.SharedExperts)
		ml := float64(m.moeLayers())
		mat += ml * (es*m.mlpMatrix(m.ExpertFFN)/t + h*e) // experts split, router replicated
		small += ml * (es*mlpSmall(m.ExpertFFN) + m.routerBias())
	}
	if dl := float64(m.denseLayers()); dl > 0 {
		mat += dl * m.mlpMatrix(m.FFN) / t
		small += dl * mlpSmall(m.FFN)
	}
	return (mat+m.embedTables()/t)*p.Weights.Bytes() + (small+m.normElems())*2
}

// KVBytesPerToken returns the KV-cache bytes of one token for the whole
// model: 2 (K and V) × layers × kv_heads × head_dim × kv.Bytes(); for MLA,
// layers × (kv_lora_rank + rope_head_dim) × kv.Bytes() (one latent and one
// shared RoPE key, no V).
func (m *Model) KVBytesPerToken(kv DType) float64 {
	if m.IsMLA() {
		return float64(m.Layers) * m.latentDim() * kv.Bytes()
	}
	return 2 * float64(m.Layers) * m.kvDim() * kv.Bytes()
}

// KVBytesPerTokenPerGPU returns the KV-cache bytes of one token on one GPU
// of the TP group at p.KV: KV heads are split by TP, or, when TP > KVHeads,
// each GPU caches one (replicated) KV head, so that the sum over the group
// exceeds KVBytesPerToken. It panics if p.TP < 1.
//
// Under MLA every GPU caches the whole latent, as vLLM's MLA backends do
// (the latent is shared by all heads), so the per-GPU bytes equal
// KVBytesPerToken at any TP.
func (m *Model) KVBytesPerTokenPerGPU(p Parallel) float64 {
	tp := tpOf(p)
	if m.IsMLA() {
		return m.KVBytesPerToken(p.KV)
	}
	return 2 * float64(m.Layers) * float64(m.kvHeadsPerGPU(tp)) * float64(m.HeadDim) * p.KV.Bytes()
}
