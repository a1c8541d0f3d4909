package calibrate

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// mlpHeader is a Vidur mlp.csv header reduced to the median columns (the
// reader ignores min/max/mean/std) plus an ignored column.
const mlpHeader = "time_stats.emb.median,time_stats.input_layernorm.median,time_stats.attn_pre_proj.median," +
	"time_stats.attn_rope.median,time_stats.attn_post_proj.median,time_stats.post_attention_layernorm.median," +
	"time_stats.mlp_up_proj.median,time_stats.mlp_act.median,time_stats.mlp_down_proj.median,time_stats.add.median," +
	"time_stats.add.std,n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers\n"

// mlpRow is a Llama-2-7B row at n tokens and TP tp with every median 0.5 ms
// except attn_pre_proj = qkv ms.
func mlpRow(qkv string, n, tp string) string {
	return "0.5,0.5," + qkv + ",0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.01,32,32,4096,11008,32000,True," + n + "," + tp + "\n"
}

func TestReadVidurMLP(t *testing.T) {
	src := mlpHeader + mlpRow("0.038", "1", "1") + mlpRow("0.589", "4096", "1") + mlpRow("0.591", "4096", "1")
	rows, err := ReadVidurMLP(strings.NewReader(src), "mlp.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Line != 2 || rows[2].Line != 4 || rows[1].Tokens != 4096 || rows[1].TP != 1 || !rows[0].Gated {
		t.Fatalf("rows: %+v", rows)
	}
	// 0.038 ms = 3.8e-5 s.
	if got := rows[0].Seconds[2]; math.Abs(got-3.8e-5) > 1e-18 {
		t.Errorf("attn_pre_proj at 1 token: %g s, want 3.8e-5", got)
	}

	m := mustModel(t, "llama-2-7b")
	ss, err := VidurMLPSamples(rows, m, "h100", "mlp.csv")
	if err != nil {
		t.Fatal(err)
	}
	// 2 (tp, tokens) groups × 10 operators.
	if len(ss) != 20 {
		t.Fatalf("%d samples, want 20", len(ss))
	}
	var qkv4096 *Sample
	for i := range ss {
		if ss[i].Op.Kind == models.OpQKV && ss[i].Op.Tokens == 4096 {
			qkv4096 = &ss[i]
		}
	}
	// The two 4096-token rows are averaged: (0.589 + 0.591)/2 = 0.590 ms.
	if qkv4096 == nil || math.Abs(qkv4096.Seconds-0.590e-3) > 1e-15 {
		t.Fatalf("qkv at 4096 tokens: %+v", qkv4096)
	}
	// FLOPs 2 · 4096 tokens · 4096 hidden · (32+2·32)·128 = 12288 outputs = 4.12316860416e11.
	if qkv4096.Op.FLOPs != 2*4096*4096*12288.0 || qkv4096.Op.Count != 1 || qkv4096.Where != "mlp.csv line 3" || qkv4096.Model != "llama-2-7b" {
		t.Errorf("qkv sample: %+v", qkv4096)
	}
	// Both layer norms become OpNorm samples.
	norms := 0
	for _, s := range ss {
		if s.Op.Kind == models.OpNorm {
			norms++
		}
	}
	if norms != 4 {
		t.Errorf("%d norm samples, want 2 per group × 2 groups", norms)
	}

	// A row whose shape is not the model's.
	other := mustModel(t, "llama-2-70b")
	if _, err := VidurMLPSamples(rows, other, "h100", "mlp.csv"); err == nil ||
		err.Error() != `calibrate: mlp.csv line 2: column "n_head": 32, but model "llama-2-70b" has 64` {
		t.Errorf("shape mismatch: %v", err)
	}
}

func TestReadVidurMLPErrors(t *testing.T) {
	row := mlpRow("0.038", "1", "1")
	cases := []struct {
		name, src, want string
	}{
		{"empty", "", "calibrate: mlp.csv: empty file: no header"},
		{"no rows", mlpHeader, "calibrate: mlp.csv: no data rows"},
		{"missing column", strings.Replace(mlpHeader, ",num_tokens", ",tokens", 1) + row, `calibrate: mlp.csv line 1: column "num_tokens": missing column`},
		{"no operator", "num_tokens,num_tensor_parallel_workers,n_head,n_kv_head,n_embd,n_expanded_embd,use_gated_mlp\n1,1,32,32,4096,11008,True\n",
			"calibrate: mlp.csv line 1: no time_stats.<op>.median column"},
		{"bad integer", mlpHeader + row + mlpRow("0.04", "x", "1"), `calibrate: mlp.csv line 3: column "num_tokens": not an integer: "x"`},
		{"zero tokens", mlpHeader + mlpRow("0.04", "0", "1"), `calibrate: mlp.csv line 2: column "num_tokens": 0 is outside [1, 4194304]`},
		{"negative time", mlpHeader + mlpRow("-0.04", "1", "1"), `calibrate: mlp.csv line 2: column "time_stats.attn_pre_proj.median": must be finite and > 0, got -0.04`},
		{"NaN time", mlpHeader + mlpRow("NaN", "1", "1"), `calibrate: mlp.csv line 2: column "time_stats.attn_pre_proj.median": must be finite and > 0, got NaN`},
		{"not a number", mlpHeader + mlpRow("fast", "1", "1"), `calibrate: mlp.csv line 2: column "time_stats.attn_pre_proj.median": not a number: "fast"`},
		{"bad bool", mlpHeader + strings.Replace(row, "True", "yes", 1), `calibrate: mlp.csv line 2: column "use_gated_mlp": not a boolean: "yes"`},
		{"short row", mlpHeader + "0.5,0.5\n", "calibrate: mlp.csv line 2: wrong number of fields"},
		{"bad quote", mlpHeader + row + "\"0.5,0.5\n", "calibrate: mlp.csv line 3"},
		{"duplicate column", "a,a\n1,2\n", `calibrate: mlp.csv line 1: column "a": duplicate column`},
	}
	for _, c := range cases {
		_, err := ReadVidurMLP(strings.NewReader(c.src), "mlp.csv")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want prefix %q", c.name, err, c.want)
		}
		var le *LineError
		if err != nil && !errors.As(err, &le) {
			t.Errorf("%s: %T is not a *LineError", c.name, err)
		}
	}
}

const collHeader = ",time_stats.all_reduce.min,time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node,max_devices_per_node\n"

func TestReadVidurCollective(t *testing.T) {
	src := collHeader +
		"0,0.01,0.037,0,8,2048,all_reduce,8,8\n" + // in node, 8 GPUs
		"1,0.01,0.040,0,16,2048,all_reduce,8,8\n" + // spans two nodes: left out
		"2,0.01,0.300,0,2,67108864,all_reduce,2,8\n"
	rows, err := ReadVidurCollective(strings.NewReader(src), "all_reduce.csv")
	if err != nil {
		t.Fatal(err)
	}
	ss := AllReduceSamples(rows, "h100", "all_reduce.csv")
	if len(ss) != 2 || ss[0].TP != 8 || ss[0].Op.CommBytes != 2048 || math.Abs(ss[0].Seconds-37e-6) > 1e-18 ||
		ss[1].TP != 2 || ss[1].Where != "all_reduce.csv line 4" {
		t.Errorf("samples: %+v", ss)
	}
	for _, c := range []struct{ name, src, want string }{
		{"mixed collectives", collHeader + "0,0.01,0.037,0,8,2048,all_reduce,8,8\n0,0.01,0.037,0,8,2048,send_recv,8,8\n",
			`calibrate: all_reduce.csv line 3: column "collective": "send_recv", but line 2 has "all_reduce"`},
		{"unknown collective", collHeader + "0,0.01,0.037,0,8,2048,gather,8,8\n", `calibrate: all_reduce.csv line 2: column "collective": "gather"`},
		{"zero size", collHeader + "0,0.01,0.037,0,8,0,all_reduce,8,8\n", `calibrate: all_reduce.csv line 2: column "size": must be finite and > 0`},
		{"no time column", ",rank,num_workers,size,collective,devices_per_node\n0,0,8,2048,all_reduce,8\n",
			`calibrate: all_reduce.csv line 1: column "time_stats.all_reduce.median": missing column`},
	} {
		if _, err := ReadVidurCollective(strings.NewReader(c.src), "all_reduce.csv"); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want prefix %q", c.name, err, c.want)
		}
	}
}

func TestCPUOverheads(t *testing.T) {
	head := ",schedule_median,sampler_e2e_median,prepare_inputs_e2e_median,process_model_outputs_median,model_name,batch_size,tensor_parallel_degree,ray_comm_time_mean\n"
	// Phases sum to 0.8 + 0.04·batch ms at TP 1: 0.2 + 0.3 + (0.2 + 0.04·b) + 0.1.
	src := head +
		"0,0.2,0.3,0.52,0.1,m,8,1,0.2\n" + // 0.2+0.04·8 = 0.52
		"1,0.2,0.3,1.48,0.1,m,32,1,0.3\n" + // 0.2+0.04·32 = 1.48
		"2,0.2,0.3,5.32,0.1,m,128,1,1.0\n" + // 0.2+0.04·128 = 5.32
		"3,0.9,0.9,0.9,0.9,m,8,4,6.0\n" // TP 4: left out of the fit
	rows, err := ReadVidurCPUOverheads(strings.NewReader(src), "cpu_overheads.csv")
	if err != nil {
		t.Fatal(err)
	}
	f, err := FitIterOverhead(rows, "cpu_overheads.csv")
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.Fixed-0.8e-3) > 1e-12 || math.Abs(f.PerRequest-0.04e-3) > 1e-12 || f.Rows != 3 || f.MinBatch != 8 || f.MaxBatch != 128 {
		t.Errorf("fit %+v, want 0.8 ms + 0.04 ms/request over 3 rows, batches 8–128", f)
	}
	if _, err := FitIterOverhead(rows[3:], "x.csv"); err == nil {
		t.Error("fit without TP-1 rows accepted")
	}
	if _, err := ReadVidurCPUOverheads(strings.NewReader(head+"0,0.2,0.3,0.52,0.1,m,8,1\n"), "c.csv"); err == nil ||
		!strings.HasPrefix(err.Error(), "calibrate: c.csv line 2: wrong number of fields") {
		t.Errorf("short row: %v", err)
	}
}

// The shared Vidur data: file counts and sample counts follow from
// SOURCE.md's description of the grid.
func TestLoadVidurShared(t *testing.T) {
	dir := vidurDir(t)
	tr, err := LoadVidur(dir, "h100", VidurOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 6 H100 model files, the h100_dgx all-reduce profile and, there being no
	// historical/h100, the only CPU-overhead profile, historical/a100's.
	if len(tr.Sources) != 8 || tr.IterOverhead == nil || tr.IterOverhead.Source != "historical/a100/cpu_overheads.csv" {
		t.Errorf("sources %v, iteration overhead %+v", tr.Sources, tr.IterOverhead)
	}
	count := map[string]int{}
	for _, s := range tr.Samples {
		count[s.Model]++
	}
	// Llama-2-7B: 1,044 rows = 4 TP × 261, of which 259 distinct token counts (2048 and 4096 twice):
	// 4 × 259 = 1,036 groups × 10 operators = 10,360 samples.
	if count["llama-2-7b"] != 10360 {
		t.Errorf("llama-2-7b: %d samples, want 10360", count["llama-2-7b"])
	}
	// phi-2: TP 1 only, 259 groups × 9 operators (no post_attention_layernorm) = 2,331.
	if count["phi-2"] != 2331 {
		t.Errorf("phi-2: %d samples, want 2331", count["phi-2"])
	}
	// All-reduce: in-node rows at TP 2, 4 and 8.
	if count[""] == 0 {
		t.Error("no all-reduce samples")
	}
	if _, err := LoadVidur(dir, "tpu", VidurOptions{}); err == nil {
		t.Error("a GPU without files accepted")
	}
	if _, err := LoadVidur(filepath.Join(dir, "nowhere"), "h100", VidurOptions{}); err == nil {
		t.Error("a missing directory accepted")
	}
}
