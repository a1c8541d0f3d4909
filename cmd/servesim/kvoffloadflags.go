package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/servesim/servesim/experiments/scenario"
)

// vLLM's KV offloading flags, into [offload] (experiments/offload.go):
//
//	--kv-offloading-size GiB              offload.cpu_gib (the total over the TP × PP ranks, vllm/config/cache.py)
//	--kv-offloading-backend native|lmcache offload.backend
//	--kv-transfer-config JSON             the connector it names:
//	    {"kv_connector":"OffloadingConnector",
//	     "kv_connector_extra_config":{"cpu_bytes_to_use":BYTES}}         backend native, cpu_gib = BYTES / 2³⁰
//	    {"kv_connector":"LMCacheConnectorV1",
//	     "kv_connector_extra_config":{"lmcache.max_local_cpu_size":GB,   backend lmcache, per rank (as
//	       "lmcache.max_local_disk_size":GB}}                            vLLM's lmcache parser writes them)
//
// (vllm/config/kv_transfer.py and the kv_offload config parsers write
// exactly these: tests/v1/kv_offload/test_config.py, native 4 GiB →
// cpu_bytes_to_use 4 × 2³⁰, lmcache 8 GiB at TP 2 × PP 2 → 2.0 a rank.)
// Any other connector (NixlConnector, P2pNcclConnector, …) moves KV
// between instances: servesim's prefill/decode disaggregation
// (--decode-replicas) models that, not the connector.

// offloadOf returns s's [offload] table, creating it.
func offloadOf(s *scenario.Scenario) *scenario.Offload {
	if s.Offload == nil {
		s.Offload = &scenario.Offload{}
	} else {
		o := *s.Offload // a copy: s may share its table with the scenario it was copied from
		s.Offload = &o
	}
	return s.Offload
}

// offloadValue sets a field of src's [offload] table from a flag.
type offloadValue struct {
	s   *scenario.Scenario
	set func(o *scenario.Offload, v string) error
	get func(o *scenario.Offload) string
}

func (v offloadValue) String() string {
	if v.s == nil || v.s.Offload == nil {
		return ""
	}
	return v.get(v.s.Offload)
}

func (v offloadValue) Set(x string) error {
	if v.s.Offload == nil {
		v.s.Offload = &scenario.Offload{}
	}
	return v.set(v.s.Offload, x)
}

func (v offloadValue) Type() string { return "string" }

// vllmOffloadFlags binds vLLM's offloading flags (run only).
func vllmOffloadFlags(fs *pflag.FlagSet, s *scenario.Scenario) {
	fs.Var(offloadValue{s, func(o *scenario.Offload, x string) error {
		g, err := strconv.ParseFloat(x, 64)
		if err != nil || !(g >= 0) || math.IsInf(g, 0) {
			return fmt.Errorf("want a number of GiB ≥ 0")
		}
		o.CPUGiB = g
		return nil
	}, func(o *scenario.Offload) string { return strconv.FormatFloat(o.CPUGiB, 'g', -1, 64) }},
		"kv-offloading-size", "vLLM's KV offload buffer in host memory, GiB over the instance's GPUs (offload.cpu_gib; needs prefix caching)")
	fs.Var(offloadValue{s, func(o *scenario.Offload, x string) error {
		if x != "native" && x != "lmcache" {
			return fmt.Errorf("want native or lmcache%s", didYouMean(x, []string{"native", "lmcache"}))
		}
		o.Backend = x
		return nil
	}, func(o *scenario.Offload) string { return o.Backend }},
		"kv-offloading-backend", "vLLM's KV offloading backend: native (OffloadingConnector) or lmcache (offload.backend)")
	fs.Var(offloadValue{s, func(o *scenario.Offload, x string) error {
		c, err := parseKVTransferConfig([]byte(x))
		if err != nil {
			return err
		}
		*o = c
		return nil
	}, func(o *scenario.Offload) string { return "" }},
		"kv-transfer-config", `vLLM's KV connector as JSON: OffloadingConnector (cpu_bytes_to_use) or LMCacheConnectorV1 (lmcache.max_local_cpu_size, lmcache.max_local_disk_size) become [offload]`)
}

func init() {
	for name, f := range map[string]scenarioFlag{
		"kv-offloading-size":    {"offload.cpu_gib", func(d, s *scenario.Scenario) { offloadOf(d).CPUGiB = s.Offload.CPUGiB }},
		"kv-offloading-backend": {"offload.backend", func(d, s *scenario.Scenario) { offloadOf(d).Backend = s.Offload.Backend }},
		"kv-transfer-config":    {"offload", func(d, s *scenario.Scenario) { *offloadOf(d) = *s.Offload }},
	} {
		scenarioFlags[name] = f
	}
}

// parseKVTransferConfig reads vLLM's --kv-transfer-config JSON into the
// offload tiers it configures (see the table above). Unknown keys of
// KVTransferConfig are ignored as vLLM's own fields (kv_buffer_device,
// engine_id, …) that price nothing here; a connector servesim does not
// model, a role other than kv_both, or a size that is not a number ≥ 0 is
// an error naming it.
func parseKVTransferConfig(data []byte) (scenario.Offload, error) {
	var cfg struct {
		Connector string                     `json:"kv_connector"`
		Role      *string                    `json:"kv_role"`
		Extra     map[string]json.RawMessage `json:"kv_connector_extra_config"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&cfg); err != nil {
		return scenario.Offload{}, fmt.Errorf("not a KV transfer config (JSON object): %v", err)
	}
	if dec.More() {
		return scenario.Offload{}, fmt.Errorf("not a KV transfer config: text after the JSON object")
	}
	if cfg.Role != nil && *cfg.Role != "kv_both" {
		return scenario.Offload{}, fmt.Errorf("kv_role %q: an offloading connector stores and loads (kv_both); kv_producer and kv_consumer are the two sides of prefill/decode disaggregation (--decode-replicas)", *cfg.Role)
	}
	num := func(key string) (float64, bool, error) {
		raw, ok := cfg.Extra[key]
		if !ok {
			return 0, false, nil
		}
		var v float64
		if err := json.Unmarshal(raw, &v); err != nil || !(v >= 0) || math.IsInf(v, 0) {
			return 0, true, fmt.Errorf("kv_connector_extra_config.%s = %s: want a number ≥ 0", key, raw)
		}
		return v, true, nil
	}
	var o scenario.Offload
	switch cfg.Connector {
	case "OffloadingConnector":
		o.Backend = "native"
		b, ok, err := num("cpu_bytes_to_use")
		if err != nil {
			return o, err
		}
		if !ok {
			return o, fmt.Errorf("OffloadingConnector without kv_connector_extra_config.cpu_bytes_to_use (the host buffer in bytes, as --kv-offloading-size writes it)%s", otherKeys(cfg.Extra))
		}
		o.CPUGiB = b / scenario.GiB
	case "LMCacheConnectorV1":
		o.Backend = "lmcache"
		cpu, okc, err := num("lmcache.max_local_cpu_size")
		if err != nil {
			return o, err
		}
		disk, okd, err := num("lmcache.max_local_disk_size")
		if err != nil {
			return o, err
		}
		if !okc && !okd {
			return o, fmt.Errorf("LMCacheConnectorV1 without kv_connector_extra_config.lmcache.max_local_cpu_size or lmcache.max_local_disk_size (GB a rank; LMCache's environment variables and config file are not read)%s", otherKeys(cfg.Extra))
		}
		o.CPUGiB, o.DiskGiB, o.PerRank = cpu, disk, true
	case "":
		return o, fmt.Errorf("no kv_connector")
	default:
		return o, fmt.Errorf("kv_connector %q: servesim models the offloading connectors (OffloadingConnector, LMCacheConnectorV1); KV transfer between prefill and decode instances is --decode-replicas", cfg.Connector)
	}
	return o, nil
}

// otherKeys lists the extra config's keys for an error message.
func otherKeys(m map[string]json.RawMessage) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return fmt.Sprintf(" (it has %v)", keys)
}
