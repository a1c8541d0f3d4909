// Package models describes transformer models and turns one batch of work
// into per-operator costs — FLOPs, HBM bytes and all-reduce bytes on one GPU
// — that package hardware converts into kernel time. It knows nothing about
// GPUs or scheduling.
//
// # Types
//
// types.go holds what other packages program against: DType (BF16, FP8,
// FP4 and their sizes), Batch (an incremental summary of one iteration's
// prefill chunks and decodes), Parallel (tensor-parallel degree and the
// weight and KV precisions of an instance), OpKind (operator classes, with
// stable snake_case names used in CSV headers and calibration files) and Op
// (the cost of one operator class).
//
// # Models and the catalog
//
// A Model is the shape of a decoder-only transformer as HuggingFace
// config.json describes it: layers, hidden size, query and KV heads, head
// size, MLP or expert width, vocabulary, experts and top-k, gating, biases,
// norm kind. Builtin returns a catalog parsed from the embedded builtin.toml
// by the same loader users call (Catalog.LoadFile), so there is one code
// path. It holds Llama-2-7B/70B, Llama-3-8B/70B, Llama-3.1-8B/70B/405B,
// CodeLlama-34B, InternLM-20B, Qwen-72B (v1), phi-2, Qwen2.5-7B/72B,
// Qwen3-8B/14B/32B, Mistral-NeMo-12B, Yi-34B, and the MoE models
// Mixtral-8x7B/8x22B, Qwen3-30B-A3B, Qwen3-235B-A22B, Llama-4-Scout-17B-16E,
// gpt-oss-120b and DeepSeek-V3, each citing its published config.json; the
// dense models of Vidur's profiling data are all there so that calibration
// can use their traces. Catalog.Get also takes a HuggingFace id: a model's
// hf_name or one of its hf_aliases (instruction-tuned repositories whose
// config.json has the same shape, e.g. meta-llama/Llama-3.1-8B-Instruct for
// llama-3.1-8b).
//
// # HuggingFace config.json
//
// ReadHFConfig builds a Model from a config.json (or the directory holding
// it) for model_type llama, mistral, mixtral, qwen2, qwen3, qwen3_moe,
// deepseek_v3 and llama4 (its text_config); ParseHFConfig lists the keys
// read. An unknown architecture, a missing key (all of them are listed) or a
// value of the wrong type is a *FieldError naming the file and the JSON key.
// testdata/hf holds sample configs that import to the catalog's entries.
//
// Model files are TOML, [[model]] tables keyed by Model's TOML tags. Loading
// is strict and all-or-nothing: unknown keys, wrong types, missing required
// keys, invalid values and duplicate names are *FieldError values naming
// file, line and field, e.g.
//
//	models: my.toml line 7: model "x": field "heads": must be > 0, not -4
//
// The document is decoded into a generic map and every key is checked
// against Model's fields (the same strictness as toml.MetaData.Undecoded,
// with the field named in type errors too). Lines of syntax errors come
// from toml.ParseError; lines of keys come from a line scan of the file,
// since the toml package does not expose key positions.
//
// # Parameters and memory
//
// Params counts, per layer, the Q, K, V and output projections
// (2·Hidden·Heads·HeadDim + 2·Hidden·KVHeads·HeadDim), the MLP
// ((2 or 3)·Hidden·FFN) or all experts plus the Hidden×Experts router, the
// norms (Hidden, or 2·Hidden for LayerNorm, once or twice per layer) and the
// biases the model declares; plus the embedding table, the LM head unless
// tied, and the final norm. ActiveParams leaves out the experts a token does
// not use and the input embedding table (a gather, not a product): the
// gpt-oss model card's convention. For Llama-3.1-8B, Params is
// 8,030,261,248; for InternLM-20B it is 20,088,714,240, exactly the
// checkpoint's BF16 size over two.
//
// WeightBytes stores matrices and embedding tables at the weight precision
// and norms and biases at BF16. WeightBytesPerGPU shards like vLLM: Q,
// output, MLP and each expert's matrices, embedding and LM head are split by
// TP; K and V are split by TP or, when TP exceeds the KV heads, each GPU
// holds one replicated KV head; norms, the router and row-parallel biases
// are replicated. KV bytes per token are 2·Layers·KVHeads·HeadDim·bytes; per
// GPU the KV heads are those the GPU holds (KVHeads/TP, or one replica).
//
// # Operator costs
//
// Ops returns, for a batch b on one GPU of a TP group, one Op per operator
// class present. Count is occurrences per forward pass (Layers, 2·Layers for
// two norms or two residual adds, 1 for embedding and LM head); FLOPs and
// Bytes are per occurrence. Let T = b.Tokens(), t = TP, q = (Heads/t)·HeadDim
// the query width per GPU, kv = KV heads per GPU × HeadDim, w the weight
// bytes per element, and k_L = 2·kv·(KV bytes per element) the KV-cache
// bytes per token per layer per GPU. A GEMM of M rows, inner size K and N
// outputs per GPU costs 2·M·K·N FLOPs and reads K·N weights at w bytes plus
// M·K activations and writes M·N, at 2 bytes (activations are BF16); its
// Compute is the weight precision. Memory-bound operators read and write
// BF16 activations and carry a few nominal FLOPs per element (RMSNorm 4,
// LayerNorm 7, RoPE 3, activation 5, add 1), so FLOPs are never zero.
//
//   - embed: gather T rows (T·Hidden·w bytes) and write T·Hidden; once.
//   - norm: T×Hidden read and written plus the norm weights; 2 per layer (1
//     for a parallel block).
//   - qkv: GEMM M=T, K=Hidden, N=q+2·kv.
//   - rope: Q and K rotated in place: T·(q+kv) elements read and written.
//   - attn_prefill: 4·(Heads/t)·HeadDim·PrefillPairs FLOPs (QK^T and PV over
//     the causal pairs); bytes = Q read and O written (2·PrefillTokens·q·2),
//     plus the KV of PrefillCtx+PrefillTokens tokens read and of the new
//     PrefillTokens written, at k_L each. Compute BF16.
//   - attn_decode: each decode attends to its context and itself, so keys =
//     DecodeCtx + Decodes; FLOPs 4·(Heads/t)·HeadDim·keys; bytes = keys·k_L
//     read + Decodes·k_L written + Q and O (2·Decodes·q·2). Compute BF16.
//   - out_proj: GEMM M=T, K=q, N=Hidden.
//   - all_reduce (t > 1 only): 2 per layer, after attention and after the
//     MLP; CommBytes = T·Hidden·2, FLOPs and Bytes 0: package hardware
//     prices it with the link.
//   - moe_router (MoE only): GEMM M=T, K=Hidden, N=Experts, replicated.
//   - mlp_up, act, mlp_down: dense: GEMMs M=T with N=(2 or 1)·FFN/t and
//     K=FFN/t; act over T·FFN/t outputs (SiLU-and-mul reads two inputs, GELU
//     one). MoE: the experts run in TP mode (each expert's width split by t,
//     as vLLM's fused MoE does without expert parallelism). The T tokens make
//     T·TopK (token, expert) rows, so FLOPs are 2·T·TopK·Hidden·width and
//     Tokens is T·TopK; weight bytes are those of the experts touched, whose
//     expected number for T tokens each picking TopK of E uniformly is
//     E·(1−(1−TopK/E)^T) (closed form, no randomness): TopK for one token,
//     all E for large batches.
//   - qk_norm (Qwen3, Llama 4, MLA): the norms inside attention, one per
//     layer: Qwen3's q_norm and k_norm over the GPU's T·(q+kv) elements,
//     MLA's q_a and kv_a norms over T·(q_lora_rank+kv_lora_rank); RMSNorm
//     FLOPs and read/write bytes. Emitted last (it was added after lm_head;
//     the OpKind values are stable). Calibrated profiles price it with the
//     norm class unless they carry a qk_norm entry.
//   - shared experts and leading dense layers (DeepSeek-V3, Llama 4): a
//     shared expert is one more always-touched expert, T more rows and its
//     weights; the DenseLayers dense MLPs are folded into mlp_up, act and
//     mlp_down (Count = Layers) as the layer-weighted mean of dense and MoE
//     FLOPs and bytes, so sums over a forward pass are exact while a kernel
//     model's per-call overhead and saturation see one mean shape; the
//     router counts the MoE layers only.
//   - expert parallelism (Parallel.EP, expert.go): the routed experts are
//     whole on the GPUs of an EP group, ⌈(E + redundant)/EP⌉ each; a GPU's
//     routed rows are T·TopK·DP/EP·skew (the busiest GPU, its DP group's
//     ranks taken to carry T tokens each; under lock-step T is the group's
//     mean), over the expected distinct local experts those rows touch;
//     the shared experts stay on the TP rule on the rank's own T tokens, and
//     their FLOPs and bytes are added to the routed operators' (one
//     operator per class, the routed experts' shape). The all-to-all is
//     the hardware's (hardware.ExpertStep). Expert load is one skew for
//     every layer here; hardware.ExpertStep.SetLayerSkews prices each MoE
//     layer at its own by re-running the routed operators at each skew.
//   - MLA (DeepSeek-V3, see mla.go): qkv is the fused q_a+kv_a projection
//     plus q_b; attention FLOPs and bytes follow vLLM: prefill non-absorbed
//     (kv_b up-projects the latents of context and new tokens, then
//     attention with 192-dim queries/keys and 128-dim values), decode
//     absorbed (W_UK into the query, multi-query attention over the
//     576-element latent with 512-element values, then W_UV); the cache
//     holds (kv_lora_rank + qk_rope_head_dim) elements per token per layer
//     on every GPU; out_proj has K = (Heads/t)·v_head_dim.
//   - add: two residual adds per layer, each reading two and writing one
//     T×Hidden tensor.
//   - lm_head: the final norm over all T tokens, then a GEMM over the rows
//     that sample a token, M = Decodes + Prefills, K=Hidden, N=Vocab/t.
//     Batch cannot tell whether a prefill chunk ends its prompt, so every
//     chunk is counted as sampling: exact without chunked prefill, one row
//     too many per unfinished chunk with it.
//
// Ops with no work are left out and an empty batch appends nothing. With
// cap(dst) − len(dst) ≥ NumOpKinds, Ops does not allocate: it runs once per
// simulated iteration.
//
// # What is approximated or ignored
//
//   - Bias adds, softmax, the MoE top-k, token permutation and the weighted
//     sum of expert outputs, sampling, and the logits gather to rank 0 cost
//     nothing. Biases are counted in Params and WeightBytes only.
//   - The embedding's all-reduce under vocabulary-parallel TP (one per
//     forward pass, next to the 2·Layers counted) is left out.
//   - Sliding-window attention (gpt-oss: 128 tokens in 18 of 36 layers) is
//     recorded in the catalog but costed, and its KV sized, as full
//     attention in every layer: an upper bound for contexts past the window.
//     Batch holds sums of contexts, from which the windowed sums cannot be
//     recovered. gpt-oss's attention sinks are ignored.
//   - A single weight precision applies to every matrix and embedding
//     table; quantization scales (e.g. MXFP4's one byte per 32 elements)
//     are not counted. gpt-oss-120b keeps attention, router, embedding and LM
//     head in BF16 with FP4 experts; at weights = fp4 its attention weights
//     are thus undercounted.
//   - Partial rotary embeddings (phi-2 rotates 32 of 80 dimensions) are
//     costed as full RoPE; the activation function does not change cost.
//   - Activations are BF16; FP8 activation quantization of W8A8 kernels is
//     not modelled (Compute still names the weight precision, whose
//     tensor-core peak package hardware applies where the GPU has it).
//   - Expert parallelism is not modelled. Pipeline parallelism splits the
//     layers with vLLM's rule (StageLayers); a stage's model (StageModel)
//     serves its memory plan, its time is priced from the whole model's
//     operators in package hardware (PipelineStep).
//   - Llama 4's chunked local attention (8192-token chunks in 3 of 4
//     layers) and NoPE layers are costed as full attention with RoPE
//     everywhere (an upper bound past 8192 tokens); its weightless L2 q/k
//     norm is counted with head_dim weights. DeepSeek-V3's grouped routing
//     (n_group, topk_group) is taken as uniform routing, and its
//     multi-token-prediction layer is left out.
package models

//go:generate go run -tags toml_builtins ../internal/cmd/genstatic -models .
