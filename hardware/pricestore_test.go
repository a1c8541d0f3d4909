package hardware

import (
	"math"
	"sync"
	"testing"

	"github.com/servesim/servesim/models"
)

// priceBatches are steps whose token parts cover small, mid and beyond
// maxCachedTokens counts, with and without prefill.
func priceBatches() []models.Batch {
	var bs []models.Batch
	for _, n := range []int{1, 2, 3, 7, 64, 255, 256, 1000, 4096, 8192, maxCachedTokens + 5} {
		bs = append(bs, models.Batch{Decodes: n, DecodeCtx: int64(n) * 300})
		bs = append(bs, models.Batch{Prefills: 1, PrefillTokens: n, PrefillPairs: float64(n) * float64(n+1) / 2, Decodes: 3, DecodeCtx: 900})
	}
	return bs
}

func shareTestModel(t *testing.T) (*models.Model, *GPU, models.Parallel, KernelModel) {
	t.Helper()
	m, err := models.Builtin().Get("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Builtin().Get("h100")
	if err != nil {
		t.Fatal(err)
	}
	p := models.Parallel{TP: 2, Weights: models.BF16, KV: models.BF16}
	k := FusedAddNormKernel{K: Roofline{GPU: g, Eff: DefaultEfficiency(), TP: 2}, GPU: g}
	return m, g, p, k
}

type stepOut struct{ sec, flops, bytes float64 }

func priceAll(t *testing.T, s *StepModel) []stepOut {
	t.Helper()
	var out []stepOut
	for _, b := range priceBatches() {
		sec, fl, by := s.Step(b)
		out = append(out, stepOut{sec, fl, by})
	}
	return out
}

func sameBits(a, b []stepOut) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i].sec) != math.Float64bits(b[i].sec) ||
			math.Float64bits(a[i].flops) != math.Float64bits(b[i].flops) ||
			math.Float64bits(a[i].bytes) != math.Float64bits(b[i].bytes) {
			return false
		}
	}
	return true
}

// TestSharePricesSameBits: a step model that reads its token parts from a
// table another filled prices every step to the same bits as one on its
// own cache, and the filling one does too.
func TestSharePricesSameBits(t *testing.T) {
	m, g, p, k := shareTestModel(t)
	alone, err := NewStepModel(m, g, p, k, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	want := priceAll(t, alone)
	store := NewPriceStore(4)
	for i := range 3 { // the first fills the table, the others read it
		s, err := NewStepModel(m, g, p, k, 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		s.SharePrices(store, "k")
		if got := priceAll(t, s); !sameBits(got, want) {
			t.Fatalf("model %d sharing the table: steps %v, alone %v", i, got, want)
		}
	}
	if store.Len() != 1 {
		t.Fatalf("store holds %d tables, want 1", store.Len())
	}
	// The iteration overhead is outside the token parts: a step model with
	// another overhead may share the table and differs by exactly it.
	s, _ := NewStepModel(m, g, p, k, 3e-3)
	s.SharePrices(store, "k")
	other, _ := NewStepModel(m, g, p, k, 3e-3)
	if got, w := priceAll(t, s), priceAll(t, other); !sameBits(got, w) {
		t.Fatalf("overhead 3 ms sharing a 1 ms model's table: %v, alone %v", got, w)
	}
}

// TestSharePricesConcurrent prices the same steps from several goroutines
// sharing one table (run under -race by CI's race job and by hand): every
// goroutine's steps match the lone model's bits.
func TestSharePricesConcurrent(t *testing.T) {
	m, g, p, k := shareTestModel(t)
	alone, _ := NewStepModel(m, g, p, k, 0)
	want := priceAll(t, alone)
	store := NewPriceStore(2)
	var wg sync.WaitGroup
	errs := make([]bool, 6)
	for i := range errs {
		s, err := NewStepModel(m, g, p, k, 0)
		if err != nil {
			t.Fatal(err)
		}
		s.SharePrices(store, "k")
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got []stepOut
			for _, b := range priceBatches() {
				sec, fl, by := s.Step(b)
				got = append(got, stepOut{sec, fl, by})
			}
			errs[i] = !sameBits(got, want)
		}()
	}
	wg.Wait()
	for i, bad := range errs {
		if bad {
			t.Errorf("goroutine %d priced other bits than the lone model", i)
		}
	}
}

// TestPriceStoreBound: past maxKeys the oldest key's table is dropped (a
// new table for it afterwards), and a nil store turns sharing off.
func TestPriceStoreBound(t *testing.T) {
	store := NewPriceStore(2)
	a := store.table("a")
	store.table("b")
	if store.table("a") != a {
		t.Fatal("a second lookup of a held key gave a new table")
	}
	store.table("c") // drops a
	if store.Len() != 2 {
		t.Fatalf("store holds %d tables, want its bound 2", store.Len())
	}
	if store.table("a") == a {
		t.Fatal("the oldest key's table was not dropped past the bound")
	}
	if NewPriceStore(0).maxKeys != 1 {
		t.Fatal("a bound below 1 is not raised to 1")
	}
	m, g, p, k := shareTestModel(t)
	s, _ := NewStepModel(m, g, p, k, 0)
	s.SharePrices(store, "x")
	if s.prices != store.table("x") {
		t.Fatal("SharePrices(store, x) did not put the model on x's table")
	}
	s.SharePrices(nil, "x")
	if s.prices == nil || s.prices == store.table("x") {
		t.Fatal("SharePrices(nil, …) left the model on a shared table")
	}
}
