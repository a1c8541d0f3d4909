package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware"
)

// withPrices runs f with the package's price store set to store (nil: no
// sharing), restoring it after. The tests that call it are not parallel.
func withPrices(t *testing.T, store *hardware.PriceStore, f func()) {
	t.Helper()
	saved := prices
	prices = store
	defer func() { prices = saved }()
	f()
}

// runOutputs resolves and runs s into a fresh directory and returns every
// output file's bytes by name, and the plan.
func runOutputs(t *testing.T, s Scenario) (map[string][]byte, *Plan) {
	t.Helper()
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := Run(p, out); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		files[strings.TrimPrefix(path, out)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, p
}

func sameFiles(t *testing.T, what string, got, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d files, want %d", what, len(got), len(want))
	}
	for name, w := range want {
		if !bytes.Equal(got[name], w) {
			t.Errorf("%s: %s differs from the run without shared prices", what, name)
		}
	}
}

// TestSharedPricesSameBytes runs every golden scenario (its requests cut
// to 400) without shared prices, then twice with a fresh store (the first
// run fills the tables, the second reads them): every output file is
// byte-identical. Plans other than pipelines (whose stage models keep
// their own caches) must have used the store.
func TestSharedPricesSameBytes(t *testing.T) {
	for _, f := range goldenFiles(t) {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".toml"), func(t *testing.T) {
			s := loadFile(t, f)
			s.Workload.Requests = min(s.Workload.Requests, 400)
			var want map[string][]byte
			withPrices(t, nil, func() { want, _ = runOutputs(t, s) })
			store := hardware.NewPriceStore(8)
			withPrices(t, store, func() {
				for i, what := range []string{"filling the shared table", "reading the shared table"} {
					got, p := runOutputs(t, s)
					sameFiles(t, what, got, want)
					if i == 0 && p.Pipeline == nil && store.Len() == 0 {
						t.Fatal("the plan shares no price table")
					}
				}
			})
		})
	}
}

// TestSharedPricesKeyEachInput: a change of anything a token count's price
// depends on (model, GPU, TP, weight or KV precision, kernel profile, the
// engine's kernels) gets a table of its own; a change of nothing it
// depends on (rate, batch limits, seed, iteration overhead, an engine that
// runs the same kernels: sglang wraps them as vllm-v1 does) shares the
// base scenario's.
func TestSharedPricesKeyEachInput(t *testing.T) {
	base := Default()
	base.Workload.Requests = 20
	for _, c := range []struct {
		name   string
		shares bool
		edit   func(*Scenario)
	}{
		{"model", false, func(s *Scenario) { s.Model = "llama-3-8b" }},
		{"gpu", false, func(s *Scenario) { s.GPU = "h200" }},
		{"tp", false, func(s *Scenario) { s.TP = 2 }},
		{"weights fp8", false, func(s *Scenario) { s.Weights = "fp8" }},
		{"kv fp8", false, func(s *Scenario) { s.KV = "fp8" }},
		{"roofline", false, func(s *Scenario) { s.Hardware.Profile = "roofline" }},
		{"engine ideal", false, func(s *Scenario) { s.Engine = &Engine{Name: "ideal"} }},
		{"engine trtllm", false, func(s *Scenario) { s.Engine = &Engine{Name: "trtllm"}; s.Batch.Policy = "" }},
		{"rate", true, func(s *Scenario) { s.Workload.Rate *= 2 }},
		{"max_num_seqs", true, func(s *Scenario) { s.Batch.MaxNumSeqs = 64 }},
		{"seed", true, func(s *Scenario) { s.Seed++ }},
		{"iteration overhead", true, func(s *Scenario) { s.Hardware.IterOverheadMs = 7 }},
		{"engine sglang", true, func(s *Scenario) { s.Engine = &Engine{Name: "sglang"} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := hardware.NewPriceStore(8)
			withPrices(t, store, func() {
				if _, err := base.Resolve(); err != nil {
					t.Fatal(err)
				}
				if store.Len() != 1 {
					t.Fatalf("the base scenario made %d tables, want 1", store.Len())
				}
				s := base
				c.edit(&s)
				if _, err := s.Resolve(); err != nil {
					t.Fatal(err)
				}
				want := 2
				if c.shares {
					want = 1
				}
				if store.Len() != want {
					t.Fatalf("after the variant the store holds %d tables, want %d (shares the base's: %v)", store.Len(), want, c.shares)
				}
			})
		})
	}
}
