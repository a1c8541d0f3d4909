package calibrate

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// bundlesDir finds ../shared/data/llmservingsim/profiles or skips.
func bundlesDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join("..", "..", "..", "shared", "data", "llmservingsim", "profiles")
	if _, err := os.Stat(d); err != nil {
		t.Skip("../shared/data/llmservingsim/profiles not found: skipping the test that reads LLMServingSim's bundles")
	}
	return d
}

func TestReadBundle(t *testing.T) {
	b, err := ReadBundle("testdata/bundle")
	if err != nil {
		t.Fatal(err)
	}
	m := b.Meta
	if m.Model != "meta-llama/Llama-3.1-8B" || m.GPU != "NVIDIA H100 80GB HBM3" || len(m.TPDegrees) != 1 || m.TPDegrees[0] != 1 ||
		m.Iterations != 3 || m.MaxBatchedTokens != 2048 || m.MaxSeqs != 256 || m.Values["profiled_at"] != "2026-05-29T09:08:02+00:00" ||
		m.Values["attention_grid.chunks"] != "0, 16-2048 x2" {
		t.Fatalf("meta %+v", m)
	}
	tp := b.TP[0]
	// 16 pure prefill + 20 pure decode + 24 mixed rows (testdata/bundle/tp1/attention.csv).
	if len(tp.Attention) != 60 || len(tp.Dense) != 3 || len(tp.PerSeq) != 2 || len(tp.MoE) != 2 {
		t.Fatalf("rows: %d attention, %d dense, %d per-sequence, %d moe", len(tp.Attention), len(tp.Dense), len(tp.PerSeq), len(tp.MoE))
	}
	if r := tp.Dense[2]; r.Layer != "gate_up_proj" || r.Tokens != 1 || math.Abs(r.Seconds-80.25e-6) > 1e-15 || r.Line != 4 {
		t.Fatalf("dense row %+v", r)
	}
	if r := tp.MoE[1]; r.Tokens != 1024 || r.Experts != 256 || math.Abs(r.Seconds-653.1e-6) > 1e-15 {
		t.Fatalf("moe row %+v", r)
	}
	g, err := b.BundleGPU(hardware.Builtin())
	if err != nil || g.Name != "h100" {
		t.Fatalf("gpu %v, %v", g, err)
	}
	ss, err := b.AttnSamples()
	if err != nil {
		t.Fatal(err)
	}
	// Row 17 (line 18) is 0,0,1,16: one decode over 16 tokens. Llama-3.1-8B at TP 1:
	// q width 32·128 = 4096, KV bytes per token 2·8·128·2 = 4096; keys 16 + 1;
	// bytes = Q and O 2·4096·2 = 16384, KV read 17·4096 = 69632, KV written 4096 → 90112.
	s := ss[16]
	if s.HasP || !s.HasD || s.Decode.Bytes != 90112 || s.Decode.Mixed || s.Row.Line != 18 {
		t.Fatalf("sample %+v", s)
	}
	// A mixed call marks its decode operator Mixed.
	if s := ss[len(ss)-1]; !s.HasP || !s.HasD || !s.Decode.Mixed {
		t.Fatalf("mixed sample %+v", s)
	}
}

func TestReadBundleErrors(t *testing.T) {
	attn := "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n"
	for _, c := range []struct {
		name, file, data, want string
	}{
		{"header", "a.csv", "prefill,kv\n1,2\n", `a.csv line 1: header "prefill,kv"`},
		{"fields", "a.csv", attn + "16,0,0\n", "a.csv line 2: 3 fields, want 5"},
		{"not an int", "a.csv", attn + "16,x,0,0,5\n", `a.csv line 2: column "kv_prefill": column 4: not an integer: "x"`},
		{"negative time", "a.csv", attn + "16,0,0,0,-5\n", `a.csv line 2: column "time_us": column 10: a kernel time must be finite`},
		{"NaN time", "a.csv", attn + "16,0,0,0,NaN\n", `column "time_us"`},
		{"empty call", "a.csv", attn + "0,0,0,0,5\n", "a.csv line 2: prefill_chunk and n_decode are both 0"},
		{"kv without chunk", "a.csv", attn + "0,64,1,16,5\n", `a.csv line 2: column "kv_prefill": column 3: kv_prefill > 0 with no prefill chunk`},
		{"no rows", "a.csv", attn, "a.csv: no data rows"},
		{"empty", "a.csv", "", "a.csv: empty file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadAttentionCSV([]byte(c.data), c.file)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "calibrate: ") {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
	for _, c := range []struct {
		name, data, want string
	}{
		{"tab", "gpu: x\nmodel: y\ntp_degrees:\n\t- 1\n", "meta.yaml line 4: column 1: tab in indentation"},
		{"indent", "gpu: x\nmodel: y\na:\n    b: 1\n  c: 2\n", "meta.yaml line 5: column 3: indentation 2 does not match its block's (0)"},
		{"no tp", "gpu: x\nmodel: y\n", "no tp_degrees list"},
		{"bad tp", "gpu: x\nmodel: y\ntp_degrees: [1, two]\n", `meta.yaml line 3: column "tp_degrees.1": want an integer in [1, 1024], got "two"`},
		{"flow map", "gpu: {a: 1}\n", `meta.yaml line 1: column 6: key "gpu": unsupported YAML ("{")`},
		{"duplicate", "gpu: x\ngpu: y\n", `meta.yaml line 2: column 1: key "gpu" defined twice (first on line 1)`},
		{"list of maps", "gpu: x\nl:\n- a: 1\n", "meta.yaml line 3: column 3: only lists of scalars are supported"},
		{"no gpu", "model: y\ntp_degrees: [1]\n", `meta.yaml: no "gpu"`},
		{"quote", "gpu: 'x\n", "unterminated single-quoted scalar"},
	} {
		t.Run("meta "+c.name, func(t *testing.T) {
			_, err := ParseBundleMeta([]byte(c.data), "meta.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// Every shipped bundle reads, names a catalog GPU and a model with known
// attention shapes.
func TestSharedBundles(t *testing.T) {
	dirs, err := FindBundles(bundlesDir(t))
	if err != nil {
		t.Fatal(err)
	}
	gpus := map[string]int{}
	for _, d := range dirs {
		b, err := ReadBundle(d)
		if err != nil {
			t.Fatal(err)
		}
		g, err := b.BundleGPU(hardware.Builtin())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.AttnModel(); err != nil {
			t.Fatal(err)
		}
		gpus[g.Name] += len(b.TP)
	}
	// SOURCE.md: H100 tp1/tp8; RTX 4090 tp1; RTX PRO 6000 three models × tp1/tp2.
	if gpus["h100"] != 2 || gpus["rtx-4090"] != 1 || gpus["rtx-pro-6000"] != 6 {
		t.Fatalf("bundles by GPU: %v", gpus)
	}
}

// The fit recovers a known attention model from times it generated, and
// the kernel model prices a batch as the fit does.
func TestFitAttentionRecovers(t *testing.T) {
	b, g, ss, want := attnFixture(t)
	for i := range ss {
		ss[i].Seconds = AttnTime(&want, g, &ss[i])
	}
	got, err := FitAttention(ss, g)
	if err != nil {
		t.Fatal(err)
	}
	if got.Fit.MedianAPE > 1 || got.Fit.P90APE > 3 {
		t.Errorf("fit of noiseless times: %+v", got.Fit)
	}
	if math.Abs(got.DecodePerSeqS/want.DecodePerSeqS-1) > 0.05 || math.Abs(got.DecodeMemoryEff/want.DecodeMemoryEff-1) > 0.05 {
		t.Errorf("decode fit: s %g s, μ %g; want %g s, %g", got.DecodePerSeqS, got.DecodeMemoryEff, want.DecodePerSeqS, want.DecodeMemoryEff)
	}
	// Kernel: Σ OpTime of the batch's attention operators = AttnTime, for
	// the additive form and for the older one (a profile written before
	// decode_per_seq_s: compute and per-sequence bandwidth terms in the max).
	olderForm := want
	olderForm.DecodeComputeEff, olderForm.DecodeRowMemoryEff, olderForm.DecodePerSeqS = 0.3, 0.2, 0
	m, _ := b.AttnModel()
	for _, a := range []Attention{want, olderForm} {
		p := handProfile(mustGPU(t, "h100"))
		p.Attention = a
		p.Attention.From = "fit"
		k, err := p.Kernel(g, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			var sum float64
			for _, op := range m.BatchOps(AttnBatch(s.Row), models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}, nil) {
				if op.Kind == models.OpAttnPrefill || op.Kind == models.OpAttnDecode {
					sum += k.OpTime(&op)
				}
			}
			if fit := AttnTime(&a, g, &s); math.Abs(sum/fit-1) > 1e-12 {
				t.Fatalf("%+v: %s: kernel %g s, fit model %g s", a, s.Where, sum, fit)
			}
		}
	}
}

// attnFixture is the testdata bundle, the H100, its attention calls and
// a known attention model in the additive decode form the fit uses
// (η_d = 1, ρ_d = 0, s_d = 60 ns), for fits to recover.
func attnFixture(t *testing.T) (*Bundle, *hardware.GPU, []AttnSample, Attention) {
	t.Helper()
	b, err := ReadBundle("testdata/bundle")
	if err != nil {
		t.Fatal(err)
	}
	ss, err := b.AttnSamples()
	if err != nil {
		t.Fatal(err)
	}
	a := Attention{ComputeEff: 0.55, MemoryEff: 0.3, OverheadS: 9e-6, PrefillRowComputeEff: 0.002,
		DecodeComputeEff: 1, DecodeMemoryEff: 0.75, DecodeOverheadS: 12e-6, DecodePerSeqS: 60e-9,
		MixedComputeEff: 0.02, MixedMemoryEff: 0.5, MixedOverheadS: 3e-6}
	return b, mustGPU(t, "h100"), ss, a
}

// The decode-only call's time, by hand: o + n·s + bytes/(BW·μ) in the
// additive form; with s = 0 (a profile without decode_per_seq_s) the older
// o + max(FLOPs/(peak·η), bytes/(BW·μ), bytes/n/(BW·ρ)).
func TestDecodeAttentionForm(t *testing.T) {
	g := mustGPU(t, "h100")
	// 64 decodes of 1,000 context tokens, Llama-3.1-8B at TP 1 (32 heads,
	// 8 KV heads, head_dim 128): KV bytes per token 2·8·128·2 = 4,096;
	// bytes = Q and O 2·64·4096·2 = 1,048,576 + keys (64,000 + 64)·4,096 =
	// 262,406,144 + the new tokens' KV 64·4,096 = 262,144: 263,716,864;
	// FLOPs = 4·32·128·64,064 = 1,049,624,576.
	op := models.Op{Kind: models.OpAttnDecode, Count: 1, Tokens: 64, Bytes: 263716864, FLOPs: 1049624576, Compute: models.BF16}
	cases := []struct {
		name string
		a    Attention
		want float64
	}{
		// 10 µs + 64 × 50 ns = 13.2 µs, + 263,716,864 / (3.35e12 × 0.8) = 98.40 µs: 111.60 µs.
		{"additive", Attention{DecodeComputeEff: 1, DecodeMemoryEff: 0.8, DecodeOverheadS: 10e-6, DecodePerSeqS: 50e-9},
			10e-6 + 64*50e-9 + 263716864/(3.35e12*0.8)},
		// Older: 10 µs + max(1.05e9 / (989.4e12 × 0.3) = 3.5 µs, 98.40 µs,
		// 263,716,864 / 64 / (3.35e12 × 0.01) = 123.0 µs) = 133.0 µs.
		{"older, row term binds", Attention{DecodeComputeEff: 0.3, DecodeMemoryEff: 0.8, DecodeRowMemoryEff: 0.01, DecodeOverheadS: 10e-6},
			10e-6 + 263716864/64.0/(3.35e12*0.01)},
		// Older: 10 µs + 98.40 µs = 108.40 µs (row term 0.9: 1.37 µs, no bind).
		{"older, bandwidth binds", Attention{DecodeComputeEff: 0.3, DecodeMemoryEff: 0.8, DecodeRowMemoryEff: 0.9, DecodeOverheadS: 10e-6},
			10e-6 + 263716864/(3.35e12*0.8)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := handProfile(g)
			p.Attention.DecodeComputeEff, p.Attention.DecodeMemoryEff = c.a.DecodeComputeEff, c.a.DecodeMemoryEff
			p.Attention.DecodeRowMemoryEff, p.Attention.DecodeOverheadS, p.Attention.DecodePerSeqS = c.a.DecodeRowMemoryEff, c.a.DecodeOverheadS, c.a.DecodePerSeqS
			k, err := p.Kernel(g, 1)
			if err != nil {
				t.Fatal(err)
			}
			if got := k.OpTime(&op); math.Abs(got/c.want-1) > 1e-12 {
				t.Errorf("OpTime %g s, want %g s", got, c.want)
			}
			if got := p.Attention.decodeTime(g, &op); math.Abs(got/c.want-1) > 1e-12 {
				t.Errorf("decodeTime %g s, want %g s", got, c.want)
			}
		})
	}
}

// The profile round-trips the attention fields through TOML.
func TestAttentionTOML(t *testing.T) {
	p := handProfile(mustGPU(t, "h100"))
	p.Attention = Attention{ComputeEff: 0.55, MemoryEff: 0.3, OverheadS: 9e-6, PrefillRowComputeEff: 0.002,
		DecodeComputeEff: 0.3, DecodeMemoryEff: 0.75, DecodeRowMemoryEff: 0.2, DecodeOverheadS: 12e-6,
		MixedComputeEff: 0.02, MixedMemoryEff: 0.5, MixedOverheadS: 3e-6, From: "transferred from rtx-4090", Source: "test",
		Fit: FitStats{Samples: 3, MedianAPE: 1, P90APE: 2, MaxAPE: 3}}
	// Without decode_per_seq_s (a profile of the older form) and with it.
	for _, s := range []float64{0, 7e-8} {
		p.Attention.DecodePerSeqS = s
		text := p.WriteTOML()
		if has := strings.Contains(string(text), "decode_per_seq_s"); has != (s > 0) {
			t.Fatalf("decode_per_seq_s %g: written %v", s, has)
		}
		q, err := ParseProfile(text, "p.toml")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(q.Attention, p.Attention) {
			t.Fatalf("round trip: %+v, want %+v", q.Attention, p.Attention)
		}
	}
	for _, c := range []struct{ from, to, want string }{
		{"decode_per_seq_s = 7e-08", "decode_per_seq_s = -1e-08", `field "attention.decode_per_seq_s": must be in [0, 0.001] s`},
		{"decode_per_seq_s = 7e-08", "decode_per_seq_s = nan", `field "attention.decode_per_seq_s"`},
		{"decode_compute_eff = 0.3\ndecode_memory_eff = 0.75\ndecode_row_memory_eff = 0.2\ndecode_overhead_s = 1.2e-05\n", "",
			`field "attention.decode_per_seq_s": 7e-08 s needs the decode parameters`},
	} {
		bad := strings.Replace(string(p.WriteTOML()), c.from, c.to, 1)
		if bad == string(p.WriteTOML()) {
			t.Fatalf("%q not in the profile", c.from)
		}
		if _, err := ParseProfile([]byte(bad), "p.toml"); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "p.toml line") {
			t.Errorf("%q: %v, want %q with its line", c.to, err, c.want)
		}
	}
	bad := strings.Replace(string(p.WriteTOML()), `from = "transferred from rtx-4090"`, `from = "guessed"`, 1)
	if _, err := ParseProfile([]byte(bad), "p.toml"); err == nil || !strings.Contains(err.Error(), `field "attention.from"`) {
		t.Fatalf("bad from: %v", err)
	}
}

// Dense rows become samples of the catalog model the bundle names.
func TestDenseSamples(t *testing.T) {
	b, err := ReadBundle("testdata/bundle")
	if err != nil {
		t.Fatal(err)
	}
	m, ok := b.CatalogModel(models.Builtin())
	if !ok || m.Name != "llama-3.1-8b" {
		t.Fatalf("catalog model %v", m)
	}
	ss := b.DenseSamples(m, "h100")
	// testdata/bundle/tp1: qkv_proj at 1 and 16 tokens, gate_up_proj at 1, lm_head at 1 (sampler is no operator).
	if len(ss) != 4 {
		t.Fatalf("%d samples: %+v", len(ss), ss)
	}
	// qkv_proj, 1 token: N = 32·128 + 2·8·128 = 6144, K = 4096;
	// FLOPs = 2·1·4096·6144 = 50,331,648.
	if s := ss[0]; s.Op.Kind != models.OpQKV || s.Op.FLOPs != 50331648 || s.Op.N != 6144 || s.Op.K != 4096 || s.Seconds != 20.5e-6 || s.Op.Count != 1 {
		t.Fatalf("qkv sample %+v", s)
	}
	if s := ss[3]; s.Op.Kind != models.OpLMHead || s.Op.Tokens != 1 || !strings.HasSuffix(s.Where, "tp1/per_sequence.csv line 2") {
		t.Fatalf("lm_head sample %+v", s)
	}
}
