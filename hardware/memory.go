package hardware

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/models"
)

// Memory-planning defaults (DESIGN §4).
const (
	// DefaultUtilization is the fraction of HBM an instance may use, as
	// vLLM's gpu_memory_utilization default of 0.9.
	DefaultUtilization = 0.9
	// DefaultBlockSize is the KV-cache block (page) size in tokens, as
	// vLLM's default of 16.
	DefaultBlockSize = 16
	// DefaultActivationReserve is the memory per GPU kept free for
	// activations and other non-KV allocations: 3 GiB. An ASSUMPTION in the
	// spirit of vLLM, which measures it with a profiling forward pass at
	// startup instead; one such measurement (vLLM PR #10511, Llama-3-8B on
	// one H100) reported 1.26 GiB of PyTorch activation peak plus 1.79 GiB
	// of non-PyTorch memory (CUDA context, NCCL, graphs), 3.05 GiB in all.
	// It grows with the batched-token budget, the vocabulary and TP (NCCL
	// buffers: 4.84 GiB at TP 2 in the same log); pass a measured value
	// when there is one.
	DefaultActivationReserve = 3 << 30
)

// MemoryPlan is how one GPU of an instance splits its memory.
type MemoryPlan struct {
	WeightBytesPerGPU     float64 // model weights held by one GPU
	ActivationReserve     float64 // kept free for activations
	KVBytesPerGPU         float64 // the KV budget: MemBytes × utilization − weights − reserve
	KVBytesPerTokenPerGPU float64 // KV bytes of one token on one GPU
	BlockSize             int     // tokens per KV block
	Blocks                int     // whole KV blocks that fit in the budget
}

// TokenCapacity returns the KV tokens the plan holds: Blocks × BlockSize.
func (p MemoryPlan) TokenCapacity() int { return p.Blocks * p.BlockSize }

// PlanMemory sizes the KV cache of m on g at p (DESIGN §4):
//
//	KV bytes = MemBytes × utilization − weights per GPU − activationReserve
//	Blocks   = floor(KV bytes / (blockSize × KV bytes per token per GPU))
//
// utilization must be in (0, 1] (DefaultUtilization), blockSize ≥ 1
// (DefaultBlockSize), activationReserve ≥ 0 (DefaultActivationReserve). It
// returns an error when p does not suit m, when the weights and reserve do
// not fit in the usable memory, or when what is left holds less than one
// block; a returned plan therefore has Blocks ≥ 1 and no negative field.
func PlanMemory(m *models.Model, g *GPU, p models.Parallel, utilization float64, blockSize int, activationReserve float64) (MemoryPlan, error) {
	switch {
	case m == nil || g == nil:
		return MemoryPlan{}, fmt.Errorf("hardware: PlanMemory: nil model or GPU")
	case !(utilization > 0 && utilization <= 1):
		return MemoryPlan{}, fmt.Errorf("hardware: memory utilization must be in (0, 1], got %v", utilization)
	case blockSize < 1:
		return MemoryPlan{}, fmt.Errorf("hardware: KV block size must be >= 1 token, got %d", blockSize)
	case !(activationReserve >= 0) || math.IsInf(activationReserve, 0):
		return MemoryPlan{}, fmt.Errorf("hardware: activation reserve must be finite and >= 0 bytes, got %v", activationReserve)
	}
	if err := m.CheckParallel(p); err != nil {
		return MemoryPlan{}, err
	}
	usable := g.MemBytes * utilization
	w := m.WeightBytesPerGPU(p)
	plan := MemoryPlan{
		WeightBytesPerGPU:     w,
		ActivationReserve:     activationReserve,
		KVBytesPerTokenPerGPU: m.KVBytesPerTokenPerGPU(p),
		BlockSize:             blockSize,
	}
	reserve := ""
	if activationReserve > 0 {
		reserve = fmt.Sprintf(" of which %.1f GB is reserved for activations", activationReserve/1e9)
	}
	if w+activationReserve > usable {
		return MemoryPlan{}, fmt.Errorf("hardware: %s needs %.1f GB of %s weights per GPU at tp %d but %s has %.1f GB usable (%g GB × %.2f)%s: raise tp or use a larger GPU",
			m.Name, w/1e9, p.Weights, p.TP, g.Name, usable/1e9, g.MemBytes/1e9, utilization, reserve)
	}
	plan.KVBytesPerGPU = usable - w - activationReserve
	blockBytes := float64(blockSize) * plan.KVBytesPerTokenPerGPU
	if !(blockBytes > 0) {
		return MemoryPlan{}, fmt.Errorf("hardware: %s: KV bytes per token per GPU is %v", m.Name, plan.KVBytesPerTokenPerGPU)
	}
	blocks := math.Floor(plan.KVBytesPerGPU / blockBytes)
	if blocks < 1 {
		return MemoryPlan{}, fmt.Errorf("hardware: %s at tp %d on %s leaves %.2f GB for the KV cache (%.1f GB usable − %.1f GB weights%s), less than one %d-token block of %.1f MB: raise tp or use a larger GPU",
			m.Name, p.TP, g.Name, plan.KVBytesPerGPU/1e9, usable/1e9, w/1e9, reserveTerm(activationReserve), blockSize, blockBytes/1e6)
	}
	if blocks > math.MaxInt32 {
		blocks = math.MaxInt32
	}
	plan.Blocks = int(blocks)
	return plan, nil
}

func reserveTerm(r float64) string {
	if r == 0 {
		return ""
	}
	return fmt.Sprintf(" − %.1f GB activation reserve", r/1e9)
}
