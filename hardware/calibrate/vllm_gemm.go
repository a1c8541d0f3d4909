package calibrate

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// This file reads and fits vLLM's published GEMM benchmarks on B200
// (testdata/vllm-b200-gemm.csv, transcribed from vLLM pull requests; its
// header names each PR, date, script and table): the measured FP4 (NVFP4)
// and FP8 GEMM throughput by batch size beside the same run's BF16 GEMM.

// vllmB200CSV is the transcribed table, embedded so that the built-in
// profiles do not depend on the working directory.
//
//go:embed testdata/vllm-b200-gemm.csv
var vllmB200CSV []byte

// VLLMGEMMFile is the name errors and notes give the embedded table.
const VLLMGEMMFile = "vllm-b200-gemm.csv"

// VLLMGEMMColumns are the columns of the table.
var VLLMGEMMColumns = []string{"pr", "table", "date", "dtype", "n", "k", "batch", "bf16_tflops", "quant_tflops", "noquant_tflops"}

// VLLMGEMMRow is one batch size of one benchmark table: a [batch, K] ×
// [K, N] GEMM timed as BF16 (BF16 TFLOP/s), as DType with the activation
// quantized inside the call (Quant) and with it pre-quantized (NoQuant).
type VLLMGEMMRow struct {
	PR                   int
	Table, Date          string
	DType                models.DType
	N, K, Batch          int
	BF16, Quant, NoQuant float64 // TFLOP/s
	Line                 int
}

// minVLLMRows is the fewest rows FitVLLM fits: the model's four
// parameters and two more (the FP8 table as stored has 7 batch sizes).
const minVLLMRows = 6

// maxVLLMTFLOPS bounds a row's throughput: 1 EFLOP/s in TFLOP/s.
const maxVLLMTFLOPS = 1e6

// ReadVLLMGEMM reads the table ('#' starts a comment line). Malformed rows
// are *LineError naming the file, line and column, e.g.
//
//	calibrate: vllm-b200-gemm.csv line 20: column "quant_tflops": must be finite and > 0, got 0
func ReadVLLMGEMM(r io.Reader, file string) ([]VLLMGEMMRow, error) {
	t, err := newCSVTable(r, file, '#')
	if err != nil {
		return nil, err
	}
	if err := t.require(VLLMGEMMColumns...); err != nil {
		return nil, err
	}
	return readRows(t, func(line int) (VLLMGEMMRow, error) {
		var err error
		row := VLLMGEMMRow{Table: t.str("table"), Date: t.str("date"), Line: line}
		if row.PR, err = t.int(line, "pr", 1, 1<<30); err != nil {
			return VLLMGEMMRow{}, err
		}
		for _, c := range []struct{ c, v string }{{"table", row.Table}, {"date", row.Date}} {
			if c.v == "" {
				return VLLMGEMMRow{}, &LineError{File: file, Line: line, Column: c.c, Msg: "empty"}
			}
		}
		d, err := models.ParseDType(t.str("dtype"))
		if err != nil || d == models.BF16 {
			return VLLMGEMMRow{}, &LineError{File: file, Line: line, Column: "dtype", Msg: fmt.Sprintf("%q: want fp8 or fp4 (bf16 is its own column)", t.str("dtype"))}
		}
		row.DType = d
		for _, c := range []struct {
			c string
			v *int
		}{{"n", &row.N}, {"k", &row.K}, {"batch", &row.Batch}} {
			if *c.v, err = t.int(line, c.c, 1, maxXLADim); err != nil {
				return VLLMGEMMRow{}, err
			}
		}
		for _, c := range []struct {
			c string
			v *float64
		}{{"bf16_tflops", &row.BF16}, {"quant_tflops", &row.Quant}, {"noquant_tflops", &row.NoQuant}} {
			if *c.v, err = t.positive(line, c.c); err != nil {
				return VLLMGEMMRow{}, err
			}
			if *c.v > maxVLLMTFLOPS {
				return VLLMGEMMRow{}, &LineError{File: file, Line: line, Column: c.c, Msg: fmt.Sprintf("%g TFLOP/s is above %g: not a GEMM throughput", *c.v, float64(maxVLLMTFLOPS))}
			}
		}
		return row, nil
	})
}

// newestVLLM keeps, of each (dtype, n, k, batch), the row of the latest
// date (the newest kernels vLLM shipped when it was measured); ties keep
// the later line.
func newestVLLM(rows []VLLMGEMMRow) []VLLMGEMMRow {
	type key struct {
		d           models.DType
		n, k, batch int
	}
	best := map[key]int{}
	for i, r := range rows {
		k := key{r.DType, r.N, r.K, r.Batch}
		if j, ok := best[k]; !ok || r.Date >= rows[j].Date {
			best[k] = i
		}
	}
	var idx []int
	for _, i := range best {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]VLLMGEMMRow, len(idx))
	for i, j := range idx {
		out[i] = rows[j]
	}
	return out
}

// vllmPoint is the GEMM point of row r in precision d at throughput tflops
// on g: tokens = batch, FLOPs 2·batch·N·K, bytes as models prices a GEMM
// (weights at d's width, BF16 activations in and out).
func vllmPoint(r *VLLMGEMMRow, d models.DType, tflops float64, g *hardware.GPU) point {
	b, n, k := float64(r.Batch), float64(r.N), float64(r.K)
	flops := 2 * b * n * k
	s := Sample{GPU: g.Name, TP: 1, Op: models.Op{Kind: models.OpMLPUp, Count: 1, Tokens: r.Batch, FLOPs: flops,
		Bytes: n*k*d.Bytes() + (b*k+b*n)*models.BF16.Bytes(), N: r.N, K: r.K, Compute: d},
		Seconds: flops / (tflops * 1e12)}
	return points([]Sample{s}, g)[0]
}

// VLLMFit is the GEMM model (XLAFit's o + max(FLOPs/(peak·η)·(1 + h/B),
// bytes/(MemBW·μ))) fitted to one column of vLLM's table and to the same
// rows' BF16 column, each on its own precision's dense peak.
type VLLMFit struct {
	DType models.DType
	Quant bool // the column with activation quantization in the call
	// Rows are the table rows fitted; PRs the pull requests they come from.
	Rows int
	PRs  []int
	// Low and BF16 are (o, η, h, μ) of the column and of the BF16 column.
	Low, BF16 params
	// InSample is Low's fit on every row; HeldOut pools each batch size
	// predicted by the fit on the others (the table holds one full shape,
	// so a shape cannot be held out).
	InSample, HeldOut ErrStats
}

// Ratios are the column's η, extra half-saturation tokens and μ relative
// to the same run's BF16 (η_low/η_bf16, h_low − h_bf16, μ_low/μ_bf16).
func (f VLLMFit) Ratios() (float64, float64, float64) {
	return f.Low.ec / f.BF16.ec, f.Low.h - f.BF16.h, f.Low.em / f.BF16.em
}

// FitVLLM fits the rows of precision d (the newest of each shape and batch)
// on GPU g: the quant or noquant column and the BF16 column. False if
// fewer than minVLLMRows rows.
func FitVLLM(rows []VLLMGEMMRow, g *hardware.GPU, d models.DType, quant bool) (VLLMFit, bool) {
	f := VLLMFit{DType: d, Quant: quant}
	var lo, bf []point
	seen := map[int]bool{}
	for _, r := range newestVLLM(rows) {
		if r.DType != d {
			continue
		}
		v := r.NoQuant
		if quant {
			v = r.Quant
		}
		lo = append(lo, vllmPoint(&r, d, v, g))
		bf = append(bf, vllmPoint(&r, models.BF16, r.BF16, g))
		if !seen[r.PR] {
			seen[r.PR] = true
			f.PRs = append(f.PRs, r.PR)
		}
	}
	sort.Ints(f.PRs)
	if len(lo) < minVLLMRows {
		return f, false
	}
	f.Rows = len(lo)
	f.Low, f.BF16 = gemmForm.fit(lo), gemmForm.fit(bf)
	f.InSample = errStats(pointErrors(f.Low, lo))
	var pe []float64
	for i := range lo {
		train := append(append([]point(nil), lo[:i]...), lo[i+1:]...)
		pe = append(pe, pointErrors(gemmForm.fit(train), lo[i:i+1])...)
	}
	f.HeldOut = errStats(pe)
	return f, true
}

// pointErrors are the signed percentage errors of m on pts.
func pointErrors(m params, pts []point) []float64 {
	pe := make([]float64, len(pts))
	for i := range pts {
		pe[i] = 100 * (m.at(&pts[i])/math.Exp(pts[i].y) - 1)
	}
	return pe
}

// VLLMTable is the embedded table read and fitted on the B200: FP4 and FP8,
// with and without activation quantization, by "fp4/quant" etc.
type VLLMTable struct {
	Rows []VLLMGEMMRow
	Fits map[string]VLLMFit
}

// vllmKey names a fit of a VLLMTable.
func vllmKey(d models.DType, quant bool) string {
	if quant {
		return d.String() + "/quant"
	}
	return d.String() + "/noquant"
}

// LoadVLLMB200 reads and fits the embedded table.
func LoadVLLMB200() (*VLLMTable, error) {
	rows, err := ReadVLLMGEMM(bytes.NewReader(vllmB200CSV), VLLMGEMMFile)
	if err != nil {
		return nil, err
	}
	g, err := hardware.Builtin().Get("b200")
	if err != nil {
		return nil, err
	}
	t := &VLLMTable{Rows: rows, Fits: map[string]VLLMFit{}}
	for _, d := range []models.DType{models.FP4, models.FP8} {
		for _, q := range []bool{true, false} {
			f, ok := FitVLLM(rows, g, d, q)
			if !ok {
				return nil, fmt.Errorf("calibrate: %s: fewer than %d %s rows", VLLMGEMMFile, minVLLMRows, d)
			}
			t.Fits[vllmKey(d, q)] = f
		}
	}
	return t, nil
}

// prList is "#20646, #22523".
func prList(prs []int) string {
	s := ""
	for i, p := range prs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("#%d", p)
	}
	return s
}

// fp4Precision is the B200's [[gemm_precision]] fp4 from the NVFP4 rows
// with activation quantization (what vLLM runs): the column's η, h and μ
// relative to the same runs' BF16 GEMM, applied on top of the B200's
// measured BF16 entry (sb, hb, mb from XLA's sm_100_B200 fit against the
// sm_90 BF16 fit), so that the runs' clocks cancel:
//
//	compute_scale = sb · η_fp4/η_bf16, extra_half_tokens = max(0, hb + h_fp4 − h_bf16), memory_scale = mb · μ_fp4/μ_bf16
//
// each held within validatePrecisions' bounds.
func (v *VLLMTable) fp4Precision(sb, hb, mb float64) GEMMPrecision {
	f, nq := v.Fits[vllmKey(models.FP4, true)], v.Fits[vllmKey(models.FP4, false)]
	c, h, m := f.Ratios()
	h = math.Round(h) + 0 // no "-0" in the source
	cn, _, _ := nq.Ratios()
	clamp := func(x float64) float64 { return min(max(x, minEff), maxComputeScale) }
	return GEMMPrecision{DType: "fp4", ComputeScale: clamp(sb * c), ExtraHalfTokens: min(max(0, hb+h), maxHalfTokens), MemoryScale: clamp(mb * m),
		Basis: BasisMeasured,
		Source: fmt.Sprintf("measured (vLLM PR %s, B200): vLLM's benchmarks/kernels/bench_nvfp4_gemm.py on Llama-3.1-8B's 6144×4096 weight by batch size and one 4096×4096 row "+
			"(hardware/calibrate/testdata/%s: the newest table of each batch size, %d rows), the \"nvfp4\" column (activation quantized in the call, "+
			"as vLLM runs it) fitted as o + max(FLOPs/(9 PFLOP/s·η)·(1 + h/B), bytes/(MemBW·μ)): η %.3f, h %.0f, μ %.3f, o %.1f µs, against the same "+
			"runs' torch BF16 GEMM (η %.3f, h %.0f, μ %.3f, o %.1f µs): η × %.3f, h %+.0f, μ × %.3f, applied to the B200 BF16 entry (× %.3f, +%.0f tokens, μ × %.3f); "+
			"the FP4 overhead (quantization kernel included) is not carried: profiles do not adjust overheads. Fit errors: in sample median %.1f %%, p90 %.1f %%; "+
			"each batch size predicted by the fit on the others median %.1f %%, p90 %.1f %% (one full shape is stored, so no shape is held out). "+
			"Without activation quantization (nvfp4-noquant) η × %.3f, compute scale %.3f",
			prList(f.PRs), VLLMGEMMFile, f.Rows, f.Low.ec, f.Low.h, f.Low.em, f.Low.o*1e6, f.BF16.ec, f.BF16.h, f.BF16.em, f.BF16.o*1e6,
			c, h, m, sb, hb, mb, f.InSample.Median, f.InSample.P90, f.HeldOut.Median, f.HeldOut.P90, cn, clamp(sb*cn))}
}

// fp8Check is the sentence the B200's fp8 entry gets from vLLM's FP8
// table: the compute scale it would give beside XLA's s8.
func (v *VLLMTable) fp8Check(sb, s8 float64) string {
	f, nq := v.Fits[vllmKey(models.FP8, true)], v.Fits[vllmKey(models.FP8, false)]
	c, h, _ := f.Ratios()
	h = math.Round(h) + 0
	cn, _, _ := nq.Ratios()
	return fmt.Sprintf("Cross-check, vLLM PR %s (B200, bench_fp8_gemm.py, 6144×4096, batch 1–%d, %d rows, hardware/calibrate/testdata/%s): "+
		"fp8-tensor-w-tensor-a against the same run's BF16 gives η × %.3f (h %+.0f; held out by batch: median %.1f %%, p90 %.1f %%), a compute scale of %.3f "+
		"(noquant: × %.3f, %.3f) against XLA's %.3f; XLA's is kept: 1,125 rows over 125 shapes up to compute-bound sizes, where vLLM's stored table is one "+
		"shape that stops at batch 1024, below saturation, so its η and h trade off", prList(f.PRs), maxBatch(v.Rows, models.FP8), f.Rows, VLLMGEMMFile,
		c, h, f.HeldOut.Median, f.HeldOut.P90, sb*c, cn, sb*cn, s8)
}

// maxBatch is the largest batch of the rows of precision d.
func maxBatch(rows []VLLMGEMMRow, d models.DType) int {
	b := 0
	for _, r := range rows {
		if r.DType == d {
			b = max(b, r.Batch)
		}
	}
	return b
}

// vllmCells are the fits of a VLLMTable, in report order.
var vllmCells = []struct {
	d     models.DType
	quant bool
}{{models.FP4, true}, {models.FP4, false}, {models.FP8, true}, {models.FP8, false}}
