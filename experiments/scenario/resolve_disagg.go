package scenario

import (
	"math"

	"github.com/servesim/servesim/sim/serve"
)

// Link presets: per-GPU bandwidth per direction and latency of the KV link
// between a prefill and a decode instance. Bandwidths are the interconnects'
// nominal rates; latencies are assumptions of the order NCCL reports for a
// small send/recv, not measurements.
var linkPresets = map[string]struct {
	gbPerS    float64 // per GPU, GB/s per direction; 0 = the GPU's own figure
	latencyUs float64
	note      string
}{
	"nvlink": {0, 10, "the prefill GPU's NVLink bandwidth per direction (same node)"},
	"ib":     {50, 10, "InfiniBand NDR, 400 Gb/s per GPU"},
	"roce":   {25, 20, "RoCE / Ethernet, 200 Gb/s per GPU"},
	"pcie":   {0, 10, "the prefill GPU's host PCIe link (through host memory)"},
}

// resolveDisagg fills p.Serve.Disagg from the [disagg] section.
func (s *Scenario) resolveDisagg(p *Plan) error {
	d := &s.Disagg
	if d.Link == "" {
		d.Link = "ib"
	}
	preset, ok := linkPresets[d.Link]
	if !ok {
		return s.fieldError("disagg.link", "link", "unknown link %q (known: nvlink, ib, roce, pcie)", d.Link)
	}
	perGPU := preset.gbPerS * 1e9
	switch d.Link {
	case "nvlink":
		perGPU = p.GPU.LinkBW
	case "pcie":
		perGPU = p.GPU.HostBW
	}
	if d.LinkGBps != 0 || s.Explicit("disagg.link_gb_per_s") {
		perGPU = d.LinkGBps * 1e9
	}
	if !(perGPU > 0) || math.IsInf(perGPU, 0) {
		return s.fieldError("disagg.link_gb_per_s", "link-gb-per-s", "%g must be > 0", d.LinkGBps)
	}
	if d.LinkLatencyUs == 0 && !s.Explicit("disagg.link_latency_us") { // an explicit 0: an instant link
		d.LinkLatencyUs = preset.latencyUs
	}
	latency, err := s.duration("disagg.link_latency_us", "link-latency-us", d.LinkLatencyUs, 1e-6, "µs")
	if err != nil {
		return err
	}
	if d.MaxPending < 0 || (d.MaxPending == 0 && s.Explicit("disagg.max_pending")) {
		return s.fieldError("disagg.max_pending", "max-pending", "%d must be ≥ 1; omit it for the default (the prefill pool's max_num_seqs)", d.MaxPending)
	}
	dp := p.Decode
	decodeStep := serve.StepTimer(dp.Step)
	decodeLimits := dp.Limits
	var lock serve.DPLockstep
	if dp.Pipeline != nil {
		decodeStep = dp.Pipeline
		decodeLimits.MaxNumBatchedTokens *= len(dp.Stages)
		if dp.Parallel.EP.On() && s.decodeDP() > 1 {
			lock = serve.DPLockstep{Ranks: s.decodeDP(), Agree: dp.Pipeline.SetGroupBatches}
		}
	}
	if dp.Expert != nil {
		decodeStep = dp.Expert
		if s.decodeDP() > 1 {
			lock = serve.DPLockstep{Ranks: s.decodeDP(), Load: dp.Expert.SetGroupLoad}
			if dp.Expert.TBO() != nil {
				lock.Agree = dp.Expert.SetGroupBatches
			}
		}
	}
	router, err := s.newRouter(decodeRoutingStream)
	if err != nil {
		return err
	}
	p.Serve.Disagg = &serve.Disagg{
		Decode: serve.InstanceConfig{
			Step: decodeStep, Blocks: dp.Memory.Blocks, BlockSize: dp.Memory.BlockSize, Limits: decodeLimits,
			Batcher: dp.Batcher, MaxModelLen: dp.MaxModelLen,
			Preempt: s.Batch.Preemption, Victim: s.Batch.Victim, HostBW: dp.GPU.HostBW, SwapSpace: s.Batch.SwapSpaceGB * 1e9,
			KVBytesPerToken: dp.Memory.KVBytesPerTokenPerGPU,
		},
		DecodeReplicas: p.DecodeInstances,
		DecodeLockstep: lock,
		DecodeRouter:   router,
		// Each GPU of the prefill group sends its shard over its own link;
		// with pipeline stages, each stage's GPUs send its layers' KV.
		Link:            serve.Link{Bandwidth: perGPU * float64(p.Parallel.TP) * kvLanes(p.Model.Layers, p.Stages), Latency: latency},
		KVBytesPerToken: p.Model.KVBytesPerToken(p.Parallel.KV),
		Streaming:       d.Streaming,
		Layers:          p.Model.Layers,
		MaxPending:      d.MaxPending,
	}
	return s.sglangDisagg(p)
}
