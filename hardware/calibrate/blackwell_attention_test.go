package calibrate

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// builtinB200Attention is the built-in h100 profile's attention moved to
// the B200 as GenerateBuiltin moves it (its peaks, the residual table
// dropped for another SM count), before the B200 decode fit.
func builtinB200Attention(t *testing.T) Attention {
	t.Helper()
	p, ok := Builtin("h100")
	if !ok {
		t.Fatal("no built-in h100 profile")
	}
	g, err := hardware.Builtin().Get("b200")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.Attention.onSMs(p.Peaks.SMs, g.SMs, "h100", "b200")
	return a
}

func TestFitB200Decode(t *testing.T) {
	tr := builtinB200Attention(t)
	d, err := FitB200Decode(tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fit: o %.2f µs, s %.2f ns, μ %.4f; in sample %+v; transferred %+v (μ %.3f)", d.Fit.O*1e6, d.Fit.S*1e9, d.Fit.Mu, d.Fit.InSample, d.Transferred, d.TransferredMu)
	t.Logf("held out fp8 %+v (transferred %+v); flashinfer %+v (transferred %+v)", d.FP8, d.FP8Transferred, d.Fmha, d.FmhaTransferred)
	if d.BF16Rows != 16 || d.FP8Rows != 16 || d.FmhaRows != 7 {
		t.Errorf("rows %d/%d/%d, want 16/16/7 (the transcribed tables)", d.BF16Rows, d.FP8Rows, d.FmhaRows)
	}
	// The rows at 256 sequences: 1,024 → 2,048 max tokens adds
	// 257 × 512 KV tokens × 4,096 bytes (2 × 8 heads × 128 × 2 B) = 0.539 GB
	// in 174 − 102 = 72 µs: 7.5 TB/s, 0.94 of 8 TB/s. The fit must see a
	// bandwidth near that, above the H100 fit's 0.83.
	if !(d.Fit.Mu > 0.85 && d.Fit.Mu <= 1) {
		t.Errorf("μ = %.3f, want in (0.85, 1] (the 256-sequence rows' slope gives 0.94)", d.Fit.Mu)
	}
	if !(d.Fit.InSample.Median < d.Transferred.Median) {
		t.Errorf("fit in sample %.1f %% not below the transferred parameters' %.1f %%", d.Fit.InSample.Median, d.Transferred.Median)
	}
	if !(d.FP8.Median < 15) {
		t.Errorf("held-out FP8 median %.1f %%, want < 15", d.FP8.Median)
	}
}

// TestDecodeFitRecovers checks the closed-form fit on rows made from known
// parameters: o 10 µs, s 20 ns, μ 0.8 on the B200 must come back exactly.
func TestDecodeFitRecovers(t *testing.T) {
	g, err := hardware.Builtin().Get("b200")
	if err != nil {
		t.Fatal(err)
	}
	want := DecodeFit{O: 10e-6, S: 20e-9, Mu: 0.8}
	var ops []models.Op
	var ts []float64
	for _, b := range []int{1, 4, 16, 64, 256} {
		for _, l := range []int{512, 4096} {
			r := DecodeBenchRow{KV: models.BF16, Batch: b, CtxTokens: int64(b * l)}
			op, err := decodeOp(&vllmDecodeShape, &r)
			if err != nil {
				t.Fatal(err)
			}
			ops, ts = append(ops, op), append(ts, want.at(g, &op))
		}
	}
	got, err := fitDecode(ops, ts, g)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"o", got.O, want.O}, {"s", got.S, want.S}, {"μ", got.Mu, want.Mu}} {
		if math.Abs(c.got/c.want-1) > 1e-6 {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	if _, err := fitDecode(ops[:5], ts[:5], g); err == nil {
		t.Error("5 rows fitted, want an error (at least 6)")
	}
}

func TestReadDecodeBenchErrors(t *testing.T) {
	head := strings.Join(B200DecodeColumns, ",") + "\n"
	for _, c := range []struct{ name, csv, want string }{
		{"kv fp4", head + "1,fp4,1,1024,0.03,0.001,0.04,0.001\n", `line 2: column "kv_dtype"`},
		{"zero time", head + "1,bf16,1,1024,0,0.001,0.04,0.001\n", `line 2: column "trtllm_ms"`},
		{"batch 0", head + "1,bf16,0,1024,0.03,0.001,0.04,0.001\n", `line 2: column "batch"`},
		{"no column", "pr,kv_dtype\n1,bf16\n", "missing column"},
	} {
		_, err := ReadDecodeBench(strings.NewReader(c.csv), "x.csv")
		var le *LineError
		if err == nil || !strings.Contains(err.Error(), c.want) || c.name != "no column" && !errors.As(err, &le) {
			t.Errorf("%s: err = %v, want one naming %s", c.name, err, c.want)
		}
	}
	// Row context: 4 sequences of max 1,024 → 1,024 + 3 × 512 = 2,560 tokens.
	rows, err := ReadDecodeBench(strings.NewReader(head+"19825,bf16,4,1024,0.03,0.001,0.04,0.001\n"), "x.csv")
	if err != nil || len(rows) != 1 || rows[0].CtxTokens != 2560 || math.Abs(rows[0].Seconds-30e-6) > 1e-15 {
		t.Errorf("rows = %+v, %v; want one row of 2,560 tokens at 30 µs", rows, err)
	}
}
