// Package calibrate fits servesim's kernel-time model to measured kernel
// timings and serves the result as a hardware.KernelModel (DESIGN §3,
// "Calibrated"). Datasheet peaks are not what GPUs deliver; a calibrated
// profile says what they do deliver, per operator class, and how well that
// description matches the measurements.
//
// # Traces
//
// A trace is a set of [Sample]s: the median time of one occurrence of an
// operator on one GPU, with the operator's FLOPs and bytes as package models
// computes them for the same shape. Two formats are read:
//
//   - Vidur's profiling data ([LoadVidur]; ../shared/data/vidur-profiling,
//     its SOURCE.md gives columns and units): compute/<gpu>/<org>/<model>/mlp.csv
//     ([ReadVidurMLP]: per-layer times of the QKV, output, up and down
//     GEMMs, the norms, activation, RoPE, residual add and embedding vs
//     num_tokens and TP), network/<node>/{all_reduce,send_recv}.csv
//     ([ReadVidurCollective]: NCCL times vs bytes and GPUs) and
//     historical/a100/cpu_overheads.csv ([ReadVidurCPUOverheads]:
//     sarathi-serve's CPU time per iteration). The <org>/<model> directory
//     names the model by its HuggingFace name (models.Catalog.ByHFName), and
//     the file's shape columns must match the catalog's.
//   - servesim's native CSV ([ReadNative], [NativeColumns]): one row per
//     operator timing with GPU, operator, shape (a catalog model with tokens,
//     TP and precision, or explicit FLOPs and bytes) and time in µs, for
//     measurements from any profiler. [WriteNative] writes it.
//
// Malformed files are errors that name the file, the line and the column
// ([LineError]); every reader has a fuzz test.
//
// # The model and the fit
//
// One occurrence of an operator of class k with t tokens takes
//
//	o_k + max(min(FLOPs / (peak · η_k) · (1 + h_k/t), W_k / (peak · ω_k)), bytes / (MemBW · μ_k), bytes/t / (MemBW · ρ_k))
//
// a fixed overhead plus the slowest of a compute term, a memory term and a
// row term. The compute efficiency η_k·t/(t + h_k) saturates in the token
// count (small GEMMs cannot fill the GPU). The row term is the latency of
// one token's row in the kernels that give each token to one thread block
// (norm, activation, RoPE, add, embedding): it makes a one-token norm of
// Llama-2-70B (hidden 8192) slower than one of Llama-2-7B (4096), as
// measured. GEMM classes (qkv, out_proj, mlp_up, mlp_down) fit o, η, h and
// μ (ρ = 0); bandwidth-bound classes fit o, μ and ρ (η = 1, h = 0: their
// nominal FLOPs run on CUDA cores).
//
// W_k is the wave term of a GEMM class (0: none), cuBLAS's tile and wave
// quantization: a kernel with tm × tn output tiles runs a GEMM of M = t
// rows, N columns and depth K (models.Op.N and K) in
// ⌈⌈M/tm⌉·⌈N/tn⌉ / SMs⌉ waves on a GPU with SMs multiprocessors
// (hardware.GPU.SMs), each costing 2·K·tm·tn·SMs FLOPs however few of its
// tiles are busy; W_k is that padded work, at efficiency ω_k. It reproduces
// steps such as Llama-2-70B's up-projection at TP 4 on H100 (N = 14,336,
// K = 8,192) going from one wave at 256 tokens (2·56 = 112 tiles of
// 128 × 256 on 132 SMs) to two at 264 (168 tiles): 101 µs → 199 µs
// measured. The faster of the two compute terms applies, as cuBLAS picks
// among its kernels. The tile is discrete: [FitProfile] fits the other
// parameters for each of nine tiles (64, 128 or 256 on a side), started
// from the fit without a wave term, and keeps the best, or none unless it
// lowers the squared log error by 1 %. Simpler forms did worse on the
// Vidur data (see docs/calibration.md): the padded work in place of the FLOPs, with
// or without the saturation, and a min of two tiles.
//
// The wave term follows only part of the steps: cuBLAS chooses its kernel
// per shape, and the Vidur timings are not monotone in the token count
// (Llama-2-7B's up-projection on H100: 128 µs at 200 tokens, 110 µs at
// 264), which no one-tile-per-class model can follow. [Evaluate] measures
// the error that leaves, and the floor: the model fitted to each shape alone.
//
// # Residual trees
//
// Given 2,000 or more dense BF16 GEMM timings with N and K, [FitProfile]
// then grows [GEMMTrees]: 150 least-squares gradient-boosted regression
// trees (depth 6, at least 50 timings a leaf, learning rate 0.2, 64
// quantile bins a feature) on log(measured / parametric), pooled over the
// four GEMM classes, over 35 features of the shape (gemmFeatures: the token
// count, N and K, the last-wave occupancy and wave count of eight common
// output tiles on the GPU's SMs, the token count modulo 64/128/256, how far
// the parametric time sits above the roofline). A dense BF16 GEMM of those
// classes then takes the parametric time times exp(the trees' sum); other
// precisions, MoE expert GEMMs and the LM head keep the parametric time
// (MoE expert operators of a profile with [moe] take it instead).
// Growing is deterministic (no sampling; ties to the lower feature and bin;
// thresholds and leaf values rounded so that they survive TOML exactly).
// Held out by model they take the GEMM error from 4.5 / 12.5 % to
// 2.5 / 8.1 % (A100, median / p90) and from 6.7 / 18.2 % to 3.5 / 11.7 %
// (H100); the report shows both. [Transfer] keeps the trees only for a GPU
// with the same SM count (H100 → H200: the same die), since they describe
// one die's kernel choice. Evaluating them costs about 1.3 µs per GEMM,
// paid once per token count by hardware.StepModel's cache.
//
// [FitProfile] fits each class per GPU by Levenberg–Marquardt least squares
// (gonum/mat) on log(predicted/measured), so a 5 µs and a 5 ms kernel weigh
// the same; the all-reduce, per TP degree, is latency + 2(n−1)/n ·
// bytes/(LinkBW · link_eff), fitted by linear least squares on the relative
// error. Classes without samples borrow a fitted class (lm_head takes
// mlp_up's parameters, moe_router out_proj's) or take
// hardware.DefaultEfficiency, and say so in the profile.
//
// A fit keeps bad timings out (robust.go). Before fitting it drops what no
// kernel can take: a time that is not finite or ≤ 0, longer than 10 s, or
// faster than its roofline at 4× the GPU's peak FLOP/s, HBM or link
// bandwidth (the factor covers L2-resident operands: Vidur's fastest add
// beats the HBM roofline by 1.32×). After a class's first fit it drops the
// gross outliers, timings whose log residual is off the median by more
// than 10 median absolute deviations and by more than 10×, and refits the
// class once (every real Vidur timing lies within 4.1× of its class's fit,
// so the built-in profiles lose none; a unit slip, 1000×, is caught). A
// class needs 6 timings at 3 token counts (a GEMM or attention 8 at 4; an
// all-reduce 4 at 3 message sizes per TP) or it takes the defaults above,
// which a note and [Profile.Describe] name; a trace with no fittable class
// is an error. What was dropped is counted by reason in the notes and in
// source.rejected ([Profile.FitWarnings]).
//
// A profile's numbers are bounded at load time (efficiencies in
// [1e-4, 1], overheads and latencies in [0, 1 s], half_tokens up to
// 4M tokens, peaks within hardware's physical ranges), so a corrupt file
// is an error naming its line and field, not a run of 1e300-second kernels.
//
// Attention is missing from the Vidur data (SOURCE.md: attention.csv was
// not obtained). It is fitted to LLMServingSim's profile bundles
// ([ReadBundle], [FitAttention]; ../shared/data/llmservingsim/profiles,
// which [GenerateBuiltin] and `servesim calibrate --trace` on Vidur's data
// find beside it): prefill, decode-only and mixed-call decode parameters,
// see attention.go. Decode-only calls take an additive form, a fixed
// cost, a cost per sequence and the KV bytes at a fitted bandwidth
// (decode_per_seq_s; a profile without it prices decodes as before, by
// the maximum of its terms), times a residual table measured on the
// bundles' grid by work units (decodes × KV heads per GPU) and KV bytes
// per unit (decode_residual; attention_residual.go), kept by a transfer
// only to a GPU with the same SM count. A GPU without attention timings takes the fit of the
// GPU that runs the same kernels ([AttachAttention]: A100 the RTX 4090's,
// H200 and B200 the H100's; A100, A100 PCIe, L40S and H100 PCIe with its
// compute scaled by the GEMMs', attention_scale.go) and its [Attention]
// says so. A fitted profile
// with neither (a native trace without attention rows, a GPU nobody
// measured) prices attention by roofline with a FlashAttention-like
// efficiency: 50 % of the BF16 peak on FLOPs, 80 % of HBM bandwidth on
// bytes, 4 µs per kernel (hardware.DefaultEfficiency), and says so.
//
// MoE expert operators (models.Op.Experts > 0: an MoE layer's expert
// up-projection, activation and down-projection, one fused-MoE kernel
// family in vLLM) take a profile's [moe] parameters ([MoEParams]: o +
// max(FLOPs/(peak·η)·(1 + h/rows), bytes/(MemBW·μ)), bytes = every
// touched expert's weights), fitted by [FitMoE] to the bundles' moe.csv
// (whole MoE blocks, routing forced; [AttachMoE]) with the router priced
// by moe_router: H100 on Qwen3.6-35B-A3B, RTX PRO 6000 on Qwen3-30B-A3B;
// H200 and B200 carry the H100 fit through [Transfer]. A100 and RTX 4090
// have no moe.csv and no [moe]: their expert operators take the dense
// GEMM classes, as every profile did before. [EvaluateMoE] is the report's
// table: the H100's MoE blocks go from 25.7 % median error (−25.7 %
// signed) on the dense parameters to 4.9 % in-sample; one GPU's fit on
// the other's peaks is off by 10–25 % (the two run different kernels:
// Qwen3.6's shared expert and gate add a fixed ~45 µs on H100).
//
// The per-iteration CPU overhead comes from cpu_overheads.csv: sarathi-serve's
// schedule + sampler + prepare-inputs + process-outputs time is fitted as
// a + b·batch over the TP-1 rows ([FitIterOverhead]); [Profile.IterOverhead]
// is a, and b is recorded, not applied.
//
// # Profiles
//
// A [Profile] is TOML: the GPU, how it was derived ([Source]: trace, files,
// models, sample count, or the GPU it was transferred from), the peaks its
// efficiencies are fractions of, one [OpParams] per operator class with its
// in-sample fit statistics, the all-reduce per TP, the attention assumption,
// the iteration overhead, the GEMM residual trees if any, and notes. [LoadProfile] reads one strictly
// (unknown keys, wrong types and invalid values name the file, line and
// field); [Profile.WriteTOML] writes one deterministically.
//
// [Profile.Kernel] returns the [Calibrated] kernel model for a GPU and TP
// degree. It refuses a GPU other than the profile's, and a GPU whose peaks
// differ from the profile's: efficiencies are fractions of those peaks.
// Using a profile on another GPU is an explicit step, [Transfer], which keeps
// every efficiency, tile and overhead, takes the new GPU's peaks and SM
// count (the wave term counts waves on the target's SMs), clears the fit
// statistics and says so in a note. A profile with a wave term also
// requires the GPU's SM count to be its peaks.sms. [Calibrated.OpTime] is on the
// simulator's hot path: a pure function of the operator, no allocation;
// with its reciprocals precomputed the parametric part is cheaper than
// hardware.Roofline even with the wave term's three integer divisions (the
// residual trees add about 1.3 µs per dense GEMM; hardware.StepModel
// prices each token count once).
//
// # Precisions
//
// XLA's measured matmul table (../shared/data/xla-matmul, [ReadXLAMatmul],
// [FitXLA]: BF16 and FP8 on H100 sm_90 and B200 sm_100_B200, held out by
// shape) gives the built-in profiles their [GEMMPrecision] entries: GEMM
// compute efficiency per math precision relative to the H100 BF16 fit.
// B200 BF16 and FP8 are measured, Hopper FP8 is measured on sm_90 as a
// transpose plus the GEMM (xla_transpose.go). XLA's table has no FP4: B200
// FP4 is fitted to vLLM's NVFP4 GEMM benchmarks on B200 (testdata/
// vllm-b200-gemm.csv, [ReadVLLMGEMM], [FitVLLM]) relative to the same runs'
// BF16 GEMM, which also cross-check B200 FP8. FP8 KV cache and attention
// are not in the tables.
//
// [Builtin] returns the embedded profiles: a100 and h100 fitted to the Vidur
// data, h200 and b200 the h100 fit transferred through their specs,
// rtx-pro-6000 and rtx-4090 fitted to LLMServingSim's bundles, and the
// catalog GPUs without timings of their own derived by architecture
// (builtin_derived.go: h100-pcie from h100, a100-pcie from a100, gb200 as
// b200, l40s from rtx-4090), each saying what it was derived from and, for
// the transferred ones, what error such a transfer showed where it could
// be measured, or that nothing of the GPU is measured. They are regenerated
// from ../shared/data by
//
//	go generate ./hardware/calibrate
//
// (cmd/genprofiles; TestBuiltinProfilesUpToDate checks the shipped files
// against it, and skips when ../shared is absent). `servesim calibrate`
// fits a profile to a user's trace, transfers one, and prints the accuracy
// report ([Evaluate], [Accuracy.Markdown]): in-sample, held out by model,
// held out by GPU (A100 ↔ H100), the per-shape floor, the transfer to
// the H200 against this project's own measurements
// (testdata/h200_*.csv, measured with testdata/measure_gemm.py), and
// per-layer step times against the measured sums.
package calibrate

//go:generate go run ./cmd/genprofiles -data ../../../shared/data/vidur-profiling -measured testdata/h200_randn.csv -out profiles
//go:generate go run -tags toml_builtins ../../internal/cmd/genstatic -profiles .
