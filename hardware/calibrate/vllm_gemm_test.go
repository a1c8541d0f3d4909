package calibrate

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

const vllmHeader = "pr,table,date,dtype,n,k,batch,bf16_tflops,quant_tflops,noquant_tflops\n"

func TestReadVLLMGEMMErrors(t *testing.T) {
	for _, c := range []struct {
		name, src, want string
	}{
		{"missing column", "pr,table,date,dtype,n,k,batch,bf16_tflops,quant_tflops\n", `line 1: column "noquant_tflops": missing column`},
		{"bf16 dtype", vllmHeader + "1,a,2025-01-01,bf16,1,1,1,1,1,1\n", `line 2: column "dtype": "bf16": want fp8 or fp4`},
		{"non-numeric", vllmHeader + "# c\n1,a,2025-01-01,fp4,6144,4096,1,x,1,1\n", `line 3: column "bf16_tflops": not a number: "x"`},
		{"zero", vllmHeader + "1,a,2025-01-01,fp4,6144,4096,1,1,0,1\n", `line 2: column "quant_tflops": must be finite and > 0, got 0`},
		{"too fast", vllmHeader + "1,a,2025-01-01,fp8,6144,4096,1,1,1,2e6\n", `column "noquant_tflops": 2e+06 TFLOP/s is above`},
		{"empty table", vllmHeader + "1,,2025-01-01,fp8,6144,4096,1,1,1,1\n", `line 2: column "table": empty`},
		{"batch 0", vllmHeader + "1,a,2025-01-01,fp8,6144,4096,0,1,1,1\n", `line 2: column "batch": 0 is outside`},
		{"no rows", vllmHeader, "no rows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadVLLMGEMM(strings.NewReader(c.src), "v.csv")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			checkReadErr(t, err, "v.csv")
		})
	}
}

// TestVLLMB200 checks the embedded table and its fits.
func TestVLLMB200(t *testing.T) {
	vt, err := LoadVLLMB200()
	if err != nil {
		t.Fatal(err)
	}
	// 12 NVFP4 rows of PR 20646 (11 batch sizes of 6144×4096, one of
	// 4096×4096), 5 of PR 22523 (batch 1–256), 7 FP8 rows of PR 19566.
	if len(vt.Rows) != 24 {
		t.Fatalf("%d rows, want 12 + 5 + 7 = 24", len(vt.Rows))
	}
	// Newest per batch: PR 22523's 5 replace PR 20646's batch 1–256 of
	// 6144×4096, 12 FP4 rows remain.
	if f := vt.Fits[vllmKey(models.FP4, true)]; f.Rows != 12 || len(f.PRs) != 2 {
		t.Fatalf("fp4 fit %d rows of PRs %v, want 12 of 2", f.Rows, f.PRs)
	}
	for _, c := range vllmCells {
		f := vt.Fits[vllmKey(c.d, c.quant)]
		r, _, _ := f.Ratios()
		// Fit-free bounds: at batch 16384, nvfp4 runs 3038.8 TFLOP/s = 0.338
		// of 9 PFLOP/s against BF16's 1360.1 = 0.605 of 2.25 PFLOP/s:
		// a ratio near 0.56; every column is below its peak and above a
		// tenth of it.
		if !(f.Low.ec > 0.1 && f.Low.ec < 1 && r > 0.3 && r < 1.2) {
			t.Errorf("%v quant %v: η %v, ratio %v", c.d, c.quant, f.Low.ec, r)
		}
		if f.HeldOut.N != f.Rows || f.HeldOut.Median < f.InSample.Median-1e-9 && f.HeldOut.P90 < f.InSample.P90-1e-9 {
			t.Errorf("%v quant %v: held out %+v in sample %+v", c.d, c.quant, f.HeldOut, f.InSample)
		}
	}
	// Activation quantization in the call costs throughput.
	q, nq := vt.Fits[vllmKey(models.FP4, true)], vt.Fits[vllmKey(models.FP4, false)]
	if !(q.Low.ec < nq.Low.ec) {
		t.Errorf("nvfp4 η %v not below noquant %v", q.Low.ec, nq.Low.ec)
	}
	p := vt.fp4Precision(0.8, 0, 0.8)
	if p.Basis != BasisMeasured || !strings.Contains(p.Source, "measured (vLLM PR #20646, #22523, B200)") || math.IsNaN(p.ComputeScale) {
		t.Errorf("fp4 precision %+v", p)
	}
}

func FuzzReadVLLMGEMM(f *testing.F) {
	f.Add(string(vllmB200CSV))
	f.Add(vllmHeader + "1,a,2025-01-01,fp4,6144,4096,1,1,1,1\n")
	f.Add(vllmHeader + "1,a,2025-01-01,fp4,6144,4096,1.5,1,1,1\n")
	f.Add("\"unterminated\n")
	f.Fuzz(func(t *testing.T, src string) {
		rows, err := ReadVLLMGEMM(bytes.NewReader([]byte(src)), "v.csv")
		if err != nil {
			checkReadErr(t, err, "v.csv")
			return
		}
		for _, r := range rows {
			if r.DType == models.BF16 || r.N < 1 || r.K < 1 || r.Batch < 1 || r.Line < 2 {
				t.Fatalf("row %+v", r)
			}
			for _, v := range []float64{r.BF16, r.Quant, r.NoQuant} {
				if !(v > 0 && v <= maxVLLMTFLOPS) {
					t.Fatalf("throughput %v", v)
				}
			}
		}
	})
}
