package calibrate

import (
	"math"
	"testing"

	"github.com/servesim/servesim/hardware"
)

func gemmOps(qkv, out, up, down float64) []OpParams {
	return []OpParams{{Op: "norm", ComputeEff: 1}, {Op: "qkv", ComputeEff: qkv}, {Op: "out_proj", ComputeEff: out}, {Op: "mlp_up", ComputeEff: up}, {Op: "mlp_down", ComputeEff: down}}
}

func TestGEMMComputeEff(t *testing.T) {
	bf16 := func(s float64) []GEMMPrecision {
		return []GEMMPrecision{{DType: "fp8", ComputeScale: 2}, {DType: "bf16", ComputeScale: s}}
	}
	for _, c := range []struct {
		name string
		p    Profile
		want float64
	}{
		{"equal classes", Profile{Ops: gemmOps(0.5, 0.5, 0.5, 0.5)}, 0.5},
		// (0.25 · 1 · 1 · 1)^(1/4) = 0.7071; norm and fp8 are not counted.
		{"geometric mean", Profile{Ops: gemmOps(0.25, 1, 1, 1), GEMMPrecisions: []GEMMPrecision{{DType: "fp8", ComputeScale: 0.5}}}, math.Sqrt(0.5)},
		// 0.5 × 0.8 = 0.4 on every class.
		{"bf16 compute scale", Profile{Ops: gemmOps(0.5, 0.5, 0.5, 0.5), GEMMPrecisions: bf16(0.8)}, 0.4},
		// 1 × 1.3 capped at 1, 0.5 × 1.3 = 0.65: (1 · 1 · 0.65 · 0.65)^(1/4) = √0.65.
		{"capped at 1", Profile{Ops: gemmOps(1, 1, 0.5, 0.5), GEMMPrecisions: bf16(1.3)}, math.Sqrt(0.65)},
		{"a class missing", Profile{Ops: gemmOps(0.5, 0.5, 0.5, 0.5)[:4]}, 0},
		{"a class unfitted", Profile{Ops: gemmOps(0.5, 0, 0.5, 0.5)}, 0},
	} {
		if got := gemmComputeEff(&c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: gemmComputeEff = %v, want %v", c.name, got, c.want)
		}
	}
	// Unusable profiles leave the transfer unscaled, with no note.
	if s, note := attnScale(&Profile{}, &Profile{Ops: gemmOps(0.5, 0.5, 0.5, 0.5)}); s != 1 || note != "" {
		t.Errorf("attnScale without the source's GEMMs = %v, %q; want 1, no note", s, note)
	}
}

func TestScaleCompute(t *testing.T) {
	a := Attention{ComputeEff: 0.8, MemoryEff: 0.5, PrefillRowComputeEff: 0.01, MixedComputeEff: 0.02, MixedMemoryEff: 0.3, DecodeComputeEff: 1, DecodeMemoryEff: 0.9}
	// × 0.5: 0.4, 0.005, 0.01; memory and decode-only terms unchanged.
	got := a.scaleCompute(0.5)
	want := Attention{ComputeEff: 0.4, MemoryEff: 0.5, PrefillRowComputeEff: 0.005, MixedComputeEff: 0.01, MixedMemoryEff: 0.3, DecodeComputeEff: 1, DecodeMemoryEff: 0.9}
	if got.ComputeEff != want.ComputeEff || got.PrefillRowComputeEff != want.PrefillRowComputeEff || got.MixedComputeEff != want.MixedComputeEff ||
		got.MemoryEff != want.MemoryEff || got.MixedMemoryEff != want.MixedMemoryEff || got.DecodeComputeEff != want.DecodeComputeEff || got.DecodeMemoryEff != want.DecodeMemoryEff {
		t.Errorf("scaleCompute(0.5) = %+v, want %+v", got, want)
	}
	// × 2 caps the prefill efficiency at 1; absent terms stay absent.
	if got := (Attention{ComputeEff: 0.8}).scaleCompute(2); got.ComputeEff != 1 || got.PrefillRowComputeEff != 0 || got.MixedComputeEff != 0 {
		t.Errorf("scaleCompute(2) = %+v, want ComputeEff 1 and the absent terms 0", got)
	}
}

// TestAttentionComputeScale checks the transfer rule on the bundles: the
// RTX 4090 and RTX PRO 6000 (both FlashAttention-2 in vLLM 0.19) each
// predict the other's attention calls better with the compute scaled by
// the GEMMs' (attention_scale.go's figures: -v prints them), and the
// built-in transfers carry the scale.
func TestAttentionComputeScale(t *testing.T) {
	dir := BundlesDir(vidurDir(t))
	sets, err := loadAttnSets(dir, hardware.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	_, fits, err := EvaluateAttention(dir)
	if err != nil {
		t.Fatal(err)
	}
	prof := func(gpu string) *Profile {
		p, ok := Builtin(gpu)
		if !ok {
			t.Fatalf("no built-in %s profile", gpu)
		}
		return p
	}
	for _, c := range []struct {
		from, to string
		want     float64 // the scale, to 3 decimals
	}{
		// gemmComputeEff: rtx-4090 0.987, rtx-pro-6000 0.761, h100 0.748.
		{"rtx-4090", "rtx-pro-6000", 0.772},
		{"rtx-pro-6000", "rtx-4090", 1.296},
		{"rtx-4090", "h100", 0.758},
	} {
		from, to := sets[c.from], sets[c.to]
		a, _ := fits[c.from].onSMs(from.gpu.SMs, to.gpu.SMs, c.from, c.to)
		s, _ := attnScale(prof(c.from), prof(c.to))
		if math.Abs(s-c.want) > 0.0005 {
			t.Errorf("%s → %s: scale %.4f, want %.3f", c.from, c.to, s, c.want)
		}
		b := a.scaleCompute(s)
		ss := to.all("", 0, nil)
		before, after := attnCells(&a, to.gpu, ss)[0], attnCells(&b, to.gpu, ss)[0]
		t.Logf("%s → %s, %d calls, scale %.3f: unscaled %.1f / %.1f / %+.1f %%, scaled %.1f / %.1f / %+.1f %%",
			c.from, c.to, before.N, s, before.Median, before.P90, before.Bias, after.Median, after.P90, after.Bias)
		if c.to != "h100" && !(after.Median < before.Median && math.Abs(after.Bias) < math.Abs(before.Bias)) {
			t.Errorf("%s → %s: scaled median %.1f %% (signed %+.1f), unscaled %.1f %% (%+.1f): want the scale to help between the FlashAttention-2 GPUs",
				c.from, c.to, after.Median, after.Bias, before.Median, before.Bias)
		}
	}
	// The built-in transfers: the source's prefill compute efficiency
	// times gemmComputeEff(target) / gemmComputeEff(source); b200 and
	// h200 unscaled.
	for gpu, from := range map[string]string{"a100": "rtx-4090", "a100-pcie": "rtx-4090", "l40s": "rtx-4090", "h100-pcie": "h100", "h200": "h100", "b200": "h100"} {
		p, src := prof(gpu), prof(from)
		s := 1.0
		if attnComputeScaled[gpu] {
			s, _ = attnScale(src, p)
		}
		want := min(1, src.Attention.ComputeEff*s)
		if got := p.Attention.ComputeEff; math.Abs(got/want-1) > 1e-4 {
			t.Errorf("%s: attention compute_eff %v, want %s's %v × %.4f = %v", gpu, got, from, src.Attention.ComputeEff, s, want)
		}
	}
}
