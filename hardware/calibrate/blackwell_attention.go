package calibrate

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"math"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// This file fits the Blackwell profiles' decode attention to measured B200
// kernel times (testdata/blackwell, transcribed from public vLLM and
// FlashInfer pull requests; SOURCE.md there says what each measured):
// vLLM's benchmarks/kernels/benchmark_trtllm_decode_attention.py, the
// trtllm-gen decode kernel vLLM's FlashInfer backend runs on SM100, BF16
// KV (PR 19825, fitted) and FP8 KV (PR 23647, held out), and FlashInfer's
// bench_trtllm_fmha.py (PR 1415, held out: another head size, fixed
// lengths, timed without the launch). The fit is the decode-only additive
// form of attention.go, t = o + n·s + bytes/(MemBW·μ), linear in (o, s,
// 1/μ), solved by least squares on the relative error (closed form, so
// deterministic). The profiles take its μ and s; o stays the transferred
// H100 fit's: the benchmark times one un-graphed call with CUDA events, so
// its 29–31 µs floor at one sequence is mostly the launch (FlashInfer's
// benchmark times 4 sequences of 1,024 tokens at 8.2 µs on the same
// kernel), which vLLM's CUDA graphs hide.

//go:embed testdata/blackwell/vllm-b200-decode-attention.csv
var b200DecodeCSV []byte

//go:embed testdata/blackwell/flashinfer-b200-trtllm-fmha.csv
var b200FmhaCSV []byte

// B200DecodeFile and B200FmhaFile are the names errors and notes give the
// embedded tables.
const (
	B200DecodeFile = "blackwell/vllm-b200-decode-attention.csv"
	B200FmhaFile   = "blackwell/flashinfer-b200-trtllm-fmha.csv"
)

// B200DecodeColumns and B200FmhaColumns are the tables' columns.
var (
	B200DecodeColumns = []string{"pr", "kv_dtype", "batch", "max_seq_len", "trtllm_ms", "trtllm_std_ms", "baseline_ms", "baseline_std_ms"}
	B200FmhaColumns   = []string{"batch", "seq_len", "time_ms", "bandwidth_gbps"}
)

// DecodeBenchRow is one row of a decode-attention benchmark: Batch
// sequences over CtxTokens KV tokens in all, KV in dtype KV, timed at
// Seconds (the trtllm-gen kernel).
type DecodeBenchRow struct {
	PR               int // 0: FlashInfer's table
	KV               models.DType
	Batch, MaxSeqLen int
	CtxTokens        int64
	Seconds          float64
	Line             int
}

// vllmDecodeShape and fmhaShape are the benchmarks' attention shapes: vLLM's
// script defaults num_heads (64, 8), head_size 128 (a Llama-70B-like layer
// at TP 1; benchmark_trtllm_decode_attention.py at vLLM commit 0db5d8cc,
// the version that prints PR 23647's columns: PR 19825's earlier version is
// assumed to share them); FlashInfer's rows say 64 query heads, 8 KV heads,
// head_dim 64.
var (
	vllmDecodeShape = models.Model{Name: "vllm-trtllm-decode-bench", Layers: 1, Hidden: 64 * 128, Heads: 64, KVHeads: 8, HeadDim: 128, FFN: 1, Vocab: 1}
	fmhaShape       = models.Model{Name: "flashinfer-trtllm-fmha-bench", Layers: 1, Hidden: 64 * 64, Heads: 64, KVHeads: 8, HeadDim: 64, FFN: 1, Vocab: 1}
)

// maxBenchLen bounds a row's sequence length (tokens).
const maxBenchLen = 1 << 24

// ReadDecodeBench reads vLLM's table ('#' starts a comment line). The
// script draws each sequence's KV length uniformly from [1, max_seq_len)
// (torch.randint, mean max_seq_len/2) and sets the last to max_seq_len, so
// a row's context is priced at its expectation, max + (batch − 1)·max/2
// tokens (the seeded draw itself is not reproduced). Malformed rows are
// *LineError naming the file, line and column.
func ReadDecodeBench(r io.Reader, file string) ([]DecodeBenchRow, error) {
	t, err := newCSVTable(r, file, '#')
	if err != nil {
		return nil, err
	}
	if err := t.require(B200DecodeColumns...); err != nil {
		return nil, err
	}
	return readRows(t, func(line int) (DecodeBenchRow, error) {
		var err error
		row := DecodeBenchRow{Line: line}
		if row.PR, err = t.int(line, "pr", 1, 1<<30); err != nil {
			return row, err
		}
		d, err := models.ParseDType(t.str("kv_dtype"))
		if err != nil || d == models.FP4 {
			return row, &LineError{File: file, Line: line, Column: "kv_dtype", Msg: fmt.Sprintf("%q: want bf16 or fp8", t.str("kv_dtype"))}
		}
		row.KV = d
		if row.Batch, err = t.int(line, "batch", 1, 1<<20); err != nil {
			return row, err
		}
		if row.MaxSeqLen, err = t.int(line, "max_seq_len", 2, maxBenchLen); err != nil {
			return row, err
		}
		row.CtxTokens = int64(row.MaxSeqLen) + int64(row.Batch-1)*int64(row.MaxSeqLen)/2
		ms, err := t.positive(line, "trtllm_ms")
		if err != nil {
			return row, err
		}
		for _, c := range []string{"trtllm_std_ms", "baseline_ms", "baseline_std_ms"} {
			if _, err := t.positive(line, c); err != nil {
				return row, err
			}
		}
		row.Seconds = ms / 1e3
		return row, nil
	})
}

// ReadFmhaBench reads FlashInfer's table: Batch sequences of seq_len
// tokens each, timed at time_ms.
func ReadFmhaBench(r io.Reader, file string) ([]DecodeBenchRow, error) {
	t, err := newCSVTable(r, file, '#')
	if err != nil {
		return nil, err
	}
	if err := t.require(B200FmhaColumns...); err != nil {
		return nil, err
	}
	return readRows(t, func(line int) (DecodeBenchRow, error) {
		var err error
		row := DecodeBenchRow{KV: models.BF16, Line: line}
		if row.Batch, err = t.int(line, "batch", 1, 1<<20); err != nil {
			return row, err
		}
		if row.MaxSeqLen, err = t.int(line, "seq_len", 1, maxBenchLen); err != nil {
			return row, err
		}
		row.CtxTokens = int64(row.Batch) * int64(row.MaxSeqLen)
		ms, err := t.positive(line, "time_ms")
		if err != nil {
			return row, err
		}
		if _, err := t.positive(line, "bandwidth_gbps"); err != nil {
			return row, err
		}
		row.Seconds = ms / 1e3
		return row, nil
	})
}

// decodeOp is the simulator's decode-attention operator of row r on shape m.
func decodeOp(m *models.Model, r *DecodeBenchRow) (models.Op, error) {
	p := models.Parallel{TP: 1, Weights: models.BF16, KV: r.KV}
	for _, op := range m.BatchOps(models.Batch{Decodes: r.Batch, DecodeCtx: r.CtxTokens}, p, nil) {
		if op.Kind == models.OpAttnDecode {
			return op, nil
		}
	}
	return models.Op{}, fmt.Errorf("calibrate: %s: no decode-attention operator for %d decodes", m.Name, r.Batch)
}

// DecodeFit is the additive decode form fitted to benchmark rows: o (s), s
// (s a sequence), μ (of MemBW) and the in-sample error.
type DecodeFit struct {
	O, S, Mu float64
	InSample ErrStats
}

// at is the fit's time of op on g.
func (f DecodeFit) at(g *hardware.GPU, op *models.Op) float64 {
	return f.O + f.S*float64(op.Tokens) + op.Bytes/(g.MemBW*f.Mu)
}

// fitDecode solves min Σ((o + n·s + bytes/BW·x)/t − 1)² for (o, s, x = 1/μ)
// by the normal equations; a negative s or o is refitted at 0. It fails
// unless 0 < μ ≤ 1.
func fitDecode(ops []models.Op, ts []float64, g *hardware.GPU) (DecodeFit, error) {
	if len(ops) < 6 {
		return DecodeFit{}, fmt.Errorf("calibrate: decode fit: %d rows, want at least 6 (two per parameter)", len(ops))
	}
	solve := func(useO, useS bool) (o, s, x float64, ok bool) {
		var cols []int
		if useO {
			cols = append(cols, 0)
		}
		if useS {
			cols = append(cols, 1)
		}
		cols = append(cols, 2)
		k := len(cols)
		var a [3][4]float64
		for i := range ops {
			row := [3]float64{1 / ts[i], float64(ops[i].Tokens) / ts[i], ops[i].Bytes / g.MemBW / ts[i]}
			for r := 0; r < k; r++ {
				for c := 0; c < k; c++ {
					a[r][c] += row[cols[r]] * row[cols[c]]
				}
				a[r][3] += row[cols[r]]
			}
		}
		// Gaussian elimination with partial pivoting on the k×k system.
		for c := 0; c < k; c++ {
			p := c
			for r := c + 1; r < k; r++ {
				if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
					p = r
				}
			}
			a[c], a[p] = a[p], a[c]
			if a[c][c] == 0 {
				return 0, 0, 0, false
			}
			for r := 0; r < k; r++ {
				if r != c {
					f := a[r][c] / a[c][c]
					for j := c; j < 4; j++ {
						a[r][j] -= f * a[c][j]
					}
				}
			}
		}
		v := [3]float64{}
		for r := 0; r < k; r++ {
			v[cols[r]] = a[r][3] / a[r][r]
		}
		return v[0], v[1], v[2], true
	}
	useO, useS := true, true
	var o, s, x float64
	for range 3 {
		var ok bool
		if o, s, x, ok = solve(useO, useS); !ok {
			return DecodeFit{}, fmt.Errorf("calibrate: decode fit: singular system")
		}
		switch {
		case s < 0 && useS:
			useS = false
		case o < 0 && useO:
			useO = false
		default:
			f := DecodeFit{O: o, S: s, Mu: 1 / x}
			if !(x >= 1) {
				return DecodeFit{}, fmt.Errorf("calibrate: decode fit: memory efficiency %.3g outside (0, 1]", f.Mu)
			}
			f.InSample = errStats(f.errors(g, ops, ts))
			return f, nil
		}
	}
	return DecodeFit{}, fmt.Errorf("calibrate: decode fit: no non-negative solution")
}

// errors are the signed percentage errors of f on (ops, ts).
func (f DecodeFit) errors(g *hardware.GPU, ops []models.Op, ts []float64) []float64 {
	pe := make([]float64, len(ops))
	for i := range ops {
		pe[i] = 100 * (f.at(g, &ops[i])/ts[i] - 1)
	}
	return pe
}

// attnErrors are the signed percentage errors of a's decode pricing on
// (ops, ts).
func attnErrors(a *Attention, g *hardware.GPU, ops []models.Op, ts []float64) []float64 {
	pe := make([]float64, len(ops))
	for i := range ops {
		pe[i] = 100 * (a.decodeTime(g, &ops[i])/ts[i] - 1)
	}
	return pe
}

// B200Decode is the decode fit on B200 and its checks.
type B200Decode struct {
	Fit DecodeFit // to vLLM's BF16 rows (PR 19825)
	// BF16Rows, FP8Rows, FmhaRows are the rows of each table.
	BF16Rows, FP8Rows, FmhaRows int
	// FP8 is the fit on PR 23647's FP8 rows (held out); FP8Transferred the
	// transferred H100 decode parameters on them, overhead set to the
	// fit's (the benchmark's launch floor), so that both compare bandwidth
	// and per-sequence terms.
	FP8, FP8Transferred ErrStats
	// Fmha is the adopted decode (the fit's μ and s, the transferred
	// overhead) on FlashInfer's rows (held out), FmhaTransferred the
	// transferred H100 decode on them.
	Fmha, FmhaTransferred ErrStats
	// Transferred is the transferred H100 decode on the fitted BF16 rows,
	// overhead set to the fit's; TransferredMu its μ.
	Transferred   ErrStats
	TransferredMu float64
}

// benchOps prices rows on shape m.
func benchOps(m *models.Model, rows []DecodeBenchRow, kv func(models.DType) bool) ([]models.Op, []float64, error) {
	var ops []models.Op
	var ts []float64
	for i := range rows {
		if !kv(rows[i].KV) {
			continue
		}
		op, err := decodeOp(m, &rows[i])
		if err != nil {
			return nil, nil, err
		}
		ops, ts = append(ops, op), append(ts, rows[i].Seconds)
	}
	return ops, ts, nil
}

// FitB200Decode fits the embedded tables on the catalog's B200 and checks
// the fit and tr, the H100 attention transferred to the B200, on the rows
// it was not fitted on.
func FitB200Decode(tr Attention) (B200Decode, error) {
	g, err := hardware.Builtin().Get("b200")
	if err != nil {
		return B200Decode{}, err
	}
	rows, err := ReadDecodeBench(bytes.NewReader(b200DecodeCSV), B200DecodeFile)
	if err != nil {
		return B200Decode{}, err
	}
	fm, err := ReadFmhaBench(bytes.NewReader(b200FmhaCSV), B200FmhaFile)
	if err != nil {
		return B200Decode{}, err
	}
	bf, bt, err := benchOps(&vllmDecodeShape, rows, func(d models.DType) bool { return d == models.BF16 })
	if err != nil {
		return B200Decode{}, err
	}
	f8, f8t, err := benchOps(&vllmDecodeShape, rows, func(d models.DType) bool { return d == models.FP8 })
	if err != nil {
		return B200Decode{}, err
	}
	fo, fot, err := benchOps(&fmhaShape, fm, func(models.DType) bool { return true })
	if err != nil {
		return B200Decode{}, err
	}
	out := B200Decode{TransferredMu: tr.DecodeMemoryEff}
	out.BF16Rows, out.FP8Rows, out.FmhaRows = len(bf), len(f8), len(fo)
	if out.Fit, err = fitDecode(bf, bt, g); err != nil {
		return B200Decode{}, fmt.Errorf("%w (%s, bf16 rows)", err, B200DecodeFile)
	}
	f8fit, err := fitDecode(f8, f8t, g)
	if err != nil {
		return B200Decode{}, fmt.Errorf("%w (%s, fp8 rows)", err, B200DecodeFile)
	}
	// Held out: the BF16 fit's μ and s on the FP8 rows, with the FP8
	// table's own floor (its launch path differs: FP8 query and scales).
	held := out.Fit
	held.O = f8fit.O
	out.FP8 = errStats(held.errors(g, f8, f8t))
	trb := tr
	trb.DecodeOverheadS = out.Fit.O
	out.Transferred = errStats(attnErrors(&trb, g, bf, bt))
	trb.DecodeOverheadS = f8fit.O
	out.FP8Transferred = errStats(attnErrors(&trb, g, f8, f8t))
	adopted := tr
	out.apply(&adopted, "b200")
	out.Fmha = errStats(attnErrors(&adopted, g, fo, fot))
	out.FmhaTransferred = errStats(attnErrors(&tr, g, fo, fot))
	return out, nil
}

// blackwellDecodeGPUs are the catalog GPUs whose decode attention takes
// the B200 fit: the B200 itself and the GPUs of its architecture family
// (sm_100/sm_103, the same trtllm-gen decode kernels and 8 TB/s HBM3e),
// on their own bandwidth.
var blackwellDecodeGPUs = map[string]bool{"b200": true, "gb200": true, "b300": true, "gb300": true}

// apply sets a's decode-only bandwidth and per-sequence cost to the fit
// (the overhead kept), marks them as measured on the B200 and returns the
// note for a profile of gpu.
func (d B200Decode) apply(a *Attention, gpu string) string {
	o := a.DecodeOverheadS
	a.DecodeMemoryEff, a.DecodePerSeqS, a.DecodeFrom = d.Fit.Mu, d.Fit.S, "b200"
	a.DecodeResidualUnits, a.DecodeResidualBytes, a.DecodeResidual = nil, nil, nil
	where := "measured on this GPU"
	if gpu != "b200" {
		where = "measured on the B200 and carried to this GPU (same Blackwell trtllm-gen decode kernels, the same fraction of its HBM bandwidth assumed)"
	}
	return fmt.Sprintf("Decode attention (decode-only calls), %s: vLLM's benchmark_trtllm_decode_attention.py on B200 "+
		"(hardware/calibrate/testdata/%s, PR #19825, %d BF16-KV rows, 64 query / 8 KV heads, head_dim 128, batch 1–256, contexts to 2,048) fitted as "+
		"o + n·s + bytes/(MemBW·μ): μ %.3f (the H100 fit's on the B200 peaks: %.3f), s %.1f ns a sequence, o %.1f µs (the un-graphed call's launch floor: "+
		"not adopted, the transferred %.1f µs kept); in sample median %.1f %%, p90 %.1f %% (the transferred parameters with the same o: %.1f / %.1f %%). "+
		"Held out: PR #23647's %d FP8-KV rows of the same script, %.1f / %.1f %% (transferred %.1f / %.1f %%); FlashInfer PR #1415's %d trtllm-gen rows "+
		"(head_dim 64, %s), %.1f / %.1f %%, median signed %+.1f %% (transferred %.1f / %.1f %%, %+.1f %%). Prefill and mixed-batch attention stay transferred.",
		where, B200DecodeFile, d.BF16Rows, d.Fit.Mu, d.TransferredMu, d.Fit.S*1e9, d.Fit.O*1e6, o*1e6, d.Fit.InSample.Median, d.Fit.InSample.P90,
		d.Transferred.Median, d.Transferred.P90, d.FP8Rows, d.FP8.Median, d.FP8.P90, d.FP8Transferred.Median, d.FP8Transferred.P90,
		d.FmhaRows, B200FmhaFile, d.Fmha.Median, d.Fmha.P90, d.Fmha.Bias, d.FmhaTransferred.Median, d.FmhaTransferred.P90, d.FmhaTransferred.Bias)
}
