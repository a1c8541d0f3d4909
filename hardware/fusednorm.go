package hardware

import "github.com/servesim/servesim/models"

// FusedAddNormKernel is a kernel model whose residual adds (models.OpAdd)
// run inside the RMSNorm that follows them, as vLLM runs them: its RMSNorm
// called with a residual adds and normalises in one kernel
// (vllm/model_executor/layers/layernorm.py, RMSNorm.forward_cuda →
// fused_add_rms_norm; under torch.compile, where custom ops are off by
// default, Inductor fuses forward_native's add into the norm's Triton
// kernel). An add then launches no kernel of its own: it costs the extra
// residual traffic of the fused kernel at the GPU's peaks,
//
//	max(FLOPs / PeakFLOPS(op.Compute), Bytes / MemBW)
//
// with no fixed cost (0 for an empty op), the rule the bundle-fitted
// profiles use for their add class (compute and memory efficiency 1, no
// overhead; hardware/calibrate fitBundleGPU), so on those profiles it
// changes nothing. Every other operator is K's. It is a pure function of
// the operator, as KernelModel requires; GPU must be non-nil.
type FusedAddNormKernel struct {
	K   KernelModel
	GPU *GPU
}

// OpTime returns the seconds of one occurrence of op.
func (k FusedAddNormKernel) OpTime(op *models.Op) float64 {
	if op.Kind != models.OpAdd {
		return k.K.OpTime(op)
	}
	if op.FLOPs == 0 && op.Bytes == 0 {
		return 0
	}
	// Reciprocals multiplied, as the calibrated model computes its bundle
	// add class, so the two agree to the bit.
	return max(op.FLOPs*(1/k.GPU.PeakFLOPS(op.Compute)), op.Bytes*(1/k.GPU.MemBW))
}

var _ KernelModel = FusedAddNormKernel{}

// unwrapKernel returns the kernel model the engine wrappers
// (CustomARKernel, FusedAddNormKernel) wrap, however nested.
func unwrapKernel(k KernelModel) KernelModel {
	for {
		switch w := k.(type) {
		case CustomARKernel:
			k = w.K
		case FusedAddNormKernel:
			k = w.K
		default:
			return k
		}
	}
}
