package calibrate

import (
	"runtime"
	"sync"
)

// This file holds the GEMM wave model: output tiles, the waves they run in
// on a GPU's SMs, and the fit that picks a class's tile.

// tile is the output tile of a GEMM kernel: m rows (tokens) by n columns
// of the product per thread block. {0, 0} is no tile model.
type tile struct{ m, n int }

// tileCandidates are the output tiles a GEMM class's fit tries: the CTA
// shapes of cuBLAS's and CUTLASS's tensor-core GEMM kernels on Ampere and
// Hopper are built from 64-, 128- and 256-wide sides.
var tileCandidates = []tile{{64, 64}, {64, 128}, {128, 64}, {128, 128}, {64, 256}, {256, 64}, {128, 256}, {256, 128}, {256, 256}}

// waves is the number of waves of a GEMM of M×N outputs in tiles of t on
// sms SMs: ⌈⌈M/t.m⌉·⌈N/t.n⌉ / sms⌉.
func waves(M, N int, t tile, sms int) int {
	tiles := ((M + t.m - 1) / t.m) * ((N + t.n - 1) / t.n)
	return (tiles + sms - 1) / sms
}

// paddedWork is the FLOPs a GEMM's kernel spends when every wave counts as
// full: 2·K·tm·tn·sms per wave.
func paddedWork(M, N, K int, t tile, sms int) float64 {
	return 2 * float64(K) * float64(t.m) * float64(t.n) * float64(sms) * float64(waves(M, N, t, sms))
}

// withTile sets each GEMM point's wave term to the padded work of tile t on
// sms SMs, plus its FLOPs beyond the GEMM (t = {0, 0}: no wave term).
func withTile(pts []point, t tile, sms int) {
	for i := range pts {
		p := &pts[i]
		if t.m == 0 || sms <= 0 || p.gn == 0 {
			p.w = 0
			continue
		}
		p.w = paddedWork(p.gm, p.gn, p.gk, t, sms)*p.invPeak + p.extra
	}
}

// fitGEMM fits a GEMM class: first without a wave term, then, where the
// GPU's SM count and every sample's N and K are known, with the wave term
// of each candidate tile, started from the fit without it (the wave
// efficiency one logit above the compute efficiency). It keeps the fit
// with the least squared log error (a wave term only if it lowers it by
// waveGain; the earlier candidate among equal ones), and leaves pts priced
// with its tile. Candidates are fitted in parallel on copies of pts; the result
// does not depend on the scheduling.
func fitGEMM(pts []point, sms int) (params, tile) {
	withTile(pts, tile{}, sms)
	best, x0, bestCost := gemmForm.fitFrom(pts, gemmForm.starts)
	var bestT tile
	if sms <= 0 || !hasDims(pts) {
		return best, bestT
	}
	start := [][]float64{append(append([]float64(nil), x0...), x0[2]+1)}
	type result struct {
		m    params
		cost float64
	}
	res := make([]result, len(tileCandidates))
	next := make(chan int, len(tileCandidates))
	for i := range tileCandidates {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(tileCandidates)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := append([]point(nil), pts...)
			for i := range next {
				withTile(own, tileCandidates[i], sms)
				m, _, c := waveForm.fitFrom(own, start)
				res[i] = result{m, c}
			}
		}()
	}
	wg.Wait()
	// A wave term must earn its place: lower the cost by 1 % at least (and
	// by more than rounding on a perfect trace), so that a tie, or a
	// difference in the last digits between platforms, keeps the model
	// without one.
	need := bestCost - max(waveGain*bestCost, 1e-6*float64(len(pts)))
	for i, r := range res {
		if r.cost < need && r.cost < bestCost {
			best, bestT, bestCost = r.m, tileCandidates[i], r.cost
		}
	}
	withTile(pts, bestT, sms)
	return best, bestT
}

// waveGain is the least relative reduction of a GEMM class's squared log
// error for which its fit takes a wave term.
const waveGain = 0.01

// hasDims reports whether every point is a GEMM with known N and K.
func hasDims(pts []point) bool {
	for i := range pts {
		if pts[i].gn == 0 {
			return false
		}
	}
	return len(pts) > 0
}
