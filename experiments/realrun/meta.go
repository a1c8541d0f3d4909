package realrun

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// metaJSON is LLMServingSim's bench meta.json (bench/core/runner.py): the
// engine kwargs and, in later runs, the KV-cache plan, the device and
// vLLM's resolved config.
type metaJSON struct {
	Model        string `json:"model"`
	VLLMVersion  string `json:"vllm_version"`
	EngineKwargs *struct {
		Model               *string         `json:"model"`
		TensorParallelSize  *int            `json:"tensor_parallel_size"`
		DataParallelSize    *int            `json:"data_parallel_size"`
		PipelineParallel    *int            `json:"pipeline_parallel_size"`
		MaxNumSeqs          *int            `json:"max_num_seqs"`
		MaxNumBatchedTokens *int            `json:"max_num_batched_tokens"`
		MaxModelLen         *int            `json:"max_model_len"`
		DType               *string         `json:"dtype"`
		KVCacheDType        *string         `json:"kv_cache_dtype"`
		Quantization        *string         `json:"quantization"`
		BlockSize           *int            `json:"block_size"`
		GPUMemUtil          *float64        `json:"gpu_memory_utilization"`
		NumGPUBlocks        *int            `json:"num_gpu_blocks_override"`
		EnablePrefixCaching *bool           `json:"enable_prefix_caching"`
		EnableChunked       *bool           `json:"enable_chunked_prefill"`
		EnforceEager        *bool           `json:"enforce_eager"`
		NoCustomAllReduce   *bool           `json:"disable_custom_all_reduce"`
		AsyncScheduling     *bool           `json:"async_scheduling"`
		ExpertParallel      *bool           `json:"enable_expert_parallel"`
		EPLB                *bool           `json:"enable_eplb"`
		DBO                 *bool           `json:"enable_dbo"`
		DBODecode           *int            `json:"dbo_decode_token_threshold"`
		DBOPrefill          *int            `json:"dbo_prefill_token_threshold"`
		Speculative         json.RawMessage `json:"speculative_config"`
	} `json:"engine_kwargs"`
	KVCache *struct {
		NumGPUBlocks        *int     `json:"num_gpu_blocks"`
		BlockSize           *int     `json:"block_size"`
		GPUMemUtil          *float64 `json:"gpu_memory_utilization"`
		EnablePrefixCaching *bool    `json:"enable_prefix_caching"`
	} `json:"kv_cache"`
	Hardware *struct {
		DeviceName        *string  `json:"device_name"`
		DeviceTotalMemory *float64 `json:"device_total_memory_bytes"`
	} `json:"hardware"`
}

// metaRaw is meta.json's argument sources as raw JSON, for the
// engine-argument table: every engine_kwargs key, and the keys of each
// section of resolved_config (vLLM's VllmConfig: parallel_config,
// cache_config, ..., and top-level ones such as speculative_config).
type metaRaw struct {
	EngineKwargs   map[string]json.RawMessage `json:"engine_kwargs"`
	ResolvedConfig map[string]json.RawMessage `json:"resolved_config"`
}

// ReadMeta reads meta.json's engine arguments. engine_kwargs and its
// model are required; the rest is optional (older runs lack kv_cache and
// hardware). Numbers must be non-negative. The file must hold one JSON
// object. Every engine_kwargs key and every key of resolved_config's
// sections goes through the engine-argument table (EngineArgs): a refused
// argument with a value that deploys what servesim does not model is an
// error; engine_kwargs keys not in the table are listed in Engine.Notes.
// The top-level model and engine_kwargs.model must agree when both are
// given, as must kv_cache's block size, utilization and prefix caching
// with engine_kwargs'.
func ReadMeta(r io.Reader, name string) (Engine, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Engine{}, fmt.Errorf("realrun: %s: %w", name, err)
	}
	data = stripBOM(data)
	var m metaJSON
	if err := decodeOne(data, &m, name); err != nil {
		return Engine{}, err
	}
	if m.EngineKwargs == nil {
		return Engine{}, fieldErr(name, 0, "engine_kwargs", "missing")
	}
	var raw metaRaw
	if err := json.Unmarshal(data, &raw); err != nil {
		return Engine{}, jsonErr(name, 0, err)
	}
	k := m.EngineKwargs
	e := Engine{VLLMVersion: m.VLLMVersion, Model: m.Model}
	if k.Model != nil {
		if m.Model != "" && *k.Model != m.Model {
			return Engine{}, fieldErr(name, 0, "model", "%q, but engine_kwargs.model is %q: which model ran?", m.Model, *k.Model)
		}
		e.Model = *k.Model
	}
	if e.Model == "" {
		return Engine{}, fieldErr(name, 0, "engine_kwargs.model", "missing")
	}
	if err := checkMetaArgs(name, raw, &e); err != nil {
		return Engine{}, err
	}
	type intField struct {
		field string
		src   *int
		dst   *int
	}
	ints := []intField{
		{"engine_kwargs.tensor_parallel_size", k.TensorParallelSize, &e.TP},
		{"engine_kwargs.data_parallel_size", k.DataParallelSize, &e.DP},
		{"engine_kwargs.pipeline_parallel_size", k.PipelineParallel, &e.PP},
		{"engine_kwargs.max_num_seqs", k.MaxNumSeqs, &e.MaxNumSeqs},
		{"engine_kwargs.max_num_batched_tokens", k.MaxNumBatchedTokens, &e.MaxNumBatchedTokens},
		{"engine_kwargs.max_model_len", k.MaxModelLen, &e.MaxModelLen},
		{"engine_kwargs.block_size", k.BlockSize, &e.BlockSize},
		{"engine_kwargs.num_gpu_blocks_override", k.NumGPUBlocks, &e.KVBlocks},
		{"engine_kwargs.dbo_decode_token_threshold", k.DBODecode, &e.DBODecodeThreshold},
		{"engine_kwargs.dbo_prefill_token_threshold", k.DBOPrefill, &e.DBOPrefillThreshold},
	}
	e.PrefixCaching, e.ChunkedPrefill, e.AsyncScheduling = k.EnablePrefixCaching, k.EnableChunked, k.AsyncScheduling
	e.EnforceEager = k.EnforceEager != nil && *k.EnforceEager
	e.NoCustomAllReduce = k.NoCustomAllReduce != nil && *k.NoCustomAllReduce
	e.ExpertParallel = k.ExpertParallel != nil && *k.ExpertParallel
	e.EPLB = k.EPLB != nil && *k.EPLB
	e.DBO = k.DBO != nil && *k.DBO
	if sp := argText(k.Speculative); len(k.Speculative) > 0 && !isNull(sp) {
		if err := applyArg(&e, "speculative_config", sp); err != nil {
			return Engine{}, fieldErr(name, 0, "engine_kwargs.speculative_config", "%v", err)
		}
	}
	util := func(field string, v *float64) error {
		if v != nil {
			if !(*v > 0 && *v <= 1) {
				return fieldErr(name, 0, field, "%g: want (0, 1]", *v)
			}
			e.GPUMemUtil = *v
		}
		return nil
	}
	if err := util("engine_kwargs.gpu_memory_utilization", k.GPUMemUtil); err != nil {
		return Engine{}, err
	}
	if kv := m.KVCache; kv != nil {
		// kv_cache is what the engine planned from engine_kwargs: where
		// both give a value they must agree.
		for _, c := range []struct {
			field, kwarg  string
			logged, asked any
			same          bool
		}{
			{"kv_cache.block_size", "engine_kwargs.block_size", deref(kv.BlockSize), deref(k.BlockSize), kv.BlockSize == nil || k.BlockSize == nil || *kv.BlockSize == *k.BlockSize},
			{"kv_cache.gpu_memory_utilization", "engine_kwargs.gpu_memory_utilization", deref(kv.GPUMemUtil), deref(k.GPUMemUtil), kv.GPUMemUtil == nil || k.GPUMemUtil == nil || *kv.GPUMemUtil == *k.GPUMemUtil},
			{"kv_cache.enable_prefix_caching", "engine_kwargs.enable_prefix_caching", deref(kv.EnablePrefixCaching), deref(k.EnablePrefixCaching), kv.EnablePrefixCaching == nil || k.EnablePrefixCaching == nil || *kv.EnablePrefixCaching == *k.EnablePrefixCaching},
			{"kv_cache.num_gpu_blocks", "engine_kwargs.num_gpu_blocks_override", deref(kv.NumGPUBlocks), deref(k.NumGPUBlocks), kv.NumGPUBlocks == nil || k.NumGPUBlocks == nil || *kv.NumGPUBlocks == *k.NumGPUBlocks},
		} {
			if !c.same {
				return Engine{}, fieldErr(name, 0, c.field, "%v, but %s is %v", c.logged, c.kwarg, c.asked)
			}
		}
		ints = append(ints, intField{"kv_cache.num_gpu_blocks", kv.NumGPUBlocks, &e.KVBlocks}, intField{"kv_cache.block_size", kv.BlockSize, &e.BlockSize})
		if err := util("kv_cache.gpu_memory_utilization", kv.GPUMemUtil); err != nil {
			return Engine{}, err
		}
		if kv.EnablePrefixCaching != nil {
			e.PrefixCaching = kv.EnablePrefixCaching
		}
	}
	for _, f := range ints {
		if f.src == nil {
			continue
		}
		if *f.src < 0 {
			return Engine{}, fieldErr(name, 0, f.field, "%d: want ≥ 0", *f.src)
		}
		*f.dst = *f.src
	}
	if k.DType != nil {
		e.DType = *k.DType
	}
	if k.KVCacheDType != nil {
		e.KVDType = *k.KVCacheDType
	}
	if k.Quantization != nil {
		e.Quantization = *k.Quantization
	}
	// resolved_config.parallel_config is what vLLM ran: its pipeline size
	// stands where engine_kwargs gives none, and must agree where it does.
	if pc, ok := raw.ResolvedConfig["parallel_config"]; ok {
		var f struct {
			PP *int  `json:"pipeline_parallel_size"`
			DP *int  `json:"data_parallel_size"`
			EP *bool `json:"enable_expert_parallel"`
		}
		if json.Unmarshal(pc, &f) == nil {
			if err := resolvedSize(name, "data_parallel_size", f.DP, k.DataParallelSize, &e.DP, "how many DP ranks ran?"); err != nil {
				return Engine{}, err
			}
		}
		if f.EP != nil && k.ExpertParallel == nil {
			e.ExpertParallel = *f.EP
		}
		if err := resolvedSize(name, "pipeline_parallel_size", f.PP, k.PipelineParallel, &e.PP, "how many stages ran?"); err != nil {
			return Engine{}, err
		}
	}
	// resolved_config.speculative_config is what vLLM ran (its resolved
	// SpeculativeConfig): it stands where engine_kwargs gives none.
	if sc, ok := raw.ResolvedConfig["speculative_config"]; ok && e.Speculative == "" {
		if v := argText(sc); !isNull(v) {
			if err := applyArg(&e, "speculative_config", v); err != nil {
				return Engine{}, fieldErr(name, 0, "resolved_config.speculative_config", "%v", err)
			}
		}
	}
	if h := m.Hardware; h != nil {
		if h.DeviceName != nil {
			e.GPU = *h.DeviceName
		}
		if h.DeviceTotalMemory != nil {
			if !(*h.DeviceTotalMemory > 0) || math.IsInf(*h.DeviceTotalMemory, 0) {
				return Engine{}, fieldErr(name, 0, "hardware.device_total_memory_bytes", "%g: want > 0", *h.DeviceTotalMemory)
			}
			e.GPUMemBytes = *h.DeviceTotalMemory
		}
	}
	return e, nil
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// checkMetaArgs applies the engine-argument table to engine_kwargs and to
// resolved_config's sections (keys not in the table are not listed for
// resolved_config: it holds every field of vLLM's config classes).
func checkMetaArgs(name string, raw metaRaw, e *Engine) error {
	c := &argChecker{file: name}
	for _, key := range sortedKeys(raw.EngineKwargs) {
		if !c.check("engine_kwargs."+key, key, argText(raw.EngineKwargs[key])) {
			c.unknown = append(c.unknown, key)
		}
	}
	for _, sec := range sortedKeys(raw.ResolvedConfig) {
		v := raw.ResolvedConfig[sec]
		c.check("resolved_config."+sec, sec, argText(v))
		var fields map[string]json.RawMessage
		if json.Unmarshal(v, &fields) != nil || sec == "speculative_config" {
			continue // not a section, or one read whole (speculative_config's own keys are not engine arguments)
		}
		for _, key := range sortedKeys(fields) {
			c.check("resolved_config."+sec+"."+key, key, argText(fields[key]))
		}
	}
	if err := c.err(); err != nil {
		return err
	}
	if n := c.note("meta.json engine_kwargs"); n != "" {
		e.Notes = append(e.Notes, n)
	}
	return nil
}

// argText is a JSON value as the table's Inert functions read it: a
// string unquoted, anything else as written.
func argText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(v))
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// decodeOne decodes data, which must hold exactly one JSON value, into v.
func decodeOne(data []byte, v any, name string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("realrun: %s: empty file", name)
		}
		return jsonErr(name, 0, err)
	}
	if off := dec.InputOffset(); dec.More() || len(bytes.TrimSpace(data[off:])) > 0 {
		return fmt.Errorf("realrun: %s: a second JSON value after the first (at byte %d): want one object", name, off)
	}
	return nil
}

// TimeseriesHeader is the header timeseries.csv must have.
const TimeseriesHeader = "t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct"

// ReadTimeseries reads timeseries.csv (bench/core/stat_logger.py), one
// row per 1 s tick, and aligns it: T = t − (t₁ − 1) where t₁ is the first
// tick with prompt throughput, so the ticks count seconds since the first
// arrival to within one tick. Rows before t₁ are dropped. t must increase;
// counts and throughputs must be non-negative. A kv_cache_pct column that
// is 0.0 in every row (not recorded, per the bench's own note) reads NaN.
func ReadTimeseries(r io.Reader, name string) ([]Tick, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 6
	cr.ReuseRecord = true
	head, err := readHead(cr, name)
	if err != nil {
		return nil, err
	}
	if got := strings.TrimPrefix(strings.Join(head, ","), "\ufeff"); got != TimeseriesHeader {
		return nil, fmt.Errorf("realrun: %s line 1: header %q, want %q", name, got, TimeseriesHeader)
	}
	cols := strings.Split(TimeseriesHeader, ",")
	var ticks []Tick
	start, anyKV := math.NaN(), false
	last := math.Inf(-1)
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvErr(name, err)
		}
		var v [6]float64
		for i, s := range rec {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || !finite(f) || f < 0 {
				return nil, fieldErr(name, line, cols[i], "%q: want a finite number ≥ 0", s)
			}
			v[i] = f
		}
		if v[0] <= last {
			return nil, fieldErr(name, line, "t", "%g does not increase (previous %g)", v[0], last)
		}
		last = v[0]
		if v[3] != math.Trunc(v[3]) || v[4] != math.Trunc(v[4]) {
			return nil, fieldErr(name, line, "running", "running %g and waiting %g must be whole counts", v[3], v[4])
		}
		if math.IsNaN(start) {
			if v[1] == 0 {
				continue
			}
			start = v[0] - 1
		}
		anyKV = anyKV || v[5] != 0
		ticks = append(ticks, Tick{T: v[0] - start, PromptTPS: v[1], GenTPS: v[2], Running: int(v[3]), Waiting: int(v[4]), KVPct: v[5]})
	}
	if !anyKV {
		for i := range ticks {
			ticks[i].KVPct = math.NaN()
		}
	}
	return ticks, nil
}

// readHead reads cr's header row; an empty file is an error, as is a CSV
// error (csvErr).
func readHead(cr *csv.Reader, name string) ([]string, error) {
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("realrun: %s: empty file", name)
	}
	if err != nil {
		return nil, csvErr(name, err)
	}
	return head, nil
}

func csvErr(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("realrun: %s line %d: %v", name, pe.Line, pe.Err)
	}
	return fmt.Errorf("realrun: %s: %v", name, err)
}

// stripBOM drops a leading UTF-8 byte-order mark.
func stripBOM(b []byte) []byte { return bytes.TrimPrefix(b, []byte("\ufeff")) }

// resolvedSize takes resolved_config.parallel_config's key (got; nil where
// absent) into dst where engine_kwargs gives none (kw nil); a size below 1,
// or one that disagrees with engine_kwargs's, is an error asking question.
func resolvedSize(name, key string, got, kw, dst *int, question string) error {
	if got == nil {
		return nil
	}
	switch field := "resolved_config.parallel_config." + key; {
	case *got < 1:
		return fieldErr(name, 0, field, "%d: want ≥ 1", *got)
	case kw == nil:
		*dst = *got
	case *kw != *got:
		return fieldErr(name, 0, field, "%d, but engine_kwargs.%s is %d: %s", *got, key, *kw, question)
	}
	return nil
}
