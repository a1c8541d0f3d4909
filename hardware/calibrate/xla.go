package calibrate

import (
	"fmt"
	"io"
	"strings"

	"github.com/servesim/servesim/models"
)

// This file reads XLA's default matmul performance table
// (../shared/data/xla-matmul/matmul.csv; its SOURCE.md gives the columns):
// measured throughput of one batched GEMM call by shape, GPU and dtype.

// XLAColumns are the columns of matmul.csv.
var XLAColumns = []string{"arch", "b", "m", "n", "k", "dtype", "flops_per_s"}

// XLARow is one row of XLA's matmul table: a [B,M,K] × [B,K,N] → [B,M,N]
// dot of the dtypes DType ran at FLOPS = 2·B·M·N·K / runtime.
type XLARow struct {
	Arch       string // "sm_90", "sm_100_B200" (or the older "sm_100")
	B, M, N, K int
	DType      string  // XLA's "<lhs>x<rhs>-><out>", e.g. "bf16xbf16->bf16"
	FLOPS      float64 // measured FLOP/s
	Line       int
}

// Bounds of a row: XLA's table has B ≤ 4 and dims ≤ 4096; the bounds keep
// 2·B·M·N·K finite and exact enough in a float64.
const (
	maxXLABatch = 1 << 12
	maxXLADim   = 1 << 20
	maxXLAFLOPS = 1e18 // 1 EFLOP/s: far above any GPU
)

// ReadXLAMatmul reads XLA's matmul table as flattened by the data set's
// convert.py. Malformed rows are *LineError naming the file, line and
// column, e.g.
//
//	calibrate: matmul.csv line 7: column "flops_per_s": must be finite and > 0, got -1
func ReadXLAMatmul(r io.Reader, file string) ([]XLARow, error) {
	t, err := newCSVTable(r, file, 0)
	if err != nil {
		return nil, err
	}
	if err := t.require(XLAColumns...); err != nil {
		return nil, err
	}
	return readRows(t, func(line int) (XLARow, error) {
		var err error
		row := XLARow{Arch: t.str("arch"), DType: t.str("dtype"), Line: line}
		if row.Arch == "" {
			return XLARow{}, &LineError{File: file, Line: line, Column: "arch", Msg: "empty"}
		}
		if row.DType == "" {
			return XLARow{}, &LineError{File: file, Line: line, Column: "dtype", Msg: "empty"}
		}
		if row.B, err = t.int(line, "b", 1, maxXLABatch); err != nil {
			return XLARow{}, err
		}
		for _, d := range []struct {
			c string
			v *int
		}{{"m", &row.M}, {"n", &row.N}, {"k", &row.K}} {
			if *d.v, err = t.int(line, d.c, 1, maxXLADim); err != nil {
				return XLARow{}, err
			}
		}
		if row.FLOPS, err = t.positive(line, "flops_per_s"); err != nil {
			return XLARow{}, err
		}
		if row.FLOPS > maxXLAFLOPS {
			return XLARow{}, &LineError{File: file, Line: line, Column: "flops_per_s", Msg: fmt.Sprintf("%g FLOP/s is above %g: not a GEMM throughput", row.FLOPS, maxXLAFLOPS)}
		}
		return row, nil
	})
}

// XLAGPU returns the catalog GPU of an XLA profile name: "sm_90" is the
// H100 (XLA's commit messages and tests; any compute capability 9.0 part
// would read it), "sm_100_B200" (and the older key "sm_100") the B200.
func XLAGPU(arch string) (string, bool) {
	switch {
	case arch == "sm_90":
		return "h100", true
	case arch == "sm_100" || arch == "sm_100_B200":
		return "b200", true
	}
	return "", false
}

// XLADType returns the servesim precision of an XLA dtype key and the
// bytes of an input element: bf16 × bf16 is BF16; any f8 × f8 (E4M3 or
// E5M2, bf16 output) is FP8. f32 (run on tensor cores at reduced precision,
// SOURCE.md) and anything else: false.
func XLADType(dtype string) (models.DType, float64, bool) {
	switch {
	case dtype == "bf16xbf16->bf16":
		return models.BF16, 2, true
	case strings.HasPrefix(dtype, "f8") && strings.Contains(dtype, "xf8"):
		return models.FP8, 1, true
	}
	return 0, 0, false
}

// XLASamples turns the rows of GPU gpu and precision d into GEMM samples:
// tokens = B·M rows, N and K the GEMM's, FLOPs 2·B·M·N·K, bytes the inputs
// at their width plus the BF16 output, seconds FLOPs / FLOPS. Rows of other
// GPUs and precisions are left out.
func XLASamples(rows []XLARow, gpu string, d models.DType) []Sample {
	var out []Sample
	for i := range rows {
		if s, ok := rows[i].sample(gpu, d); ok {
			out = append(out, s)
		}
	}
	return out
}

// sample is the GEMM sample of row r if it is of GPU gpu and precision d.
func (r *XLARow) sample(gpu string, d models.DType) (Sample, bool) {
	g, ok := XLAGPU(r.Arch)
	if !ok || g != gpu {
		return Sample{}, false
	}
	rd, eb, ok := XLADType(r.DType)
	if !ok || rd != d {
		return Sample{}, false
	}
	b, m, n, k := float64(r.B), float64(r.M), float64(r.N), float64(r.K)
	flops := 2 * b * m * n * k
	return Sample{
		GPU:  gpu,
		Name: r.DType,
		TP:   1,
		Op: models.Op{Kind: models.OpMLPUp, Count: 1, Tokens: r.B * r.M, FLOPs: flops,
			Bytes: b*(m*k+k*n)*eb + b*m*n*2, N: r.N, K: r.K, Compute: d},
		Seconds: flops / r.FLOPS,
		Where:   fmt.Sprintf("line %d", r.Line),
	}, true
}
