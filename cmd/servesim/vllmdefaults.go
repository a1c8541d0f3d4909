package main

import (
	"math"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servesim/servesim/experiments/scenario"
)

// servesimOwn are the flags of vllmFlags that servesim spells so itself:
// given under these names a flag says nothing about whose defaults the
// user expects.
var servesimOwn = map[string]bool{
	"model": true, "seed": true, "max-concurrency": true, "burstiness": true, "max-num-seqs": true,
	"max-num-batched-tokens": true, "max-model-len": true, "block-size": true, "gpu-memory-utilization": true,
	"enforce-eager": true, "kv-cache-memory-bytes": true, "num-gpu-blocks-override": true, "output-len": true,
}

// vllmSpelled reports whether the command line spells a flag of vllm
// serve (serve) or of vllm bench serve (bench) as vLLM does and servesim
// does not: -tp, --enable-prefix-caching, --disable-log-stats;
// --num-prompts, --request-rate, --dataset-name.
func vllmSpelled(fs *pflag.FlagSet) (serve, bench bool) {
	for _, f := range vllmFlags {
		for _, n := range f.names() {
			if servesimOwn[n] || f.as == "-" || !fs.Changed(n) {
				continue
			}
			// A flag both tools take (--host, --tokenizer) says neither.
			serve = serve || f.src == "serve"
			bench = bench || f.src == "bench"
		}
	}
	return serve, bench
}

func anyChanged(fs *pflag.FlagSet, names ...string) bool {
	for _, n := range names {
		if fs.Changed(n) {
			return true
		}
	}
	return false
}

// vllmDefaults puts vLLM V1's defaults in place of the embedded default
// scenario's where they differ and the command line is in vLLM's
// spelling (docs/vllm-sglang.md, "Defaults that differ from vLLM"): vllm serve's prefix
// caching on (EngineArgs._set_default_args, vllm/engine/arg_utils.py: "V1
// always uses chunked prefills and prefix caching for non-pooling tasks");
// vllm bench serve's --request-rate inf, no SLOs (goodput only with
// --goodput) and, when --num-prompts or --dataset-path names the
// workload, its default random dataset (1024 and 128 tokens; ds.implied).
// A flag or a --config file that sets the field keeps its value. It
// returns what it changed, for the run header.
func vllmDefaults(fs *pflag.FlagSet, config string, base *scenario.Scenario, ds *datasetFlags) []string {
	if config != "" {
		return nil // the file's values, not the embedded default's
	}
	serve, bench := vllmSpelled(fs)
	var changed []string
	if serve && !anyChanged(fs, "prefix-caching", "enable-prefix-caching", "no-enable-prefix-caching") {
		base.Batch.PrefixCaching = true
		base.SetByFlag("batch.prefix_caching")
		changed = append(changed, "prefix caching on (vllm serve)")
	}
	if !bench {
		return changed
	}
	traced := anyChanged(fs, "trace")
	if !anyChanged(fs, "rate", "request-rate", "duration", "stages") && !traced {
		base.Workload.Rate = math.Inf(1)
		base.SetByFlag("workload.rate")
		changed = append(changed, "rate inf (vllm bench serve's --request-rate)")
	}
	// The workload in vLLM's words (--num-prompts, --dataset-*) is vLLM's
	// default dataset; --request-rate or --goodput alone keep the lengths.
	if anyChanged(fs, "num-prompts", "dataset-path") &&
		!anyChanged(fs, "prompt-len", "output-len", "dataset-name", "random-input-len", "random-output-len", "input-len") && !traced {
		ds.implied = true
		changed = append(changed, "the random dataset, 1024 prompt and 128 output tokens (vllm bench serve's --dataset-name)")
	}
	if !anyChanged(fs, "goodput", "slo-ttft", "slo-tpot", "slo-e2e") {
		base.SLO = scenario.SLO{}
		for _, k := range []string{"slo.ttft_ms", "slo.tpot_ms", "slo.e2e_ms"} {
			base.SetByFlag(k)
		}
		changed = append(changed, "no SLOs (vllm bench serve's goodput needs --goodput)")
	}
	return changed
}

// vllmDefaultsLine is the run header's line for what vllmDefaults changed.
func vllmDefaultsLine(changed []string) string {
	return "vLLM's spelling: vLLM's defaults stand in for the embedded scenario's: " + strings.Join(changed, ", ") + "."
}
