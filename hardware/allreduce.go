package hardware

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/models"
)

// CustomAllReduce prices vLLM's custom all-reduce, the one its
// tensor-parallel group runs instead of NCCL for small messages inside an
// NVLink domain.
//
// Which communicator runs (vLLM, vllm/distributed/device_communicators):
//   - cuda_communicator.py, CudaCommunicator.all_reduce: the TP group tries
//     the custom all-reduce (ca_comm.should_custom_ar) before PyNCCL;
//   - custom_all_reduce.py, CustomAllreduce.__init__: enabled only for world
//     sizes in _SUPPORTED_WORLD_SIZES = [2, 4, 6, 8], inside one node, and
//     for more than two GPUs only when they are fully connected (NVLink;
//     "not supported on more than two PCIe-only GPUs"), with max_size =
//     8192 × 1024 bytes (8 MiB) unless symmetric memory lowers it;
//   - should_custom_ar: messages whose size is a multiple of 16 bytes and
//     below max_size (inp_size < self.max_size) take it, the others NCCL.
//
// One-shot or two-shot (csrc/custom_all_reduce.cuh, CustomAllreduce::
// allreduce): at world size 2 always cross_device_reduce_1stage; on a fully
// connected group 1stage when (world ≤ 4 and bytes < 512 KiB) or (world ≤ 8
// and bytes < 256 KiB), else cross_device_reduce_2stage. One-shot: every
// rank reads the whole message from each of its n−1 peers and reduces
// locally; two-shot: a reduce-scatter then an all-gather, each moving
// (n−1)/n of the message per rank:
//
//	one-shot  Latency + (n−1) · bytes / (LinkBW · Link)
//	two-shot  2 · Latency + 2 · (n−1)/n · bytes / (LinkBW · Link)
//
// NVLink: the catalog has no NVLink flag; a GPU whose LinkBW exceeds its
// HostBW has a GPU-to-GPU fabric (the PCIe GPUs of gpus.toml set link_bw
// to their PCIe figure, equal to host_bw). PCIe-only GPUs stay on NCCL: the
// RTX 4090 has no peer-to-peer access (its driver disables it, and vLLM's
// _can_p2p then disables the custom all-reduce); two PCIe GPUs with P2P
// (vLLM would take the custom path at world size 2) are left out.
//
// The latency is an ASSUMPTION from a cited benchmark, not a trace here:
// vLLM PR 24111 ("Enable Torch Symmetric Memory All-Reduce By Default",
// benchmarks/kernels/benchmark_device_communicators.py, H100, TP 2, bf16)
// measured ca_1stage at 0.007 ms for a 0.5 MiB message; the bandwidth term
// above gives 0.5 MiB / (450e9 × 0.7) = 1.7 µs of it, leaving ≈ 5 µs of
// fixed cost. The same benchmark at TP 4 (vLLM PR 24532) gives 0.010 ms at
// 0.5 MiB (bandwidth term 5.0 µs at n = 4: 5 µs again). Link defaults to
// the roofline's NCCL link efficiency (DefaultEfficiency().Link).
type CustomAllReduce struct {
	Latency  float64 // seconds of fixed cost per stage
	Link     float64 // fraction of LinkBW reached, in (0, 1]
	MaxBytes float64 // messages of at least this many bytes take NCCL (vLLM max_size)
}

// Custom all-reduce defaults (see CustomAllReduce).
const (
	DefaultCustomARLatency  = 5e-6
	DefaultCustomARMaxBytes = 8 << 20
)

// DefaultCustomAllReduce returns the defaults: 5 µs per stage, the
// roofline's link efficiency, vLLM's 8 MiB max_size.
func DefaultCustomAllReduce() CustomAllReduce {
	return CustomAllReduce{Latency: DefaultCustomARLatency, Link: DefaultEfficiency().Link, MaxBytes: DefaultCustomARMaxBytes}
}

// Validate checks the parameters.
func (c CustomAllReduce) Validate() error {
	switch {
	case !(c.Latency >= 0) || c.Latency > MaxLatency:
		return fmt.Errorf("hardware: custom all-reduce latency must be in [0, %g] s, got %v", float64(MaxLatency), c.Latency)
	case !(c.Link > 0 && c.Link <= 1):
		return fmt.Errorf("hardware: custom all-reduce link efficiency must be in (0, 1], got %v", c.Link)
	case !(c.MaxBytes >= 0) || math.IsInf(c.MaxBytes, 0):
		return fmt.Errorf("hardware: custom all-reduce max bytes must be finite and >= 0, got %v", c.MaxBytes)
	}
	return nil
}

// NVLink reports whether g's GPUs talk over a fabric faster than PCIe
// (LinkBW > HostBW), which vLLM's custom all-reduce needs beyond two GPUs.
func (g *GPU) NVLink() bool { return g.LinkBW > g.HostBW }

// Enabled reports whether vLLM would set up its custom all-reduce for a
// TP group of tp GPUs of type g (CustomAllreduce.__init__).
func (c CustomAllReduce) Enabled(g *GPU, tp int) bool {
	switch tp {
	case 2, 4, 6, 8:
	default:
		return false
	}
	return g.NVLink()
}

// Takes reports whether a message of bytes goes through the custom
// all-reduce (should_custom_ar) once Enabled.
func (c CustomAllReduce) Takes(bytes float64) bool {
	return bytes > 0 && math.Mod(bytes, 16) == 0 && bytes < c.MaxBytes
}

// OneShot reports whether the kernel is cross_device_reduce_1stage.
func OneShot(tp int, bytes float64) bool {
	return tp == 2 || tp <= 4 && bytes < 512<<10 || tp <= 8 && bytes < 256<<10
}

// Time returns the seconds of one custom all-reduce of bytes over tp GPUs
// of type g (one-shot or two-shot as OneShot says).
func (c CustomAllReduce) Time(g *GPU, tp int, bytes float64) float64 {
	n := float64(tp)
	bw := g.LinkBW * c.Link
	if OneShot(tp, bytes) {
		return c.Latency + (n-1)*bytes/bw
	}
	return 2*c.Latency + 2*(n-1)/n*bytes/bw
}

// CustomARKernel is a kernel model whose all-reduces take vLLM's custom
// all-reduce where vLLM would run it (CustomAllReduce.Enabled and Takes)
// and K's (NCCL) price otherwise; every other operator is K's. It is a
// pure function of the operator, as KernelModel requires.
type CustomARKernel struct {
	K   KernelModel
	GPU *GPU
	TP  int
	AR  CustomAllReduce
}

// OpTime returns the seconds of one occurrence of op.
func (k CustomARKernel) OpTime(op *models.Op) float64 {
	if op.Kind == models.OpAllReduce && k.TP > 1 && k.AR.Takes(op.CommBytes) && k.AR.Enabled(k.GPU, k.TP) {
		return k.AR.Time(k.GPU, k.TP, op.CommBytes)
	}
	return k.K.OpTime(op)
}

var _ KernelModel = CustomARKernel{}
