package hardware

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// TestDeviceMemoryCited: every built-in GPU carries the device memory the
// driver reports to CUDA (cudaMemGetInfo's total), equal to the reading its
// device_bytes source cites, and vLLM's memory plan starts from exactly that
// figure. Readings in GiB have two decimals (× 2^30, rounded to the byte);
// torch.cuda.get_device_properties prints whole MiB (× 2^20). Derived
// figures (‡) repeat a sibling's reading or scale one by datasheet GB.
func TestDeviceMemoryCited(t *testing.T) {
	const gib, mib = 1 << 30, 1 << 20
	cases := []struct {
		gpu     string
		reading string  // as it appears in the source entry
		bytes   float64 // the reading in bytes
	}{
		{"a100", "79.14 GiB", math.Round(79.14 * gib)},                // PyTorch OOM message, A100 80GB: 84,975,927,951
		{"a100-pcie", "79.14 GiB", math.Round(79.14 * gib)},           // ‡ the A100 80GB reading
		{"h100", "79.22 GiB", math.Round(79.22 * gib)},                // vLLM PR 10511 log: 85,061,827,297
		{"h100-pcie", "79.22 GiB", math.Round(79.22 * gib)},           // ‡ the H100 SXM reading
		{"h200", "143156 MiB", 143156 * mib},                          // torch total_memory=143156MB: 150,109,945,856
		{"b200", "182642 MiB", 182642 * mib},                          // torch total_memory=182642MB: 191,514,017,792
		{"gb200", "182642 MiB", math.Round(182642 * mib * 186 / 180)}, // ‡ B200 × 186/180: 197,897,818,385 (184.31 GiB)
		{"b300", "274323 MiB", 274323 * mib},                          // ‡ nvidia-smi 275040MiB − (B200 183359 − 182642): 287,648,514,048
		{"gb300", "274323 MiB", 274323 * mib},                         // ‡ the B300's derived figure
		{"rtx-pro-6000", "97250 MiB", 97250 * mib},                    // torch total_memory=97250MB: 101,974,016,000
		{"rtx-4090", "25,250,627,584 bytes", 25250627584},             // meta.json device_total_memory_bytes
		{"l40s", "44.42 GiB", math.Round(44.42 * gib)},                // PyTorch OOM message, L40S: 47,695,611,822
	}
	c := Builtin()
	if len(cases) != len(c.Names()) {
		t.Fatalf("%d cases for %d built-in GPUs: every catalog GPU needs its driver figure", len(cases), len(c.Names()))
	}
	m, err := models.Builtin().Get("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		g, err := c.Get(tc.gpu)
		if err != nil {
			t.Fatal(err)
		}
		if g.DeviceBytes != tc.bytes {
			t.Errorf("%s: device_bytes = %.0f, want %s = %.0f", tc.gpu, g.DeviceBytes, tc.reading, tc.bytes)
		}
		var src string
		for _, s := range g.Sources {
			if strings.HasPrefix(s, "device_bytes:") {
				src = s
			}
		}
		if !strings.Contains(src, tc.reading) {
			t.Errorf("%s: device_bytes source %q does not cite the reading %q", tc.gpu, src, tc.reading)
		}
		// The driver figure is below the datasheet's binary size and above
		// its decimal one's 90 %: a reading in the wrong unit would not be.
		if !(tc.bytes > 0.9*g.MemBytes && tc.bytes < 1.09*g.MemBytes) {
			t.Errorf("%s: %s is not within [0.9, 1.09] × the datasheet %.0f bytes", tc.gpu, tc.reading, g.MemBytes)
		}
		tp := 1
		plan, err := PlanMemoryVLLM(m, g, models.Parallel{TP: tp, Weights: models.BF16, KV: models.BF16},
			VLLMMemory{Utilization: 0.9, BlockSize: 16, MaxNumBatchedTokens: 2048, MaxNumSeqs: 256, NonTorch: DefaultNonTorch(tp), CUDAGraphs: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.gpu, err)
		}
		if plan.Total != tc.bytes || plan.Requested != math.Ceil(tc.bytes*0.9) {
			t.Errorf("%s: plan total %.0f, requested %.0f; want %.0f and ceil(× 0.9) = %.0f", tc.gpu, plan.Total, plan.Requested, tc.bytes, math.Ceil(tc.bytes*0.9))
		}
	}
}
