package calibrate

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/servesim/servesim/internal/bounded"
)

// LoadProfile reads a profile from a TOML file, strictly: unknown keys,
// wrong types and invalid values are errors that name the file, the line
// and the field, e.g.
//
//	calibrate: h100.toml line 31: field "op[2].compute_eff": must be in (0, 1], got 1.4
func LoadProfile(path string) (*Profile, error) {
	data, err := bounded.ReadFile(path, bounded.Profile)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	return ParseProfile(data, filepath.Base(path))
}

// ParseProfile reads a profile from TOML data; name labels errors.
func ParseProfile(data []byte, name string) (*Profile, error) {
	var p Profile
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&p)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := pe.Message
			if pe.LastKey != "" {
				msg = fmt.Sprintf("field %q: %s", pe.LastKey, msg)
			}
			if pe.Position.Line < 1 { // no line for some errors at the end of the input
				return nil, fmt.Errorf("calibrate: %s: %s", name, msg)
			}
			return nil, fmt.Errorf("calibrate: %s line %d: %s", name, pe.Position.Line, msg)
		}
		msg := strings.TrimPrefix(err.Error(), "toml: ")
		// Type mismatches read `line 9 (last key "format"): incompatible types: ...`.
		if m := typeErrRE.FindStringSubmatch(msg); m != nil {
			return nil, fmt.Errorf("calibrate: %s line %s: field %q: %s", name, m[1], m[2], m[3])
		}
		return nil, fmt.Errorf("calibrate: %s: %s", name, msg)
	}
	// The line index is for error messages only.
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0].String()
		return nil, fmt.Errorf("calibrate: %s line %d: unknown field %q", name, indexTOML(data).find(k), k)
	}
	if err := p.validate(); err != nil {
		var fe *fieldErr
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("calibrate: %s line %d: %w", name, indexTOML(data).find(fe.field), err)
		}
		return nil, fmt.Errorf("calibrate: %s: %w", name, err)
	}
	return &p, nil
}

var typeErrRE = regexp.MustCompile(`^line (\d+) \(last key "([^"]*)"\): (.*)$`)

// tomlIndex maps field paths ("op[3].compute_eff", "iteration.overhead_s",
// "op[3]") to the 1-based line that defines them. It understands what
// WriteTOML writes and hand edits of it: tables, arrays of tables, and
// key = value lines; it is used for error messages only.
type tomlIndex struct {
	lines map[string]int
	keys  []string // in file order, for suffix search
}

func indexTOML(data []byte) *tomlIndex {
	x := &tomlIndex{lines: map[string]int{}}
	count := map[string]int{} // array-of-tables name → elements so far
	cur := ""
	set := func(k string, ln int) {
		if _, ok := x.lines[k]; !ok {
			x.lines[k] = ln
			x.keys = append(x.keys, k)
		}
	}
	for i, line := range strings.Split(string(data), "\n") {
		ln := i + 1
		s := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(s, "[["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(s, "]]", 2)[0], "[ "))
			cur = fmt.Sprintf("%s[%d]", name, count[name])
			count[name]++
			set(cur, ln)
		case strings.HasPrefix(s, "["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(s, "]", 2)[0], "[ "))
			cur = name
			// A sub-table of the last element of an array of tables.
			for arr, n := range count {
				if strings.HasPrefix(name, arr+".") && n > 0 {
					cur = fmt.Sprintf("%s[%d]%s", arr, n-1, name[len(arr):])
				}
			}
			set(cur, ln)
		default:
			eq := strings.IndexByte(s, '=')
			if eq <= 0 {
				continue
			}
			key := strings.TrimSpace(s[:eq])
			if strings.Trim(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
				continue
			}
			if cur != "" {
				key = cur + "." + key
			}
			set(key, ln)
		}
	}
	return x
}

// find returns the line of a field path; an undecoded key (which has no
// array index) matches the first indexed path that ends like it; 0 if
// nothing matches.
func (x *tomlIndex) find(field string) int {
	for f := field; f != ""; {
		if ln, ok := x.lines[f]; ok {
			return ln
		}
		// Drop the last path element: the table's line is better than none.
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	// Undecoded keys come without indexes: "op.bogus" matches "op[0].bogus".
	parts := strings.Split(field, ".")
	for _, k := range x.keys {
		kp := strings.Split(k, ".")
		if len(kp) != len(parts) {
			continue
		}
		ok := true
		for i := range parts {
			if strings.SplitN(kp[i], "[", 2)[0] != parts[i] {
				ok = false
				break
			}
		}
		if ok {
			return x.lines[k]
		}
	}
	return 0
}

// WriteTOML returns the profile as TOML, with a header comment that says
// what each section means. Numbers are written with 6 significant digits;
// the output is deterministic.
func (p *Profile) WriteTOML() []byte {
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# servesim calibrated kernel-time profile (hardware/calibrate).\n")
	w("# One operator occurrence takes\n")
	w("#   overhead_s + max(min(FLOPs / (peak · compute_eff) · (1 + half_tokens/tokens), W / (peak · wave_eff)),\n")
	w("#                    bytes / (mem_bw · memory_eff), bytes / tokens / (mem_bw · row_memory_eff))\n")
	w("# (W only where wave_eff > 0, the last term only where row_memory_eff > 0), where a GEMM of M = tokens rows,\n")
	w("# N columns and depth K in tile_m × tile_n output tiles runs ⌈⌈M/tile_m⌉·⌈N/tile_n⌉ / sms⌉ waves of\n")
	w("# 2·K·tile_m·tile_n·sms FLOPs each (sms in [peaks]): W is their sum. peak is the GPU's tensor-core peak for the\n")
	w("# operator's precision; an all-reduce at TP n takes\n")
	w("#   latency_s + 2·(n−1)/n · bytes / (link_bw · link_eff).\n")
	w("# Efficiencies are fractions of [peaks]. fit.*_ape_pct are in-sample absolute percentage errors.\n")
	w("# Written by servesim's hardware/calibrate (servesim calibrate, or go generate for the built-in ones); see its doc.go.\n\n")
	w("format = %d\n", p.Format)
	w("gpu = %s\n", tomlQuote(p.GPU))
	w("derivation = %s\n", tomlQuote(p.Derivation))
	w("notes = [\n")
	for _, n := range p.Notes {
		w("  %s,\n", tomlQuote(n))
	}
	w("]\n\n[source]\n")
	w("trace = %s\nformat = %s\n", tomlQuote(p.Source.Trace), tomlQuote(p.Source.Format))
	w("files = [\n")
	for _, f := range p.Source.Files {
		w("  %s,\n", tomlQuote(f))
	}
	w("]\nmodels = [")
	for i, m := range p.Source.Models {
		if i > 0 {
			w(", ")
		}
		w("%s", tomlQuote(m))
	}
	w("]\nsamples = %d\n", p.Source.Samples)
	if p.Source.Rejected > 0 {
		w("rejected = %d\n", p.Source.Rejected)
	}
	w("transferred_from = %s\nnote = %s\n\n", tomlQuote(p.Source.TransferredFrom), tomlQuote(p.Source.Note))
	w("[peaks]\nbf16_flops = %s\nmem_bw = %s\nlink_bw = %s\nsms = %d\n\n", tomlFloat(p.Peaks.BF16FLOPS), tomlFloat(p.Peaks.MemBW), tomlFloat(p.Peaks.LinkBW), p.Peaks.SMs)
	w("[iteration]\noverhead_s = %s\nper_request_s = %s\nsource = %s\n\n", tomlFloat(p.Iteration.OverheadS), tomlFloat(p.Iteration.PerRequestS), tomlQuote(p.Iteration.Source))
	w("[attention]\ncompute_eff = %s\nmemory_eff = %s\noverhead_s = %s\n",
		tomlFloat(p.Attention.ComputeEff), tomlFloat(p.Attention.MemoryEff), tomlFloat(p.Attention.OverheadS))
	if a := p.Attention; a.PrefillRowComputeEff > 0 {
		w("prefill_row_compute_eff = %s\n", tomlFloat(a.PrefillRowComputeEff))
	}
	if a := p.Attention; a.DecodeMemoryEff > 0 {
		w("decode_compute_eff = %s\ndecode_memory_eff = %s\ndecode_row_memory_eff = %s\ndecode_overhead_s = %s\n",
			tomlFloat(a.DecodeComputeEff), tomlFloat(a.DecodeMemoryEff), tomlFloat(a.DecodeRowMemoryEff), tomlFloat(a.DecodeOverheadS))
		if a.DecodePerSeqS > 0 {
			w("decode_per_seq_s = %s\n", tomlFloat(a.DecodePerSeqS))
		}
		if len(a.DecodeResidual) > 0 {
			w("decode_residual_units = %s\ndecode_residual_unit_bytes = %s\ndecode_residual = [\n", tomlFloats(a.DecodeResidualUnits), tomlFloats(a.DecodeResidualBytes))
			for _, row := range a.DecodeResidual {
				w("  %s,\n", tomlFloats(row))
			}
			w("]\n")
		}
	}
	if a := p.Attention; a.MixedMemoryEff > 0 {
		w("mixed_compute_eff = %s\nmixed_memory_eff = %s\nmixed_overhead_s = %s\n",
			tomlFloat(a.MixedComputeEff), tomlFloat(a.MixedMemoryEff), tomlFloat(a.MixedOverheadS))
	}
	if p.Attention.From != "" {
		w("from = %s\n", tomlQuote(p.Attention.From))
	}
	if p.Attention.DecodeFrom != "" {
		w("decode_from = %s\n", tomlQuote(p.Attention.DecodeFrom))
	}
	w("source = %s\n", tomlQuote(p.Attention.Source))
	if p.Attention.Fit.Samples > 0 {
		b.WriteString("\n")
		writeStats(&b, "attention.fit", p.Attention.Fit)
	}
	writePrecisions(&b, p.GEMMPrecisions)
	p.MoE.writeTOML(&b)
	for _, o := range p.Ops {
		w("\n[[op]]\nop = %s\noverhead_s = %s\ncompute_eff = %s\nhalf_tokens = %s\nmemory_eff = %s\nrow_memory_eff = %s\nwave_eff = %s\ntile_m = %d\ntile_n = %d\nfrom = %s\n",
			tomlQuote(o.Op), tomlFloat(o.OverheadS), tomlFloat(o.ComputeEff), tomlFloat(o.HalfTokens), tomlFloat(o.MemoryEff),
			tomlFloat(o.RowMemoryEff), tomlFloat(o.WaveEff), o.TileM, o.TileN, tomlQuote(o.From))
		writeStats(&b, "op.fit", o.Fit)
	}
	for _, a := range p.AllReduce {
		w("\n[[all_reduce]]\ntp = %d\nlatency_s = %s\nlink_eff = %s\n", a.TP, tomlFloat(a.LatencyS), tomlFloat(a.LinkEff))
		writeStats(&b, "all_reduce.fit", a.Fit)
	}
	if t := p.GEMMTrees; t != nil {
		w("\n# Residual trees: a dense GEMM of a class in kinds, in dtype, with N and K known, takes the time above times\n")
		w("# exp(base + the sum over the trees of the leaf it reaches). Node i of a tree splits on feature[i] (x <= value[i]:\n")
		w("# node i+1, else node i+right[i]) or, where feature[i] = -1, is a leaf worth value[i]. Features: see GEMMTrees.\n")
		w("[gemm_trees]\nfeatures = %s\nkinds = [", tomlQuote(t.Features))
		for i, k := range t.Kinds {
			if i > 0 {
				w(", ")
			}
			w("%s", tomlQuote(k))
		}
		w("]\ndtype = %s\nbase = %s\ntrees = %d\ndepth = %d\nmin_leaf = %d\nlearning_rate = %s\nbins = %d\n",
			tomlQuote(t.Dtype), tomlExact(t.Base), t.Trees, t.Depth, t.MinLeaf, tomlFloat(t.LearningRate), t.Bins)
		writeStats(&b, "gemm_trees.fit", t.Fit)
		for _, tr := range t.Tree {
			w("\n[[gemm_trees.tree]]\nfeature = [")
			for i, f := range tr.Feature {
				if i > 0 {
					w(", ")
				}
				w("%d", f)
			}
			w("]\nvalue = [")
			for i, v := range tr.Value {
				if i > 0 {
					w(", ")
				}
				w("%s", tomlExact(v))
			}
			w("]\nright = [")
			for i, r := range tr.Right {
				if i > 0 {
					w(", ")
				}
				w("%d", r)
			}
			w("]\n")
		}
	}
	return b.Bytes()
}

// tomlExact formats v as a TOML float that reads back as exactly v.
func tomlExact(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}

func writeStats(b *bytes.Buffer, table string, s FitStats) {
	fmt.Fprintf(b, "[%s]\nsamples = %d\nmedian_ape_pct = %s\np90_ape_pct = %s\nmax_ape_pct = %s\n",
		table, s.Samples, tomlFloat(s.MedianAPE), tomlFloat(s.P90APE), tomlFloat(s.MaxAPE))
}

// tomlFloat formats v with 6 significant digits as a TOML float.
// tomlFloats is a TOML array of tomlFloat values.
func tomlFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = tomlFloat(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func tomlFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', 6, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}

// tomlQuote returns s as a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
