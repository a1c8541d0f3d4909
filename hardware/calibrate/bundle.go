package calibrate

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// A Bundle is one profile bundle of LLMServingSim's profiler
// (../shared/data/llmservingsim/profiles/<hw>/<org>/<model>/<variant>/):
// vLLM per-layer CUDA kernel times of a 1-layer model with the real
// per-rank shapes, TP emulated on one GPU (a tp<N>/ time is one rank's,
// with no communication). Every time is the mean kernel time of one call,
// in µs; ReadBundle converts to seconds. See that folder's SOURCE.md.
type Bundle struct {
	// Dir is the bundle directory as given.
	Dir string
	// Meta is what meta.yaml says.
	Meta BundleMeta
	// TP holds one entry per tp<N>/ folder, by increasing N.
	TP []BundleTP
}

// BundleMeta is the part of meta.yaml the calibration reads.
type BundleMeta struct {
	GPU          string // the driver's device name ("NVIDIA H100 80GB HBM3")
	Hardware     string // the folder label ("H100")
	Model        string // Hugging Face name ("meta-llama/Llama-3.1-8B")
	Architecture string // profiler architecture ("llama", "qwen3_next")
	Variant      string // "bf16"
	VLLMVersion  string
	TPDegrees    []int
	// Iterations is measurement_iterations: timed forwards per shot.
	Iterations int
	// MaxBatchedTokens and MaxSeqs are the sweep bounds.
	MaxBatchedTokens, MaxSeqs int
	// FullAttentionLayers is layer_mix.full_attention_layers (0: absent).
	FullAttentionLayers int
	// Values holds every scalar of the file by dotted path
	// ("engine_effective.hf_overrides.num_key_value_heads"); list items
	// are path.0, path.1, ...
	Values map[string]string
	lines  map[string]int // line of each key, for errors
}

// BundleTP is the data of one tp<N>/ folder; a missing file leaves its
// slice nil.
type BundleTP struct {
	TP        int
	Attention []AttnRow
	Dense     []DenseRow
	PerSeq    []PerSeqRow
	MoE       []MoERow
}

// AttnRow is one attention-layer call of attention.csv: one prefill chunk
// of PrefillChunk tokens over KVPrefill prior tokens, and NDecode decodes of
// one token over KVDecode tokens each, in one FlashAttention varlen call.
type AttnRow struct {
	PrefillChunk, KVPrefill, NDecode, KVDecode int
	Seconds                                    float64
	Line                                       int
}

// DenseRow is one call of one operator of one decoder layer (dense.csv).
type DenseRow struct {
	Layer   string
	Tokens  int
	Seconds float64
	Line    int
}

// PerSeqRow is one call of lm_head or sampler over Sequences requests
// (per_sequence.csv).
type PerSeqRow struct {
	Layer     string
	Sequences int
	Seconds   float64
	Line      int
}

// MoERow is one call of the whole sparse-MoE block (moe.csv).
type MoERow struct {
	Tokens, Experts int
	Seconds         float64
	Line            int
}

// IsBundle reports whether dir is a profile bundle (holds meta.yaml).
func IsBundle(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "meta.yaml"))
	return err == nil && st.Mode().IsRegular()
}

// FindBundles returns the bundle directories at or below dir, sorted.
func FindBundles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "meta.yaml" {
			out = append(out, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	sort.Strings(out)
	return out, nil
}

// ReadBundle reads the bundle in dir: meta.yaml and, for each degree of
// its tp_degrees, tp<N>/{attention,dense,per_sequence,moe}.csv (each
// optional, but a degree needs at least one). Errors name the file, line
// and column.
func ReadBundle(dir string) (*Bundle, error) {
	data, err := os.ReadFile(filepath.Join(dir, "meta.yaml"))
	if err != nil {
		return nil, fmt.Errorf("calibrate: bundle %s: %w", dir, err)
	}
	meta, err := ParseBundleMeta(data, filepath.Join(dir, "meta.yaml"))
	if err != nil {
		return nil, err
	}
	b := &Bundle{Dir: dir, Meta: *meta}
	for _, tp := range meta.TPDegrees {
		sub := fmt.Sprintf("tp%d", tp)
		t := BundleTP{TP: tp}
		found := false
		read := func(file string, parse func([]byte, string) error) error {
			data, err := os.ReadFile(filepath.Join(dir, sub, file))
			if os.IsNotExist(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("calibrate: %w", err)
			}
			found = true
			return parse(data, filepath.Join(dir, sub, file))
		}
		if err := read("attention.csv", func(d []byte, n string) (err error) { t.Attention, err = ReadAttentionCSV(d, n); return }); err != nil {
			return nil, err
		}
		if err := read("dense.csv", func(d []byte, n string) (err error) { t.Dense, err = ReadDenseCSV(d, n); return }); err != nil {
			return nil, err
		}
		if err := read("per_sequence.csv", func(d []byte, n string) (err error) { t.PerSeq, err = ReadPerSeqCSV(d, n); return }); err != nil {
			return nil, err
		}
		if err := read("moe.csv", func(d []byte, n string) (err error) { t.MoE, err = ReadMoECSV(d, n); return }); err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("calibrate: %s line %d: tp_degrees lists %d, but %s has none of attention.csv, dense.csv, per_sequence.csv, moe.csv", filepath.Join(dir, "meta.yaml"), meta.line("tp_degrees"), tp, filepath.Join(dir, sub))
		}
		b.TP = append(b.TP, t)
	}
	return b, nil
}

// csvCell is one field of a CSV row with its 1-based column.
type csvCell struct {
	s   string
	col int
}

// readCSV splits data (comma-separated, no quoting) into rows of len(header)
// cells after checking the header; fn gets each data row and its line.
func readCSV(data []byte, name string, header []string, fn func(cells []csvCell, line int) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	rows := 0
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
			if text != strings.Join(header, ",") {
				return &LineError{File: name, Line: 1, Msg: fmt.Sprintf("header %q, want %q", truncate(text, 80), strings.Join(header, ","))}
			}
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		parts := strings.Split(text, ",")
		if len(parts) != len(header) {
			return &LineError{File: name, Line: line, Msg: fmt.Sprintf("%d fields, want %d (%s)", len(parts), len(header), strings.Join(header, ","))}
		}
		cells := make([]csvCell, len(parts))
		col := 1
		for i, p := range parts {
			cells[i] = csvCell{s: p, col: col}
			col += len(p) + 1
		}
		if err := fn(cells, line); err != nil {
			return err
		}
		rows++
	}
	if err := sc.Err(); err != nil {
		return &LineError{File: name, Line: line + 1, Msg: err.Error()}
	}
	if line == 0 {
		return &LineError{File: name, Msg: fmt.Sprintf("empty file, want the header %q", strings.Join(header, ","))}
	}
	if rows == 0 {
		return &LineError{File: name, Msg: "no data rows"}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// cellErr is a LineError naming the column by header name and position.
func cellErr(name string, line int, header []string, i int, c csvCell, msg string) error {
	return &LineError{File: name, Line: line, Column: header[i], Msg: fmt.Sprintf("column %d: %s: %q", c.col, msg, truncate(c.s, 40))}
}

// maxBundleCount bounds token, KV and request counts of a bundle row.
const maxBundleCount = 1 << 24

func intCell(name string, line int, header []string, cells []csvCell, i int) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(cells[i].s))
	if err != nil {
		return 0, cellErr(name, line, header, i, cells[i], "not an integer")
	}
	if v < 0 || v > maxBundleCount {
		return 0, cellErr(name, line, header, i, cells[i], fmt.Sprintf("must be in [0, %d]", maxBundleCount))
	}
	return v, nil
}

// timeCell parses a time_us cell into seconds: finite, > 0 and under 10 s.
func timeCell(name string, line int, header []string, cells []csvCell, i int) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(cells[i].s), 64)
	if err != nil {
		return 0, cellErr(name, line, header, i, cells[i], "not a number")
	}
	if !(v > 0) || math.IsInf(v, 0) || v > 1e7 {
		return 0, cellErr(name, line, header, i, cells[i], "a kernel time must be finite, > 0 and at most 1e7 µs")
	}
	return v * 1e-6, nil
}

func nameCell(name string, line int, header []string, cells []csvCell, i int) (string, error) {
	s := strings.TrimSpace(cells[i].s)
	if s == "" {
		return "", cellErr(name, line, header, i, cells[i], "empty layer name")
	}
	return s, nil
}

var attnHeader = []string{"prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "time_us"}

// ReadAttentionCSV reads attention.csv
// (prefill_chunk,kv_prefill,n_decode,kv_decode,time_us); name labels
// errors. A row needs a prefill chunk or decodes; kv_prefill needs a chunk
// and kv_decode decodes.
func ReadAttentionCSV(data []byte, name string) ([]AttnRow, error) {
	var out []AttnRow
	h := attnHeader
	err := readCSV(data, name, h, func(c []csvCell, line int) error {
		var v [4]int
		for i := range v {
			x, err := intCell(name, line, h, c, i)
			if err != nil {
				return err
			}
			v[i] = x
		}
		s, err := timeCell(name, line, h, c, 4)
		if err != nil {
			return err
		}
		switch {
		case v[0] == 0 && v[2] == 0:
			return &LineError{File: name, Line: line, Msg: "prefill_chunk and n_decode are both 0: a call needs a chunk or decodes"}
		case v[0] == 0 && v[1] > 0:
			return cellErr(name, line, h, 1, c[1], "kv_prefill > 0 with no prefill chunk")
		case v[2] == 0 && v[3] > 0:
			return cellErr(name, line, h, 3, c[3], "kv_decode > 0 with no decodes")
		}
		out = append(out, AttnRow{PrefillChunk: v[0], KVPrefill: v[1], NDecode: v[2], KVDecode: v[3], Seconds: s, Line: line})
		return nil
	})
	return out, err
}

var (
	denseHeader  = []string{"layer", "tokens", "time_us"}
	perSeqHeader = []string{"layer", "sequences", "time_us"}
)

// ReadDenseCSV reads dense.csv (layer,tokens,time_us); tokens ≥ 1.
func ReadDenseCSV(data []byte, name string) ([]DenseRow, error) {
	var out []DenseRow
	err := readLayerCounts(data, name, denseHeader, func(l string, n int, s float64, line int) {
		out = append(out, DenseRow{Layer: l, Tokens: n, Seconds: s, Line: line})
	})
	return out, err
}

// ReadPerSeqCSV reads per_sequence.csv (layer,sequences,time_us);
// sequences ≥ 1.
func ReadPerSeqCSV(data []byte, name string) ([]PerSeqRow, error) {
	var out []PerSeqRow
	err := readLayerCounts(data, name, perSeqHeader, func(l string, n int, s float64, line int) {
		out = append(out, PerSeqRow{Layer: l, Sequences: n, Seconds: s, Line: line})
	})
	return out, err
}

// readLayerCounts reads a CSV of header h = (layer, a count ≥ 1, time_us),
// calling row for each line.
func readLayerCounts(data []byte, name string, h []string, row func(layer string, n int, seconds float64, line int)) error {
	return readCSV(data, name, h, func(c []csvCell, line int) error {
		l, err := nameCell(name, line, h, c, 0)
		if err != nil {
			return err
		}
		n, err := intCell(name, line, h, c, 1)
		if err != nil {
			return err
		}
		if n < 1 {
			return cellErr(name, line, h, 1, c[1], "must be >= 1")
		}
		s, err := timeCell(name, line, h, c, 2)
		if err != nil {
			return err
		}
		row(l, n, s, line)
		return nil
	})
}

var moeHeader = []string{"tokens", "activated_experts", "time_us"}

// ReadMoECSV reads moe.csv (tokens,activated_experts,time_us); both
// counts ≥ 1.
func ReadMoECSV(data []byte, name string) ([]MoERow, error) {
	var out []MoERow
	h := moeHeader
	err := readCSV(data, name, h, func(c []csvCell, line int) error {
		var v [2]int
		for i := range v {
			x, err := intCell(name, line, h, c, i)
			if err != nil {
				return err
			}
			if x < 1 {
				return cellErr(name, line, h, i, c[i], "must be >= 1")
			}
			v[i] = x
		}
		s, err := timeCell(name, line, h, c, 2)
		if err != nil {
			return err
		}
		out = append(out, MoERow{Tokens: v[0], Experts: v[1], Seconds: s, Line: line})
		return nil
	})
	return out, err
}
