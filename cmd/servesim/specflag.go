package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/servesim/servesim/experiments/scenario"
)

// specConfig is --speculative-config: vLLM's JSON of SpeculativeConfig
// (vllm/config/speculative.py), read into the scenario's [speculative]
// table. Keys servesim reads: method, num_speculative_tokens, model, and
// and its own acceptance_rates, acceptance_trace, draft_vocab,
// proposer_cpu_us and verify; vLLM keys that change no simulated cost are accepted
// (specNoEffect); any other key is an error naming it.
type specConfig struct{ s *scenario.Scenario }

// specNoEffect are SpeculativeConfig keys accepted without effect.
var specNoEffect = map[string]string{
	"prompt_lookup_max":                 "the n-gram match length changes acceptance, which acceptance_rates gives",
	"prompt_lookup_min":                 "the n-gram match length changes acceptance, which acceptance_rates gives",
	"draft_tensor_parallel_size":        "the drafter runs at the target's TP (vLLM requires it for EAGLE and MTP)",
	"disable_padded_drafter_batch":      "the drafter's batch padding is not priced",
	"quantization":                      "the drafter takes the target's weight precision",
	"revision":                          "loading is not simulated",
	"code_revision":                     "loading is not simulated",
	"max_model_len":                     "the drafter's context is the target's",
	"speculative_token_tree":            "tree drafting is not modelled: a chain of num_speculative_tokens is",
	"parallel_drafting":                 "drafts are priced as vLLM's default sequential passes",
	"rejection_sample_method":           "acceptance comes from acceptance_rates or the method's default",
	"disable_by_batch_size":             "speculation is on for every batch",
	"use_local_argmax_reduction":        "the drafter's sampling is not priced",
	"draft_sample_method":               "the drafter's sampling is not priced",
	"disable_logprobs":                  "logprobs are not simulated",
	"num_speculative_tokens_per_method": "one method at a time",
}

func (f specConfig) String() string {
	if f.s == nil || f.s.Speculative == nil {
		return ""
	}
	b, _ := json.Marshal(f.s.Speculative)
	return string(b)
}

func (specConfig) Type() string { return "json" }

func (f specConfig) Set(v string) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &keys); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	var unknown []string
	known := map[string]bool{"method": true, "num_speculative_tokens": true, "model": true,
		"acceptance_rates": true, "class_acceptance_rates": true, "acceptance_trace": true, "draft_vocab": true, "proposer_cpu_us": true,
		"verify": true}
	clean := map[string]json.RawMessage{}
	for k, raw := range keys {
		switch {
		case known[k]:
			clean[k] = raw
		case specNoEffect[k] != "":
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("unknown key %s (servesim reads method, num_speculative_tokens, model, acceptance_rates, class_acceptance_rates, acceptance_trace, draft_vocab, proposer_cpu_us, verify)", strings.Join(unknown, ", "))
	}
	b, _ := json.Marshal(clean)
	var sp scenario.Speculative
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&sp); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("key %q: %s is not a %s", te.Field, te.Value, te.Type)
		}
		return err
	}
	if sp.Method == "" {
		return fmt.Errorf("key \"method\" is missing (one of %s)", scenario.SpecMethods)
	}
	f.s.Speculative = &sp
	return nil
}
