package calibrate

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/servesim/servesim/models"
)

// NativeColumns are the columns of servesim's own kernel-timing CSV, the
// format for measurements from any profiler (Nsight Systems, torch.profiler,
// CUDA events). One row is the median time of one occurrence of one
// operator:
//
//	gpu         required  catalog GPU name ("h100")
//	op          required  operator class: embed, norm, qkv, rope, attn_prefill,
//	                      attn_decode, out_proj, all_reduce, moe_router, mlp_up,
//	                      act, mlp_down, add, lm_head (models.OpKind names)
//	time_us     required  median kernel time of one occurrence, microseconds, > 0
//	tokens      rows the operator processed (the GEMM M dimension); required
//	            except for all_reduce
//	tp          tensor-parallel degree the shape is divided by (default 1);
//	            for all_reduce the number of GPUs (>= 2)
//	model       catalog model name or HF name: FLOPs, bytes and a GEMM's N
//	            and K then come from the model's operator list for (tokens,
//	            tp, precision); rows without one have no N and K, and their
//	            GEMM classes are fitted without the wave term
//	precision   bf16 (default), fp8 or fp4: the weights' precision, which is
//	            also the GEMM compute precision
//	flops       FLOPs of one occurrence on one GPU (overrides the model's)
//	bytes       HBM bytes of one occurrence on one GPU (overrides the model's)
//	comm_bytes  message bytes of an all_reduce (required for all_reduce)
//
// A row without model must give flops and bytes. Lines starting with '#'
// are comments; empty cells are absent values; unknown columns are errors.
// Attention rows (attn_prefill, attn_decode) need flops and bytes, since
// their cost depends on context lengths that a row does not carry.
var NativeColumns = []string{"gpu", "op", "model", "tp", "tokens", "precision", "flops", "bytes", "comm_bytes", "time_us"}

// ReadNative reads a servesim kernel-timing CSV (see NativeColumns). file
// names it in errors; cat resolves model names (nil: models.Builtin()).
func ReadNative(r io.Reader, file string, cat *models.Catalog) ([]Sample, error) {
	if cat == nil {
		cat = models.Builtin()
	}
	t, err := newCSVTable(r, file, '#')
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, c := range NativeColumns {
		known[c] = true
	}
	for c := range t.col {
		if !known[c] {
			return nil, &LineError{File: file, Line: t.headerLine, Column: c, Msg: "unknown column (want " + strings.Join(NativeColumns, ", ") + ")"}
		}
	}
	if err := t.require("gpu", "op", "time_us"); err != nil {
		return nil, err
	}
	has := func(c string) bool { return t.str(c) != "" }
	ops := make([]models.Op, 0, models.NumOpKinds)
	mcache := map[string]*models.Model{}
	return readRowsOr(t, "no data rows", func(line int) (Sample, error) {
		var err error
		lerr := func(col, format string, a ...any) error {
			return &LineError{File: file, Line: line, Column: col, Msg: fmt.Sprintf(format, a...)}
		}
		s := Sample{GPU: t.str("gpu"), TP: 1, Where: fmt.Sprintf("%s line %d", file, line)}
		if s.GPU == "" {
			return s, lerr("gpu", "empty")
		}
		kind, err := models.ParseOpKind(t.str("op"))
		if err != nil {
			return s, lerr("op", "%s", strings.TrimPrefix(err.Error(), "models: "))
		}
		s.Name = kind.String()
		us, err := t.positive(line, "time_us")
		if err != nil {
			return s, err
		}
		s.Seconds = us * 1e-6
		if has("tp") {
			if s.TP, err = t.int(line, "tp", 1, maxTraceTP); err != nil {
				return s, err
			}
		}
		prec := models.BF16
		if has("precision") {
			if prec, err = models.ParseDType(t.str("precision")); err != nil {
				return s, lerr("precision", "%s", strings.TrimPrefix(err.Error(), "models: "))
			}
		}
		op := models.Op{Kind: kind, Count: 1, Compute: prec}
		if kind == models.OpAllReduce {
			if s.TP < 2 {
				return s, lerr("tp", "an all_reduce needs tp >= 2 (the GPUs in the collective), got %d", s.TP)
			}
			if !has("comm_bytes") {
				return s, lerr("comm_bytes", "required for all_reduce")
			}
			if op.CommBytes, err = t.positive(line, "comm_bytes"); err != nil {
				return s, err
			}
			if has("tokens") {
				if op.Tokens, err = t.int(line, "tokens", 1, maxTraceTokens); err != nil {
					return s, err
				}
			}
			s.Op = op
			return s, nil
		}
		if !has("tokens") {
			return s, lerr("tokens", "required for %s", kind)
		}
		if op.Tokens, err = t.int(line, "tokens", 1, maxTraceTokens); err != nil {
			return s, err
		}
		if has("model") {
			name := t.str("model")
			m := mcache[name]
			if m == nil {
				if m, err = cat.Get(name); err != nil {
					if m, err = cat.ByHFName(name); err != nil {
						return s, lerr("model", "%q is neither a catalog name nor an hf_name (add it with a models file)", name)
					}
				}
				mcache[name] = m
			}
			s.Model = m.Name
			if kind == models.OpAttnPrefill || kind == models.OpAttnDecode {
				if !has("flops") || !has("bytes") {
					return s, lerr("flops", "attention rows need flops and bytes: their cost depends on context lengths")
				}
			} else {
				p := models.Parallel{TP: s.TP, Weights: prec, KV: models.BF16}
				if err := m.CheckParallel(p); err != nil {
					return s, lerr("tp", "%s", strings.TrimPrefix(err.Error(), "models: "))
				}
				ops = m.Ops(models.Batch{Decodes: op.Tokens}, p, ops[:0])
				mo, ok := opOf(ops, kind)
				if !ok {
					return s, lerr("op", "model %q has no %s operator", m.Name, kind)
				}
				op.FLOPs, op.Bytes, op.Compute, op.N, op.K = mo.FLOPs, mo.Bytes, mo.Compute, mo.N, mo.K
			}
		} else if !has("flops") || !has("bytes") {
			return s, lerr("model", "a row needs a model or both flops and bytes")
		}
		for _, c := range []struct {
			col string
			dst *float64
		}{{"flops", &op.FLOPs}, {"bytes", &op.Bytes}} {
			if !has(c.col) {
				continue
			}
			v, err := strconv.ParseFloat(t.str(c.col), 64)
			if err != nil || !(v >= 0) || math.IsInf(v, 0) {
				return s, lerr(c.col, "want a finite number >= 0, got %q", t.str(c.col))
			}
			*c.dst = v
		}
		if op.FLOPs == 0 && op.Bytes == 0 {
			return s, lerr("bytes", "an operator with no FLOPs and no bytes launches no kernel")
		}
		s.Op = op
		return s, nil
	})
}

// WriteNative writes samples as a native kernel-timing CSV with every
// column filled (flops and bytes explicit, so the file stands without the
// model catalog). Numbers are written with the shortest representation
// that reads back exactly.
func WriteNative(w io.Writer, samples []Sample) error {
	if _, err := fmt.Fprintln(w, strings.Join(NativeColumns, ",")); err != nil {
		return err
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, s := range samples {
		tokens := ""
		if s.Op.Tokens > 0 {
			tokens = strconv.Itoa(s.Op.Tokens)
		}
		flops, bytes, comm := "", "", ""
		if s.Op.Kind == models.OpAllReduce {
			comm = g(s.Op.CommBytes)
		} else {
			flops, bytes = g(s.Op.FLOPs), g(s.Op.Bytes)
		}
		prec, err := s.Op.Compute.MarshalText()
		if err != nil {
			return fmt.Errorf("calibrate: %s: %w", s.Where, err)
		}
		if _, err := fmt.Fprintf(w, "%s,%s,%s,%d,%s,%s,%s,%s,%s,%s\n", s.GPU, s.Op.Kind, s.Model, s.TP, tokens, prec,
			flops, bytes, comm, g(s.Seconds*1e6)); err != nil {
			return err
		}
	}
	return nil
}
