package calibrate

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// FlashInfer's NVFP4 GEMM kernels measured on B200
// (testdata/blackwell/flashinfer-b200-fp4-gemm.csv): a check of the B200
// profile's FP4 GEMMs against kernels it was not fitted on. The profile's
// fp4 [[gemm_precision]] is vLLM's nvfp4 benchmark with the activation
// quantized inside the call (vllm_gemm.go); these time pre-quantized
// activations with the fastest of several backends, what TensorRT-LLM and
// FlashInfer-based stacks can run, so the check measures how much faster
// those kernels are than the profile, not its fit error.

//go:embed testdata/blackwell/flashinfer-b200-fp4-gemm.csv
var b200FP4CSV []byte

// B200FP4File is the name errors and notes give the embedded table.
const B200FP4File = "blackwell/flashinfer-b200-fp4-gemm.csv"

// B200FP4Columns are its columns.
var B200FP4Columns = []string{"pr", "m", "n", "k", "backend", "tflops"}

// FP4GEMMRow is one backend's throughput on one shape.
type FP4GEMMRow struct {
	PR, Backend string
	M, N, K     int
	TFLOPS      float64
	Line        int
}

// ReadFP4GEMM reads the table ('#' starts a comment line); malformed rows
// are *LineError naming the file, line and column.
func ReadFP4GEMM(r io.Reader, file string) ([]FP4GEMMRow, error) {
	t, err := newCSVTable(r, file, '#')
	if err != nil {
		return nil, err
	}
	if err := t.require(B200FP4Columns...); err != nil {
		return nil, err
	}
	return readRows(t, func(line int) (FP4GEMMRow, error) {
		var err error
		row := FP4GEMMRow{PR: t.str("pr"), Backend: t.str("backend"), Line: line}
		for _, c := range []struct{ c, v string }{{"pr", row.PR}, {"backend", row.Backend}} {
			if c.v == "" {
				return row, &LineError{File: file, Line: line, Column: c.c, Msg: "empty"}
			}
		}
		for _, c := range []struct {
			c string
			v *int
		}{{"m", &row.M}, {"n", &row.N}, {"k", &row.K}} {
			if *c.v, err = t.int(line, c.c, 1, maxXLADim); err != nil {
				return row, err
			}
		}
		if row.TFLOPS, err = t.positive(line, "tflops"); err != nil {
			return row, err
		}
		if row.TFLOPS > maxVLLMTFLOPS {
			return row, &LineError{File: file, Line: line, Column: "tflops", Msg: fmt.Sprintf("%g TFLOP/s is above %g: not a GEMM throughput", row.TFLOPS, float64(maxVLLMTFLOPS))}
		}
		return row, nil
	})
}

// FP4Check is the profile's FP4 GEMM time against the fastest measured
// backend of each shape: signed errors (> 0: the profile is slower).
type FP4Check struct {
	Shapes []string  // "M×N×K (backend)"
	PE     []float64 // per shape, percent
	Stats  ErrStats
}

// CheckFP4 prices each shape of the embedded table on p (GPU g) as an FP4
// GEMM (FP4 weights, BF16 activations in and out, as models prices one)
// and compares it with the fastest backend measured on it.
func CheckFP4(p *Profile, g *hardware.GPU) (FP4Check, error) {
	rows, err := ReadFP4GEMM(bytes.NewReader(b200FP4CSV), B200FP4File)
	if err != nil {
		return FP4Check{}, err
	}
	best := map[[3]int]FP4GEMMRow{}
	for _, r := range rows {
		k := [3]int{r.M, r.N, r.K}
		if b, ok := best[k]; !ok || r.TFLOPS > b.TFLOPS {
			best[k] = r
		}
	}
	keys := make([][3]int, 0, len(best))
	for k := range best {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1]*keys[i][2] < keys[j][1]*keys[j][2]
	})
	var ss []Sample
	var out FP4Check
	for _, k := range keys {
		r := best[k]
		m, n, kk := float64(r.M), float64(r.N), float64(r.K)
		flops := 2 * m * n * kk
		ss = append(ss, Sample{GPU: g.Name, TP: 1, Seconds: flops / (r.TFLOPS * 1e12),
			Op: models.Op{Kind: models.OpMLPUp, Count: 1, Tokens: r.M, FLOPs: flops, N: r.N, K: r.K, Compute: models.FP4,
				Bytes: n*kk*models.FP4.Bytes() + (m*kk+m*n)*models.BF16.Bytes()}})
		out.Shapes = append(out.Shapes, fmt.Sprintf("%d×%d×%d (%s, %s)", r.M, r.N, r.K, r.Backend, r.PR))
	}
	l, err := predictAll(p, g, ss)
	if err != nil {
		return FP4Check{}, err
	}
	for _, x := range l {
		out.PE = append(out.PE, x.pe)
	}
	out.Stats = errStats(out.PE)
	return out, nil
}

// note is the sentence a profile's notes carry.
func (c FP4Check) note() string {
	parts := make([]string, len(c.PE))
	for i := range c.PE {
		parts[i] = fmt.Sprintf("%s %+.0f %%", c.Shapes[i], c.PE[i])
	}
	return fmt.Sprintf("Check, not fitted: this profile's FP4 GEMMs against FlashInfer's NVFP4 kernels on B200 with pre-quantized activations, the fastest backend of each shape "+
		"(hardware/calibrate/testdata/%s, FlashInfer PR #1979 and vLLM PR #42235): median signed %+.1f %% (> 0: the profile is slower), %s. "+
		"The fp4 entry above is vLLM's kernel with the activation quantized in the call; stacks that run these kernels are faster than it prices.",
		B200FP4File, c.Stats.Bias, strings.Join(parts, ", "))
}
