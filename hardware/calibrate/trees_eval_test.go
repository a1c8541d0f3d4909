package calibrate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/servesim/servesim/models"
)

// TestBinnedForestSameBits checks that the binned walks (over the complete
// trees, and over the nodes) return the float walk's bits for every built-in profile with trees, at the feature
// vectors of the GEMMs of two models at two TPs over every token count up to 8,192
// (what a step model prices), at every threshold and its two neighbouring
// floats in each feature alone, at NaN and ±Inf, and at random vectors.
func TestBinnedForestSameBits(t *testing.T) {
	for _, gpu := range []string{"a100", "a100-pcie", "h100", "h200", "rtx-pro-6000"} {
		p, ok := Builtin(gpu)
		if !ok || p.GEMMTrees == nil {
			t.Fatalf("%s: no built-in profile with trees", gpu)
		}
		f := newForest(p.GEMMTrees)
		if f.binned == nil {
			t.Fatalf("%s: the forest was not binned", gpu)
		}
		complete := f.binned.complete
		if complete == nil {
			t.Fatalf("%s: the forest was not laid out as complete trees", gpu)
		}
		nodes := *f.binned
		nodes.complete = nil // the binned walk over nodes
		n := 0
		check := func(x []float64, what string) {
			t.Helper()
			n++
			want := f.atFloat(x)
			// The walk's sum, or the memo's where an earlier vector had
			// the same bins (most of the token counts' vectors do).
			if got := f.binned.at(x); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("%s, %s: complete trees %v, float walk %v (x = %v)", gpu, what, got, want, x)
			}
			if got := nodes.at(x); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("%s, %s: binned nodes %v, float walk %v (x = %v)", gpu, what, got, want, x)
			}
		}
		k, err := p.Calibrated(mustGPU(t, gpu), 1)
		if err != nil {
			t.Fatal(err)
		}
		param := *k // the parametric time: k without its trees
		param.trees = nil
		var x [numFeatures]float64
		for _, name := range []string{"llama-3.1-8b", "qwen3-32b"} {
			m := mustModel(t, name)
			for _, tp := range []int{1, 4} {
				par := models.Parallel{TP: tp, Weights: models.BF16, KV: models.BF16}
				var ops []models.Op
				for tok := 1; tok <= 8192; tok++ {
					ops = m.Ops(models.Batch{Decodes: tok}, par, ops[:0])
					for i := range ops {
						op := &ops[i]
						if treeDomain(op, &f.kinds, f.dtype) {
							k.features(op, param.OpTime(op), x[:])
							check(x[:], op.Kind.String())
						}
					}
				}
			}
		}
		// Each threshold, the floats either side and the specials, in one
		// feature at a time over the last GEMM's vector.
		for j := range numFeatures {
			y := x
			for _, v := range append(f.binned.thr[j], math.NaN(), math.Inf(1), math.Inf(-1), 0) {
				for _, w := range []float64{math.Nextafter(v, math.Inf(-1)), v, math.Nextafter(v, math.Inf(1))} {
					y[j] = w
					check(y[:], "threshold")
				}
			}
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 20000 {
			for j := range x {
				x[j] = (r.Float64() - 0.3) * 40 // features span about [-12, 28] (logs, fractions, M mod 256 up to 255)
				if r.IntN(4) == 0 {
					x[j] *= 10
				}
			}
			check(x[:], "random")
		}
		t.Logf("%s: %d vectors agree", gpu, n)
	}
}

// TestBinMemo checks that the memo returns what was put under a key, tells
// keys apart by every feature's bin, and stops adding at maxMemo.
func TestBinMemo(t *testing.T) {
	var m binMemo
	var bins [numFeatures]uint16
	k0 := keyOf(&bins)
	if _, ok := m.get(k0); ok {
		t.Fatal("an empty memo has a sum")
	}
	m.put(k0, 1.5)
	for j := range numFeatures {
		b := bins
		b[j] = rowLen - 1
		if _, ok := m.get(keyOf(&b)); ok {
			t.Fatalf("bins differing in feature %d share the key", j)
		}
		m.put(keyOf(&b), float64(j))
	}
	if v, ok := m.get(k0); !ok || v != 1.5 {
		t.Fatalf("get = %v, %v; want 1.5, true", v, ok)
	}
	for i := len(m.sum); i < maxMemo+10; i++ {
		var b [numFeatures]uint16
		b[0], b[1], b[2] = uint16(i%64), uint16(i/64%64), uint16(i/4096%64)+1
		m.put(keyOf(&b), 0)
	}
	if len(m.sum) != maxMemo {
		t.Fatalf("memo holds %d sums, want at most %d", len(m.sum), maxMemo)
	}
}

// TestCompleteWalkSameBits walks the complete trees of every built-in
// profile with trees at random bin vectors (each feature's bin from 0 to
// its threshold count, uniformly, and at the ends), past the memo, and
// wants the float walk's bits at a vector with those bins (a feature at
// its bin-th threshold, which has bin thresholds below it; +Inf above
// the last).
func TestCompleteWalkSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 7))
	for _, gpu := range []string{"a100", "h100", "rtx-pro-6000"} {
		p, _ := Builtin(gpu)
		f := newForest(p.GEMMTrees)
		b := f.binned
		if b == nil || b.complete == nil {
			t.Fatalf("%s: no complete trees", gpu)
		}
		var bins [numFeatures]uint16
		var x [numFeatures]float64
		for i := range 20000 {
			for j := range numFeatures {
				n := len(b.thr[j])
				var bin int
				switch i % 4 {
				case 0:
					bin = 0
				case 1:
					bin = n
				default:
					bin = r.IntN(n + 1)
				}
				bins[j] = uint16(bin)
				x[j] = math.Inf(1)
				if bin < n {
					x[j] = b.thr[j][bin]
				}
				if got := b.bin(j, x[j]); int(got) != bin {
					t.Fatalf("%s: feature %d at %v has bin %d, want %d", gpu, j, x[j], got, bin)
				}
			}
			if got, want := b.complete.walk(b.base, &bins), f.atFloat(x[:]); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("%s: walk at bins %v = %v, float walk %v", gpu, bins, got, want)
			}
		}
	}
}
