package serve

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/servesim/servesim/models"
)

// refDispatch is CUDAGraphs.dispatch as it was before padding: the
// padded batch returned whole.
func refDispatch(g *CUDAGraphs, b models.Batch) (models.Batch, int) {
	q := b.Query()
	n := b.Tokens()
	if g.Eager || len(g.Sizes) == 0 || n > g.Sizes[len(g.Sizes)-1] || (g.DecodeOnly && b.Prefills > 0) {
		return b, g.EagerLaunches
	}
	i := sort.SearchInts(g.Sizes, n)
	if g.ExactOnly && g.Sizes[i] != n {
		return b, g.EagerLaunches
	}
	pad := g.Sizes[i] - n
	if q > 1 {
		pad = (pad + q - 1) / q
	}
	b.Decodes += pad
	if b.Prefills == 0 {
		return b, 1
	}
	return b, g.PiecewiseLaunches
}

// refParts is v1Step.parts as it was: dispatch, then k's price of the
// padded batch.
func refParts(s *v1Step, b models.Batch, k StepTimer) (gpu, cpu, launch, flops, bytes float64) {
	gb, launches := b, 0
	if s.graphs != nil {
		gb, launches = refDispatch(s.graphs, b)
		launch = float64(launches) * s.graphs.Launch
	}
	sec, flops, bytes := k.Step(gb)
	cpu = s.perRequest * float64(b.Prefills+b.Decodes)
	if sec > 0 {
		gpu, cpu = sec-s.fixed, cpu+s.fixed
	}
	return gpu, cpu, launch, flops, bytes
}

// echoTimer prices a batch by a mix of all its fields (0 for no tokens)
// and remembers the last batch it was given.
type echoTimer struct{ last models.Batch }

func (t *echoTimer) Step(b models.Batch) (float64, float64, float64) {
	t.last = b
	if b.Tokens() == 0 {
		return 0, 0, 0
	}
	x := 1e-3 + 1e-6*float64(b.Prefills) + 3e-6*float64(b.PrefillTokens) + 1e-9*float64(b.PrefillCtx) +
		1e-12*b.PrefillPairs + 7e-6*float64(b.Decodes) + 1e-10*float64(b.DecodeCtx) + 1e-5*float64(b.DecodeQuery)
	return x, x * 1e15, x * 1e12
}

// parts, which pads the batch field by field through a pointer, gives the
// kernel timer the batch the whole-Batch dispatch gave it, and the same
// bits, on random batches under every dispatch mode.
func TestPartsMatchesDispatch(t *testing.T) {
	vllm := CaptureSizes(256, 8192)
	graphs := []*CUDAGraphs{
		nil,
		{Sizes: vllm, EagerLaunches: 700, PiecewiseLaunches: 70, Launch: 4e-6},
		{Sizes: CaptureSizesSpec(256, 8192, 3), EagerLaunches: 700, PiecewiseLaunches: 70, Launch: 4e-6},
		{Sizes: vllm, EagerLaunches: 500, Launch: 3e-6, DecodeOnly: true},
		{Sizes: []int{1, 2, 4, 8, 16, 32, 64, 128}, EagerLaunches: 400, Launch: 2e-6, DecodeOnly: true, ExactOnly: true},
		{Eager: true, Sizes: vllm, EagerLaunches: 900, Launch: 5e-6},
		{Sizes: []int{3, 70000}, EagerLaunches: 9, PiecewiseLaunches: 2, Launch: 1e-6}, // not indexed: searched
	}
	r := rand.New(rand.NewPCG(7, 8))
	for gi, g := range graphs {
		s := &v1Step{perRequest: 2e-6, fixed: 1e-3, graphs: g.indexed()}
		ref := &v1Step{perRequest: 2e-6, fixed: 1e-3, graphs: g}
		var k, kr echoTimer
		for range 20_000 {
			b := models.Batch{Decodes: r.IntN(300)}
			if r.IntN(3) == 0 {
				b.Prefills = 1 + r.IntN(4)
				b.PrefillTokens = b.Prefills + r.IntN(4096)
				b.PrefillCtx = r.Int64N(1 << 20)
				b.PrefillPairs = float64(b.PrefillTokens) * float64(r.IntN(1<<16))
			}
			if b.Decodes > 0 {
				b.DecodeCtx = int64(b.Decodes) * (1 + r.Int64N(8000))
			}
			if r.IntN(4) == 0 {
				b.DecodeQuery = 1 + r.IntN(5)
			}
			b0 := b
			g1, c1, l1, f1, y1 := s.parts(&b, &k)
			g2, c2, l2, f2, y2 := refParts(ref, b0, &kr)
			if b != b0 {
				t.Fatalf("graphs %d: parts changed its caller's batch %+v to %+v", gi, b0, b)
			}
			if k.last != kr.last {
				t.Fatalf("graphs %d: %+v priced as %+v, dispatch gave %+v", gi, b0, k.last, kr.last)
			}
			for i, p := range [][2]float64{{g1, g2}, {c1, c2}, {l1, l2}, {f1, f2}, {y1, y2}} {
				if math.Float64bits(p[0]) != math.Float64bits(p[1]) {
					t.Fatalf("graphs %d: %+v: part %d is %v, dispatch's path %v", gi, b0, i, p[0], p[1])
				}
			}
		}
	}
}
