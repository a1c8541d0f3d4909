package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servesim/servesim/experiments/scenario"
)

// vLLM's spelling of servesim's flags. Each alias binds the same variable
// as servesim's own flag and has the same scenarioFlags entry (the same
// field, recorded as set explicitly in the same way), so `--tp 4` and
// `--tensor-parallel-size 4` are one flag under two names.
//
//	vLLM (vllm serve / vllm bench serve)   servesim
//	-tp, --tensor-parallel-size N          --tp N
//	-pp, --pipeline-parallel-size N        --pp N
//	--request-rate R (inf)                 --rate R
//	--num-prompts N                        --requests, -n N
//	--enable-prefix-caching                --prefix-caching
//	--no-enable-prefix-caching             --prefix-caching=false
//	--enable-chunked-prefill               --chunked-prefill
//	--no-enable-chunked-prefill            --chunked-prefill=false
//	--kv-cache-dtype auto|fp8|...          --kv bf16|fp8|fp4
//	--dtype auto|bfloat16|half|float16     --weights bf16
//	--quantization fp8                     --weights fp8
//	--goodput ttft:MS tpot:MS e2el:MS      --slo-ttft, --slo-tpot, --slo-e2e (only those named)
//	--[no-]disable-custom-all-reduce       --no-custom-all-reduce
//	--[no-]async-scheduling                --no-async-scheduling
//	--no-enforce-eager                     --enforce-eager=false
//	--swap-space GiB                       batch.swap_space_gb
//	--scheduling-policy fcfs|priority      --scheduler
//	--hf-config-path                       --model-config
//	--input-len N (dataset.go)             --random-input-len
//
// Every other vLLM flag is in vllmtable.go (no effect, or refused).
//
// --max-concurrency, --burstiness, --seed, --max-num-seqs,
// --max-num-batched-tokens, --max-model-len and --gpu-memory-utilization are
// spelled as vLLM spells them already.

// vllmEngineAliases binds the aliases that describe the server (run and
// validate share them).
func vllmEngineAliases(fs *pflag.FlagSet, s *scenario.Scenario) {
	fs.IntVar(&s.TP, "tensor-parallel-size", 0, "vLLM's name of --tp (also -tp N)")
	fs.IntVar(&s.PP, "pipeline-parallel-size", 0, "vLLM's name of --pp (also -pp N)")
	fs.IntVar(&s.DP, "data-parallel-size", 0, "vLLM's name of --dp (also -dp N)")
	switchVar(fs, boolTo{&s.ExpertParallel, true}, "enable-expert-parallel", "vLLM's name of --expert-parallel (also -ep)")
	switchVar(fs, boolTo{&s.ExpertParallel, false}, "no-enable-expert-parallel", "vLLM's name of --expert-parallel=false")
	switchVar(fs, boolTo{&s.EPLB, true}, "enable-eplb", "vLLM's name of --eplb")
	switchVar(fs, boolTo{&s.EPLB, false}, "no-enable-eplb", "vLLM's name of --eplb=false")
	fs.IntVar(&s.RedundantExperts, "num-redundant-experts", 0, "vLLM's name of --eplb-redundant-experts")
	switchVar(fs, boolTo{&s.TwoBatchOverlap, true}, "enable-dbo", "vLLM's name of --two-batch-overlap (dual batch overlap)")
	switchVar(fs, boolTo{&s.TwoBatchOverlap, false}, "no-enable-dbo", "vLLM's name of --two-batch-overlap=false")
	fs.IntVar(&s.TBODecodeThreshold, "dbo-decode-token-threshold", 0, "vLLM's name of --tbo-decode-token-threshold")
	fs.IntVar(&s.TBOPrefillThreshold, "dbo-prefill-token-threshold", 0, "vLLM's name of --tbo-prefill-token-threshold")
	switchVar(fs, boolTo{&s.Batch.PrefixCaching, true}, "enable-prefix-caching", "vLLM's name of --prefix-caching")
	switchVar(fs, boolTo{&s.Batch.PrefixCaching, false}, "no-enable-prefix-caching", "vLLM's name of --prefix-caching=false")
	fs.Var(vllmDType{&s.KV, "kv-cache-dtype", kvCacheDTypes}, "kv-cache-dtype", "vLLM's KV-cache dtype: auto (bf16), bfloat16, fp8, fp8_e4m3, fp8_e5m2, fp4 (sets --kv)")
	fs.Var(vllmDType{&s.Weights, "dtype", modelDTypes}, "dtype", "vLLM's model dtype: auto, bfloat16, half, float16 (all bf16 here; sets --weights)")
	fs.Var(vllmDType{&s.Weights, "quantization", quantizations}, "quantization", "vLLM's weight quantization: fp8, modelopt_fp4 (sets --weights)")
	// engineFlags bound s.Engine.
	switchVar(fs, boolTo{&s.Engine.EnforceEager, false}, "no-enforce-eager", "vLLM's name of --enforce-eager=false")
	switchVar(fs, boolTo{&s.Engine.NoCustomAllReduce, true}, "disable-custom-all-reduce", "vLLM's name of --no-custom-all-reduce")
	switchVar(fs, boolTo{&s.Engine.NoCustomAllReduce, false}, "no-disable-custom-all-reduce", "vLLM's name of --no-custom-all-reduce=false")
	switchVar(fs, boolTo{&s.Engine.NoAsyncScheduling, false}, "async-scheduling", "vLLM's name of --no-async-scheduling=false (on by default)")
	fs.Var(gibValue{&s.Batch.SwapSpaceGB}, "swap-space", "vLLM's host memory per GPU for swapped KV, in GiB (batch.swap_space_gb; default 4)")
	fs.Var(choiceValue{&s.Scheduler.Policy, []string{"fcfs", "priority"}}, "scheduling-policy", "vLLM's queue order: fcfs or priority (sets --scheduler)")
	fs.StringVar(&s.ModelConfig, "hf-config-path", "", "vLLM's name of --model-config: the config.json that defines the model")
}

// gibValue is a flag in GiB (vLLM's --swap-space) into a field in GB.
type gibValue struct{ p *float64 }

func (g gibValue) String() string {
	if g.p == nil {
		return ""
	}
	return strconv.FormatFloat(*g.p/gib, 'g', -1, 64)
}

// gib is GB per GiB: 2³⁰ / 10⁹.
const gib = 1.073741824

func (g gibValue) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("want a non-negative number of GiB")
	}
	*g.p = v * gib
	return nil
}

func (g gibValue) Type() string { return "GiB" }

// choiceValue is a string flag with a fixed set of values.
type choiceValue struct {
	p    *string
	want []string
}

func (c choiceValue) String() string {
	if c.p == nil {
		return ""
	}
	return *c.p
}

func (c choiceValue) Set(s string) error {
	for _, w := range c.want {
		if s == w {
			*c.p = s
			return nil
		}
	}
	return fmt.Errorf("want one of %s%s", strings.Join(c.want, ", "), didYouMean(s, c.want))
}

func (c choiceValue) Type() string { return "string" }

// vllmRunAliases binds the aliases of `vllm bench serve`'s load flags and
// the chunked-prefill switch (run only).
func vllmRunAliases(fs *pflag.FlagSet, s *scenario.Scenario, chunked *bool, g *goodputValue) {
	fs.Float64Var(&s.Workload.Rate, "request-rate", 0, "vLLM bench's name of --rate (inf: every request at t = 0)")
	fs.IntVar(&s.Workload.Requests, "num-prompts", 0, "vLLM bench's name of --requests")
	switchVar(fs, boolTo{chunked, true}, "enable-chunked-prefill", "vLLM's name of --chunked-prefill")
	switchVar(fs, boolTo{chunked, false}, "no-enable-chunked-prefill", "vLLM's name of --chunked-prefill=false")
	g.slo = &s.SLO
	fs.Var(g, "goodput", "vLLM bench's SLOs for request goodput: KEY:MS ... with KEY ttft, tpot, e2el (sets --slo-ttft, --slo-tpot, --slo-e2e)")
}

func init() {
	for name, f := range map[string]scenarioFlag{
		"tensor-parallel-size":         scenarioFlags["tp"],
		"pipeline-parallel-size":       scenarioFlags["pp"],
		"data-parallel-size":           scenarioFlags["dp"],
		"enable-expert-parallel":       scenarioFlags["expert-parallel"],
		"no-enable-expert-parallel":    scenarioFlags["expert-parallel"],
		"enable-eplb":                  scenarioFlags["eplb"],
		"no-enable-eplb":               scenarioFlags["eplb"],
		"num-redundant-experts":        scenarioFlags["eplb-redundant-experts"],
		"enable-dbo":                   scenarioFlags["two-batch-overlap"],
		"no-enable-dbo":                scenarioFlags["two-batch-overlap"],
		"dbo-decode-token-threshold":   scenarioFlags["tbo-decode-token-threshold"],
		"dbo-prefill-token-threshold":  scenarioFlags["tbo-prefill-token-threshold"],
		"request-rate":                 scenarioFlags["rate"],
		"num-prompts":                  scenarioFlags["requests"],
		"enable-prefix-caching":        scenarioFlags["prefix-caching"],
		"no-enable-prefix-caching":     scenarioFlags["prefix-caching"],
		"enable-chunked-prefill":       scenarioFlags["chunked-prefill"],
		"no-enable-chunked-prefill":    scenarioFlags["chunked-prefill"],
		"kv-cache-dtype":               scenarioFlags["kv"],
		"dtype":                        scenarioFlags["weights"],
		"quantization":                 scenarioFlags["weights"],
		"no-enforce-eager":             engineScenarioFlags["enforce-eager"],
		"disable-custom-all-reduce":    engineScenarioFlags["no-custom-all-reduce"],
		"no-disable-custom-all-reduce": engineScenarioFlags["no-custom-all-reduce"],
		"async-scheduling":             engineScenarioFlags["no-async-scheduling"],
		"swap-space":                   {"batch.swap_space_gb", func(d, s *scenario.Scenario) { d.Batch.SwapSpaceGB = s.Batch.SwapSpaceGB }},
		"scheduling-policy":            scenarioFlags["scheduler"],
		"hf-config-path":               scenarioFlags["model-config"],
	} {
		scenarioFlags[name] = f
	}
}

// vllmAliasOf maps each numeric alias to servesim's flag, which the
// scenario's errors name (they name fields, and a field has one flag).
var vllmAliasOf = map[string]string{"tensor-parallel-size": "tp", "pipeline-parallel-size": "pp", "data-parallel-size": "dp", "num-redundant-experts": "eplb-redundant-experts", "dbo-decode-token-threshold": "tbo-decode-token-threshold", "dbo-prefill-token-threshold": "tbo-prefill-token-threshold", "request-rate": "rate", "num-prompts": "requests"}

// chunkedChanged reports whether a chunked-prefill switch was given.
func chunkedChanged(fs *pflag.FlagSet) bool {
	return fs.Changed("chunked-prefill") || fs.Changed("enable-chunked-prefill") || fs.Changed("no-enable-chunked-prefill")
}

// chunkedFlag names the chunked-prefill switch given, as given.
func chunkedFlag(fs *pflag.FlagSet) string {
	if fs.Changed("chunked-prefill-size") {
		return "--chunked-prefill-size " + fs.Lookup("chunked-prefill-size").Value.String() // SGLang's (sglangflags.go)
	}
	for _, n := range []string{"enable-chunked-prefill", "no-enable-chunked-prefill"} {
		if fs.Changed(n) {
			return "--" + n
		}
	}
	return "--chunked-prefill=" + fs.Lookup("chunked-prefill").Value.String()
}

// vllmArgs rewrites vLLM's habits that pflag cannot parse, before parsing:
// `-tp N`, `-pp=N`, `-asc N` (pflag's shorthands are one letter; the
// shorthands are vllmFlags') become `--tensor-parallel-size N` and so on,
// `-O3` becomes `--compilation-config=3`, a bare `--profile` (vllm bench's
// switch) `--vllm-profile`, `--goodput ttft:500 tpot:50` (argparse's
// nargs="+") becomes `--goodput=ttft:500,tpot:50`, and the other nargs
// flags take their words up to the next flag (`--header a=1 b=2` →
// `--header=a=1 b=2`). Arguments after "--" are left alone.
func vllmArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if words, n := vllmRewrite(args, i); n > 0 {
			out = append(out, words...)
			i += n - 1
			continue
		}
		switch {
		case a == "--goodput" || strings.HasPrefix(a, "--goodput="):
			var pairs []string
			if v, ok := strings.CutPrefix(a, "--goodput="); ok {
				pairs = append(pairs, v)
			}
			// argparse's nargs="+" takes every word up to the next flag.
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				pairs = append(pairs, args[i])
			}
			out = append(out, "--goodput="+strings.Join(pairs, ","))
		default:
			out = append(out, a)
		}
	}
	return out
}

// boolTo is a boolean flag that stores v in *p when set true (the
// --no-enable-... switches store false).
type boolTo struct {
	p *bool
	v bool
}

// switchVar binds b as a switch: --name alone is --name=true, and its
// default, for --help, is "not given" (false) whatever b's field holds (so
// that --no-enable-prefix-caching does not read "(default true)").
func switchVar(fs *pflag.FlagSet, b boolTo, name, usage string) {
	fs.Var(b, name, usage)
	f := fs.Lookup(name)
	f.NoOptDefVal, f.DefValue = "true", "false"
}

func (b boolTo) String() string {
	if b.p == nil {
		return "false"
	}
	return strconv.FormatBool(*b.p == b.v)
}

func (b boolTo) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	if on {
		*b.p = b.v
	} else {
		*b.p = !b.v
	}
	return nil
}

func (b boolTo) Type() string     { return "bool" }
func (b boolTo) IsBoolFlag() bool { return true }

// vLLM's dtype names and servesim's precision for each.
var (
	kvCacheDTypes = map[string]string{"auto": "bf16", "bfloat16": "bf16", "float16": "bf16", "half": "bf16",
		"fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "fp4": "fp4", "nvfp4": "fp4"}
	modelDTypes   = map[string]string{"auto": "bf16", "bfloat16": "bf16", "float16": "bf16", "half": "bf16"}
	quantizations = map[string]string{"fp8": "fp8", "modelopt_fp4": "fp4", "nvfp4": "fp4"}
)

// vllmDType is a flag taking vLLM's dtype names into a precision field.
type vllmDType struct {
	p     *string
	flag  string
	names map[string]string
}

func (v vllmDType) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v vllmDType) Set(s string) error {
	if p, ok := v.names[strings.ToLower(s)]; ok {
		*v.p = p
		return nil
	}
	names := make([]string, 0, len(v.names))
	for n := range v.names {
		names = append(names, n)
	}
	sort.Strings(names)
	extra := ""
	if v.flag == "dtype" && (s == "float" || s == "float32") {
		extra = " (servesim models 16-bit and lower precisions only)"
	}
	return fmt.Errorf("%q is not a dtype servesim models%s: want one of %s", s, extra, strings.Join(names, ", "))
}

func (v vllmDType) Type() string { return "string" }

// goodputValue is --goodput: KEY:MS pairs (vLLM's parse_goodput), with KEY
// ttft, tpot or e2el, each a non-negative number of milliseconds. keys
// lists the keys given, so that only their fields are set.
type goodputValue struct {
	slo  *scenario.SLO
	keys []string
}

func (g *goodputValue) String() string {
	if g.slo == nil {
		return ""
	}
	var parts []string
	for _, k := range g.keys {
		parts = append(parts, fmt.Sprintf("%s:%g", k, *g.field(k)))
	}
	return strings.Join(parts, ",")
}

func (g *goodputValue) field(key string) *float64 {
	switch key {
	case "ttft":
		return &g.slo.TTFTms
	case "tpot":
		return &g.slo.TPOTms
	case "e2el":
		return &g.slo.E2Ems
	}
	return nil
}

// goodputKeys are --goodput's keys and the scenario fields they set.
var goodputKeys = map[string]string{"ttft": "slo.ttft_ms", "tpot": "slo.tpot_ms", "e2el": "slo.e2e_ms"}

func (g *goodputValue) Set(s string) error {
	g.keys = nil
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("want one or more KEY:MS pairs (vLLM's \"ttft:500 tpot:50\"), KEY ttft, tpot or e2el")
	}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if !ok {
			return fmt.Errorf("%q: want KEY:VALUE pairs (vLLM's \"ttft:500 tpot:50\"), KEY ttft, tpot or e2el, VALUE in ms", pair)
		}
		f := g.field(k)
		if f == nil {
			return fmt.Errorf("%q: invalid goodput metric %q: want ttft, tpot or e2el", pair, k)
		}
		ms, err := strconv.ParseFloat(v, 64)
		if err != nil || ms < 0 || math.IsNaN(ms) || math.IsInf(ms, 0) {
			return fmt.Errorf("%q: SLO %q must be a non-negative number of milliseconds", pair, k)
		}
		if ms == 0 {
			// vLLM counts no request good under a 0 ms SLO; servesim's 0
			// means "no SLO", so the two would disagree silently.
			return fmt.Errorf("%q: an SLO of 0 ms, which no request meets (servesim's 0 means no SLO): give a positive bound", pair)
		}
		*f = ms
		g.keys = append(g.keys, k)
	}
	return nil
}

func (g *goodputValue) Type() string { return "KEY:MS..." }

// goodputSLOFlags are servesim's SLO flags for --goodput's keys.
var goodputSLOFlags = map[string]string{"ttft": "slo-ttft", "tpot": "slo-tpot", "e2el": "slo-e2e"}

// apply copies the SLOs --goodput gave into dst and records them as set.
// As in vLLM (serve.py's calculate_metrics counts a request good when it
// meets exactly the SLOs --goodput names), the SLOs it does not name are
// cleared — the scenario file's or the embedded default's TTFT 500 ms and
// TPOT 50 ms no longer count — unless a --slo-* flag sets them too. It
// returns a line for the run header naming the SLOs that apply and those
// dropped ("" without --goodput).
func (g *goodputValue) apply(fs *pflag.FlagSet, dst *scenario.Scenario) string {
	if !fs.Changed("goodput") {
		return ""
	}
	named := map[string]bool{}
	for _, k := range g.keys {
		named[k] = true
		*(&goodputValue{slo: &dst.SLO}).field(k) = *g.field(k)
		dst.SetByFlag(goodputKeys[k])
	}
	var kept, dropped []string
	for _, k := range []string{"ttft", "tpot", "e2el"} {
		f := (&goodputValue{slo: &dst.SLO}).field(k)
		switch {
		case named[k] || fs.Changed(goodputSLOFlags[k]):
			if *f != 0 {
				kept = append(kept, fmt.Sprintf("%s ≤ %g ms", k, *f))
			}
		case *f != 0:
			dropped = append(dropped, fmt.Sprintf("%s %g ms", k, *f))
			*f = 0
			dst.SetByFlag(goodputKeys[k])
		}
	}
	line := "--goodput: request goodput and attainment count the SLOs " + orNone(strings.Join(kept, ", "))
	if len(dropped) > 0 {
		line += " only (as vLLM; the scenario's " + strings.Join(dropped, ", ") + " dropped)"
	}
	return line + "."
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
