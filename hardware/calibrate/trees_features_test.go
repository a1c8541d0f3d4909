package calibrate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// gemmFeaturesByDivision is gemmFeatures as it was written before its
// table and shifts: divisions and math.Log2 calls throughout.
func gemmFeaturesByDivision(x []float64, M, N, K int, flops, bytes float64, sms int, roof, param float64) {
	x[0] = math.Log2(float64(M))
	x[1] = math.Log2(float64(N))
	x[2] = math.Log2(float64(K))
	x[3] = x[0] + x[1] + x[2]
	x[4] = math.Log2(flops / bytes)
	i := 5
	for _, t := range featureTiles {
		tiles := ((M + t[0] - 1) / t[0]) * ((N + t[1] - 1) / t[1])
		w := (tiles + sms - 1) / sms
		x[i] = float64(tiles) / float64(w*sms)
		x[i+1] = math.Log2(float64(w))
		x[i+2] = float64(tiles%sms) / float64(sms)
		i += 3
	}
	x[i] = float64(M % 64)
	x[i+1] = float64(M % 128)
	x[i+2] = float64(M % 256)
	x[i+3] = float64(N % 256)
	x[i+4] = float64(K % 256)
	x[i+5] = math.Log(param / roof)
}

// TestGEMMFeatures wants gemmFeatures' bits to be those of
// gemmFeaturesByDivision: at every token count up to past the log2 table
// with the shapes of two models, and at random shapes and SM counts
// (non-positive dimensions included, which take the divisions).
func TestGEMMFeatures(t *testing.T) {
	var got, want [numFeatures]float64
	check := func(M, N, K, sms int, flops, bytes, roof, param float64) {
		t.Helper()
		gemmFeatures(got[:], M, N, K, flops, bytes, sms, roof, param)
		gemmFeaturesByDivision(want[:], M, N, K, flops, bytes, sms, roof, param)
		for j := range got {
			if math.Float64bits(got[j]) != math.Float64bits(want[j]) && !(got[j] != got[j] && want[j] != want[j]) {
				t.Fatalf("M %d N %d K %d sms %d: feature %d is %v, by division %v", M, N, K, sms, j, got[j], want[j])
			}
		}
	}
	shapes := [][2]int{{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}, {10240, 5120}, {5120, 25600}}
	for M := 1; M <= len(log2IntTable())+64; M++ {
		for _, s := range shapes {
			f, b := 2*float64(M)*float64(s[0])*float64(s[1]), float64(s[0]*s[1]*2+(M*s[1]+M*s[0])*2)
			check(M, s[0], s[1], 132, f, b, f/989e12, f/700e12)
		}
	}
	r := rand.New(rand.NewPCG(3, 5))
	for range 20000 {
		M, N, K := r.IntN(1<<uint(r.IntN(20)))-r.IntN(3), r.IntN(1<<uint(r.IntN(17)))-r.IntN(3), 1+r.IntN(1<<14)
		sms := 1 + r.IntN(200)
		f, b := r.Float64()*1e15, r.Float64()*1e10
		check(M, N, K, sms, f, b, r.Float64(), r.Float64())
	}
}

// TestWaves wants class.waves to count what the divisions count,
// ⌈⌈m/tm⌉·⌈n/tn⌉ / sms⌉, for the profiles' tiles (by shifts) and for
// tiles not of powers of two (by division).
func TestWaves(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 2))
	for _, tile := range [][2]int{{64, 64}, {128, 128}, {256, 128}, {128, 256}, {64, 128}, {96, 128}, {128, 80}} {
		c := class{tm: tile[0], tn: tile[1]}
		if tile[0]&(tile[0]-1) == 0 && tile[1]&(tile[1]-1) == 0 {
			c.sm, c.sn, c.shift = uint(math.Log2(float64(tile[0]))), uint(math.Log2(float64(tile[1]))), true
		}
		for range 20000 {
			m, n, sms := 1+r.IntN(1<<uint(r.IntN(16))), 1+r.IntN(1<<uint(r.IntN(17))), 1+r.IntN(200)
			want := (((m+c.tm-1)/c.tm)*((n+c.tn-1)/c.tn) + sms - 1) / sms
			if got := c.waves(m, n, sms); got != want {
				t.Fatalf("tile %v, m %d n %d sms %d: %d waves, by division %d", tile, m, n, sms, got, want)
			}
		}
	}
	// The built-in profiles' tiles take the shifts.
	p, _ := Builtin("h100")
	k, err := p.Calibrated(mustGPU(t, "h100"), 1)
	if err != nil {
		t.Fatal(err)
	}
	shifts := 0
	for _, c := range k.cls {
		if c.tm > 0 && c.shift {
			shifts++
		}
	}
	if shifts == 0 {
		t.Fatal("no h100 class has a tile of powers of two")
	}
}
