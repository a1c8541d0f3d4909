package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// TestKVTransferConfig reads the connectors vLLM's offloading flags write
// (vllm/config/kv_transfer.py parsers): native 4 GiB is cpu_bytes_to_use
// 4 × 2³⁰ = 4294967296; LMCache's sizes are a rank's.
func TestKVTransferConfig(t *testing.T) {
	for _, c := range []struct {
		json  string
		want  scenario.Offload
		wants string // error
	}{
		{`{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":4294967296}}`,
			scenario.Offload{Backend: "native", CPUGiB: 4}, ""},
		{`{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both","kv_connector_extra_config":{"lmcache.max_local_cpu_size":2.0,"lmcache.max_local_disk_size":50}}`,
			scenario.Offload{Backend: "lmcache", CPUGiB: 2, DiskGiB: 50, PerRank: true}, ""},
		{`{"kv_connector":"NixlConnector","kv_role":"kv_both"}`, scenario.Offload{}, "--decode-replicas"},
		{`{"kv_connector":"OffloadingConnector","kv_role":"kv_producer"}`, scenario.Offload{}, "kv_role"},
		{`{"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"num_cpu_blocks":1000}}`, scenario.Offload{}, "cpu_bytes_to_use"},
		{`{"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"cpu_bytes_to_use":-1}}`, scenario.Offload{}, "want a number ≥ 0"},
		{`{"kv_connector":"OffloadingConnector"} {}`, scenario.Offload{}, "text after"},
		{`[1]`, scenario.Offload{}, "not a KV transfer config"},
	} {
		got, err := parseKVTransferConfig([]byte(c.json))
		switch {
		case c.wants != "" && (err == nil || !strings.Contains(err.Error(), c.wants)):
			t.Errorf("%s: error %v, want one saying %q", c.json, err, c.wants)
		case c.wants == "" && (err != nil || got != c.want):
			t.Errorf("%s: %+v, %v; want %+v", c.json, got, err, c.want)
		}
	}
}

// FuzzKVTransferConfig: any input gives an error or sizes that are
// finite numbers ≥ 0, and never panics.
func FuzzKVTransferConfig(f *testing.F) {
	f.Add(`{"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"cpu_bytes_to_use":4294967296}}`)
	f.Add(`{"kv_connector":"LMCacheConnectorV1","kv_connector_extra_config":{"lmcache.max_local_cpu_size":5}}`)
	f.Add(`{"kv_connector":"LMCacheConnectorV1","kv_connector_extra_config":{"lmcache.max_local_disk_size":1e400}}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, s string) {
		o, err := parseKVTransferConfig([]byte(s))
		if err != nil {
			return
		}
		for _, v := range []float64{o.CPUGiB, o.DiskGiB} {
			if !(v >= 0) || math.IsInf(v, 0) {
				t.Fatalf("%q: size %g", s, v)
			}
		}
		if o.Backend != "native" && o.Backend != "lmcache" {
			t.Fatalf("%q: backend %q", s, o.Backend)
		}
	})
}

// TestRunKVOffloadingFlags: vLLM's flags run a host tier, and its counts
// reach the summary; the same run without them prints none.
func TestRunKVOffloadingFlags(t *testing.T) {
	base := []string{"run", "-o", "", "--requests", "200", "--rate", "20", "--prompt-len", "constant:2048", "--output-len", "constant:16",
		"--shared-prefix-tokens", "1536", "--prefix-groups", "64", "--enable-prefix-caching", "--num-gpu-blocks-override", "2000"}
	for _, c := range []struct {
		extra []string
		tier  bool
	}{
		{nil, false},
		{[]string{"--kv-offloading-size", "40", "--kv-offloading-backend", "native"}, true},
		{[]string{"--kv-transfer-config", `{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":42949672960}}`}, true},
	} {
		var out bytes.Buffer
		if err := dispatch(append(append([]string{}, base...), c.extra...), &out, &out); err != nil {
			t.Fatalf("%v: %v\n%s", c.extra, err, out.String())
		}
		if got := strings.Contains(out.String(), "KV tier cpu hit rate"); got != c.tier {
			t.Errorf("%v: tier counts printed %v, want %v\n%s", c.extra, got, c.tier, out.String())
		}
	}
	var out bytes.Buffer
	if err := dispatch([]string{"run", "-o", "", "--kv-offloading-size", "10", "--no-enable-prefix-caching"}, &out, &out); err == nil || !strings.Contains(err.Error(), "needs prefix caching") {
		t.Errorf("without prefix caching: %v", err)
	}
}
