package scenario

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/sim/serve"
)

// Offload is the KV offload tiers below the GPU's prefix cache
// ([offload]; sim/serve kvtier.go), as vLLM configures them:
// --kv-offloading-size GiB with --kv-offloading-backend native|lmcache
// (vllm/config/kv_transfer.py and vllm/config/cache.py: the size is the
// total over the instance's TP × PP ranks, split evenly per rank:
// tests/v1/kv_offload/test_config.py, 8 GiB at TP 2 × PP 2 → 2 GiB a
// rank), or --kv-transfer-config '{"kv_connector":"OffloadingConnector",
// "kv_connector_extra_config":{"cpu_bytes_to_use":…}}' (cmdline.go).
type Offload struct {
	// Backend is "native" (vLLM's OffloadingConnector: host memory only;
	// the default) or "lmcache" (LMCacheConnectorV1: host memory, and a
	// local disk tier when DiskGiB > 0).
	Backend string `toml:"backend,omitempty" json:"backend,omitempty"`
	// CPUGiB is the host-memory tier, GiB per instance (over its GPUs);
	// 0 with no disk and no CPUBlocks: no tiers.
	CPUGiB float64 `toml:"cpu_gib" json:"cpu_gib"`
	// CPUBlocks sizes the host tier in KV blocks instead (the count vLLM
	// logs for its CPU offload tier, the sim2real tables'
	// cpu_kv_blocks_logged: kv_offloading_size ÷ the bytes of one
	// block_size-token block of the whole model's KV, e.g. Llama-2-7B's
	// 1023 = ⌊8 GiB / 8 MiB⌋); each GPU holds its share of every block.
	CPUBlocks int `toml:"cpu_blocks,omitzero" json:"cpu_blocks,omitempty"`
	// DiskGiB is LMCache's local disk tier, GiB per instance
	// (LMCACHE_LOCAL_DISK with LMCACHE_MAX_LOCAL_DISK_SIZE).
	DiskGiB float64 `toml:"disk_gib,omitzero" json:"disk_gib,omitempty"`
	// PerRank makes CPUGiB and DiskGiB sizes per GPU rather than per
	// instance (LMCache's max_local_cpu_size and max_local_disk_size are a
	// rank's).
	PerRank bool `toml:"per_rank,omitempty" json:"per_rank,omitempty"`
	// DiskStore is "evict" (the disk tier stores what the host tier
	// evicts; the default) or "through" (every unit stored in host memory
	// is written to disk as well: LMCache's StorageManager puts a chunk in
	// every backend).
	DiskStore string `toml:"disk_store,omitempty" json:"disk_store,omitempty"`
	// HostLinkEfficiency is the fraction of the GPU's host_bw (the
	// catalog's PCIe rate per direction) a KV transfer reaches; omitted:
	// DefaultHostLinkEfficiency.
	HostLinkEfficiency float64 `toml:"host_link_efficiency,omitzero" json:"host_link_efficiency,omitempty"`
	// DiskReadGBps and DiskWriteGBps are the disk's rates per GPU (GB/s);
	// omitted: DefaultDiskReadGBps, DefaultDiskWriteGBps.
	DiskReadGBps  float64 `toml:"disk_read_gb_per_s,omitzero" json:"disk_read_gb_per_s,omitempty"`
	DiskWriteGBps float64 `toml:"disk_write_gb_per_s,omitzero" json:"disk_write_gb_per_s,omitempty"`
}

// DefaultHostLinkEfficiency is the share of a PCIe link's rate that DMA
// payload reaches: a 256-byte TLP payload (the max payload size of server
// root complexes) carries 24 bytes of header, sequence number, LCRC and
// framing, 256 / 280 = 0.914 (PCI Express Base Specification TLP format;
// Xilinx WP350, "Understanding Performance of PCI Express Systems", table
// of TLP overheads). The catalog's host_bw is already after 128b/130b
// line coding.
const DefaultHostLinkEfficiency = 256.0 / 280

// Local NVMe rates per GPU: DGX/HGX H100 nodes carry 8 × 3.84 TB U.2 NVMe
// data drives, one per GPU (NVIDIA DGX H100 user guide, hardware
// overview), and a 3.84 TB PCIe Gen4 datacenter drive reads 7.0 GB/s and
// writes 3.8 GB/s sequentially (Samsung PM1733 datasheet; KV chunks of
// 256–512 tokens are 32–128 MB, sequential-sized I/O).
const (
	DefaultDiskReadGBps  = 7.0
	DefaultDiskWriteGBps = 3.8
)

// GiB is bytes per GiB.
const GiB = 1 << 30

// offloadTiers resolves the [offload] table into the tiers of an instance
// of gpus GPUs whose host link runs hostBW bytes/s per direction per GPU,
// with KV blocks of blockBytes per GPU.
func (s *Scenario) offloadTiers(gpus int, hostBW, blockBytes float64) ([]serve.KVTier, error) {
	o := s.Offload
	if o == nil || o.CPUGiB == 0 && o.DiskGiB == 0 && o.CPUBlocks == 0 {
		return nil, nil // no tier (vLLM without --kv-offloading-size)
	}
	if o.CPUBlocks < 0 || o.CPUBlocks > 0 && o.CPUGiB != 0 {
		return nil, s.fieldError("offload.cpu_blocks", "", "%d: want a block count > 0, and not with cpu_gib", o.CPUBlocks)
	}
	switch o.Backend {
	case "", "native":
		if o.DiskGiB != 0 {
			return nil, s.fieldError("offload.disk_gib", "", "%g GiB of disk with backend %q: vLLM's OffloadingConnector offloads to host memory only; a disk tier is LMCache's (backend = \"lmcache\")", o.DiskGiB, "native")
		}
	case "lmcache":
	default:
		return nil, s.fieldError("offload.backend", "kv-offloading-backend", "%q: want native (vLLM's OffloadingConnector) or lmcache", o.Backend)
	}
	if e := s.engineName(); e == serve.SGLangVersion || e == serve.TRTLLMVersion {
		// SGLang's HiCache and TensorRT-LLM's host KV cache
		// (kv_cache_config.host_cache_size) are their own mechanisms.
		return nil, s.fieldError("offload.cpu_gib", "kv-offloading-size", "KV offload tiers are modelled as vLLM's connectors run them (engine vllm-v1, or ideal): the %s engine's own offload is not modelled", e)
	}
	if s.Disagg.DecodeReplicas > 0 || s.Ranks() > 1 {
		return nil, s.fieldError("offload.cpu_gib", "kv-offloading-size", "KV offload tiers are modelled on colocated instances of one DP rank (not with decode_replicas or dp > 1)")
	}
	if !s.Batch.PrefixCaching {
		return nil, s.fieldError("offload.cpu_gib", "kv-offloading-size", "a KV offload tier needs prefix caching (batch.prefix_caching = true, --enable-prefix-caching): offloaded KV is found by its block hashes")
	}
	for _, f := range []struct {
		field string
		v     float64
		pos   bool
	}{
		{"offload.cpu_gib", o.CPUGiB, o.CPUBlocks == 0},
		{"offload.disk_gib", o.DiskGiB, false},
		{"offload.host_link_efficiency", o.HostLinkEfficiency, false},
		{"offload.disk_read_gb_per_s", o.DiskReadGBps, false},
		{"offload.disk_write_gb_per_s", o.DiskWriteGBps, false},
	} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) || f.pos && f.v == 0 {
			rule := "a finite number ≥ 0"
			if f.pos {
				rule = "a finite number > 0"
			}
			return nil, s.fieldError(f.field, "", "%g: want %s", f.v, rule)
		}
	}
	eff := o.HostLinkEfficiency
	if eff == 0 {
		eff = DefaultHostLinkEfficiency
	}
	if eff > 1 {
		return nil, s.fieldError("offload.host_link_efficiency", "", "%g: a fraction of the link's rate, at most 1", eff)
	}
	if !(hostBW > 0) {
		return nil, fmt.Errorf("scenario: the GPU has no host link rate (host_bw) for a KV offload tier")
	}
	g := float64(gpus)
	if o.PerRank {
		g = 1
	}
	host := hostBW * eff
	cpu := o.CPUGiB * GiB / g
	if o.CPUBlocks > 0 {
		cpu = float64(o.CPUBlocks) * blockBytes
	}
	tiers := []serve.KVTier{{Name: "cpu", Bytes: cpu, ReadBW: host, WriteBW: host}}
	if o.DiskGiB > 0 {
		rd, wr := o.DiskReadGBps, o.DiskWriteGBps
		if rd == 0 {
			rd = DefaultDiskReadGBps
		}
		if wr == 0 {
			wr = DefaultDiskWriteGBps
		}
		var onEvict bool
		switch o.DiskStore {
		case "", "evict":
			onEvict = true
		case "through":
		default:
			return nil, s.fieldError("offload.disk_store", "", "%q: want evict or through", o.DiskStore)
		}
		tiers = append(tiers, serve.KVTier{Name: "disk", Bytes: o.DiskGiB * GiB / g, ReadBW: rd * 1e9, WriteBW: wr * 1e9, OnEvict: onEvict})
	}
	return tiers, nil
}

// TierCounts are what the offload tiers did (Report.Counts.Tiers).
type TierCounts struct {
	Name      string `json:"name"`
	HitTokens int64  `json:"hit_tokens"` // prompt tokens loaded from the tier
	// PreemptHitTokens are recompute-preempted requests' own tokens
	// loaded back from the tier on readmission instead of recomputed.
	PreemptHitTokens int64   `json:"preempt_hit_tokens,omitempty"`
	HitRate          float64 `json:"hit_rate"`       // of the prompt tokens admitted
	StoredGB         float64 `json:"stored_gb"`      // written into it, per GPU
	LoadedGB         float64 `json:"loaded_gb"`      // read over its link towards the GPU, per GPU
	LinkBusyPct      float64 `json:"link_busy_pct"`  // its read link's busy time over the run, per instance
	WriteBusyPct     float64 `json:"write_busy_pct"` // its write link's
	Evictions        int64   `json:"evictions"`
}

// tierCounts returns the tiers' counts, nil without tiers.
func (r *Report) tierCounts() []TierCounts {
	tiers := r.Plan.Serve.Instance.Tiers
	if len(tiers) == 0 {
		return nil
	}
	res := r.Result
	inst := float64(r.Plan.Replicas)
	span := r.Summary.Duration * inst
	out := make([]TierCounts, len(tiers))
	for i, t := range tiers {
		c := TierCounts{Name: t.Name, HitTokens: res.TierHitTokens[i], PreemptHitTokens: res.TierPreemptHitTokens[i], StoredGB: res.TierStoreBytes[i] / 1e9 / inst,
			LoadedGB: res.TierLoadBytes[i] / 1e9 / inst, Evictions: res.TierEvictions[i]}
		if res.PromptTokensAdmitted > 0 {
			c.HitRate = float64(c.HitTokens) / float64(res.PromptTokensAdmitted)
		}
		if span > 0 {
			c.LinkBusyPct = 100 * res.TierLoadSeconds[i] / span
			c.WriteBusyPct = 100 * res.TierStoreSeconds[i] / span
		}
		out[i] = c
	}
	return out
}

// writeTierCounts prints the tiers' counts in the summary's layout.
func (r *Report) writeTierCounts(line func(label string, v any)) {
	for _, c := range r.tierCounts() {
		line(fmt.Sprintf("KV tier %s hit rate (%% of prompt):", c.Name), fmt.Sprintf("%.2f", 100*c.HitRate))
		line(fmt.Sprintf("KV tier %s stored/loaded (GB per GPU):", c.Name), fmt.Sprintf("%.2f / %.2f", c.StoredGB, c.LoadedGB))
		line(fmt.Sprintf("KV tier %s read/write link busy (%%):", c.Name), fmt.Sprintf("%.2f / %.2f", c.LinkBusyPct, c.WriteBusyPct))
		line(fmt.Sprintf("KV tier %s evictions (units):", c.Name), c.Evictions)
		if c.PreemptHitTokens > 0 {
			line(fmt.Sprintf("KV tier %s preempted tokens loaded back:", c.Name), c.PreemptHitTokens)
		}
	}
	if res := r.Result; res.TierLoads > 0 {
		line("KV tier loads (requests):", res.TierLoads)
		line("KV tier load wait mean (ms):", fmt.Sprintf("%.2f", 1e3*res.TierLoadWaitSeconds/float64(res.TierLoads)))
		if res.TierPreemptLoads > 0 {
			line("KV tier loads after preemption (requests):", res.TierPreemptLoads)
		}
		if res.TierLoadsDropped > 0 {
			line("KV tier loads dropped for room:", res.TierLoadsDropped)
		}
	}
}

// TierNote says what a replay's offload tiers did ("" without tiers).
func TierNote(p *Plan, res serve.Result) string {
	tiers := p.Serve.Instance.Tiers
	if len(tiers) == 0 {
		return ""
	}
	inst := float64(max(p.Replicas, 1))
	return fmt.Sprintf("simulated KV tier %s (%.2f GB a GPU): %.2f GB stored a GPU, %d prompt tokens loaded, %d preempted tokens loaded back in %d loads (%d preemptions, %d KV tokens recomputed)",
		tiers[0].Name, tiers[0].Bytes/1e9, res.TierStoreBytes[0]/1e9/inst, res.TierHitTokens[0], res.TierPreemptHitTokens[0], res.TierPreemptLoads, res.Preemptions, res.RecomputeTokens)
}

// TierHitRate is the share of admitted prompt tokens loaded from any
// offload tier (the sweep column kv_tier_hit_rate).
func (r *Report) TierHitRate() float64 {
	h := int64(0)
	for _, n := range r.Result.TierHitTokens {
		h += n
	}
	if r.Result.PromptTokensAdmitted == 0 {
		return 0
	}
	return float64(h) / float64(r.Result.PromptTokensAdmitted)
}

// HostLinkLoadGB is the KV loaded over the host link into the GPU, GB per
// GPU (the mean over the instances; the sweep column kv_tier_load_gb).
func (r *Report) HostLinkLoadGB() float64 {
	return r.Result.TierLoadBytes[0] / 1e9 / float64(r.Plan.Replicas)
}
