package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servesim/servesim/experiments/scenario"
)

// trtllm-serve's spelling (trtllmtable.go lists it with TensorRT-LLM's
// meaning). The flags that mean servesim's field as they stand bind its
// variable; the others are read into trtllmArgs and set servesim's fields
// after the scenario is built (post), each recorded as set explicitly:
//
//	trtllm-serve                                servesim
//	--max_batch_size N                          --max-num-seqs N
//	--max_num_tokens N                          --max-num-batched-tokens N
//	--max_seq_len N                             --max-model-len N
//	--tp_size N, --pp_size N                    --tp N, --pp N
//	--ep_size E                                 --expert-parallel (E = tp), off at 1
//	--kv_cache_free_gpu_memory_fraction F       engine.trtllm.free_gpu_memory_fraction F
//	--enable_chunked_prefill                    engine.trtllm.enable_chunked_prefill
//	--extra_llm_api_options FILE                the file's keys (trtllmconfig.go)
//
// Any of them selects --engine trtllm.
type trtllmArgs struct {
	fs       *pflag.FlagSet
	epSize   int
	fraction float64
	chunked  bool
	extra    string
	words    map[string]*vllmWord
	notes    []string
}

func addTRTLLMFlags(fs *pflag.FlagSet, s *scenario.Scenario) *trtllmArgs {
	g := &trtllmArgs{fs: fs, words: map[string]*vllmWord{}}
	b := &s.Batch
	fs.IntVar(&b.MaxNumSeqs, "max_batch_size", 0, "trtllm-serve's name of --max-num-seqs (selects --engine trtllm)")
	fs.IntVar(&b.MaxNumBatchedTokens, "max_num_tokens", 0, "trtllm-serve's name of --max-num-batched-tokens (selects --engine trtllm)")
	fs.IntVar(&b.MaxModelLen, "max_seq_len", 0, "trtllm-serve's name of --max-model-len (selects --engine trtllm)")
	fs.IntVar(&s.TP, "tp_size", 0, "trtllm-serve's name of --tp (selects --engine trtllm)")
	fs.IntVar(&s.PP, "pp_size", 0, "trtllm-serve's name of --pp (selects --engine trtllm)")
	fs.IntVar(&g.epSize, "ep_size", 0, "trtllm-serve's expert-parallel size: 1 (no EP) or tp_size (sets --expert-parallel; selects --engine trtllm)")
	fs.Float64Var(&g.fraction, "kv_cache_free_gpu_memory_fraction", 0, "TensorRT-LLM's KV fraction of the memory free after weights and profiling (default 0.9; selects --engine trtllm)")
	fs.BoolVar(&g.chunked, "enable_chunked_prefill", false, "TensorRT-LLM's chunked prefill (selects --engine trtllm)")
	fs.StringVar(&g.extra, "extra_llm_api_options", "", "a JSON (or simple YAML) file of TensorRT-LLM LLM-API options (selects --engine trtllm)")
	for _, f := range trtllmFlags {
		if f.class != honoured {
			hiddenWord(fs, g.words, f.name, f.kind == vSwitch, fmt.Sprintf("trtllm-serve's --%s (%s in servesim)", f.name, f.class))
		}
	}
	return g
}

func init() {
	for name, f := range map[string]scenarioFlag{
		"max_batch_size": scenarioFlags["max-num-seqs"],
		"max_num_tokens": scenarioFlags["max-num-batched-tokens"],
		"max_seq_len":    scenarioFlags["max-model-len"],
		"tp_size":        scenarioFlags["tp"],
		"pp_size":        scenarioFlags["pp"],
	} {
		scenarioFlags[name] = f
	}
}

// given names the trtllm-serve flags of the command line.
func (g *trtllmArgs) given() []string {
	var out []string
	for _, f := range trtllmFlags {
		if g.fs.Changed(f.name) {
			out = append(out, f.name)
		}
	}
	return out
}

// pre checks the trtllm-serve flags and selects the trtllm engine. It
// returns the no-effect ones given and an error naming every refused
// flag, a flag mixed with servesim's spelling of its field, or another
// --engine.
func (g *trtllmArgs) pre() (ignored []string, err error) {
	fs := g.fs
	given := g.given()
	if len(given) == 0 {
		return nil, nil
	}
	var bad []string
	for _, f := range trtllmFlags {
		if !fs.Changed(f.name) {
			continue
		}
		for _, o := range f.other {
			if fs.Lookup(o) != nil && fs.Changed(o) {
				return nil, fmt.Errorf("run: --%s (trtllm-serve's spelling) and --%s set the same field (%s): give one", f.name, o, f.equiv)
			}
		}
		w := g.words[f.name]
		if w == nil {
			continue
		}
		spelled := "--" + f.name
		if !w.bool {
			spelled += " " + w.val
		}
		if f.class == noEffect || slices.Contains(f.dflt, w.val) {
			ignored = append(ignored, spelled)
			continue
		}
		bad = append(bad, spelled+": "+f.note)
	}
	if len(bad) > 0 {
		return ignored, fmt.Errorf("run: trtllm-serve flag(s) servesim does not model: %s", strings.Join(bad, "; "))
	}
	if e := fs.Lookup("engine"); e != nil && fs.Changed("engine") && e.Value.String() != "trtllm" {
		return ignored, fmt.Errorf("run: trtllm-serve's flags (--%s) with --engine %s: they are TensorRT-LLM's options; give --engine trtllm or drop them", strings.Join(given, ", --"), e.Value.String())
	}
	if !fs.Changed("engine") {
		if err := fs.Set("engine", "trtllm"); err != nil {
			return ignored, err
		}
		g.notes = append(g.notes, "trtllm-serve flags select --engine trtllm")
	}
	return ignored, nil
}

// setEP sets expert parallelism from TensorRT-LLM's EP size n.
func setEP(d *scenario.Scenario, n int) error {
	tp := max(d.TP, 1)
	switch n {
	case 1:
		d.ExpertParallel = false
	case tp:
		d.ExpertParallel = true
	default:
		return fmt.Errorf("EP size %d: servesim shards the routed experts over every GPU of the TP group (tp %d), so the EP size is 1 or %d; an EP size below tp_size (an MoE TP inside an EP rank) is not modelled", n, tp, tp)
	}
	return nil
}

// post applies --ep_size, --kv_cache_free_gpu_memory_fraction,
// --enable_chunked_prefill and --extra_llm_api_options to base (after
// override; the file's options win over the flags, as trtllm-serve's
// "overwrites the parameters specified by trtllm-serve").
func (g *trtllmArgs) post(base *scenario.Scenario) error {
	fs := g.fs
	if fs.Changed("ep_size") {
		if err := setEP(base, g.epSize); err != nil {
			return fmt.Errorf("run: --ep_size: %v", err)
		}
		base.SetByFlag("expert_parallel")
	}
	if fs.Changed("kv_cache_free_gpu_memory_fraction") {
		trtllmOf(base).FreeGPUMemoryFraction = g.fraction
		base.SetByFlag("engine.trtllm.free_gpu_memory_fraction")
	}
	if fs.Changed("enable_chunked_prefill") {
		trtllmOf(base).EnableChunkedPrefill = g.chunked
		base.SetByFlag("engine.trtllm.enable_chunked_prefill")
	}
	if fs.Changed("extra_llm_api_options") {
		set, err := applyLLMAPIOptions(g.extra, base)
		if err != nil {
			return err
		}
		if len(set) > 0 {
			g.notes = append(g.notes, "--extra_llm_api_options: "+strings.Join(set, ", "))
		}
	}
	return nil
}

// line is the run header's line naming what the trtllm-serve flags became.
func (g *trtllmArgs) line() string {
	given := g.given()
	if len(given) == 0 {
		return ""
	}
	s := fmt.Sprintf("trtllm-serve flags (--%s) read onto the trtllm engine model", strings.Join(given, ", --"))
	if len(g.notes) > 0 {
		s += ": " + strings.Join(g.notes, "; ")
	}
	return s + "."
}
