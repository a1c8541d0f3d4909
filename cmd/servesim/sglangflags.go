package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servesim/servesim/experiments/scenario"
)

// SGLang's spelling of servesim's flags (sglangtable.go lists them with
// SGLang's meaning). The ones that mean servesim's field as they stand
// bind its variable, as vLLM's aliases do; the others are read into
// sglangArgs and, after parsing, set servesim's flags (pre) or fields
// (post), each recorded as set explicitly:
//
//	SGLang (launch_server)                      servesim
//	--tp-size N                                 --tp N
//	--pp-size N                                 --pp N
//	--dp-size N                                 --replicas N
//	--tp-size T --dp-size D --enable-dp-attention  --tp T/D --dp D
//	--ep-size E (--ep, --expert-parallel-size)  --expert-parallel (E = dp × tp), off at 1
//	--moe-a2a-backend none                      --all2all-backend allgather_reducescatter
//	--moe-a2a-backend deepep --deepep-mode M    --all2all-backend deepep_{high_throughput,low_latency} --expert-parallel
//	--ep-num-redundant-experts N                --eplb-redundant-experts N
//	--chunked-prefill-size N (-1)               --max-num-batched-tokens N --chunked-prefill (=false)
//	--max-running-requests N                    --max-num-seqs N
//	--context-length N                          --max-model-len N
//	--schedule-policy fcfs|priority             --scheduler
//	--disable-radix-cache                       --prefix-caching=false
//	--page-size N                               --block-size N
type sglangArgs struct {
	fs          *pflag.FlagSet
	dpSize      int
	dpAttention bool
	epSize      int
	chunk       int
	a2a, mode   string
	ranks       int                  // DP attention ranks (pre sets it)
	words       map[string]*vllmWord // the no-effect and refused flags
	notes       []string             // what each SGLang flag became, for the header
}

// addSGLangFlags binds sglangFlags on fs (the no-effect and refused ones
// hidden, as vLLM's table's are).
func addSGLangFlags(fs *pflag.FlagSet, s *scenario.Scenario) *sglangArgs {
	g := &sglangArgs{fs: fs, words: map[string]*vllmWord{}}
	b := &s.Batch
	fs.IntVar(&s.TP, "tp-size", 0, "SGLang's name of --tp; with --enable-dp-attention, SGLang's tp_size: the DP group's GPUs (tp = tp_size / dp_size)")
	fs.IntVar(&s.PP, "pp-size", 0, "SGLang's name of --pp")
	fs.IntVar(&g.dpSize, "dp-size", 0, "SGLang's data parallelism: replicas (sets --replicas), or DP attention ranks with --enable-dp-attention (sets --dp)")
	fs.BoolVar(&g.dpAttention, "enable-dp-attention", false, "SGLang's DP attention: --dp-size ranks of tp_size / dp_size GPUs each (sets --tp and --dp)")
	for _, n := range []string{"ep-size", "ep", "expert-parallel-size"} {
		fs.IntVar(&g.epSize, n, 0, "SGLang's expert-parallel size: 1 (no EP) or tp_size, servesim's dp × tp (sets --expert-parallel)")
	}
	fs.StringVar(&g.a2a, "moe-a2a-backend", "", "SGLang's MoE all-to-all: none, or deepep with --deepep-mode (sets --all2all-backend)")
	fs.StringVar(&g.mode, "deepep-mode", "", "SGLang's DeepEP mode with --moe-a2a-backend deepep: normal (deepep_high_throughput) or low_latency (deepep_low_latency)")
	fs.IntVar(&s.RedundantExperts, "ep-num-redundant-experts", 0, "SGLang's name of --eplb-redundant-experts")
	fs.IntVar(&g.chunk, "chunked-prefill-size", 0, "SGLang's chunk size: vLLM-V1's token budget (sets --max-num-batched-tokens and --chunked-prefill; -1: chunked prefill off)")
	fs.IntVar(&b.MaxNumSeqs, "max-running-requests", 0, "SGLang's name of --max-num-seqs")
	fs.IntVar(&b.MaxModelLen, "context-length", 0, "SGLang's name of --max-model-len")
	fs.Var(sglangPolicy{&s.Scheduler.Policy}, "schedule-policy", "SGLang's queue order: fcfs or priority (sets --scheduler)")
	switchVar(fs, boolTo{&b.PrefixCaching, false}, "disable-radix-cache", "SGLang's name of --prefix-caching=false (an SGLang command line without it has prefix caching on)")
	fs.IntVar(&b.BlockSize, "page-size", 0, "SGLang's name of --block-size")
	for _, f := range sglangFlags {
		if f.class != honoured {
			hiddenWord(fs, g.words, f.name, f.kind == vSwitch, fmt.Sprintf("SGLang's --%s (%s in servesim)", f.name, f.class))
		}
	}
	return g
}

func init() {
	for name, f := range map[string]scenarioFlag{
		"tp-size":                  scenarioFlags["tp"],
		"pp-size":                  scenarioFlags["pp"],
		"ep-num-redundant-experts": scenarioFlags["eplb-redundant-experts"],
		"max-running-requests":     scenarioFlags["max-num-seqs"],
		"context-length":           scenarioFlags["max-model-len"],
		"schedule-policy":          scenarioFlags["scheduler"],
		"disable-radix-cache":      scenarioFlags["prefix-caching"],
		"page-size":                scenarioFlags["block-size"],
	} {
		scenarioFlags[name] = f
	}
}

// sglangAliasOf maps each numeric SGLang flag to servesim's flag that the
// scenario's errors name (TestNumericFlagEdges reads it).
var sglangAliasOf = map[string]string{"tp-size": "tp", "pp-size": "pp", "dp-size": "replicas", "ep-num-redundant-experts": "eplb-redundant-experts",
	"chunked-prefill-size": "max-num-batched-tokens", "max-running-requests": "max-num-seqs", "context-length": "max-model-len", "page-size": "block-size"}

// sglangPolicy is --schedule-policy: SGLang's orders servesim models.
type sglangPolicy struct{ p *string }

func (v sglangPolicy) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v sglangPolicy) Set(s string) error {
	switch s {
	case "fcfs", "priority":
		*v.p = s
		return nil
	case "lpm", "dfs-weight", "lof", "random", "routing-key":
		return fmt.Errorf("SGLang's %s order is not modelled: servesim's queue orders are fcfs, priority, sjf, sjf-predicted and edf (--scheduler)", s)
	}
	return fmt.Errorf("want fcfs or priority (SGLang's lpm, random, dfs-weight, lof and routing-key are not modelled)")
}

func (v sglangPolicy) Type() string { return "string" }

// given names the SGLang flags of the command line, as given.
func (g *sglangArgs) given() []string {
	var out []string
	for _, f := range sglangFlags {
		for _, n := range append([]string{f.name}, f.aliases...) {
			if g.fs.Changed(n) {
				out = append(out, n)
			}
		}
	}
	return out
}

func (g *sglangArgs) spell(name string) string {
	f := g.fs.Lookup(name)
	if f.Value.Type() == "bool" {
		return "--" + name
	}
	return "--" + name + " " + f.Value.String()
}

// pre checks the SGLang flags of the command line and sets the servesim
// flags they stand for. It returns the no-effect ones given (for the run
// header) and an error naming every refused flag, or a flag mixed with
// vLLM's spelling of the same field.
func (g *sglangArgs) pre() (ignored []string, err error) {
	fs := g.fs
	var bad []string
	for _, f := range sglangFlags {
		names := append([]string{f.name}, f.aliases...)
		var givenNames []string
		for _, n := range names {
			if fs.Changed(n) {
				givenNames = append(givenNames, "--"+n)
			}
		}
		if len(givenNames) > 1 {
			return ignored, fmt.Errorf("run: %s are one SGLang flag: give one", strings.Join(givenNames, " and "))
		}
		for _, n := range names {
			if !fs.Changed(n) {
				continue
			}
			if w := g.words[n]; w != nil {
				given := g.spell(n)
				if f.class == noEffect || (!w.bool && slices.Contains(f.dflt, w.val)) || (w.bool && w.val == "false") {
					ignored = append(ignored, given)
					continue
				}
				bad = append(bad, given+": "+f.note+" (servesim: "+f.equiv+")")
				continue
			}
			for _, v := range f.vllm {
				if fs.Changed(v) {
					return ignored, fmt.Errorf("run: --%s (SGLang's spelling) and --%s (vLLM's or servesim's) set the same field (%s): give one", n, v, f.equiv)
				}
			}
		}
	}
	if len(bad) > 0 {
		return ignored, fmt.Errorf("run: SGLang flag(s) servesim does not model: %s", strings.Join(bad, "; "))
	}
	if fs.Changed("dp-size") && fs.Changed("replicas") {
		return ignored, fmt.Errorf("run: --dp-size (SGLang's) and --replicas set the same field: give one")
	}
	set := func(name, val, note string) error {
		if err := fs.Set(name, val); err != nil {
			return fmt.Errorf("run: %s: %v", note, err)
		}
		return nil
	}
	// DP: replicas, or DP attention ranks of tp_size / dp_size GPUs.
	tpGiven := anyChanged(fs, "tp", "tp-size", "tensor-parallel-size")
	ranks := 1 // DP attention ranks
	if g.dpAttention {
		d := g.dpSize
		switch {
		case fs.Changed("dp-size"):
		case anyChanged(fs, "dp", "data-parallel-size"):
			d, _ = strconv.Atoi(fs.Lookup("dp").Value.String())
		default:
			return ignored, fmt.Errorf("run: --enable-dp-attention needs SGLang's --dp-size: the DP attention ranks")
		}
		t, _ := strconv.Atoi(fs.Lookup("tp").Value.String())
		if !tpGiven {
			return ignored, fmt.Errorf("run: --enable-dp-attention needs SGLang's --tp-size: every GPU of the DP group (dp_size × attention TP)")
		}
		if d < 1 || t < 1 || t%d != 0 {
			return ignored, fmt.Errorf("run: --enable-dp-attention: --tp-size %d must be a positive multiple of --dp-size %d (SGLang's attention TP is tp_size / dp_size)", t, d)
		}
		if err := set("tp", strconv.Itoa(t/d), "--tp-size"); err != nil {
			return ignored, err
		}
		if err := set("dp", strconv.Itoa(d), "--dp-size"); err != nil {
			return ignored, err
		}
		ranks = d
		g.ranks = d
		g.notes = append(g.notes, fmt.Sprintf("--tp-size %d --dp-size %d --enable-dp-attention → --dp %d --tp %d (DP attention ranks of tp_size / dp_size GPUs)", t, d, d, t/d))
	} else if fs.Changed("dp-size") {
		if err := set("replicas", strconv.Itoa(g.dpSize), "--dp-size"); err != nil {
			return ignored, err
		}
		g.notes = append(g.notes, fmt.Sprintf("--dp-size %d → --replicas %d (SGLang's DP without --enable-dp-attention: replicas behind the router)", g.dpSize, g.dpSize))
	}
	if fs.Changed("deepep-mode") && !fs.Changed("moe-a2a-backend") {
		ignored = append(ignored, g.spell("deepep-mode")+" (only with --moe-a2a-backend deepep)")
	}
	// Chunked prefill.
	if fs.Changed("chunked-prefill-size") {
		switch {
		case g.chunk == -1:
			err = set("chunked-prefill", "false", "--chunked-prefill-size")
			g.notes = append(g.notes, "--chunked-prefill-size -1 → --chunked-prefill=false")
		case g.chunk > 0:
			// Under DP attention SGLang divides the chunk among the ranks
			// (server_args.py _handle_data_parallelism: chunked_prefill_size
			// // dp_size); a DP rank's budget is its own.
			n, per := g.chunk, ""
			if ranks > 1 {
				n, per = g.chunk/ranks, fmt.Sprintf(" a DP rank (SGLang's %d // dp_size %d)", g.chunk, ranks)
			}
			if n < 1 {
				return ignored, fmt.Errorf("run: --chunked-prefill-size %d: under --enable-dp-attention SGLang divides it by --dp-size %d, leaving no token a rank", g.chunk, ranks)
			}
			if err = set("max-num-batched-tokens", strconv.Itoa(n), "--chunked-prefill-size"); err == nil {
				err = set("chunked-prefill", "true", "--chunked-prefill-size")
			}
			g.notes = append(g.notes, fmt.Sprintf("--chunked-prefill-size %d → --max-num-batched-tokens %d%s", g.chunk, n, per))
		default:
			err = fmt.Errorf("run: --chunked-prefill-size %d: want a positive number of tokens, or -1 (chunked prefill off)", g.chunk)
		}
	}
	return ignored, err
}

// post checks --ep-size against the resolved layout (tp and dp from the
// flags or the --config file) and sets expert_parallel, sets the MoE
// all-to-all backend (fields, not flags: servesim's --all2all-backend is
// vLLM's spelling too, which would bring vLLM's defaults); and, on the
// embedded default, puts SGLang's radix cache (on) in place unless a flag
// says otherwise. Called after override.
func (g *sglangArgs) post(config string, base *scenario.Scenario) error {
	fs := g.fs
	if config == "" && len(g.given()) > 0 && !fs.Changed("engine") {
		// An SGLang command line on the embedded default selects the sglang
		// engine model (a --config file keeps the engine it names).
		engineOf(base).Name = "sglang"
		base.SetByFlag("engine.name")
		g.notes = append(g.notes, "--engine sglang (an SGLang command line)")
	}
	if config == "" && base.Engine != nil && base.Engine.Name == "sglang" && !anyChanged(fs, "page-size", "block-size") {
		base.Batch.BlockSize = 0 // SGLang's page_size 1, not the embedded scenario's (vLLM's) 16
	}
	if fs.Changed("max-running-requests") {
		n := base.Batch.MaxNumSeqs
		if pp := max(base.PP, 1); pp > 1 {
			// scheduler.py: pp_max_micro_batch_size = max(max_running_requests // pp_size, 1).
			if base.Engine == nil || base.Engine.Name != "sglang" {
				return fmt.Errorf("run: --max-running-requests %d with pipeline parallelism (pp %d): SGLang caps each micro-batch at max_running_requests // pp_size, which only the sglang engine models; servesim's --max-num-seqs is vLLM's cap a step: give --max-num-seqs", n, base.PP)
			}
			micro := max(n/pp, 1)
			base.Batch.MaxNumSeqs = micro * pp
			g.notes = append(g.notes, fmt.Sprintf("--max-running-requests %d → --max-num-seqs %d (pp_max_micro_batch_size %d // pp_size %d = %d a micro-batch, %d micro-batches a round)", n, micro*pp, n, pp, micro, pp))
		}
		if g.ranks > 1 {
			// A DP-attention worker holds max_running_requests // dp_size
			// requests (SGLang PR 20063 sized its request pool so).
			if n/g.ranks < 1 {
				return fmt.Errorf("run: --max-running-requests %d: under --enable-dp-attention SGLang divides it by --dp-size %d, leaving no request a rank", n, g.ranks)
			}
			base.Batch.MaxNumSeqs = n / g.ranks
			g.notes = append(g.notes, fmt.Sprintf("--max-running-requests %d → --max-num-seqs %d a DP rank (SGLang's %d // dp_size %d)", n, n/g.ranks, n, g.ranks))
		}
	}
	for _, n := range []string{"ep-size", "ep", "expert-parallel-size"} {
		if !fs.Changed(n) {
			continue
		}
		dp, tp := max(base.DP, 1), max(base.TP, 1)
		switch {
		case g.epSize == 1:
			base.ExpertParallel = false
		case g.epSize == dp*tp:
			base.ExpertParallel = true
		default:
			return fmt.Errorf("run: --%s %d: servesim shards the routed experts over every GPU of the DP group, dp %d × tp %d = %d (SGLang's tp_size), so the EP size is 1 or %d; an EP size below tp_size (the MoE's own TP of tp_size / ep_size inside an EP rank) is not modelled",
				n, g.epSize, dp, tp, dp*tp, dp*tp)
		}
		base.SetByFlag("expert_parallel")
		g.notes = append(g.notes, fmt.Sprintf("--%s %d → --expert-parallel=%t", n, g.epSize, base.ExpertParallel))
	}
	// MoE all-to-all (SGLang's none and deepep).
	if fs.Changed("moe-a2a-backend") {
		var backend string
		switch g.a2a {
		case "none":
			backend = "allgather_reducescatter"
		case "deepep":
			switch g.mode {
			case "normal":
				backend = "deepep_high_throughput"
			case "low_latency":
				backend = "deepep_low_latency"
			default:
				return fmt.Errorf("run: --moe-a2a-backend deepep needs --deepep-mode normal or low_latency: SGLang's %s (low_latency for decode batches, normal for prefill batches) switches per batch, which servesim does not model", orDefault(g.mode, "default auto"))
			}
			if !anyChanged(fs, "ep-size", "ep", "expert-parallel-size") {
				// SGLang sets ep_size = tp_size for DeepEP.
				base.ExpertParallel = true
				base.SetByFlag("expert_parallel")
			}
		default:
			return fmt.Errorf("run: --moe-a2a-backend %s: not modelled (servesim's all-to-all backends are SGLang's none and deepep: --all2all-backend allgather_reducescatter, deepep_high_throughput, deepep_low_latency)", g.a2a)
		}
		base.All2All = backend
		base.SetByFlag("all2all_backend")
		g.notes = append(g.notes, fmt.Sprintf("--moe-a2a-backend %s → --all2all-backend %s", g.a2a, backend))
	}
	if config == "" && len(g.given()) > 0 && !anyChanged(fs, "prefix-caching", "enable-prefix-caching", "no-enable-prefix-caching", "disable-radix-cache") && !base.Batch.PrefixCaching {
		base.Batch.PrefixCaching = true
		g.notes = append(g.notes, "prefix caching on (SGLang's radix cache is on unless --disable-radix-cache)")
	}
	return nil
}

// line is the run header's line naming what the SGLang flags became.
func (g *sglangArgs) line(engine string) string {
	given := g.given()
	if len(given) == 0 {
		return ""
	}
	for i, n := range given {
		given[i] = "--" + n
	}
	s := fmt.Sprintf("SGLang flags (%s) mapped onto the %s engine model", strings.Join(given, ", "), engine)
	if len(g.notes) > 0 {
		s += ": " + strings.Join(g.notes, "; ")
	}
	return s + "."
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// engineName names the scenario's engine model for the header.
func engineName(s scenario.Scenario) string {
	if s.Engine == nil || s.Engine.Name == "" || s.Engine.Name == scenario.DefaultEngine {
		return "vLLM-V1 (" + scenario.DefaultEngine + ")"
	}
	return s.Engine.Name
}
