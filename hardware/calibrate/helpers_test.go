package calibrate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// vidurDir finds ../shared/data/vidur-profiling relative to this package
// (hardware/calibrate) or to the repository root, or skips the test.
func vidurDir(t testing.TB) string {
	t.Helper()
	for _, d := range []string{"../../../shared/data", "../../shared/data", "../shared/data"} {
		p := filepath.Join(d, "vidur-profiling")
		if _, err := os.Stat(filepath.Join(p, "SOURCE.md")); err == nil {
			return p
		}
	}
	t.Skip("../shared/data/vidur-profiling not found: skipping the test that reads the Vidur profiles")
	return ""
}

func mustGPU(t testing.TB, name string) *hardware.GPU {
	t.Helper()
	g, err := hardware.Builtin().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustModel(t testing.TB, name string) *models.Model {
	t.Helper()
	m, err := models.Builtin().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// handProfile is a complete fitted profile for g with round numbers: every
// class o = 2 µs, η = 0.8, h = 0, μ = 0.9, ρ = 0, except qkv (o = 5 µs,
// η = 0.8, h = 100 tokens, μ = 0.9) and norm (ρ = 0.01); attention η = 0.5, μ = 0.8, o = 4 µs; all-reduce
// at TP 2 (10 µs, 0.5) and TP 8 (30 µs, 0.9).
func handProfile(g *hardware.GPU) *Profile {
	p := &Profile{
		Format: FormatVersion, GPU: g.Name, Derivation: DerivationFitted,
		Source:    Source{Trace: "hand", Format: "native"},
		Peaks:     Peaks{BF16FLOPS: g.BF16FLOPS, MemBW: g.MemBW, LinkBW: g.LinkBW},
		Iteration: Iteration{OverheadS: 1e-3, Source: "hand"},
		Attention: Attention{ComputeEff: 0.5, MemoryEff: 0.8, OverheadS: 4e-6, Source: "hand"},
		AllReduce: []AllReduceParams{{TP: 2, LatencyS: 10e-6, LinkEff: 0.5}, {TP: 8, LatencyS: 30e-6, LinkEff: 0.9}},
	}
	for _, k := range fittedKinds {
		o := OpParams{Op: k.String(), OverheadS: 2e-6, ComputeEff: 0.8, MemoryEff: 0.9, From: "fit"}
		if k == models.OpQKV {
			o.OverheadS, o.HalfTokens = 5e-6, 100
		}
		if k == models.OpNorm {
			o.RowMemoryEff = 0.01
		}
		p.Ops = append(p.Ops, o)
	}
	return p
}

// waveProfile is handProfile with a wave term on mlp_up: o = 2 µs, η = 0.8,
// h = 200 tokens, μ = 0.9, η_w = 0.75 on 128 × 256 tiles, waves counted on
// g's SMs.
func waveProfile(g *hardware.GPU) *Profile {
	p := handProfile(g)
	p.Peaks.SMs = g.SMs
	for i := range p.Ops {
		if p.Ops[i].Op == "mlp_up" {
			p.Ops[i].HalfTokens, p.Ops[i].WaveEff, p.Ops[i].TileM, p.Ops[i].TileN = 200, 0.75, 128, 256
		}
	}
	return p
}
