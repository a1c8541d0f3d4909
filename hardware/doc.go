// Package hardware describes GPUs and turns a model's operators into time and
// memory on them: the hardware half of servesim's cost model (DESIGN §3, §4,
// §6). It knows model shapes only through package models' operator list
// ([models.Model.Ops]); it knows nothing of requests, schedulers or clocks.
//
// # GPUs and the catalog
//
// A [GPU] holds what the cost model needs: dense tensor-core peaks per
// precision, HBM capacity and bandwidth, NVLink and PCIe bandwidth (per
// direction: datasheets quote NVLink as the bidirectional aggregate, twice
// the figure here), an all-reduce latency, the number of SMs (for the wave
// quantization of calibrated GEMM models; 0 = unknown), power and a price. [Builtin]
// returns the A100 SXM4 80GB, H100 SXM5, H200 SXM and B200, whose numbers
// come from ../shared/data/gpu-specs.md with its source tags, one Sources
// line per number. They live in the embedded gpus.toml, read by the same
// strict loader users use ([Catalog.Load], [Catalog.LoadFile]): unknown keys,
// wrong types and invalid values are errors naming the file, line and field,
// and a user file may add GPUs or redefine a built-in one (to set its price,
// say). Prices are assumptions (typical 2026 on-demand rates), not specs.
//
// [GPU.PeakFLOPS] maps an operator's compute precision to a peak. A precision
// the GPU lacks falls back to the next wider one (FP4 → FP8 → BF16): weights
// stored in FP8 on an A100 are read at one byte each but multiplied in BF16,
// as weight-only quantized kernels do.
//
// # Time of one operator: KernelModel and Roofline
//
// A [KernelModel] returns the seconds of one occurrence of an operator
// ([models.Op]). [Roofline] is the implementation from specs:
//
//	t = OpOverhead + max(FLOPs / (peak · η_c), Bytes / (MemBW · η_m))
//
// with η_c the GEMM or the attention efficiency; a tensor-parallel
// all-reduce is a ring, 2·(TP−1)/TP · bytes / (LinkBW · η_link) +
// LinkLatency. [DefaultEfficiency] documents where each η comes from: they
// are medians of the Vidur kernel profiles in ../shared/data/vidur-profiling
// (large GEMMs reach 74 % of the BF16 peak; weight reads at batch 1 run at
// 80 % of HBM bandwidth; a small kernel costs 4 µs), re-derived from the
// files by the provenance tests. Attention efficiency has no profile behind
// it (the attention traces were not obtained) and is an assumption from the
// FlashAttention-2 paper. A calibrated KernelModel, fitted per operator to
// the traces, is meant to replace Roofline without changing its callers;
// [KernelFunc] adapts a function for tests.
//
// # Time of one iteration: StepModel
//
// A [StepModel] is one instance (model × GPU × parallelism × kernel model)
// and prices whole iterations: [StepModel.StepTime] is a per-iteration
// overhead plus Σ Count · OpTime over the operators of the batch. It is the
// simulator's hot path and does not allocate (it reuses a scratch operator
// list, so one StepModel belongs to one goroutine). [StepModel.Breakdown]
// splits a step by operator class for reports and [StepModel.Work] gives the
// FLOPs and bytes behind MFU and MBU. The per-iteration overhead (CPU
// scheduling, input preparation, sampling) is the caller's choice: the old
// sarathi-serve profile in vidur-profiling/historical measured 1.8–7 ms per
// iteration on A100 for batches of 8–128; current engines overlap most of it.
//
// # Memory
//
// [PlanMemory] splits one GPU's memory (DESIGN §4): MemBytes × utilization
// (vLLM's default 0.9) less the weights per GPU and an activation reserve
// ([DefaultActivationReserve], an assumption modelled on vLLM's profiling
// run) is the KV budget, cut into blocks of 16 tokens. It fails with a
// message that names the numbers when the weights do not fit: "hardware:
// llama-3.1-405b needs 811.7 GB of bf16 weights per GPU at tp 1 but h100 has
// 72.0 GB usable (80 GB × 0.90) …: raise tp or use a larger GPU".
// [PlanMemoryVLLM] plans as vLLM's V1 worker does instead: from the memory
// the driver reports to CUDA ([GPU.DeviceMemory]; every built-in GPU cites
// its reading in gpus.toml), less the weights, the profiling pass's
// activation peak ([ProfileActivation]: the forward pass or the dummy
// sampler run, whichever is larger), non-torch memory and CUDA graphs.
//
// # Pipeline parallelism
//
// [PipelineStep] prices a step of an instance whose layers are split over
// pp stages (models.StageLayers, vLLM's rule) as a round of up to pp
// micro-batches in flight: each stage's share of the whole model's
// operators (the embedding on the first, the LM head on the last), the
// activations' send to the next stage from Vidur's measured NCCL send/recv
// tables ([SendRecvTable], inside an NVLink domain or across), the
// makespan from an idle pipeline and the steady cycle back to back, and
// the bubble share ([PipelineStats]). Each stage's memory is planned on
// models.Model.StageModel.
//
// # Expert parallelism
//
// A [StepModel] built with an expert-parallel layout (models.Parallel.EP)
// prices the routed experts whole on each GPU at the busiest GPU's rows;
// [ExpertStep] wraps it and adds each MoE layer's dispatch and combine
// all-to-all for vLLM's backends ([AllGatherReduceScatter],
// [DeepEPHighThroughput], [DeepEPLowLatency]): bytes per GPU from the
// routing's expected remote GPUs (or nodes), over NVLink inside the
// domain and the scale-out NIC ([ScaleOutBW]) across, the DeepEP backends
// at DeepEP's measured bandwidths and latencies (deepep.go). Under DP
// lock-step its SetGroupLoad prices the MoE operators and the all-to-all
// at the group's mean tokens per rank ([ExpertStats] sums the steps);
// SetLayerSkews gives each MoE layer its own load skew; SetTBO splits a
// step in two overlapped micro-batches ([TBO]), the compute beside an
// all-to-all slowed by the SMs its kernels hold (SetCommSMs).
//
// # What is ignored
//
// The roofline has no notion of wave quantization, L2 reuse, GEMM shape
// effects beyond the two roofs, kernel fusion (norm + residual add are
// priced as separate kernels, as in the Vidur profiles), or overlap of
// communication with computation; an all-reduce's latency is one constant
// per GPU (measured with NCCL; vLLM's custom all-reduce is faster for small
// messages). Power draw is recorded but not modelled.
package hardware

//go:generate go run -tags toml_builtins ../internal/cmd/genstatic -gpus .
