package validate

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/realrun"
	"github.com/servesim/servesim/experiments/scenario"
	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// Issue 13 (H100 Llama-2-7B TPOT +9 % to +19 %): a diagnosis of the
// simulated decode step, kept as a test.
//
//  1. Every non-attention operator of a layer (two norms, QKV, RoPE, output
//     projection, gate+up, SiLU-and-mul, down, two residual adds) is checked
//     against Vidur's measured H100 medians for Llama-2-7B itself at the
//     decode batch sizes of the runs: it agrees (within 3 %). Vidur's stack
//     times the adds as their own kernels, so this check prices them so
//     (engine.no_fused_add_norm); the runs' vLLM fuses them into RMSNorm,
//     as part 2 prices them.
//  2. For each measured Llama-2-7B stage, the decode attention time vLLM
//     must have had is what its TPOT leaves after those operators and the
//     LM head (the step is GPU-bound: CPU 0.81 ms + 42 µs per request, well
//     under the kernels, hides behind the previous step under async
//     scheduling), at the stage's mean decode batch (Little's law: rate ×
//     (E2E − TTFT)) and mean context (prompt + output/2). The test logs the
//     bandwidth that implies next to the simulated one.
//
// Run with -v to see the figures.
func TestH100Llama27BDecodeBreakdown(t *testing.T) {
	data := filepath.Join("..", "..", "..", "shared", "data")
	c := openDecodeCase(t, data, "llama-2-7b-tp1", 5)
	st, m := c.p.Step, c.p.Step.Model()
	// The simple mistakes the issue asks about: MHA with 32 KV heads of 128,
	// vocab 32000, 32 layers (config.json of meta-llama/Llama-2-7b-hf), BF16.
	if m.KVHeads != 32 || m.HeadDim != 128 || m.Vocab != 32000 || m.Layers != 32 || st.Parallel().Weights != models.BF16 {
		t.Errorf("llama-2-7b: kv_heads %d, head_dim %d, vocab %d, layers %d, weights %v; want 32, 128, 32000, 32, bf16",
			m.KVHeads, m.HeadDim, m.Vocab, m.Layers, st.Parallel().Weights)
	}
	c.checkNonAttention(t, filepath.Join(data, "vidur-profiling", "compute", "h100", "meta-llama", "Llama-2-7b-hf", "mlp.csv"), 1)
	for _, r := range c.stages {
		row := r.Stage
		b := meanDecodeBatch(row)
		k := decodeParts(st, b)
		rest := k.perLayer*float64(m.Layers) + k.lmHead
		implied := row.TPOTMean - rest
		bw := st.GPU().MemBW
		t.Logf("%s/%s: %d decodes × %.0f ctx; measured TPOT %.2f ms; simulated kernels %.2f ms (attention %.2f ms at %.2f TB/s = %.0f %% of peak); "+
			"TPOT leaves %.2f ms for attention: %.2f TB/s = %.0f %% of peak",
			row.Experiment[16:], row.Scope, b.Decodes, float64(b.DecodeCtx)/float64(b.Decodes), row.TPOTMean*1e3, (rest+k.attn)*1e3, k.attn*1e3,
			k.attnBytes/k.attn/1e12, 100*k.attnBytes/k.attn/bw, implied*1e3, k.attnBytes/implied/1e12, 100*k.attnBytes/implied/bw)
	}
}

// decodeCase is what the breakdown tests share: one experiment's stage
// rows of runs.csv, its plan as the validation suite simulates it
// (StageScenario on its summary row), and the same plan with the residual
// adds priced as their own kernels (engine.no_fused_add_norm), as Vidur's
// stack times them.
type decodeCase struct {
	stages []*realrun.Run
	p, pv  *scenario.Plan
}

// openDecodeCase reads the experiment whose name contains exp from
// data's vllm-h100-runs (skipping when absent) and wants its summary row
// and wantStages stage rows.
func openDecodeCase(t *testing.T, data, exp string, wantStages int) decodeCase {
	t.Helper()
	runsCSV := filepath.Join(data, "vllm-h100-runs", "runs.csv")
	if _, err := os.Stat(runsCSV); err != nil {
		t.Skipf("%s not here (../shared/data): %v", runsCSV, err)
	}
	runs, err := realrun.Open(runsCSV)
	if err != nil {
		t.Fatal(err)
	}
	var from *realrun.Run
	var c decodeCase
	for _, r := range runs {
		if r.Stage == nil || !strings.Contains(r.Stage.Experiment, exp) {
			continue
		}
		if r.Stage.Scope != "summary" {
			c.stages = append(c.stages, r)
		} else if from == nil {
			from = r
		}
	}
	if from == nil || len(c.stages) != wantStages {
		t.Fatalf("runs.csv: want %s's summary rows and %d stage rows, got %d stages", exp, wantStages, len(c.stages))
	}
	s, err := StageScenario(from, scenario.Scenario{})
	if err != nil {
		t.Fatal(err)
	}
	if c.p, err = s.Resolve(); err != nil {
		t.Fatal(err)
	}
	ev := scenario.Engine{}
	if s.Engine != nil {
		ev = *s.Engine
	}
	ev.NoFusedAddNorm = true
	s.Engine = &ev
	if c.pv, err = s.Resolve(); err != nil {
		t.Fatal(err)
	}
	return c
}

// checkNonAttention compares each layer's non-attention operators (adds
// as their own kernels) with Vidur's medians in mlp.csv at TP tp, at the
// runs' decode batch sizes: within 3 %.
func (c decodeCase) checkNonAttention(t *testing.T, mlpCSV string, tp int) {
	t.Helper()
	if _, err := os.Stat(mlpCSV); err != nil {
		t.Skipf("%s not here (../shared/data): %v", mlpCSV, err)
	}
	vidur := vidurLayerMedians(t, mlpCSV, tp)
	for _, n := range []int{16, 24, 40, 56} {
		got := decodeParts(c.pv.Step, models.Batch{Decodes: n, DecodeCtx: int64(n) * 700}).perLayer
		want, ok := vidur[n]
		if !ok {
			t.Fatalf("mlp.csv: no TP %d row with num_tokens %d", tp, n)
		}
		t.Logf("%2d decodes: non-attention operators %.1f µs/layer, Vidur's medians %.1f µs (%+.1f %%)", n, got*1e6, want*1e6, 100*(got/want-1))
		if math.Abs(got/want-1) > 0.03 {
			t.Errorf("%d decodes: non-attention %.1f µs/layer vs Vidur's %.1f µs: more than 3 %% apart", n, got*1e6, want*1e6)
		}
	}
}

// meanDecodeBatch is a stage's mean decode batch: rate × (E2E − TTFT)
// decoding requests (Little's law) at the mean context, prompt +
// output/2.
func meanDecodeBatch(row *realrun.StageRow) models.Batch {
	d := int(math.Round(row.RequestsPerSec * (row.E2E.Mean - row.TTFT.Mean)))
	ctx := row.PromptLenMean + float64(row.OutputLen)/2
	return models.Batch{Decodes: d, DecodeCtx: int64(math.Round(float64(d) * ctx))}
}

// stepParts is a step's kernel seconds by part.
type stepParts struct {
	perLayer        float64 // non-attention operators of one layer
	allReduce       float64 // every all-reduce of the step
	attn, attnBytes float64 // decode attention, and its bytes
	lmHead          float64
}

// decodeParts splits st's kernels over b (prefill attention and the
// embedding left out: the batches here are decodes).
func decodeParts(st *hardware.StepModel, b models.Batch) stepParts {
	var k stepParts
	for _, o := range st.Breakdown(b) {
		switch o.Kind {
		case models.OpAttnDecode:
			k.attn, k.attnBytes = o.Seconds, o.Bytes
		case models.OpAttnPrefill, models.OpEmbed:
		case models.OpLMHead:
			k.lmHead = o.Seconds
		case models.OpAllReduce:
			k.allReduce += o.Seconds
		default:
			k.perLayer += o.Seconds
		}
	}
	k.perLayer /= float64(st.Model().Layers)
	return k
}

// vidurLayerMedians returns, per num_tokens at TP tp, the sum of the median
// times (seconds) of one layer's non-attention operators in a Vidur mlp.csv.
func vidurLayerMedians(t *testing.T, path string, tp int) map[int]float64 {
	t.Helper()
	recs, col, err := readCSVColumns(path)
	if err != nil {
		t.Fatal(err)
	}
	ops := []string{"input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
		"mlp_up_proj", "mlp_act", "mlp_down_proj"}
	num := func(r []string, name string) float64 {
		i, ok := col[name]
		if !ok {
			t.Fatalf("%s: no column %q", path, name)
		}
		v, err := strconv.ParseFloat(r[i], 64)
		if err != nil {
			t.Fatalf("%s: column %q: %v", path, name, err)
		}
		return v
	}
	out := map[int]float64{}
	for _, r := range recs[1:] {
		if num(r, "num_tensor_parallel_workers") != float64(tp) {
			continue
		}
		ms := 2 * num(r, "time_stats.add.median") // two residual adds a layer (one "add" column)
		for _, o := range ops {
			ms += num(r, "time_stats."+o+".median")
		}
		out[int(num(r, "num_tokens"))] = ms / 1e3
	}
	return out
}

// The same diagnosis for the TP runs (issue 13: CodeLlama-34B TP 2 TPOT
// +6 / +11 %, Llama-2-70B TP 4 +2 / +6 %): each layer's non-attention
// operators against Vidur's measured H100 medians for the model itself at
// its TP degree (within 3 %), and, logged, the simulated kernels at each
// stage's mean decode batch (Little's law) beside its measured TPOT, split
// into the non-attention operators, the all-reduces, decode attention and
// the LM head. Run with -v to see the figures: the 34B's kernels alone
// come out 4 % (stage_0) and 7 % (stage_1) above the measured TPOT, 87 %
// of them the operators that agree with Vidur's 2024 timings.
func TestH100TPDecodeBreakdown(t *testing.T) {
	data := filepath.Join("..", "..", "..", "shared", "data")
	for _, c := range []struct {
		exp, vidur string
		tp         int
	}{
		{"codellama-34b-tp2", "codellama/CodeLlama-34b-Instruct-hf", 2},
		{"llama-2-70b-tp4", "meta-llama/Llama-2-70b-hf", 4},
	} {
		t.Run(c.exp, func(t *testing.T) {
			dc := openDecodeCase(t, data, c.exp, 2)
			st := dc.p.Step
			if st.Parallel().TP != c.tp {
				t.Fatalf("TP %d, want %d", st.Parallel().TP, c.tp)
			}
			dc.checkNonAttention(t, filepath.Join(data, "vidur-profiling", "compute", "h100", c.vidur, "mlp.csv"), c.tp)
			layers := float64(st.Model().Layers)
			for _, r := range dc.stages {
				row := r.Stage
				b := meanDecodeBatch(row)
				k := decodeParts(st, b)
				tot := k.perLayer*layers + k.allReduce + k.attn + k.lmHead
				t.Logf("%s: %d decodes × %.0f ctx; measured TPOT %.2f ms; simulated kernels %.2f ms (%+.1f %%) = non-attention %.2f + all-reduce %.2f + attention %.2f + LM head %.2f",
					row.Scope, b.Decodes, float64(b.DecodeCtx)/float64(b.Decodes), row.TPOTMean*1e3, tot*1e3, 100*(tot/row.TPOTMean-1),
					k.perLayer*layers*1e3, k.allReduce*1e3, k.attn*1e3, k.lmHead*1e3)
			}
		})
	}
}
