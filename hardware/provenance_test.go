package hardware

// Provenance tests: the defaults of DefaultEfficiency and the measured
// link latencies of gpus.toml are re-derived here from the Vidur profiles in
// ../shared/data/vidur-profiling (see its SOURCE.md for columns and units),
// so that a changed constant or a changed reading of the data fails a test.
// They skip when the data directory is absent.

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/servesim/servesim/models"
)

// dataDir finds ../shared/data: relative to the repository root, or to this
// package's directory.
func dataDir(t *testing.T) string {
	t.Helper()
	for _, d := range []string{"../../shared/data", "../shared/data", "../../../shared/data"} {
		if _, err := os.Stat(filepath.Join(d, "vidur-profiling", "SOURCE.md")); err == nil {
			return d
		}
	}
	t.Skip("../shared/data/vidur-profiling not found")
	return ""
}

// readCSV returns the rows of a CSV file as maps from column name to value.
func readCSV(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	rows := make([]map[string]string, 0, len(recs)-1)
	for _, r := range recs[1:] {
		m := make(map[string]string, len(r))
		for i, v := range r {
			m[recs[0][i]] = v
		}
		rows = append(rows, m)
	}
	return rows
}

func num(t *testing.T, row map[string]string, col string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(row[col], 64)
	if err != nil {
		t.Fatalf("column %s: %v", col, err)
	}
	return v
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// TestProvenanceGEMM re-derives Compute, Memory and OpOverhead of
// DefaultEfficiency from the per-layer operator timings (median column, ms)
// of every gated model profiled on A100 and H100 (phi-2, not gated, is left
// out).
//
//   - Compute: for QKV, output, up and down GEMMs at 4,096 tokens and every
//     TP, 2·M·K·N FLOPs / time / dense BF16 peak; the median over all.
//   - OpOverhead: median time of norm, RoPE, activation and add at 1 token.
//   - Memory: the same GEMMs at 1 token and TP 1 move weights + activations
//     = 2·(K·N + K + N) bytes; fraction of HBM bandwidth after taking
//     OpOverhead off the time; the median.
func TestProvenanceGEMM(t *testing.T) {
	dir := dataDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "vidur-profiling/compute/*/*/*/mlp.csv"))
	if len(files) == 0 {
		t.Fatal("no mlp.csv files")
	}
	eff := DefaultEfficiency()
	var compute, memory, small []float64
	for _, path := range files {
		dev := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(path)))) // compute/<dev>/<org>/<model>/mlp.csv
		g := mustGPU(t, dev)
		rows := readCSV(t, path)
		if rows[0]["use_gated_mlp"] != "True" {
			continue
		}
		// Group rows by (tp, tokens); boundary token counts appear twice: average them.
		type key struct{ tp, tok int }
		groups := map[key][]map[string]string{}
		for _, r := range rows {
			k := key{int(num(t, r, "num_tensor_parallel_workers")), int(num(t, r, "num_tokens"))}
			groups[k] = append(groups[k], r)
		}
		mean := func(rs []map[string]string, op string) float64 {
			s := 0.0
			for _, r := range rs {
				s += num(t, r, "time_stats."+op+".median")
			}
			return s / float64(len(rs)) * 1e-3 // ms → s
		}
		for _, tp := range []int{1, 2, 4, 8} {
			for _, tok := range []int{1, 4096} {
				rs := groups[key{tp, tok}]
				if len(rs) == 0 {
					continue
				}
				r := rs[0]
				h, nh, nkv, ff := num(t, r, "n_embd"), num(t, r, "n_head"), num(t, r, "n_kv_head"), num(t, r, "n_expanded_embd")
				hd, p := h/nh, float64(tp)
				T := float64(tok)
				gemms := []struct {
					op   string
					k, n float64
				}{
					{"attn_pre_proj", h, (nh + 2*nkv) * hd / p},
					{"attn_post_proj", nh * hd / p, h},
					{"mlp_up_proj", h, 2 * ff / p},
					{"mlp_down_proj", ff / p, h},
				}
				for _, gm := range gemms {
					sec := mean(rs, gm.op)
					switch {
					case tok == 4096:
						compute = append(compute, 2*T*gm.k*gm.n/sec/g.BF16FLOPS)
					case tp == 1:
						bytes := 2 * (gm.k*gm.n + T*gm.k + T*gm.n)
						memory = append(memory, bytes/(sec-eff.OpOverhead)/g.MemBW)
					}
				}
				if tok == 1 {
					for _, op := range []string{"input_layernorm", "attn_rope", "mlp_act", "add"} {
						small = append(small, mean(rs, op))
					}
				}
			}
		}
	}
	// 12 gated model files × 4 TP × 4 GEMMs = 192 large-GEMM cases; 12 × 4 = 48 decode cases.
	if len(compute) != 192 || len(memory) != 48 || len(small) != 192 {
		t.Fatalf("cases: %d compute, %d memory, %d small; want 192, 48, 192", len(compute), len(memory), len(small))
	}
	checks := []struct {
		name        string
		data        []float64
		def, absTol float64
	}{
		{"Compute", compute, eff.Compute, 0.01},  // median 0.737
		{"Memory", memory, eff.Memory, 0.01},     // median 0.805
		{"OpOverhead", small, eff.OpOverhead, 0}, // median 4.0 µs exactly (µs-resolution data)
	}
	for _, c := range checks {
		m := median(c.data)
		t.Logf("%s: median %.4g over %d cases (default %.4g)", c.name, m, len(c.data), c.def)
		if math.Abs(m-c.def) > c.absTol+1e-12 {
			t.Errorf("%s default %.4g, but the profiles' median is %.4g", c.name, c.def, m)
		}
	}
}

// allReduceRows returns, for an 8-GPU DGX profile, the in-node all-reduce
// rows (num_workers == devices_per_node).
func allReduceRows(t *testing.T, node string) []map[string]string {
	rows := readCSV(t, filepath.Join(dataDir(t), "vidur-profiling/network", node, "all_reduce.csv"))
	var out []map[string]string
	for _, r := range rows {
		if r["num_workers"] == r["devices_per_node"] {
			out = append(out, r)
		}
	}
	return out
}

// TestProvenanceLinkLatency: LinkLatency of a100 and h100 is the median NCCL
// all-reduce time of messages of at most 64 KiB (2 KiB–58 KiB, 8 sizes) at
// TP 2, 4 and 8: 24 timings per GPU.
func TestProvenanceLinkLatency(t *testing.T) {
	for _, c := range []struct{ gpu, node string }{{"a100", "a100_dgx"}, {"h100", "h100_dgx"}} {
		var v []float64
		for _, r := range allReduceRows(t, c.node) {
			if num(t, r, "size") <= 64<<10 {
				v = append(v, num(t, r, "time_stats.all_reduce.median")*1e-3)
			}
		}
		if len(v) != 24 {
			t.Fatalf("%s: %d small all-reduce timings, want 24", c.node, len(v))
		}
		g := mustGPU(t, c.gpu)
		if m := median(v); math.Abs(m-g.LinkLatency) > 1e-9 {
			t.Errorf("%s link_latency %g s, profile median %g s", c.gpu, g.LinkLatency, m)
		}
	}
}

// TestProvenanceAllReduce compares the roofline all-reduce time (ring
// formula, default Link efficiency, the GPU's LinkLatency) with the measured
// NCCL times of 1–64 MiB messages at TP 2, 4, 8. The median ratio
// predicted/measured must lie within ±30 % for both GPUs: one Link
// efficiency serves H100 (fitted η ≈ 0.68–0.81) and A100 (≈ 0.57–0.61), so
// H100 is predicted a little slow and A100 a little fast.
func TestProvenanceAllReduce(t *testing.T) {
	for _, c := range []struct{ gpu, node string }{{"a100", "a100_dgx"}, {"h100", "h100_dgx"}} {
		g := mustGPU(t, c.gpu)
		var ratios []float64
		for _, r := range allReduceRows(t, c.node) {
			size := num(t, r, "size")
			n := int(num(t, r, "num_workers"))
			if size < 1<<20 || n > 8 {
				continue
			}
			rf := Roofline{GPU: g, Eff: DefaultEfficiency(), TP: n}
			pred := rf.OpTime(&models.Op{Kind: models.OpAllReduce, CommBytes: size})
			ratios = append(ratios, pred/(num(t, r, "time_stats.all_reduce.median")*1e-3))
		}
		m := median(ratios)
		t.Logf("%s: predicted/measured median %.3f over %d messages", c.gpu, m, len(ratios))
		if m < 0.7 || m > 1.3 {
			t.Errorf("%s: roofline all-reduce / measured = %.3f, outside [0.7, 1.3]", c.gpu, m)
		}
	}
}
