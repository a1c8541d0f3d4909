package calibrate

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/servesim/servesim/models"
)

// This file reads Vidur's profiling format (github.com/microsoft/vidur,
// data/profiling; ../shared/data/vidur-profiling/SOURCE.md gives columns and
// units):
//
//	compute/<gpu>/<org>/<model>/mlp.csv       per-layer operator times vs num_tokens and TP
//	network/<node>/all_reduce.csv             NCCL all-reduce times vs bytes and GPUs
//	network/<node>/send_recv.csv              NCCL send/recv times vs bytes
//	historical/<gpu>/cpu_overheads.csv        sarathi-serve CPU time per iteration
//
// Times are milliseconds in the files and seconds in Samples. Vidur's
// predictor uses the median column; so does servesim.

// vidurOps maps the operators of mlp.csv to servesim's operator classes.
// Both layer norms map to OpNorm (one sample each); "emb" (the vocabulary
// embedding, which Vidur itself does not use) calibrates OpEmbed.
var vidurOps = []struct {
	name string
	kind models.OpKind
}{
	{"emb", models.OpEmbed},
	{"input_layernorm", models.OpNorm},
	{"attn_pre_proj", models.OpQKV},
	{"attn_rope", models.OpRoPE},
	{"attn_post_proj", models.OpOutProj},
	{"post_attention_layernorm", models.OpNorm},
	{"mlp_up_proj", models.OpMLPUp},
	{"mlp_act", models.OpAct},
	{"mlp_down_proj", models.OpMLPDown},
	{"add", models.OpAdd},
}

// maxTraceTokens and maxTraceTP bound what a trace row may claim, so that a
// corrupt file cannot make the reader build absurd operator costs.
const (
	maxTraceTokens = 1 << 22
	maxTraceTP     = 1 << 10
	maxTraceDim    = 1 << 24
)

// VidurMLPRow is one row of a Vidur mlp.csv.
type VidurMLPRow struct {
	Line           int // 1-based line in the file
	Tokens, TP     int // num_tokens, num_tensor_parallel_workers
	Heads, KVHeads int // n_head, n_kv_head
	Hidden, FFN    int // n_embd, n_expanded_embd
	Gated          bool
	Seconds        [len(vidurOpNames)]float64 // median time per operator, s; NaN where the file has no column
}

var vidurOpNames = [...]string{"emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
	"post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"}

// ReadVidurMLP reads a Vidur compute/<gpu>/<org>/<model>/mlp.csv. file names
// it in errors. Columns other than the identity columns and the
// time_stats.<op>.median of the known operators are ignored; an operator
// whose column is absent (phi-2 has no post_attention_layernorm) gets NaN.
// Times must be finite and > 0.
func ReadVidurMLP(r io.Reader, file string) ([]VidurMLPRow, error) {
	t, err := newCSVTable(r, file, 0)
	if err != nil {
		return nil, err
	}
	if err := t.require("num_tokens", "num_tensor_parallel_workers", "n_head", "n_kv_head", "n_embd", "n_expanded_embd", "use_gated_mlp"); err != nil {
		return nil, err
	}
	anyOp := false
	for _, op := range vidurOpNames {
		if _, ok := t.col["time_stats."+op+".median"]; ok {
			anyOp = true
		}
	}
	if !anyOp {
		return nil, &LineError{File: file, Line: t.headerLine, Msg: "no time_stats.<op>.median column of a known operator (" + strings.Join(vidurOpNames[:], ", ") + ")"}
	}
	return readRowsOr(t, "no data rows", func(line int) (VidurMLPRow, error) {
		var err error
		var row VidurMLPRow
		row.Line = line
		ints := []struct {
			dst    *int
			col    string
			lo, hi int
		}{
			{&row.Tokens, "num_tokens", 1, maxTraceTokens},
			{&row.TP, "num_tensor_parallel_workers", 1, maxTraceTP},
			{&row.Heads, "n_head", 1, maxTraceDim},
			{&row.KVHeads, "n_kv_head", 1, maxTraceDim},
			{&row.Hidden, "n_embd", 1, maxTraceDim},
			{&row.FFN, "n_expanded_embd", 1, maxTraceDim},
		}
		for _, f := range ints {
			if *f.dst, err = t.int(line, f.col, f.lo, f.hi); err != nil {
				return row, err
			}
		}
		if row.Gated, err = t.bool(line, "use_gated_mlp"); err != nil {
			return row, err
		}
		for i, op := range vidurOpNames {
			c := "time_stats." + op + ".median"
			if _, ok := t.col[c]; !ok {
				row.Seconds[i] = math.NaN()
				continue
			}
			ms, err := t.positive(line, c)
			if err != nil {
				return row, err
			}
			row.Seconds[i] = ms * 1e-3
		}
		return row, nil
	})
}

// VidurMLPSamples turns the rows of one model's mlp.csv into samples for
// GPU gpu: one per (TP, tokens, operator), the rows of a (TP, tokens) pair
// profiled twice averaged. Each operator's cost is m's, from m.Ops for a
// batch of that many tokens at that TP in BF16 (Vidur profiled FP16, whose
// tensor-core peak is BF16's). The rows' model shape must be m's: a
// mismatch is an error naming the line and column.
func VidurMLPSamples(rows []VidurMLPRow, m *models.Model, gpu, file string) ([]Sample, error) {
	type key struct{ tp, tok int }
	type group struct {
		line int
		n    int
		sum  [len(vidurOpNames)]float64
	}
	groups := map[key]*group{}
	var keys []key
	for i := range rows {
		r := &rows[i]
		for _, c := range []struct {
			col       string
			got, want int
		}{
			{"n_head", r.Heads, m.Heads},
			{"n_kv_head", r.KVHeads, m.KVHeads},
			{"n_embd", r.Hidden, m.Hidden},
			{"n_expanded_embd", r.FFN, m.FFN},
		} {
			if c.got != c.want {
				return nil, &LineError{File: file, Line: r.Line, Column: c.col,
					Msg: fmt.Sprintf("%d, but model %q has %d", c.got, m.Name, c.want)}
			}
		}
		if r.Gated != m.GatedMLP {
			return nil, &LineError{File: file, Line: r.Line, Column: "use_gated_mlp",
				Msg: fmt.Sprintf("%v, but model %q has gated_mlp = %v", r.Gated, m.Name, m.GatedMLP)}
		}
		if err := m.CheckParallel(models.Parallel{TP: r.TP, Weights: models.BF16, KV: models.BF16}); err != nil {
			return nil, &LineError{File: file, Line: r.Line, Column: "num_tensor_parallel_workers", Msg: err.Error()}
		}
		k := key{r.TP, r.Tokens}
		g := groups[k]
		if g == nil {
			g = &group{line: r.Line}
			groups[k] = g
			keys = append(keys, k)
		}
		g.n++
		for j := range r.Seconds {
			g.sum[j] += r.Seconds[j]
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].tp != keys[j].tp {
			return keys[i].tp < keys[j].tp
		}
		return keys[i].tok < keys[j].tok
	})
	out := make([]Sample, 0, len(keys)*len(vidurOps))
	ops := make([]models.Op, 0, models.NumOpKinds)
	for _, k := range keys {
		g := groups[k]
		p := models.Parallel{TP: k.tp, Weights: models.BF16, KV: models.BF16}
		ops = m.Ops(models.Batch{Decodes: k.tok}, p, ops[:0])
		for j, vo := range vidurOps {
			sec := g.sum[j] / float64(g.n)
			if math.IsNaN(sec) {
				continue
			}
			op, ok := opOf(ops, vo.kind)
			if !ok {
				continue
			}
			op.Count = 1
			out = append(out, Sample{GPU: gpu, Model: m.Name, Name: vo.name, TP: k.tp, Op: op,
				Seconds: sec, Where: fmt.Sprintf("%s line %d", file, g.line)})
		}
	}
	return out, nil
}

// CollectiveRow is one row of a Vidur network/<node>/{all_reduce,send_recv}.csv.
type CollectiveRow struct {
	Line           int
	Collective     string  // "all_reduce" or "send_recv"
	Workers        int     // num_workers: GPUs in the collective
	DevicesPerNode int     // devices_per_node; Workers > DevicesPerNode spans nodes
	Bytes          float64 // size: message bytes
	Seconds        float64 // median time
}

// ReadVidurCollective reads a Vidur all_reduce.csv or send_recv.csv. The
// time column is time_stats.<collective>.median, where <collective> is the
// file's collective column (all rows must agree).
func ReadVidurCollective(r io.Reader, file string) ([]CollectiveRow, error) {
	t, err := newCSVTable(r, file, 0)
	if err != nil {
		return nil, err
	}
	if err := t.require("num_workers", "size", "collective", "devices_per_node"); err != nil {
		return nil, err
	}
	var first *CollectiveRow // the file's first row: every row has its collective
	return readRowsOr(t, "no data rows", func(line int) (CollectiveRow, error) {
		var err error
		var row CollectiveRow
		row.Line = line
		row.Collective = t.str("collective")
		if row.Collective != "all_reduce" && row.Collective != "send_recv" {
			return row, &LineError{File: file, Line: line, Column: "collective", Msg: fmt.Sprintf("%q: want all_reduce or send_recv", row.Collective)}
		}
		if first != nil && first.Collective != row.Collective {
			return row, &LineError{File: file, Line: line, Column: "collective", Msg: fmt.Sprintf("%q, but line %d has %q", row.Collective, first.Line, first.Collective)}
		}
		tc := "time_stats." + row.Collective + ".median"
		if err := t.require(tc); err != nil {
			return row, err
		}
		if row.Workers, err = t.int(line, "num_workers", 1, maxTraceTP); err != nil {
			return row, err
		}
		if row.DevicesPerNode, err = t.int(line, "devices_per_node", 1, maxTraceTP); err != nil {
			return row, err
		}
		if row.Bytes, err = t.positive(line, "size"); err != nil {
			return row, err
		}
		ms, err := t.positive(line, tc)
		if err != nil {
			return row, err
		}
		row.Seconds = ms * 1e-3
		if first == nil {
			first = &row
		}
		return row, nil
	})
}

// AllReduceSamples returns the in-node all-reduces of rows (num_workers ==
// devices_per_node ≥ 2, as Vidur selects them for tensor parallelism) as
// OpAllReduce samples for GPU gpu.
func AllReduceSamples(rows []CollectiveRow, gpu, file string) []Sample {
	var out []Sample
	for _, r := range rows {
		if r.Collective != "all_reduce" || r.Workers != r.DevicesPerNode || r.Workers < 2 {
			continue
		}
		out = append(out, Sample{GPU: gpu, Name: "all_reduce", TP: r.Workers,
			Op:      models.Op{Kind: models.OpAllReduce, Count: 1, CommBytes: r.Bytes, Compute: models.BF16},
			Seconds: r.Seconds, Where: fmt.Sprintf("%s line %d", file, r.Line)})
	}
	return out
}

// CPUOverheadRow is one row of Vidur's historical cpu_overheads.csv: the
// median CPU time of each phase of one sarathi-serve iteration, seconds.
type CPUOverheadRow struct {
	Line                                                  int
	Model                                                 string
	Batch, TP                                             int
	Schedule, Sampler, PrepareInputs, ProcessModelOutputs float64 // *_median (sampler and prepare_inputs: the _e2e columns)
	RayComm                                               float64 // ray_comm_time_mean
}

// Total returns the CPU time of the iteration that Vidur adds to the model
// time when it models CPU overheads, less the Ray communication time (an
// artefact of sarathi-serve's Ray workers): schedule + sampler_e2e +
// prepare_inputs_e2e + process_model_outputs.
func (r CPUOverheadRow) Total() float64 {
	return r.Schedule + r.Sampler + r.PrepareInputs + r.ProcessModelOutputs
}

// ReadVidurCPUOverheads reads Vidur's historical cpu_overheads.csv.
func ReadVidurCPUOverheads(r io.Reader, file string) ([]CPUOverheadRow, error) {
	t, err := newCSVTable(r, file, 0)
	if err != nil {
		return nil, err
	}
	cols := []string{"schedule_median", "sampler_e2e_median", "prepare_inputs_e2e_median", "process_model_outputs_median", "ray_comm_time_mean"}
	if err := t.require(append([]string{"model_name", "batch_size", "tensor_parallel_degree"}, cols...)...); err != nil {
		return nil, err
	}
	return readRowsOr(t, "no data rows", func(line int) (CPUOverheadRow, error) {
		var err error
		row := CPUOverheadRow{Line: line, Model: t.str("model_name")}
		if row.Batch, err = t.int(line, "batch_size", 1, maxTraceTokens); err != nil {
			return row, err
		}
		if row.TP, err = t.int(line, "tensor_parallel_degree", 1, maxTraceTP); err != nil {
			return row, err
		}
		dst := []*float64{&row.Schedule, &row.Sampler, &row.PrepareInputs, &row.ProcessModelOutputs, &row.RayComm}
		for i, c := range cols {
			ms, err := t.positive(line, c)
			if err != nil {
				return row, err
			}
			*dst[i] = ms * 1e-3
		}
		return row, nil
	})
}

// VidurOptions says what LoadVidur reads.
type VidurOptions struct {
	// Node is the network/<node> directory of the GPU's all-reduce profile;
	// "" means "<gpu>_dgx" (the 8-GPU DGX the SXM parts of the catalog
	// sit in). A missing node directory is not an error: the profile then
	// has no fitted collective model.
	Node string
	// Catalog resolves the <org>/<model> directories to models by HFName;
	// nil means models.Builtin().
	Catalog *models.Catalog
	// SkipModels leaves out models by catalog name (for held-out fits).
	SkipModels []string
	// CPUOverheads is the cpu_overheads.csv to read, relative to the trace
	// directory. "" means historical/<gpu>/cpu_overheads.csv if it exists,
	// else the only historical/*/cpu_overheads.csv if there is exactly one
	// (the CPU side of an iteration does not depend on the GPU; Vidur's data
	// has an A100 one only), else none.
	CPUOverheads string
}

// LoadVidur reads the Vidur profiles of GPU gpu under dir (a copy of
// Vidur's data/profiling): every compute/<gpu>/<org>/<model>/mlp.csv, the
// all-reduce profile of the GPU's node and a cpu_overheads.csv (see
// VidurOptions.CPUOverheads). File names in samples and errors are
// relative to dir. A model directory whose HF name is not in the catalog is
// an error that says how to add it.
func LoadVidur(dir, gpu string, opt VidurOptions) (*Trace, error) {
	cat := opt.Catalog
	if cat == nil {
		cat = models.Builtin()
	}
	skip := map[string]bool{}
	for _, s := range opt.SkipModels {
		skip[s] = true
	}
	tr := &Trace{}
	files, err := filepath.Glob(filepath.Join(dir, "compute", gpu, "*", "*", "mlp.csv"))
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("calibrate: no compute/%s/<org>/<model>/mlp.csv under %s (is it a copy of Vidur's data/profiling?)", gpu, dir)
	}
	sort.Strings(files)
	for _, path := range files {
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		hf := filepath.Base(filepath.Dir(filepath.Dir(path))) + "/" + filepath.Base(filepath.Dir(path))
		m, err := cat.ByHFName(hf)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %s: no model with hf_name %q in the catalog: add it in a models file", rel, hf)
		}
		if skip[m.Name] {
			continue
		}
		rows, err := readFile(path, rel, ReadVidurMLP)
		if err != nil {
			return nil, err
		}
		ss, err := VidurMLPSamples(rows, m, gpu, rel)
		if err != nil {
			return nil, err
		}
		tr.Samples = append(tr.Samples, ss...)
		tr.Sources = append(tr.Sources, rel)
	}
	node := opt.Node
	if node == "" {
		node = gpu + "_dgx"
	}
	arPath := filepath.Join(dir, "network", node, "all_reduce.csv")
	if _, err := os.Stat(arPath); err == nil {
		rel := "network/" + node + "/all_reduce.csv"
		rows, err := readFile(arPath, rel, ReadVidurCollective)
		if err != nil {
			return nil, err
		}
		tr.Samples = append(tr.Samples, AllReduceSamples(rows, gpu, rel)...)
		tr.Sources = append(tr.Sources, rel)
	}
	rel := "historical/" + gpu + "/cpu_overheads.csv"
	if opt.CPUOverheads != "" {
		rel = filepath.ToSlash(opt.CPUOverheads)
	} else if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
		if all, _ := filepath.Glob(filepath.Join(dir, "historical", "*", "cpu_overheads.csv")); len(all) == 1 {
			r, _ := filepath.Rel(dir, all[0])
			rel = filepath.ToSlash(r)
		}
	}
	cpuPath := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Stat(cpuPath); err == nil || opt.CPUOverheads != "" {
		rows, err := readFile(cpuPath, rel, ReadVidurCPUOverheads)
		if err != nil {
			return nil, err
		}
		fit, err := FitIterOverhead(rows, rel)
		if err != nil {
			return nil, err
		}
		tr.IterOverhead = fit
		tr.Sources = append(tr.Sources, rel)
	}
	sort.Strings(tr.Sources)
	return tr, nil
}

func readFile[T any](path, name string, read func(io.Reader, string) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("calibrate: %w", err)
	}
	defer f.Close()
	return read(f, name)
}
