package main

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servesim/servesim/experiments"
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
//	--goodput ttft:MS tpot:MS e2el:MS      --slo-ttft, --slo-tpot, --slo-e2e
//
// --max-concurrency, --burstiness, --seed, --max-num-seqs,
// --max-num-batched-tokens, --max-model-len and --gpu-memory-utilization are
// spelled as vLLM spells them already.

// vllmEngineAliases binds the aliases that describe the server (run and
// validate share them).
func vllmEngineAliases(fs *pflag.FlagSet, s *experiments.Scenario) {
	fs.IntVar(&s.TP, "tensor-parallel-size", 0, "vLLM's name of --tp (also -tp N)")
	fs.IntVar(&s.PP, "pipeline-parallel-size", 0, "vLLM's name of --pp (also -pp N)")
	fs.Var(boolTo{&s.Batch.PrefixCaching, true}, "enable-prefix-caching", "vLLM's name of --prefix-caching")
	fs.Var(boolTo{&s.Batch.PrefixCaching, false}, "no-enable-prefix-caching", "vLLM's name of --prefix-caching=false")
	fs.Lookup("enable-prefix-caching").NoOptDefVal = "true"
	fs.Lookup("no-enable-prefix-caching").NoOptDefVal = "true"
	fs.Var(vllmDType{&s.KV, "kv-cache-dtype", kvCacheDTypes}, "kv-cache-dtype", "vLLM's KV-cache dtype: auto (bf16), bfloat16, fp8, fp8_e4m3, fp8_e5m2, fp4 (sets --kv)")
	fs.Var(vllmDType{&s.Weights, "dtype", modelDTypes}, "dtype", "vLLM's model dtype: auto, bfloat16, half, float16 (all bf16 here; sets --weights)")
	fs.Var(vllmDType{&s.Weights, "quantization", quantizations}, "quantization", "vLLM's weight quantization: fp8, modelopt_fp4 (sets --weights)")
}

// vllmRunAliases binds the aliases of `vllm bench serve`'s load flags and
// the chunked-prefill switch (run only).
func vllmRunAliases(fs *pflag.FlagSet, s *experiments.Scenario, chunked *bool, g *goodputValue) {
	fs.Float64Var(&s.Workload.Rate, "request-rate", 0, "vLLM bench's name of --rate (inf: every request at t = 0)")
	fs.IntVar(&s.Workload.Requests, "num-prompts", 0, "vLLM bench's name of --requests")
	fs.Var(boolTo{chunked, true}, "enable-chunked-prefill", "vLLM's name of --chunked-prefill")
	fs.Var(boolTo{chunked, false}, "no-enable-chunked-prefill", "vLLM's name of --chunked-prefill=false")
	fs.Lookup("enable-chunked-prefill").NoOptDefVal = "true"
	fs.Lookup("no-enable-chunked-prefill").NoOptDefVal = "true"
	g.slo = &s.SLO
	fs.Var(g, "goodput", "vLLM bench's SLOs for request goodput: KEY:MS ... with KEY ttft, tpot, e2el (sets --slo-ttft, --slo-tpot, --slo-e2e)")
}

func init() {
	for name, f := range map[string]scenarioFlag{
		"tensor-parallel-size":      scenarioFlags["tp"],
		"pipeline-parallel-size":    scenarioFlags["pp"],
		"request-rate":              scenarioFlags["rate"],
		"num-prompts":               scenarioFlags["requests"],
		"enable-prefix-caching":     scenarioFlags["prefix-caching"],
		"no-enable-prefix-caching":  scenarioFlags["prefix-caching"],
		"enable-chunked-prefill":    scenarioFlags["chunked-prefill"],
		"no-enable-chunked-prefill": scenarioFlags["chunked-prefill"],
		"kv-cache-dtype":            scenarioFlags["kv"],
		"dtype":                     scenarioFlags["weights"],
		"quantization":              scenarioFlags["weights"],
	} {
		scenarioFlags[name] = f
	}
}

// vllmAliasOf maps each numeric alias to servesim's flag, which the
// scenario's errors name (they name fields, and a field has one flag).
var vllmAliasOf = map[string]string{"tensor-parallel-size": "tp", "pipeline-parallel-size": "pp", "request-rate": "rate", "num-prompts": "requests"}

// chunkedChanged reports whether a chunked-prefill switch was given.
func chunkedChanged(fs *pflag.FlagSet) bool {
	return fs.Changed("chunked-prefill") || fs.Changed("enable-chunked-prefill") || fs.Changed("no-enable-chunked-prefill")
}

// vllmArgs rewrites vLLM's habits that pflag cannot parse, before parsing:
// `-tp N` and `-tp=N` (pflag's shorthands are one letter) become
// `--tensor-parallel-size N`, and `--goodput ttft:500 tpot:50` (argparse's
// nargs="+") becomes `--goodput=ttft:500,tpot:50`. Arguments after "--"
// are left alone.
func vllmArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case a == "-tp":
			out = append(out, "--tensor-parallel-size")
		case strings.HasPrefix(a, "-tp="):
			out = append(out, "--tensor-parallel-size="+strings.TrimPrefix(a, "-tp="))
		case a == "-pp":
			out = append(out, "--pipeline-parallel-size")
		case strings.HasPrefix(a, "-pp="):
			out = append(out, "--pipeline-parallel-size="+strings.TrimPrefix(a, "-pp="))
		case a == "--goodput" || strings.HasPrefix(a, "--goodput="):
			var pairs []string
			if v, ok := strings.CutPrefix(a, "--goodput="); ok {
				pairs = append(pairs, v)
			}
			for i+1 < len(args) && sloPair.MatchString(args[i+1]) {
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

// sloPair is one of --goodput's KEY:VALUE words.
var sloPair = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*:`)

// boolTo is a boolean flag that stores v in *p when set true (the
// --no-enable-... switches store false).
type boolTo struct {
	p *bool
	v bool
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
	slo  *experiments.SLO
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
		*f = ms
		g.keys = append(g.keys, k)
	}
	return nil
}

func (g *goodputValue) Type() string { return "KEY:MS..." }

// apply copies the SLOs --goodput gave into dst and records them as set.
func (g *goodputValue) apply(fs *pflag.FlagSet, dst *experiments.Scenario) {
	if !fs.Changed("goodput") {
		return
	}
	for _, k := range g.keys {
		*(&goodputValue{slo: &dst.SLO}).field(k) = *g.field(k)
		dst.SetByFlag(goodputKeys[k])
	}
}
