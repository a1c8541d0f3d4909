package models

import (
	"fmt"
	"strings"
)

// Inferred is what a lookup or a config import inferred about a checkpoint
// beyond its catalog architecture: the precision its weights are stored
// in, and notes for the run header saying what was inferred from what.
type Inferred struct {
	// Weights is "fp8" or "fp4" for a quantized checkpoint, "" when the
	// weights are 16-bit (or nothing says otherwise).
	Weights string
	Notes   []string
}

// checkpointWords are the words a Hugging Face id of a fine-tune or a
// quantized copy of a model appends to the base id, by '-'
// ("Qwen3-30B-A3B-Instruct-2507", "Llama-3.3-70B-Instruct-FP8-dynamic"),
// lower-cased, with the weight precision each names ("": none; "int":
// an integer format servesim does not model). Four-digit release dates
// ("2507", "0324") are words too. The quantization names are those of
// the publishers' model cards (RedHatAI/neuralmagic: FP8, FP8-dynamic,
// W8A8 (INT8), W4A16; Qwen: FP8, AWQ, GPTQ-Int4/Int8; NVIDIA: FP4, NVFP4;
// OpenAI's gpt-oss: MXFP4).
var checkpointWords = map[string]string{
	"instruct": "", "chat": "", "base": "", "hf": "", "it": "", "thinking": "",
	"fp8": "fp8", "dynamic": "", "static": "", "block": "",
	"fp4": "fp4", "nvfp4": "fp4", "mxfp4": "fp4",
	"awq": "int", "gptq": "int", "int4": "int", "int8": "int", "w8a8": "int", "w4a16": "int", "w4a4": "int", "quantized": "",
}

func isDateWord(w string) bool {
	if len(w) != 4 {
		return false
	}
	for _, r := range w {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// Lookup returns a copy of the named model as Get does; beyond Get, a
// Hugging Face id the catalog does not list is resolved to the catalog
// architecture it is a fine-tune or quantized copy of: the id's trailing
// checkpointWords are dropped one at a time until what is left is a
// catalog id (a hf_name or hf_alias), or the repository part of one under
// another organization ("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8" →
// meta-llama/Meta-Llama-3.1-8B-Instruct). The weight precision the
// dropped (or, for a listed id, present) words name is m.Inferred.Weights,
// and m.Inferred.Notes say what was inferred. An integer-quantized
// checkpoint (AWQ, GPTQ, INT8/INT4) is an error: servesim models BF16,
// FP8 and FP4 weights.
func (c *Catalog) Lookup(name string) (*Model, error) {
	if !strings.Contains(name, "/") {
		m, err := c.Get(name)
		if err != nil {
			if s := suggest(name, c.names()); s != "" {
				return nil, fmt.Errorf("models: unknown model %q%s; known: %s", name, s, strings.Join(c.names(), ", "))
			}
			return nil, err
		}
		return m, nil
	}
	id := strings.TrimSpace(name)
	words := strings.Split(id, "-")
	for n := len(words); n >= 1; n-- {
		cand := strings.Join(words[:n], "-")
		m, via := c.byID(cand)
		if m == nil {
			if n > 1 && !isCheckpointWord(words[n-1]) {
				break // a word that is not a variant's: not a copy of a catalog id
			}
			continue
		}
		dropped := words[n:]
		if err := inferWeights(m, id, words); err != nil {
			return nil, err
		}
		if len(dropped) > 0 || via != "" {
			what := via
			if what == "" {
				what = cand
			}
			note := fmt.Sprintf("model %s: catalog architecture %s (that of %s", id, m.Name, what)
			if len(dropped) > 0 {
				note += fmt.Sprintf("; the id's suffix -%s names a fine-tune or quantization of it", strings.Join(dropped, "-"))
			}
			note += fmt.Sprintf("); its context is the catalog's %d tokens (a checkpoint's own config.json may differ: import it with --model-config)", m.MaxContext)
			m.Inferred.Notes = append([]string{note}, m.Inferred.Notes...)
		}
		return m, nil
	}
	_, err := c.ByHFName(id)
	var ids []string
	for _, n := range c.names() {
		if c.models[n].HFName != "" {
			ids = append(ids, c.models[n].HFName)
		}
		ids = append(ids, c.models[n].HFAliases...)
	}
	if s := suggest(id, ids); s != "" {
		return nil, fmt.Errorf("models: no model with hf_name %q%s; for another model pass its config.json with --model-config", id, s)
	}
	return nil, err
}

func isCheckpointWord(w string) bool {
	_, ok := checkpointWords[strings.ToLower(w)]
	return ok || isDateWord(w)
}

// byID finds the model whose hf_name or hf_alias is id, else one whose
// id's repository part (after the '/') is id's; via is then the catalog id
// matched.
func (c *Catalog) byID(id string) (m *Model, via string) {
	if m, err := c.ByHFName(id); err == nil {
		return m, ""
	}
	_, repo, _ := strings.Cut(id, "/")
	for _, n := range c.names() {
		cm := c.models[n]
		for _, h := range append([]string{cm.HFName}, cm.HFAliases...) {
			if _, r, ok := strings.Cut(h, "/"); ok && strings.EqualFold(r, repo) {
				m, _ := c.ByHFName(h)
				return m, h
			}
		}
	}
	return nil, ""
}

// inferWeights sets m.Inferred.Weights from the quantization words of id
// (split into words).
func inferWeights(m *Model, id string, words []string) error {
	for _, w := range words[1:] {
		switch p := checkpointWords[strings.ToLower(w)]; p {
		case "int":
			return fmt.Errorf("models: %q: %s is an integer quantization, which servesim does not model (weights bf16, fp8 or fp4): name the 16-bit or FP8 checkpoint", id, w)
		case "fp8", "fp4":
			m.Inferred.Weights = p
			m.Inferred.Notes = append(m.Inferred.Notes, fmt.Sprintf("weights %s: from the id's -%s", p, w))
		}
	}
	return nil
}

// suggest returns " (did you mean X?)" for the candidate closest to s by
// edit distance, ignoring case, when within a third of s's length.
func suggest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > max(1, len(s)/3) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance is the Levenshtein distance of a and b in bytes.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Suggest is suggest for other packages' names (GPUs, flags).
func Suggest(s string, candidates []string) string { return suggest(s, candidates) }
