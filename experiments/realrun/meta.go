package realrun

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// metaJSON is LLMServingSim's bench meta.json (bench/core/runner.py): the
// engine kwargs and, in later runs, the KV-cache plan and the device.
type metaJSON struct {
	Model        string `json:"model"`
	VLLMVersion  string `json:"vllm_version"`
	EngineKwargs *struct {
		Model               *string `json:"model"`
		TensorParallelSize  *int    `json:"tensor_parallel_size"`
		DataParallelSize    *int    `json:"data_parallel_size"`
		MaxNumSeqs          *int    `json:"max_num_seqs"`
		MaxNumBatchedTokens *int    `json:"max_num_batched_tokens"`
		MaxModelLen         *int    `json:"max_model_len"`
		DType               *string `json:"dtype"`
		KVCacheDType        *string `json:"kv_cache_dtype"`
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

// ReadMeta reads meta.json's engine arguments. engine_kwargs and its
// model are required; the rest is optional (older runs lack kv_cache and
// hardware). Numbers must be non-negative.
func ReadMeta(r io.Reader, name string) (Engine, error) {
	var m metaJSON
	dec := json.NewDecoder(r)
	if err := dec.Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			return Engine{}, fmt.Errorf("realrun: %s: empty file", name)
		}
		return Engine{}, jsonErr(name, 0, err)
	}
	if m.EngineKwargs == nil {
		return Engine{}, fieldErr(name, 0, "engine_kwargs", "missing")
	}
	k := m.EngineKwargs
	e := Engine{VLLMVersion: m.VLLMVersion, Model: m.Model}
	if k.Model != nil {
		e.Model = *k.Model
	}
	if e.Model == "" {
		return Engine{}, fieldErr(name, 0, "engine_kwargs.model", "missing")
	}
	ints := []struct {
		field string
		src   *int
		dst   *int
	}{
		{"engine_kwargs.tensor_parallel_size", k.TensorParallelSize, &e.TP},
		{"engine_kwargs.data_parallel_size", k.DataParallelSize, &e.DP},
		{"engine_kwargs.max_num_seqs", k.MaxNumSeqs, &e.MaxNumSeqs},
		{"engine_kwargs.max_num_batched_tokens", k.MaxNumBatchedTokens, &e.MaxNumBatchedTokens},
		{"engine_kwargs.max_model_len", k.MaxModelLen, &e.MaxModelLen},
	}
	if kv := m.KVCache; kv != nil {
		ints = append(ints, struct {
			field string
			src   *int
			dst   *int
		}{"kv_cache.num_gpu_blocks", kv.NumGPUBlocks, &e.KVBlocks}, struct {
			field string
			src   *int
			dst   *int
		}{"kv_cache.block_size", kv.BlockSize, &e.BlockSize})
		if kv.GPUMemUtil != nil {
			if !(*kv.GPUMemUtil > 0 && *kv.GPUMemUtil <= 1) {
				return Engine{}, fieldErr(name, 0, "kv_cache.gpu_memory_utilization", "%g: want (0, 1]", *kv.GPUMemUtil)
			}
			e.GPUMemUtil = *kv.GPUMemUtil
		}
		e.PrefixCaching = kv.EnablePrefixCaching
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
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("realrun: %s: empty file", name)
		}
		return nil, csvErr(name, err)
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

func csvErr(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("realrun: %s line %d: %v", name, pe.Line, pe.Err)
	}
	return fmt.Errorf("realrun: %s: %v", name, err)
}

// stripBOM drops a leading UTF-8 byte-order mark.
func stripBOM(b []byte) []byte { return bytes.TrimPrefix(b, []byte("\ufeff")) }
