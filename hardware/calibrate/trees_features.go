package calibrate

import (
	"math"
	"math/bits"
	"sync"
)

// gemmFeatures fills x (numFeatures long) with the features of an M×K by
// K×N GEMM of flops FLOPs and bytes HBM bytes on a GPU with sms SMs:
//
//	0–4   log2 M, log2 N, log2 K, log2 M·N·K, log2 FLOPs/bytes
//	5–28  for each featureTiles tile: the busy fraction of the SMs over all
//	      waves, log2 of the waves, the busy fraction of the last wave
//	29–33 M mod 64, M mod 128, M mod 256, N mod 256, K mod 256
//	34    ln(parametric / roofline), the roofline at 100 % of the peaks
//
// roof is the roofline time and param the parametric model's time.
//
// A cold step model computes them for each GEMM of each new token count,
// so the integer parts are taken cheaply, to the same values: the log2 of
// an integer from a table of math.Log2 (log2Int), the tile counts by
// shifts (the tiles are powers of two; M and N positive, else by
// division), and the waves and the last wave's remainder from one
// division, ⌈tiles/sms⌉ = tiles/sms + (1 if a remainder). TestGEMMFeatures
// checks them against the divisions and math.Log2 calls they replace.
func gemmFeatures(x []float64, M, N, K int, flops, bytes float64, sms int, roof, param float64) {
	x[0] = log2Int(M)
	x[1] = log2Int(N)
	x[2] = log2Int(K)
	x[3] = x[0] + x[1] + x[2]
	x[4] = math.Log2(flops / bytes)
	i := 5
	for ti, t := range featureTiles {
		var tiles int
		if M > 0 && N > 0 {
			sh := &featureShifts[ti]
			tiles = ((M + t[0] - 1) >> sh[0]) * ((N + t[1] - 1) >> sh[1])
		} else {
			tiles = ((M + t[0] - 1) / t[0]) * ((N + t[1] - 1) / t[1])
		}
		var w, rem int
		if tiles >= 0 && sms > 0 {
			q, r := tiles/sms, tiles%sms
			w, rem = q, r
			if r != 0 {
				w++
			}
		} else {
			w, rem = (tiles+sms-1)/sms, tiles%sms
		}
		x[i] = float64(tiles) / float64(w*sms)
		x[i+1] = log2Int(w)
		x[i+2] = float64(rem) / float64(sms)
		i += 3
	}
	x[i] = float64(M % 64)
	x[i+1] = float64(M % 128)
	x[i+2] = float64(M % 256)
	x[i+3] = float64(N % 256)
	x[i+4] = float64(K % 256)
	x[i+5] = math.Log(param / roof)
}

// featureShifts are log2 of featureTiles' sides (all powers of two).
var featureShifts = func() (s [len(featureTiles)][2]uint) {
	for i, t := range featureTiles {
		for j, v := range t {
			if v <= 0 || v&(v-1) != 0 {
				panic("calibrate: a feature tile side is not a power of two")
			}
			s[i][j] = uint(bits.TrailingZeros(uint(v)))
		}
	}
	return s
}()

// log2IntTable holds math.Log2 of the integers below its length (index
// 0 unused), filled on first use: the token counts a step model prices
// (up to its batch token budget, 8,192 by default) and the wave counts.
var log2IntTable = sync.OnceValue(func() []float64 {
	t := make([]float64, 8192+1)
	for i := 1; i < len(t); i++ {
		t[i] = math.Log2(float64(i))
	}
	return t
})

// log2Int is math.Log2(float64(n)).
func log2Int(n int) float64 {
	if t := log2IntTable(); n >= 1 && n < len(t) {
		return t[n]
	}
	return math.Log2(float64(n))
}
