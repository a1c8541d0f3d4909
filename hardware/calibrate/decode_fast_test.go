package calibrate

import (
	"iter"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/servesim/servesim/models"
)

// TestDecodeTimeSameBits prices random decode attention operators (the
// batch pricer's, of dense, GQA and MLA models at several TP degrees and
// KV precisions, decode-only and mixed, speculative or not, and MoE-tagged
// and other-kind operators that must take OpTime) by DecodeTime and by
// OpTime on every built-in profile, and wants the same bits; it also wants
// the fast path taken where a profile allows it (h100's has a residual
// table: the path with the by-units bracket).
func TestDecodeTimeSameBits(t *testing.T) {
	type pricer struct {
		bp models.BatchPricer
		tp int
	}
	var pricers []pricer
	for _, c := range []struct {
		model string
		p     models.Parallel
	}{
		{"llama-3.1-8b", models.Parallel{TP: 1}},
		{"llama-3.1-8b", models.Parallel{TP: 2, KV: models.FP8}},
		{"qwen3-32b", models.Parallel{TP: 4, Weights: models.FP8}},
		{"llama-3.1-70b", models.Parallel{TP: 8}},
		{"deepseek-v3", models.Parallel{TP: 8, Weights: models.FP8, KV: models.FP8}},
	} {
		pricers = append(pricers, pricer{mustModel(t, c.model).BatchPricer(c.p), c.p.TP})
	}
	fast := 0
	for _, gpu := range BuiltinGPUs {
		p, ok := Builtin(gpu)
		if !ok {
			t.Fatalf("no built-in profile for %s", gpu)
		}
		g := mustGPU(t, gpu)
		for _, pr := range pricers {
			k, err := p.Calibrated(g, pr.tp)
			if err != nil {
				t.Fatal(err)
			}
			if gpu == "h100" && (!k.decodeFast || k.res == nil) {
				t.Fatalf("h100 tp %d: decodeFast %v, residual table %v: want the short path with the table", pr.tp, k.decodeFast, k.res != nil)
			}
			if k.decodeFast {
				fast++
			}
			r := rand.New(rand.NewPCG(11, uint64(pr.tp)))
			for range 2000 {
				var b models.Batch
				b.Decodes = 1 + r.IntN(1<<uint(r.IntN(11)))
				b.DecodeCtx = int64(b.Decodes) * int64(1+r.IntN(1<<uint(4+r.IntN(14))))
				if r.IntN(4) == 0 {
					b.DecodeQuery = 1 + r.IntN(5)
				}
				if r.IntN(5) == 0 { // mixed: OpTime's mixed class
					b.Prefills, b.PrefillTokens = 1, 1+r.IntN(2048)
				}
				var op models.Op
				pr.bp.DecodeInto(&b, &op)
				switch r.IntN(10) {
				case 0: // an MoE-tagged operator takes OpTime's MoE class
					op.Experts = float64(1 + r.IntN(8))
				case 1: // another kind takes OpTime
					pr.bp.PrefillInto(&models.Batch{Prefills: 1, PrefillTokens: 1 + r.IntN(4096), PrefillPairs: float64(r.IntN(1 << 20))}, &op)
				case 2: // no work
					op.FLOPs, op.Bytes = 0, 0
				}
				got, want := k.DecodeTime(&op), k.OpTime(&op)
				if math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("%s tp %d, %+v: DecodeTime %v, OpTime %v", gpu, pr.tp, op, got, want)
				}
			}
		}
	}
	if fast == 0 {
		t.Fatal("no profile took DecodeTime's short path")
	}
}

// TestResidualByUnits wants the residual table's by-units bracket to give
// what the search along the w axis gives, at every integer the lookup
// covers and at non-integers, beyond the axis and below 1.
func TestResidualByUnits(t *testing.T) {
	p, ok := Builtin("h100")
	if !ok || len(p.Attention.DecodeResidual) == 0 {
		t.Fatal("h100: no built-in profile with a residual table")
	}
	tab := newResidualTable(&p.Attention)
	if want := int(tab.w[len(tab.w)-1]) + 1; len(tab.byUnits) != want {
		t.Fatalf("byUnits covers %d counts, want %d (to the axis's last)", len(tab.byUnits), want)
	}
	search := *tab
	search.byUnits = nil // at then searches w
	ws := []float64{0, 0.5, 1, 1.5, 3, 1023.5, 2048, 1e7}
	for x := range len(tab.byUnits) + 8 {
		ws = append(ws, float64(x))
	}
	for _, w := range ws {
		for _, u := range []float64{1, 23350, 5e4, 3e5, 1.056e6, 4e6} {
			got, want := tab.at(w, u), search.at(w, u)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("at(%v, %v) = %v by units, %v by the search", w, u, got, want)
			}
		}
	}
}

// atByBracket is residualTable.at as it was written before its by-units
// lookup and its u bracket written out: bracketInv along both axes.
func atByBracket(t *residualTable, w, u float64) float64 {
	i, fi := bracketInv(t.w, t.lw, t.invW, w)
	j, fj := bracketInv(t.u, t.lu, t.invU, u)
	return bilinear(t.r, i, fi, j, fj)
}

// fastLog2ByFrexp is fastLog2 as it was written before frexp was
// written out in it.
func fastLog2ByFrexp(x float64) float64 {
	m, e := frexp(x)
	if m < math.Sqrt2/2 {
		m, e = 2*m, e-1
	}
	s := (m - 1) / (m + 1)
	s2 := s * s
	ln := 2 * s * (1 + s2*(1.0/3+s2*(1.0/5+s2*(1.0/7+s2*(1.0/9+s2*(1.0/11+s2*(1.0/13)))))))
	return float64(e) + ln*(1/math.Ln2)
}

// TestResidualAtSameBits wants every built-in residual table's at to
// return atByBracket's bits, and fastLog2 fastLog2ByFrexp's, at random
// work units (integers and not, beyond both ends) and unit bytes (integers
// below the log2 table and not, subnormal and at the axis values).
func TestResidualAtSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for gpu, tab := range builtinResidualTables(t) {
		us := append([]float64{5e-324, 1, 3, 4095, 4096, 1e12}, tab.u...)
		for range 20000 {
			us = append(us[:6+len(tab.u)], math.Exp(r.Float64()*40-5), float64(r.IntN(5000)))
			w := float64(1 + r.IntN(1<<uint(r.IntN(13))))
			if r.IntN(4) == 0 {
				w *= 1 + r.Float64()
			}
			for _, u := range us {
				if got, want := tab.at(w, u), atByBracket(tab, w, u); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("%s: at(%v, %v) = %v, by bracket %v", gpu, w, u, got, want)
				}
				if got, want := fastLog2(u), fastLog2ByFrexp(u); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("fastLog2(%v) = %v, by frexp %v", u, got, want)
				}
			}
		}
	}
}

// TestResidualAtUnitsSameBits wants every built-in residual table's
// atUnits to return at's bits for a decode operator's work units (1 to
// beyond the by-units lookup) and unit bytes (integers below the log2
// table and not, beyond both ends of the axis, at its values).
func TestResidualAtUnitsSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 4))
	for gpu, tab := range builtinResidualTables(t) {
		us := append([]float64{5e-324, 1, 3, 4095, 4096, 1e12}, tab.u...)
		for range 20000 {
			us = append(us[:6+len(tab.u)], math.Exp(r.Float64()*40-5), float64(r.IntN(5000)))
			units := 1 + r.IntN(1<<uint(r.IntN(15)))
			w := float64(units)
			for _, u := range us {
				if got, want := tab.atUnits(units, w, u), tab.at(w, u); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("%s: atUnits(%d, %v) = %v, at %v", gpu, units, u, got, want)
				}
			}
		}
	}
}

// TestFastLog2SameBits wants fastLog2 to return fastLog2ByFrexp's bits
// (its fold of m into [√½, √2) by a branch) over random positive floats
// of every exponent, normal and subnormal, at the fold's edge (√½'s
// fraction bits and their neighbours) and at powers of two.
func TestFastLog2SameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	edge := math.Float64bits(math.Sqrt2/2) & (1<<52 - 1)
	xs := []float64{math.SmallestNonzeroFloat64, math.MaxFloat64, 1, 2, 0.5, math.Sqrt2, math.Sqrt2 / 2}
	for range 200000 {
		xs = append(xs, math.Float64frombits(r.Uint64()>>1)) // sign bit 0: positive, any exponent
	}
	for e := uint64(0); e < 0x7ff; e += 1 + uint64(r.IntN(8)) {
		for d := -2; d <= 2; d++ {
			xs = append(xs, math.Float64frombits(e<<52|uint64(int64(edge)+int64(d))), math.Float64frombits(e<<52))
		}
	}
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
			continue
		}
		if got, want := fastLog2(x), fastLog2ByFrexp(x); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("fastLog2(%v) = %v, by frexp and a branch %v", x, got, want)
		}
	}
}

// builtinResidualTables yields each built-in profile's decode residual
// table by GPU name; it fails t if no profile has one.
func builtinResidualTables(t *testing.T) iter.Seq2[string, *residualTable] {
	return func(yield func(string, *residualTable) bool) {
		tables := 0
		for _, gpu := range BuiltinGPUs {
			p, _ := Builtin(gpu)
			if len(p.Attention.DecodeResidual) == 0 {
				continue
			}
			tables++
			if !yield(gpu, newResidualTable(&p.Attention)) {
				return
			}
		}
		if tables == 0 {
			t.Fatal("no built-in profile has a residual table")
		}
	}
}
