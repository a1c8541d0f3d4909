package hardware

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/models"
)

// GPU is one accelerator type: the peaks the roofline needs, its memory, its
// links and its price. Units are SI throughout: FLOP/s, bytes, bytes/s,
// seconds, watts, US dollars. A zero FP8FLOPS or FP4FLOPS means the GPU has no
// tensor-core path for that precision (see PeakFLOPS).
//
// Numbers of the built-in GPUs come from ../shared/data/gpu-specs.md (cited per
// number in gpus.toml and in Sources); users add GPUs in TOML (see Catalog.Load).
type GPU struct {
	// Name is the catalog key: lower case, no spaces ("h100").
	Name string `toml:"name"`
	// Aliases are other names Get accepts ("h100-sxm"); matched like Name.
	Aliases []string `toml:"aliases"`
	// FullName is the product name for reports ("NVIDIA H100 SXM5 80GB").
	FullName string `toml:"full_name"`

	// Dense (no 2:4 sparsity) tensor-core peaks in FLOP/s; 0 = unsupported.
	// BF16FLOPS is required.
	BF16FLOPS float64 `toml:"bf16_flops"`
	FP8FLOPS  float64 `toml:"fp8_flops"`
	FP4FLOPS  float64 `toml:"fp4_flops"`

	// MemBytes is the HBM capacity in bytes, as the datasheet's decimal
	// gigabytes (80 GB = 80e9), kept for display and for the ideal
	// engine's memory plan. Devices report more (an "80 GB" H100 shows
	// 79.22 GiB = 85.1e9 bytes to vLLM): see DeviceBytes.
	MemBytes float64 `toml:"mem_bytes"`
	// DeviceBytes is the device memory the driver reports (CUDA
	// cudaMemGetInfo's total, torch.cuda.mem_get_info()[1]): what vLLM
	// multiplies gpu_memory_utilization by. Every built-in GPU has a cited
	// reading (gpus.toml, TestDeviceMemoryCited). 0 = unknown (a user
	// entry without it): DeviceMemory then takes MemBytes.
	DeviceBytes float64 `toml:"device_bytes"`
	// MemBW is the HBM bandwidth in bytes/s.
	MemBW float64 `toml:"mem_bw"`
	// LinkBW is the GPU-to-GPU (NVLink) bandwidth in bytes/s per direction:
	// datasheets quote the bidirectional aggregate, which is twice this
	// (H100: 900 GB/s aggregate = 450e9 per direction). Tensor-parallel
	// all-reduces run over it. A GPU without NVLink takes its PCIe figure.
	LinkBW float64 `toml:"link_bw"`
	// LinkLatency is the fixed cost in seconds of one tensor-parallel
	// all-reduce (the α of an α-β model). A TOML entry without it gets
	// DefaultLinkLatency.
	LinkLatency float64 `toml:"link_latency"`
	// SMs is the number of streaming multiprocessors: how many GEMM output
	// tiles run at once, which calibrated kernel models use for wave
	// quantization (hardware/calibrate). 0 = unknown: no wave model.
	SMs int `toml:"sms"`
	// HostBW is the PCIe bandwidth to host memory in bytes/s per direction
	// (used when KV blocks are swapped out).
	HostBW float64 `toml:"host_bw"`
	// TDP is the board power in watts; 0 = unknown.
	TDP float64 `toml:"tdp"`
	// PricePerHour is the rental price in US$ per GPU-hour; 0 = unknown.
	// Built-in prices are assumptions (typical 2026 on-demand rates of
	// specialised GPU clouds, see gpus.toml); override them for real
	// planning.
	PricePerHour float64 `toml:"price_per_hour"`
	// FrontEndRequestMs is the serving host's front-end time per request
	// in ms (the HTTP/OpenAI layer, tokenization and the hop to the engine
	// core: serve.VLLMV1's RequestCost) that the vllm-v1 engine takes when
	// a scenario sets no engine.front_end_request_ms. It belongs to the
	// host the GPU was measured in, not to the GPU: an entry carries it
	// only where a run on that host measured it, and its Sources entry
	// ("front_end_request_ms: ...") must say which run (Validate refuses
	// one without). 0 = no measurement for this host: the engine's default
	// (experiments.DefaultFrontEndRequestMs, the H100 fit) applies.
	FrontEndRequestMs float64 `toml:"front_end_request_ms"`

	// Sources says where each number came from, one entry per number, e.g.
	// "bf16_flops: 989.4e12 [S8†,S15†] data/gpu-specs.md".
	Sources []string `toml:"sources"`
}

// DeviceMemory returns the device memory the driver reports: DeviceBytes,
// or MemBytes when that is unknown.
func (g *GPU) DeviceMemory() float64 {
	if g.DeviceBytes > 0 {
		return g.DeviceBytes
	}
	return g.MemBytes
}

// DefaultLinkLatency is the all-reduce latency a TOML GPU entry gets when it
// gives none: 35.5 µs, the built-in H100's value (the median NCCL all-reduce
// time of messages up to 64 KiB at TP 2, 4 and 8 on an 8×H100 DGX, from
// ../shared/data/vidur-profiling/network/h100_dgx/all_reduce.csv; checked by
// TestProvenanceLinkLatency).
const DefaultLinkLatency = 35.5e-6

// PeakFLOPS returns the dense tensor-core peak in FLOP/s at which math of
// precision d runs on g. A precision the GPU lacks falls back to the next
// wider one it has: FP4 → FP8 → BF16. This models weight-only quantization
// (FP4 weights on an H100, FP8 weights on an A100): the weights are stored and
// read at their own width, but they are dequantized and multiplied at the
// wider precision, so the math runs at that precision's peak. BF16 is always
// supported (Validate requires it).
func (g *GPU) PeakFLOPS(d models.DType) float64 {
	switch d {
	case models.FP4:
		if g.FP4FLOPS > 0 {
			return g.FP4FLOPS
		}
		fallthrough
	case models.FP8:
		if g.FP8FLOPS > 0 {
			return g.FP8FLOPS
		}
	}
	return g.BF16FLOPS
}

// String returns the catalog name.
func (g *GPU) String() string { return g.Name }

// fieldError is a validation error about one TOML field; the loader adds the
// file and line.
type fieldError struct {
	field string // TOML key
	msg   string
}

func (e *fieldError) Error() string { return fmt.Sprintf("field %q: %s", e.field, e.msg) }

// Physical bounds of a GPU's numbers, so that a typo (a missing "e12", an
// extra exponent digit) is an error at load time rather than a run whose
// clock overflows. The upper bounds sit far above any accelerator announced
// by 2026 (B200: 9e15 FP4 FLOP/s, 8e12 B/s HBM, 1.8e11 B of HBM, 1.8e12 B/s
// NVLink aggregate); the lower bounds only keep reciprocals finite: a legal
// but very slow GPU (1 MFLOP/s, 1 kB/s) loads, and its runs report their own
// overflow.
const (
	MaxFLOPS     = 1e17 // FLOP/s: 10× a B200's FP4 peak
	MaxBandwidth = 1e14 // bytes/s, for mem_bw, link_bw and host_bw: 12× a B200's HBM
	MaxMemBytes  = 1e13 // bytes: 55× a B200's HBM
	MinRate      = 1    // FLOP/s or bytes/s: the least a rate may be (1/x stays finite)
	MaxLatency   = 1    // seconds: the longest link_latency (NCCL's is ~30 µs)
	MaxSMs       = 1 << 16
	MaxTDP       = 1e5 // W
	MaxPrice     = 1e4 // $/GPU-hour
	// MaxFrontEndMs bounds front_end_request_ms: a second per request is no
	// serving host's front end (the same bound as the scenario's
	// engine.front_end_request_ms).
	MaxFrontEndMs = 1e3
)

// Validate checks g: a well-formed name, BF16FLOPS, MemBytes, MemBW, LinkBW
// and HostBW positive, every other number (SMs included) non-negative,
// nothing NaN or infinite, and every number within the physical bounds
// above (MinRate ≤ a rate ≤ MaxFLOPS or MaxBandwidth, memory ≤ MaxMemBytes,
// link_latency ≤ MaxLatency, sms ≤ MaxSMs, tdp ≤ MaxTDP, price ≤ MaxPrice).
// It fills FullName from Name when empty; it sets no other defaults. Errors
// start with "hardware:" and name the field by its TOML key.
func (g *GPU) Validate() error {
	if err := g.validate(); err != nil {
		name := g.Name
		if name == "" {
			name = "(unnamed)"
		}
		return fmt.Errorf("hardware: gpu %q: %w", name, err)
	}
	return nil
}

func (g *GPU) validate() error {
	if err := checkName("name", g.Name); err != nil {
		return err
	}
	for _, a := range g.Aliases {
		if err := checkName("aliases", a); err != nil {
			return err
		}
	}
	if g.FullName == "" {
		g.FullName = g.Name
	}
	nums := []struct {
		key      string
		v        float64
		positive bool    // else non-negative
		lo, hi   float64 // bounds of a non-zero value
		unit     string
	}{
		{"bf16_flops", g.BF16FLOPS, true, MinRate, MaxFLOPS, "FLOP/s"},
		{"fp8_flops", g.FP8FLOPS, false, MinRate, MaxFLOPS, "FLOP/s"},
		{"fp4_flops", g.FP4FLOPS, false, MinRate, MaxFLOPS, "FLOP/s"},
		{"mem_bytes", g.MemBytes, true, 1, MaxMemBytes, "bytes"},
		{"device_bytes", g.DeviceBytes, false, 1, MaxMemBytes, "bytes"},
		{"mem_bw", g.MemBW, true, MinRate, MaxBandwidth, "bytes/s"},
		{"link_bw", g.LinkBW, true, MinRate, MaxBandwidth, "bytes/s"},
		{"link_latency", g.LinkLatency, false, 0, MaxLatency, "s"},
		{"host_bw", g.HostBW, true, MinRate, MaxBandwidth, "bytes/s"},
		{"tdp", g.TDP, false, 0, MaxTDP, "W"},
		{"price_per_hour", g.PricePerHour, false, 0, MaxPrice, "$/GPU-hour"},
		{"front_end_request_ms", g.FrontEndRequestMs, false, 0, MaxFrontEndMs, "ms"},
	}
	if g.SMs < 0 {
		return &fieldError{"sms", fmt.Sprintf("must be >= 0 (0: unknown), got %d", g.SMs)}
	}
	if g.SMs > MaxSMs {
		return &fieldError{"sms", fmt.Sprintf("%d is outside the physical range [0, %d]", g.SMs, MaxSMs)}
	}
	for _, n := range nums {
		switch {
		case math.IsNaN(n.v) || math.IsInf(n.v, 0):
			return &fieldError{n.key, fmt.Sprintf("must be finite, got %v", n.v)}
		case n.positive && n.v <= 0:
			return &fieldError{n.key, fmt.Sprintf("must be > 0, got %g", n.v)}
		case n.v < 0:
			return &fieldError{n.key, fmt.Sprintf("must be >= 0, got %g", n.v)}
		case n.v != 0 && (n.v < n.lo || n.v > n.hi):
			return &fieldError{n.key, fmt.Sprintf("%g %s is outside the physical range [%g, %g]", n.v, n.unit, n.lo, n.hi)}
		}
	}
	if g.FrontEndRequestMs > 0 && g.FrontEndSource() == "" {
		return &fieldError{"front_end_request_ms", fmt.Sprintf("%g ms has no source: add a sources entry \"front_end_request_ms: ...\" naming the run (host) that measured it", g.FrontEndRequestMs)}
	}
	return nil
}

// FrontEndSource returns the text of g's sources entry for
// front_end_request_ms (after "front_end_request_ms: "), or "" when it has
// none.
func (g *GPU) FrontEndSource() string {
	const key = "front_end_request_ms:"
	for _, s := range g.Sources {
		if rest, ok := strings.CutPrefix(s, key); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// checkName requires a catalog name to be already normalized: non-empty,
// lower case, no spaces or underscores (normalize maps those to '-').
func checkName(key, s string) error {
	if s == "" {
		return &fieldError{key, "must not be empty"}
	}
	if normalize(s) != s {
		return &fieldError{key, fmt.Sprintf("%q must be lower case without spaces or underscores (e.g. %q)", s, normalize(s))}
	}
	return nil
}

// normalize folds a user-typed GPU name to catalog form: trimmed, lower case,
// spaces and underscores as '-'.
func normalize(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '_' {
			return '-'
		}
		return r
	}, s)
}

// errorField returns the TOML key a validation error is about, or "".
func errorField(err error) string {
	var fe *fieldError
	if errors.As(err, &fe) {
		return fe.field
	}
	return ""
}
