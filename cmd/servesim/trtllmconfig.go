package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/servesim/servesim/experiments/scenario"
)

// trtllm-serve's --extra_llm_api_options: a file of TensorRT-LLM LLM-API
// options (tensorrt_llm/llmapi/llm_args.py TorchLlmArgs and its nested
// configs), read as JSON, or as YAML limited to what these files hold:
// block mappings of scalars (numbers, true/false, null, plain or quoted
// strings), "# comments" and flow lists of numbers. (servesim depends on
// no YAML library; a JSON file is valid YAML, so trtllm-serve reads the
// same file.) Every key is honoured (the servesim field in trtllmKeys),
// has no effect, or is an error naming it; unknown keys are errors, as
// TensorRT-LLM's StrictBaseModel (extra = "forbid") refuses them.

// parseLLMAPIOptions reads data as JSON (when it starts with "{") or as
// the YAML subset, into nested maps.
func parseLLMAPIOptions(data []byte) (map[string]any, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		d := json.NewDecoder(bytes.NewReader(t))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			return nil, fmt.Errorf("JSON: %v", err)
		}
		if d.More() {
			return nil, fmt.Errorf("JSON: text after the object")
		}
		return m, nil
	}
	return parseYAMLSubset(data)
}

type yamlFrame struct {
	indent int
	m      map[string]any
}

// parseYAMLSubset parses block mappings by indentation.
func parseYAMLSubset(data []byte) (map[string]any, error) {
	root := map[string]any{}
	stack := []yamlFrame{{-1, root}}
	var pending string // a key whose value is the block below it
	pendingIndent := 0
	for n, line := range strings.Split(string(data), "\n") {
		ln := n + 1
		if i := commentAt(line); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimRight(line, " \t\r")
		if strings.TrimSpace(line) == "" || strings.TrimSpace(line) == "---" {
			continue
		}
		if strings.ContainsRune(line, '\t') {
			return nil, fmt.Errorf("line %d: a tab in the indentation (YAML indents with spaces)", ln)
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		text := line[indent:]
		if strings.HasPrefix(text, "- ") || text == "-" {
			return nil, fmt.Errorf("line %d: a block list is not read: write the list as [a, b, c], or give the file as JSON", ln)
		}
		if pending != "" {
			if indent > pendingIndent {
				m := map[string]any{}
				stack[len(stack)-1].m[pending] = m
				stack = append(stack, yamlFrame{indent, m})
			} else {
				stack[len(stack)-1].m[pending] = nil // "key:" alone is null
			}
			pending = ""
		}
		for len(stack) > 1 && stack[len(stack)-1].indent > indent {
			stack = stack[:len(stack)-1]
		}
		if stack[0].indent < 0 {
			stack[0].indent = indent // the root mapping's indentation is its first key's
		}
		if indent != stack[len(stack)-1].indent {
			return nil, fmt.Errorf("line %d: indentation %d does not match its mapping's (%d)", ln, indent, stack[len(stack)-1].indent)
		}
		key, val, ok := strings.Cut(text, ":")
		if !ok || (val != "" && val[0] != ' ') {
			return nil, fmt.Errorf("line %d: %q is not a \"key: value\" line", ln, text)
		}
		key = strings.TrimSpace(key)
		if key == "" || strings.ContainsAny(key, "{}[],&*!|>'\"%@`") {
			return nil, fmt.Errorf("line %d: key %q: want a plain key", ln, key)
		}
		m := stack[len(stack)-1].m
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("line %d: key %q given twice", ln, key)
		}
		val = strings.TrimSpace(val)
		if val == "" {
			pending, pendingIndent = key, indent
			m[key] = nil
			continue
		}
		v, err := yamlScalar(val)
		if err != nil {
			return nil, fmt.Errorf("line %d: key %q: %v", ln, key, err)
		}
		m[key] = v
	}
	return root, nil
}

// commentAt returns where a " #" comment starts outside quotes, or -1.
func commentAt(line string) int {
	var q byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return i
		}
	}
	return -1
}

// yamlScalar reads a scalar or a flow list of scalars.
func yamlScalar(s string) (any, error) {
	switch {
	case strings.HasPrefix(s, "["):
		if !strings.HasSuffix(s, "]") {
			return nil, fmt.Errorf("an unclosed list %q", s)
		}
		var out []any
		if inner := strings.TrimSpace(s[1 : len(s)-1]); inner != "" {
			for _, e := range strings.Split(inner, ",") {
				v, err := yamlScalar(strings.TrimSpace(e))
				if err != nil {
					return nil, err
				}
				if _, nested := v.([]any); nested {
					return nil, fmt.Errorf("a nested list is not read")
				}
				out = append(out, v)
			}
		}
		return out, nil
	case strings.HasPrefix(s, "{"):
		return nil, fmt.Errorf("a flow mapping %q is not read: write it as a block mapping, or give the file as JSON", s)
	case len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\''):
		return s[1 : len(s)-1], nil
	case s == "true" || s == "True":
		return true, nil
	case s == "false" || s == "False":
		return false, nil
	case s == "null" || s == "~" || s == "None":
		return nil, nil
	case strings.ContainsAny(s, "&*!|>%@`\"'"):
		return nil, fmt.Errorf("%q: anchors, tags, block scalars and unbalanced quotes are not read", s)
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return json.Number(s), nil
	}
	return s, nil
}

// The LLM-API options read, each with the servesim field it sets.
var trtllmKeys = map[string]func(d *scenario.Scenario, v any) (string, error){
	"max_batch_size":         intTo("batch.max_num_seqs", func(d *scenario.Scenario, n int) { d.Batch.MaxNumSeqs = n }),
	"max_num_tokens":         intTo("batch.max_num_batched_tokens", func(d *scenario.Scenario, n int) { d.Batch.MaxNumBatchedTokens = n }),
	"max_seq_len":            intTo("batch.max_model_len", func(d *scenario.Scenario, n int) { d.Batch.MaxModelLen = n }),
	"tensor_parallel_size":   intTo("tp", func(d *scenario.Scenario, n int) { d.TP = n }),
	"pipeline_parallel_size": intTo("pp", func(d *scenario.Scenario, n int) { d.PP = n }),
	"moe_expert_parallel_size": func(d *scenario.Scenario, v any) (string, error) {
		n, err := asInt(v)
		if err != nil {
			return "", err
		}
		return "expert_parallel", setEP(d, n)
	},
	"enable_chunked_prefill":    boolTo2("engine.trtllm.enable_chunked_prefill", func(t *scenario.TRTLLMEngine, b bool) { t.EnableChunkedPrefill = b }),
	"disable_overlap_scheduler": boolTo2("engine.trtllm.disable_overlap_scheduler", func(t *scenario.TRTLLMEngine, b bool) { t.DisableOverlapScheduler = b }),
	"scheduler_config.capacity_scheduler_policy": func(d *scenario.Scenario, v any) (string, error) {
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("want a policy name, got %v", v)
		}
		trtllmOf(d).CapacitySchedulerPolicy = s
		return "engine.trtllm.capacity_scheduler_policy", nil
	},
	"scheduler_config.context_chunking_policy": func(d *scenario.Scenario, v any) (string, error) {
		if v == nil || v == "FIRST_COME_FIRST_SERVED" {
			return "", nil
		}
		return "", fmt.Errorf("%v is not modelled (FIRST_COME_FIRST_SERVED, the default, is)", v)
	},
	"kv_cache_config.enable_block_reuse": boolTo2("engine.trtllm.disable_block_reuse", func(t *scenario.TRTLLMEngine, b bool) { t.DisableBlockReuse = !b }),
	"kv_cache_config.free_gpu_memory_fraction": func(d *scenario.Scenario, v any) (string, error) {
		f, err := asFloat(v)
		if err != nil {
			return "", err
		}
		trtllmOf(d).FreeGPUMemoryFraction = f
		return "engine.trtllm.free_gpu_memory_fraction", nil
	},
	"kv_cache_config.max_tokens": func(d *scenario.Scenario, v any) (string, error) {
		if v == nil {
			return "", nil
		}
		n, err := asInt(v)
		if err != nil {
			return "", err
		}
		trtllmOf(d).MaxTokens = n
		return "engine.trtllm.max_tokens", nil
	},
	"kv_cache_config.tokens_per_block": intTo("batch.block_size", func(d *scenario.Scenario, n int) { d.Batch.BlockSize = n }),
	"kv_cache_config.dtype": func(d *scenario.Scenario, v any) (string, error) {
		switch v {
		case "auto":
			return "", nil
		case "fp8":
			d.KV = "fp8"
			return "kv", nil
		}
		return "", fmt.Errorf("%v: want auto or fp8", v)
	},
	"kv_cache_config.enable_partial_reuse": func(d *scenario.Scenario, v any) (string, error) {
		return "", nil // accepted: servesim reuses whole blocks either way (the run header says so)
	},
	"cuda_graph_config": func(d *scenario.Scenario, v any) (string, error) {
		if v != nil {
			return "", fmt.Errorf("want null (no CUDA graphs) or a mapping of max_batch_size, enable_padding")
		}
		trtllmOf(d).NoCUDAGraphs = true
		return "engine.trtllm.no_cuda_graphs", nil
	},
	"cuda_graph_config.max_batch_size": intTo("engine.trtllm.cuda_graph_max_batch_size", func(d *scenario.Scenario, n int) { trtllmOf(d).CUDAGraphMaxBatchSize = n }),
	"cuda_graph_config.enable_padding": boolTo2("engine.trtllm.cuda_graph_padding", func(t *scenario.TRTLLMEngine, b bool) { t.CUDAGraphPadding = b }),
	"cuda_graph_config.batch_sizes": func(d *scenario.Scenario, v any) (string, error) {
		return "", fmt.Errorf("explicit CUDA-graph batch sizes are not read: give cuda_graph_config.max_batch_size (and enable_padding) for TensorRT-LLM's generated sizes")
	},
	// No effect in a simulation.
	"print_iter_log":         noEffectKey,
	"enable_iter_perf_stats": noEffectKey,
	"stream_interval": func(d *scenario.Scenario, v any) (string, error) {
		if n, err := asInt(v); err == nil && n == 1 {
			return "", nil
		}
		return "", fmt.Errorf("%v: responses every step (1, the default) only", v)
	},
	"enable_attention_dp": func(d *scenario.Scenario, v any) (string, error) {
		if v == false {
			return "", nil
		}
		return "", fmt.Errorf("attention DP under the trtllm engine is not modelled")
	},
}

func noEffectKey(*scenario.Scenario, any) (string, error) { return "", nil }

func intTo(field string, f func(d *scenario.Scenario, n int)) func(d *scenario.Scenario, v any) (string, error) {
	return func(d *scenario.Scenario, v any) (string, error) {
		n, err := asInt(v)
		if err != nil {
			return "", err
		}
		f(d, n)
		return field, nil
	}
}

func boolTo2(field string, f func(t *scenario.TRTLLMEngine, b bool)) func(d *scenario.Scenario, v any) (string, error) {
	return func(d *scenario.Scenario, v any) (string, error) {
		b, ok := v.(bool)
		if !ok {
			return "", fmt.Errorf("want true or false, got %v", v)
		}
		f(trtllmOf(d), b)
		return field, nil
	}
}

func asFloat(v any) (float64, error) {
	if n, ok := v.(json.Number); ok {
		if f, err := n.Float64(); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, nil
		}
	}
	return 0, fmt.Errorf("want a number, got %v", v)
}

func asInt(v any) (int, error) {
	if n, ok := v.(json.Number); ok {
		if i, err := strconv.ParseInt(string(n), 10, 32); err == nil {
			return int(i), nil
		}
	}
	return 0, fmt.Errorf("want an integer, got %v", v)
}

// trtllmOf returns d's [engine.trtllm] table, creating it (a copy, as engineOf).
func trtllmOf(d *scenario.Scenario) *scenario.TRTLLMEngine {
	e := engineOf(d)
	t := scenario.TRTLLMEngine{}
	if e.TRTLLM != nil {
		t = *e.TRTLLM
	}
	e.TRTLLM = &t
	return &t
}

// applyLLMAPIOptions reads file and applies its options to d, each field
// recorded as set explicitly; it returns the fields set, for the header.
func applyLLMAPIOptions(file string, d *scenario.Scenario) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("run: --extra_llm_api_options: %v", err)
	}
	m, err := parseLLMAPIOptions(data)
	if err != nil {
		return nil, fmt.Errorf("run: --extra_llm_api_options %s: %v", filepath.Base(file), err)
	}
	var set []string
	var walk func(prefix string, m map[string]any) error
	walk = func(prefix string, m map[string]any) error {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys) // a decision's order must not follow the map's
		for _, k := range keys {
			path, v := prefix+k, m[k]
			if sub, ok := v.(map[string]any); ok {
				if _, known := trtllmSections[path]; !known {
					return fmt.Errorf("run: --extra_llm_api_options %s: key %q: not an LLM-API option servesim reads (sections read: %s)", filepath.Base(file), path, strings.Join(sectionNames(), ", "))
				}
				if err := walk(path+".", sub); err != nil {
					return err
				}
				continue
			}
			f, ok := trtllmKeys[path]
			if !ok {
				return fmt.Errorf("run: --extra_llm_api_options %s: key %q: not an LLM-API option servesim reads (docs/engine-model.md, \"TensorRT-LLM engine\", lists them)", filepath.Base(file), path)
			}
			field, err := f(d, v)
			if err != nil {
				return fmt.Errorf("run: --extra_llm_api_options %s: key %q: %v", filepath.Base(file), path, err)
			}
			if field != "" {
				d.SetByFlag(field)
				set = append(set, path+" → "+field)
			}
		}
		return nil
	}
	return set, walk("", m)
}

// trtllmSections are the nested configs whose keys trtllmKeys reads.
var trtllmSections = map[string]bool{"scheduler_config": true, "kv_cache_config": true, "cuda_graph_config": true}

func sectionNames() []string {
	var s []string
	for k := range trtllmSections {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}
