package calibrate

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

func TestProfileRoundTrip(t *testing.T) {
	profiles := []*Profile{handProfile(mustGPU(t, "h100"))}
	for _, g := range BuiltinGPUs {
		p, ok := Builtin(g)
		if !ok {
			t.Fatalf("no built-in profile for %s", g)
		}
		profiles = append(profiles, p)
	}
	for _, p := range profiles {
		data := p.WriteTOML()
		q, err := ParseProfile(data, p.GPU+".toml")
		if err != nil {
			t.Fatalf("%s: %v", p.GPU, err)
		}
		if again := q.WriteTOML(); !bytes.Equal(again, data) {
			t.Errorf("%s: write → parse → write differs", p.GPU)
		}
	}
}

// LoadProfile is strict: each broken file names the file, the line and the field.
func TestLoadProfileErrors(t *testing.T) {
	good := string(handProfile(mustGPU(t, "h100")).WriteTOML())
	cases := []struct {
		name    string
		edit    func(string) string
		want    string
		wantAt  string // the text on the line the error must name
		atIndex int    // which occurrence of wantAt (0 = first)
	}{
		{"unknown top-level key", func(s string) string { return strings.Replace(s, "format = 1\n", "format = 1\nfromat = 2\n", 1) },
			`unknown field "fromat"`, "fromat = 2", 0},
		{"unknown key in an op", func(s string) string { return strings.Replace(s, `from = "fit"`, "from = \"fit\"\nspeed = 3.0", 1) },
			`unknown field "op.speed"`, "speed = 3.0", 0},
		{"wrong type", func(s string) string { return strings.Replace(s, "format = 1", `format = "one"`, 1) },
			`field "format"`, `format = "one"`, 0},
		{"efficiency above 1", func(s string) string { return strings.Replace(s, "compute_eff = 0.8\n", "compute_eff = 1.4\n", 1) },
			`field "op[0].compute_eff": must be in [0.0001, 1], got 1.4`, "compute_eff = 1.4", 0},
		{"row efficiency above 1", func(s string) string {
			return strings.Replace(s, "row_memory_eff = 0.01\n", "row_memory_eff = 2.0\n", 1)
		},
			`field "op[1].row_memory_eff": must be 0 (no per-row term) or in [0.0001, 1]`, "row_memory_eff = 2.0", 0},
		{"negative overhead", func(s string) string { return strings.Replace(s, "overhead_s = 0.001", "overhead_s = -0.001", 1) },
			`field "iteration.overhead_s"`, "overhead_s = -0.001", 0},
		{"unknown operator", func(s string) string { return strings.Replace(s, `op = "rope"`, `op = "rotary"`, 1) },
			`field "op[3].op": unknown operator "rotary"`, `op = "rotary"`, 0},
		{"duplicate operator", func(s string) string { return strings.Replace(s, `op = "rope"`, `op = "norm"`, 1) },
			`field "op[3].op": "norm" again (also op[1])`, `op = "norm"`, 1},
		{"all-reduce out of order", func(s string) string { return strings.Replace(s, "tp = 8", "tp = 2", 1) },
			`field "all_reduce[1].tp"`, "tp = 2", 1},
		{"wrong format version", func(s string) string { return strings.Replace(s, "format = 1", "format = 7", 1) },
			`field "format": 7: this servesim reads format 1`, "format = 7", 0},
		{"transferred without origin", func(s string) string {
			return strings.Replace(s, `derivation = "fitted"`, `derivation = "transferred"`, 1)
		},
			`field "source.transferred_from"`, `transferred_from = ""`, 0},
		{"wave efficiency above 1", func(s string) string { return strings.Replace(s, "wave_eff = 0.0\n", "wave_eff = 1.5\n", 1) },
			`field "op[0].wave_eff": must be 0 (no wave term) or in [0.0001, 1]`, "wave_eff = 1.5", 0},
		{"tile without a wave efficiency", func(s string) string { return strings.Replace(s, "tile_m = 0\n", "tile_m = 128\n", 1) },
			`field "op[0].tile_m": tile_m = 128, tile_n = 0 with wave_eff = 0`, "tile_m = 128", 0},
		{"wave term without SMs", func(s string) string {
			return strings.Replace(s, "wave_eff = 0.0\ntile_m = 0\ntile_n = 0\n", "wave_eff = 0.8\ntile_m = 128\ntile_n = 256\n", 1)
		},
			`field "op[0].tile_m": a wave term needs the GPU's SM count in peaks.sms`, "tile_m = 128", 0},
		{"negative SMs", func(s string) string { return strings.Replace(s, "sms = 0\n", "sms = -4\n", 1) },
			`field "peaks.sms": must be in [0, 65536], got -4`, "sms = -4", 0},
		// Load-time bounds (issue 11): numbers a fit cannot produce.
		{"efficiency 1e-300", func(s string) string { return strings.Replace(s, "compute_eff = 0.8\n", "compute_eff = 1e-300\n", 1) },
			`field "op[0].compute_eff": must be in [0.0001, 1], got 1e-300`, "compute_eff = 1e-300", 0},
		{"attention efficiency 1e-9", func(s string) string { return strings.Replace(s, "compute_eff = 0.5\n", "compute_eff = 1e-9\n", 1) },
			`field "attention.compute_eff": must be in [0.0001, 1]`, "compute_eff = 1e-9", 0},
		{"row efficiency 1e-200", func(s string) string {
			return strings.Replace(s, "row_memory_eff = 0.01\n", "row_memory_eff = 1e-200\n", 1)
		},
			`field "op[1].row_memory_eff"`, "row_memory_eff = 1e-200", 0},
		{"op overhead 1e9 s", func(s string) string { return strings.Replace(s, "overhead_s = 2e-06\n", "overhead_s = 1e9\n", 1) },
			`field "op[0].overhead_s": must be in [0, 1] s, got 1e+09`, "overhead_s = 1e9", 0},
		{"iteration overhead 1 h", func(s string) string { return strings.Replace(s, "overhead_s = 0.001", "overhead_s = 3600.0", 1) },
			`field "iteration.overhead_s": must be in [0, 1] s`, "overhead_s = 3600.0", 0},
		{"attention overhead NaN", func(s string) string { return strings.Replace(s, "overhead_s = 4e-06", "overhead_s = nan", 1) },
			`field "attention.overhead_s"`, "overhead_s = nan", 0},
		{"half_tokens 1e300", func(s string) string { return strings.Replace(s, "half_tokens = 100.0\n", "half_tokens = 1e300\n", 1) },
			`field "op[2].half_tokens": 1e+300 is outside [0, 4194304] tokens`, "half_tokens = 1e300", 0},
		{"peak 1e300", func(s string) string { return strings.Replace(s, "bf16_flops = 9.894e+14", "bf16_flops = 1e300", 1) },
			`field "peaks.bf16_flops": 1e+300 is outside the physical range`, "bf16_flops = 1e300", 0},
		{"bandwidth 1e-300", func(s string) string { return strings.Replace(s, "mem_bw = 3.35e+12", "mem_bw = 1e-300", 1) },
			`field "peaks.mem_bw"`, "mem_bw = 1e-300", 0},
		{"SMs 1e9", func(s string) string { return strings.Replace(s, "sms = 0\n", "sms = 1000000000\n", 1) },
			`field "peaks.sms": must be in [0, 65536]`, "sms = 1000000000", 0},
		{"per-request overhead 1e6", func(s string) string { return strings.Replace(s, "per_request_s = 0.0", "per_request_s = 1e6", 1) },
			`field "iteration.per_request_s"`, "per_request_s = 1e6", 0},
		{"all-reduce latency 1e308 s", func(s string) string { return strings.Replace(s, "latency_s = 1e-05", "latency_s = 1e308", 1) },
			`field "all_reduce[0].latency_s": must be in [0, 1] s`, "latency_s = 1e308", 0},
		{"link efficiency 1e-30", func(s string) string { return strings.Replace(s, "link_eff = 0.5", "link_eff = 1e-30", 1) },
			`field "all_reduce[0].link_eff": must be in [0.0001, 2]`, "link_eff = 1e-30", 0},
		{"syntax error", func(s string) string { return strings.Replace(s, "\nmem_bw = ", "\nmem_bw = = ", 1) },
			`field "peaks.mem_bw"`, "mem_bw = = ", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := c.edit(good)
			if src == good {
				t.Fatal("edit did nothing")
			}
			path := filepath.Join(t.TempDir(), "bad.toml")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadProfile(path)
			if err == nil {
				t.Fatal("no error")
			}
			// The line of the offending text.
			s, ln := src, 0
			for i := 0; i <= c.atIndex; i++ {
				j := strings.Index(s, c.wantAt)
				if j < 0 {
					t.Fatalf("%q not in the edited file", c.wantAt)
				}
				ln += strings.Count(s[:j], "\n")
				if i < c.atIndex {
					ln += strings.Count(c.wantAt, "\n")
					s = s[j+len(c.wantAt):]
				}
			}
			wantLine := "bad.toml line " + strconv.Itoa(ln+1) + ":"
			msg := err.Error()
			if !strings.HasPrefix(msg, "calibrate: ") || !strings.Contains(msg, wantLine) || !strings.Contains(msg, c.want) {
				t.Errorf("error %q\nwant it to start with calibrate:, contain %q and %q", msg, wantLine, c.want)
			}
		})
	}
	if _, err := LoadProfile(filepath.Join(t.TempDir(), "missing.toml")); err == nil {
		t.Error("missing file accepted")
	}
}

// modelsAddOp is a residual add of 4096 tokens × 4096: 3·4096·4096·2 bytes.
func modelsAddOp() models.Op {
	return models.Op{Kind: models.OpAdd, Count: 1, Tokens: 4096, FLOPs: 4096 * 4096, Bytes: 3 * 4096 * 4096 * 2}
}

func TestMissingOpIsAnError(t *testing.T) {
	p := handProfile(mustGPU(t, "h100"))
	p.Ops = p.Ops[:len(p.Ops)-1] // drop lm_head
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), `no [[op]] entry for "lm_head"`) {
		t.Errorf("got %v", err)
	}
}

func TestBuiltinProfiles(t *testing.T) {
	for _, name := range BuiltinGPUs {
		p, ok := Builtin(name)
		if !ok {
			t.Fatalf("%s: no built-in profile", name)
		}
		g := mustGPU(t, name)
		if _, err := p.Kernel(g, 8); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		// Attention: fitted to the H100 bundle; A100 takes the RTX 4090's
		// fit (same FlashAttention-2 kernels), H200 and B200 the H100's;
		// the derived profiles as their architecture's (builtin_derived.go).
		wantAttn := map[string]string{"h100": "fit", "a100": "transferred from rtx-4090", "h200": "transferred from h100", "b200": "transferred from h100",
			"rtx-pro-6000": "fit", "rtx-4090": "fit",
			"h100-pcie": "transferred from h100", "a100-pcie": "transferred from rtx-4090", "gb200": "transferred from h100", "l40s": "transferred from rtx-4090",
			"b300": "transferred from h100", "gb300": "transferred from h100"}[name]
		// Decode-only attention: measured on the B200 (blackwell_attention.go)
		// for the Blackwell data-center GPUs, nowhere else.
		if want := map[string]string{"b200": "b200", "gb200": "b200", "b300": "b200", "gb300": "b200"}[name]; p.Attention.DecodeFrom != want {
			t.Errorf("%s: attention decode_from %q, want %q", name, p.Attention.DecodeFrom, want)
		}
		if d := p.Describe(); !strings.HasPrefix(d, name+": ") || !strings.Contains(d, "attention") || strings.Contains(d, "assumed") {
			t.Errorf("%s: Describe() = %q", name, d)
		}
		if p.Attention.From != wantAttn {
			t.Errorf("%s: attention from %q, want %q", name, p.Attention.From, wantAttn)
		}
		wantDeriv := DerivationFitted
		// The fit each transferred profile carries: gb200 is built as b200
		// is, from the h100 fit.
		if from, ok := map[string]string{"h200": "h100", "b200": "h100", "h100-pcie": "h100", "a100-pcie": "a100", "gb200": "h100", "l40s": "rtx-4090", "b300": "h100", "gb300": "h100"}[name]; ok {
			wantDeriv = DerivationTransferred
			if p.Source.TransferredFrom != from {
				t.Errorf("%s transferred from %q, want %s", name, p.Source.TransferredFrom, from)
			}
		}
		if p.Derivation != wantDeriv {
			t.Errorf("%s: derivation %q, want %q", name, p.Derivation, wantDeriv)
		}
		if !strings.Contains(p.Attention.Source, "LLMServingSim") {
			t.Errorf("%s: attention source does not name its data: %q", name, p.Attention.Source)
		}
	}
	// Transferred profiles keep the H100 efficiencies; their half-token
	// counts move with the ridge point (gpus.toml: H100 989.4 TFLOP/s over
	// 3.35 TB/s = 295.3 FLOPs/byte, H200 989 / 4.8 = 206.0, B200
	// 2,250 / 8 = 281.3: × 0.698 and × 0.952; the B200's measured BF16
	// GEMM scales, compute × 0.802841 and memory × 0.789676 (XLA), move
	// its ridge on by 0.802841 / 0.789676).
	h100, _ := Builtin("h100")
	for _, c := range []struct {
		name  string
		ridge float64
	}{{"h200", (989 / 4.8) / (989.4 / 3.35)}, {"b200", (2250.0 / 8) / (989.4 / 3.35) * 0.802841 / 0.789676}} {
		name := c.name
		p, _ := Builtin(name)
		for i, o := range p.Ops {
			h := h100.Ops[i]
			if o.Op != h.Op || o.ComputeEff != h.ComputeEff || o.MemoryEff != h.MemoryEff || o.OverheadS != h.OverheadS ||
				math.Abs(o.HalfTokens-h.HalfTokens*c.ridge) > 1e-5*(1+h.HalfTokens) ||
				o.WaveEff != h.WaveEff || o.TileM != h.TileM || o.TileN != h.TileN {
				t.Errorf("%s %s differs from h100's (half tokens × %.4f): %+v vs %+v", name, o.Op, c.ridge, o, h)
			}
		}
		// Waves are counted on the target GPU's SMs (gpus.toml: h200 132, b200 148).
		if g := mustGPU(t, name); p.Peaks.SMs != g.SMs {
			t.Errorf("%s: peaks.sms = %d, want the GPU's %d", name, p.Peaks.SMs, g.SMs)
		}
	}
	// PCIe GPUs do not keep an NVLink all-reduce fit: a100-pcie and
	// h100-pcie take one TP 4 fit to Vidur's pairwise nodes (the ring
	// crosses PCIe), l40s the roofline; gb200 keeps the DGX fit on NVLink5,
	// as b200.
	for name, want := range map[string][]int{"h100-pcie": {4}, "a100-pcie": {4}, "l40s": nil, "gb200": {2, 4, 8}, "b300": {2, 4, 8}, "gb300": {2, 4, 8}} {
		p, _ := Builtin(name)
		var got []int
		for _, a := range p.AllReduce {
			got = append(got, a.TP)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: all-reduce fits at TP %v, want %v", name, got, want)
		}
	}
	// Trees: kept only on the same SM count (a100-pcie: 108 as a100).
	for name, want := range map[string]bool{"a100-pcie": true, "h100-pcie": false, "gb200": false, "l40s": false, "b300": false, "gb300": false} {
		if p, _ := Builtin(name); (p.GEMMTrees != nil) != want {
			t.Errorf("%s: residual trees %v, want %v", name, p.GEMMTrees != nil, want)
		}
	}
	if _, ok := Builtin("H100-SXM"); !ok {
		t.Error("alias H100-SXM not resolved")
	}
	if _, ok := Builtin("tpu-v5"); ok {
		t.Error("unknown GPU has a profile")
	}
	a, _ := Builtin("a100")
	a.Ops[0].OverheadS = 99
	if b, _ := Builtin("a100"); b.Ops[0].OverheadS == 99 {
		t.Error("Builtin returns shared state")
	}
}

func TestRidgeRatio(t *testing.T) {
	for _, c := range []struct {
		name     string
		from, to Peaks
		want     float64
	}{
		{"same GPU", Peaks{BF16FLOPS: 989.4e12, MemBW: 3.35e12}, Peaks{BF16FLOPS: 989.4e12, MemBW: 3.35e12}, 1},
		{"same compute, 4.8/3.35 the bandwidth", Peaks{BF16FLOPS: 989.4e12, MemBW: 3.35e12}, Peaks{BF16FLOPS: 989.4e12, MemBW: 4.8e12}, 3.35 / 4.8},
		{"H100 → A100: (312/2.039)/(989.4/3.35)", Peaks{BF16FLOPS: 989.4e12, MemBW: 3.35e12}, Peaks{BF16FLOPS: 312e12, MemBW: 2.039e12}, (312 / 2.039) / (989.4 / 3.35)},
		{"double both: unchanged", Peaks{BF16FLOPS: 1e15, MemBW: 2e12}, Peaks{BF16FLOPS: 2e15, MemBW: 4e12}, 1},
		{"no peaks: unchanged", Peaks{}, Peaks{BF16FLOPS: 1e15, MemBW: 2e12}, 1},
	} {
		if got := ridgeRatio(c.from, c.to); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRateHalfTokens(t *testing.T) {
	h100 := mustGPU(t, "h100")
	for _, c := range []struct {
		name string
		prec []GEMMPrecision
		want float64 // the factor on every half-token count
	}{
		{"no entry", nil, 1},
		{"an FP8 entry only", []GEMMPrecision{{DType: "fp8", ComputeScale: 0.5}}, 1},
		{"BF16 compute × 0.729", []GEMMPrecision{{DType: "bf16", ComputeScale: 0.729}}, 0.729},
		{"BF16 compute × 0.8, memory × 0.5: 0.8/0.5", []GEMMPrecision{{DType: "bf16", ComputeScale: 0.8, MemoryScale: 0.5}}, 1.6},
	} {
		p := handProfile(h100)
		p.MoE.HalfRows = 100
		before := append([]OpParams(nil), p.Ops...)
		p.GEMMPrecisions = c.prec
		note := p.rateHalfTokens()
		for i, o := range p.Ops {
			if want := before[i].HalfTokens * c.want; math.Abs(o.HalfTokens-want) > 1e-12*(1+want) {
				t.Errorf("%s: %s half tokens %v, want %v", c.name, o.Op, o.HalfTokens, want)
			}
		}
		if math.Abs(p.MoE.HalfRows-100*c.want) > 1e-9 {
			t.Errorf("%s: MoE half rows %v, want %v", c.name, p.MoE.HalfRows, 100*c.want)
		}
		if (note != "") != (c.want != 1) {
			t.Errorf("%s: note %q", c.name, note)
		}
	}
}

func TestTransfer(t *testing.T) {
	h100, h200 := mustGPU(t, "h100"), mustGPU(t, "h200")
	p := handProfile(h100)
	p.Ops[2].Fit = FitStats{Samples: 10, MedianAPE: 3}
	q, err := Transfer(p, h200)
	if err != nil {
		t.Fatal(err)
	}
	if q.GPU != "h200" || q.Derivation != DerivationTransferred || q.Source.TransferredFrom != "h100" || q.Peaks.MemBW != h200.MemBW {
		t.Errorf("transferred profile: %+v", q)
	}
	if q.Ops[2].Fit != (FitStats{}) {
		t.Error("fit statistics of the source GPU kept")
	}
	if p.GPU != "h100" || p.Ops[2].Fit.Samples != 10 {
		t.Error("Transfer changed its input")
	}
	if _, err := q.Kernel(h200, 1); err != nil {
		t.Error(err)
	}
	// Half-token counts move with the ridge point (gpus.toml): H100
	// 989.4 TFLOP/s over 3.35 TB/s, H200 989 over 4.8, so
	// × (989/4.8)/(989.4/3.35) = 0.6976.
	for i, o := range q.Ops {
		if want := p.Ops[i].HalfTokens * (989 / 4.8) / (989.4 / 3.35); math.Abs(o.HalfTokens-want) > 1e-9*(1+want) {
			t.Errorf("%s: half tokens %v, want %v × 0.6976 = %v", o.Op, o.HalfTokens, p.Ops[i].HalfTokens, want)
		}
	}
	if !strings.Contains(q.Notes[0], "ridge points' ratio") {
		t.Errorf("transfer note does not say the half tokens moved: %q", q.Notes[0])
	}
	if _, err := Transfer(q, h100); err == nil {
		t.Error("transfer of a transferred profile accepted")
	}
	// A profile with a wave term needs the target's SM count, and counts its waves there.
	b200 := mustGPU(t, "b200")
	noSMs := *b200
	noSMs.SMs = 0
	if _, err := Transfer(waveProfile(h100), &noSMs); err == nil || !strings.Contains(err.Error(), "no SM count") {
		t.Errorf("transfer to a GPU without SMs: %v", err)
	}
	w, err := Transfer(waveProfile(h100), b200)
	if err != nil {
		t.Fatal(err)
	}
	if w.Peaks.SMs != 148 || !strings.Contains(w.Notes[0], "148 SMs") {
		t.Errorf("transferred to b200: peaks.sms %d, note %q", w.Peaks.SMs, w.Notes[0])
	}
	// An up-projection of M = 256, N = 17920, K = 8192: ⌈256/128⌉·⌈17920/256⌉ = 2·70 = 140
	// tiles, two waves on 132 SMs, one on 148. waveProfile's mlp_up: η_w = 0.75,
	// o = 2 µs; its smooth term, 2·256·17920·8192/(peak·0.8)·(1 + 200/256), is slower
	// than one B200 wave, and bytes are set to 0 so that memory does not bind.
	kb, _ := w.Calibrated(b200, 1)
	up := models.Op{Kind: models.OpMLPUp, Count: 1, Tokens: 256, N: 17920, K: 8192, FLOPs: 2 * 256 * 17920 * 8192}
	if got, want := kb.OpTime(&up), 2e-6+2*8192*128*256*148/(2250e12*0.75); math.Abs(got-want) > 1e-12*want {
		t.Errorf("b200: %.9g s, want one wave on 148 SMs, %.9g s", got, want)
	}
	kh, _ := waveProfile(h100).Calibrated(h100, 1)
	smooth := 2 * 256 * 17920 * 8192 / (989.4e12 * 0.8) * (1 + 200.0/256)
	if got, want := kh.OpTime(&up), 2e-6+math.Min(smooth, 2*2*8192*128*256*132/(989.4e12*0.75)); math.Abs(got-want) > 1e-12*want {
		t.Errorf("h100: %.9g s, want %.9g s", got, want)
	}

	// A memory-bound operator speeds up by the bandwidth ratio 4.8/3.35.
	k1, _ := p.Calibrated(h100, 1)
	k2, _ := q.Calibrated(h200, 1)
	op := modelsAddOp()
	t1, t2 := k1.OpTime(&op)-2e-6, k2.OpTime(&op)-2e-6 // less the 2 µs overhead
	if r := t1 / t2; r < 4.8/3.35-1e-9 || r > 4.8/3.35+1e-9 {
		t.Errorf("memory-bound speed-up %.6f, want 4.8/3.35 = %.6f", r, 4.8/3.35)
	}
}
