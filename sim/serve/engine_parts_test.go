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

// parts, which pads the batch field by field through a pointer, and
// v1Overlap.StepPipelined, which has parts written out, give the kernel
// timer the batch the whole-Batch dispatch gave it, and the same bits, on
// random batches under every dispatch mode.
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
		var k, kr, ko echoTimer
		ov := &v1Overlap{*s}
		ov.kb = &ko
		for range 20_000 {
			b := randomPartsBatch(r)
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
			// v1Overlap.StepPipelined, parts written out in it.
			sec, f3, y3 := ov.StepPipelined(b0)
			if ko.last != kr.last || math.Float64bits(sec) != math.Float64bits(max(g2, c2+l2)) ||
				math.Float64bits(f3) != math.Float64bits(f2) || math.Float64bits(y3) != math.Float64bits(y2) {
				t.Fatalf("graphs %d: %+v: StepPipelined priced %+v: %v, %v, %v; dispatch's path %+v: %v, %v, %v",
					gi, b0, ko.last, sec, f3, y3, kr.last, max(g2, c2+l2), f2, y2)
			}
		}
	}
}

// refSpecStep is SpecStep.Step as it was: the batch passed whole to
// ExpandVerify and draftWork.
func refSpecStep(s *SpecStep, b models.Batch) (seconds, flops, bytes float64) {
	if s.Expand {
		seconds, flops, bytes = s.Target.Step(ExpandVerify(b))
	} else {
		seconds, flops, bytes = s.Target.Step(b)
	}
	if b.Tokens() == 0 {
		return
	}
	s.verify += seconds - s.IterOverhead()
	d := s.ProposerCPU * float64(b.Decodes)
	if s.Draft != nil {
		q := float64(b.Query())
		dd := float64(b.Decodes)
		sec, f, by := s.Draft.Step(models.Batch{
			Prefills:      b.Prefills + b.Decodes,
			PrefillTokens: b.PrefillTokens + b.DecodeTokens(),
			PrefillCtx:    b.PrefillCtx + b.DecodeCtx,
			PrefillPairs:  b.PrefillPairs + q*float64(b.DecodeCtx) + dd*q*(q+1)/2,
		})
		if s.K > 1 {
			reqs := b.Prefills + b.Decodes
			ctx := b.PrefillCtx + int64(b.PrefillTokens) + b.DecodeCtx + int64(b.DecodeTokens())
			sec1, f1, by1 := s.Draft.Step(models.Batch{Decodes: reqs, DecodeCtx: ctx})
			n := float64(s.K - 1)
			sec, f, by = sec+n*sec1, f+n*f1, by+n*by1
		}
		d += sec
		flops, bytes = flops+f, bytes+by
	}
	s.draft += d
	return seconds + d, flops, bytes
}

// SpecStep, which builds its batches field by field, prices every random
// batch as the whole-Batch form did, bit for bit (its verify and draft
// sums too), with and without expansion, a drafter, and one or more
// drafted tokens.
func TestSpecStepMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		expand, draft bool
		k             int
	}{{false, false, 3}, {true, false, 3}, {false, true, 1}, {false, true, 3}, {true, true, 4}} {
		var tg, dr, tgr, drr echoTimer
		s := &SpecStep{Target: &tg, K: c.k, ProposerCPU: 3e-6, Expand: c.expand}
		ref := &SpecStep{Target: &tgr, K: c.k, ProposerCPU: 3e-6, Expand: c.expand}
		if c.draft {
			s.Draft, ref.Draft = &dr, &drr
		}
		for range 20_000 {
			b := randomPartsBatch(r)
			if r.IntN(5) > 0 {
				b.DecodeQuery = 1 + r.IntN(c.k+1)
			}
			s1, f1, y1 := s.Step(b)
			s2, f2, y2 := refSpecStep(ref, b)
			if tg.last != tgr.last || dr.last != drr.last {
				t.Fatalf("%+v: %+v priced as %+v (draft %+v), the whole-Batch form %+v (draft %+v)", c, b, tg.last, dr.last, tgr.last, drr.last)
			}
			for i, p := range [][2]float64{{s1, s2}, {f1, f2}, {y1, y2}, {s.verify, ref.verify}, {s.draft, ref.draft}} {
				if math.Float64bits(p[0]) != math.Float64bits(p[1]) {
					t.Fatalf("%+v: %+v: value %d is %v, the whole-Batch form's %v", c, b, i, p[0], p[1])
				}
			}
		}
	}
}

// randomPartsBatch draws a batch of up to 300 decodes and, one time in
// three, 1–4 prefills: the parts both pricing tests compare; the caller
// draws its decode query.
func randomPartsBatch(r *rand.Rand) models.Batch {
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
	return b
}
