package hardware

import (
	"math"

	"github.com/servesim/servesim/models"
)

// DeepEP's measured all-to-all costs (deepseek-ai/DeepEP docs/legacy.md,
// "Performance", the V1 kernels the SGLang and vLLM deployments of 2025
// ran; DeepEP dd758ca), in place of nominal link bandwidths for the two
// DeepEP backends. Measured on H800 (NVLink ~160 GB/s achievable of its
// 400 GB/s bidirectional, 200 GB/s a direction) with one ConnectX-7
// InfiniBand 400 Gb/s NIC a GPU (~50 GB/s), DeepSeek-V3's shape (hidden
// 7168, top-8 experts, FP8 dispatch, BF16 combine).
//
// DeepEP reports "logical" bandwidth: the bytes a GPU receives counted
// over every destination, its own included (tests/legacy: intranode
// recv_x bytes; internode one copy a token for each node its experts fall
// on, its own node included; low-latency one copy for each (token,
// expert) selection, hidden + hidden/128 × 4 + 16 bytes in FP8 and
// hidden × 2 in BF16). servesim counts the bytes the same way for these
// backends and divides by the measured figure, so DeepEP's own benchmark
// point is reproduced exactly.
//
// Transferred to other GPUs:
//   - NVLink: the normal kernels' intranode 153 (dispatch) and 158
//     (combine) GB/s at EP 8 are 0.765 and 0.79 of H800's 200 GB/s a
//     direction; those fractions of each GPU's link_bw (H100/H200 450
//     GB/s, B200/GB200 900 GB/s a direction). DeepEP V2's SM100 NVLink
//     EP 8 figures (643–740 GB/s of 900, README.md) are 0.71–0.82, the
//     same range. The low-latency kernels over NVLink (GB200 NVL72) take
//     the same fractions: DeepEP publishes no NVLink low-latency figure.
//   - RDMA: as measured, scaled by ScaleOutBW / 50 GB/s (the same 400
//     Gb/s NIC a GPU on DGX H100/H200/B200 and GB200 NVL72 trays, so 1).
//   - EP sizes between the measured ones interpolate linearly; below the
//     smallest and above the largest the end figure holds.
var (
	// deepEPNVLinkEff: intranode normal kernels, EP 8, of 200 GB/s.
	deepEPNVLinkEff = [2]float64{153.0 / 200, 158.0 / 200}
	// deepEPNormalRDMA: internode normal kernels (GB/s, logical), dispatch
	// and combine, at 4096 tokens a rank, 24 SMs.
	deepEPNormalRDMA = []deepEPPoint{
		{16, 43, 43},
		{32, 58, 57},
		{64, 51, 50},
	}
	// deepEPLowLatency: low-latency kernels, pure RDMA, 128 tokens a rank:
	// dispatch 77/118/155/173/192/194 µs and combine
	// 114/195/273/314/369/360 µs at EP 8 … 256, as bandwidths (GB/s).
	deepEPLowLatency = []deepEPPoint{
		{8, 98, 127},
		{16, 63, 74},
		{32, 48, 53},
		{64, 43, 46},
		{128, 39, 39},
		{256, 39, 40},
	}
)

// deepEPRDMAMax is the ~50 GB/s the measurements' 400 Gb/s NIC reaches.
const deepEPRDMAMax = 50e9

// deepEPPoint is one measured EP size: dispatch and combine GB/s.
type deepEPPoint struct {
	ep                int
	dispatch, combine float64
}

// deepEPBW returns a table's dispatch and combine bandwidth (bytes/s) at
// EP size ep: linear between measured sizes, the end figures outside.
func deepEPBW(t []deepEPPoint, ep int) (dispatch, combine float64) {
	scale := 1e9 * ScaleOutBW / deepEPRDMAMax
	if ep <= t[0].ep {
		return t[0].dispatch * scale, t[0].combine * scale
	}
	for i := 1; i < len(t); i++ {
		if ep <= t[i].ep {
			lo, hi := t[i-1], t[i]
			f := float64(ep-lo.ep) / float64(hi.ep-lo.ep)
			return (lo.dispatch + f*(hi.dispatch-lo.dispatch)) * scale, (lo.combine + f*(hi.combine-lo.combine)) * scale
		}
	}
	last := t[len(t)-1]
	return last.dispatch * scale, last.combine * scale
}

// deepEPSeconds returns the DeepEP backends' seconds per token of the DP
// rank per MoE layer, dispatch and combine, split by link (NVLink inside
// the domain, the NIC across domains), and whether the measured figures
// already hold the kernels' fixed cost (low-latency across domains: the
// benchmark's latencies; then the link latency is a floor, not a term).
func (e *ExpertStep) deepEPSeconds() (d, c linkBytes, floor bool) {
	p, m, g := e.s.p, e.s.m, e.s.g
	h := float64(m.Hidden)
	G := p.EP.Size
	k := float64(m.TopK)
	tok := math.Max(1, p.EP.Skew) / float64(p.TP) // the busiest receiver's share of the rank's tokens
	nvD, nvC := deepEPNVLinkEff[0]*g.LinkBW, deepEPNVLinkEff[1]*g.LinkBW
	if e.backend == DeepEPLowLatency {
		// One copy a (token, expert) selection: FP8 dispatch with its
		// scales and 16 bytes of routing, BF16 combine.
		dB, cB := tok*k*(h+h/128*4+16), tok*k*h*2
		if n, _ := e.placement(); G <= n {
			return linkBytes{intra: dB / nvD}, linkBytes{intra: cB / nvC}, false
		}
		bd, bc := deepEPBW(deepEPLowLatency, G)
		return linkBytes{inter: dB / bd}, linkBytes{inter: cB / bc}, true
	}
	elem := 2.0
	if p.Weights == models.FP8 {
		elem = 1 + 4.0/128
	}
	// Over NVLink: a copy a GPU holding one of the token's experts, the
	// token's own GPU included (inside one domain; across domains every
	// received token is forwarded over NVLink from its node's RDMA
	// receiver, DeepEP's NVL receive bytes: the same count over all G).
	hit := 1 - math.Pow(1-1/float64(G), k)
	intra := tok * float64(G) * hit * h
	d.intra, c.intra = intra*elem/nvD, intra*2/nvC
	if _, dom := e.placement(); dom > 1 {
		// Across domains: a copy a node the token's experts fall on, its
		// own included, forwarded inside the node over NVLink.
		inter := tok * dom * (1 - math.Pow(1-1/dom, k)) * h
		bd, bc := deepEPBW(deepEPNormalRDMA, G)
		d.inter, c.inter = inter*elem/bd, inter*2/bc
	}
	return d, c, false
}

// ScaleOutBWs returns the bandwidths (bytes/s a GPU) the all-to-all's
// cross-domain traffic is priced at, dispatch and combine, and whether
// they are DeepEP's measured figures (else ScaleOutBW for both); for
// headers.
func (e *ExpertStep) ScaleOutBWs() (dispatch, combine float64, measured bool) {
	switch e.backend {
	case DeepEPHighThroughput:
		d, c := deepEPBW(deepEPNormalRDMA, e.s.p.EP.Size)
		return d, c, true
	case DeepEPLowLatency:
		d, c := deepEPBW(deepEPLowLatency, e.s.p.EP.Size)
		return d, c, true
	}
	return ScaleOutBW, ScaleOutBW, false
}
