package calibrate

import (
	"math"
	"testing"

	"github.com/servesim/servesim/models"
)

// BenchmarkForestAt evaluates the H100 profile's residual trees at the
// feature vectors of Llama-3.1-8B's GEMMs (TP 1) over token counts 1 to
// 2,048, one vector an iteration: the walk a step model pays four times
// for each token count it has not seen. nodes is the binned walk over the
// nodes, complete the one over complete trees that at uses.
func BenchmarkForestAt(b *testing.B) {
	k, xs := h100Llama8BFeatures(b)
	nodes := *k.trees.binned
	nodes.complete = nil
	for _, c := range []struct {
		name string
		f    *binnedForest
	}{{"nodes", &nodes}, {"complete", k.trees.binned}} {
		b.Run(c.name, func(b *testing.B) {
			var sink float64
			i := 0
			for b.Loop() {
				sink += c.f.at(xs[i][:])
				if i++; i == len(xs) {
					i = 0
				}
			}
			if math.IsNaN(sink) {
				b.Fatal("NaN")
			}
		})
	}
}

// BenchmarkCompleteWalk walks the H100 profile's complete trees at the
// bins of Llama-3.1-8B's GEMMs (TP 1) over token counts 1 to 2,048, past
// the memo: what a step model pays for each GEMM whose bins it has not
// seen. hot walks one vector after another; cold first writes 4 MiB
// (untimed), as a simulation's steps between two new token counts push
// the trees out of the caches.
func BenchmarkCompleteWalk(b *testing.B) {
	k, xs := h100Llama8BFeatures(b)
	f := k.trees.binned
	bins := make([][numFeatures]uint16, len(xs))
	for i, x := range xs {
		for j := range numFeatures {
			bins[i][j] = f.bin(j, x[j])
		}
	}
	flush := make([]byte, 4<<20)
	for _, cold := range []bool{false, true} {
		name := "hot"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			var sink float64
			i := 0
			for b.Loop() {
				if cold {
					b.StopTimer()
					for j := 0; j < len(flush); j += 64 {
						flush[j]++
					}
					b.StartTimer()
				}
				sink += f.complete.walk(f.base, &bins[i])
				if i++; i == len(bins) {
					i = 0
				}
			}
			if math.IsNaN(sink) {
				b.Fatal("NaN")
			}
		})
	}
}

// h100Llama8BFeatures returns the H100 profile's calibrated model and the
// feature vectors of Llama-3.1-8B's GEMMs (TP 1) in its trees' domain over
// token counts 1 to 2,048, in order.
func h100Llama8BFeatures(b *testing.B) (*Calibrated, [][numFeatures]float64) {
	p, ok := Builtin("h100")
	if !ok || p.GEMMTrees == nil {
		b.Fatal("no built-in H100 profile with trees")
	}
	k, err := p.Calibrated(mustGPU(b, "h100"), 1)
	if err != nil {
		b.Fatal(err)
	}
	param := *k
	param.trees = nil
	m := mustModel(b, "llama-3.1-8b")
	var xs [][numFeatures]float64
	var ops []models.Op
	for tok := 1; tok <= 2048; tok++ {
		ops = m.Ops(models.Batch{Decodes: tok}, models.Parallel{TP: 1}, ops[:0])
		for i := range ops {
			if op := &ops[i]; treeDomain(op, &k.trees.kinds, k.trees.dtype) {
				var x [numFeatures]float64
				k.features(op, param.OpTime(op), x[:])
				xs = append(xs, x)
			}
		}
	}
	return k, xs
}
