package hardware

import (
	"strings"
	"testing"
)

// TestDeviceNames: the names nvidia-smi prints (and vLLM records as
// device_name) find their catalog GPU; an unknown one says how to add it;
// a typo gets the closest name.
func TestDeviceNames(t *testing.T) {
	c := Builtin()
	for _, tc := range []struct{ name, want, err string }{
		{"NVIDIA H100 80GB HBM3", "h100", ""}, // LLMServingSim's H100 meta.yaml
		{"NVIDIA H100 PCIe", "h100-pcie", ""},
		{"NVIDIA H200", "h200", ""},
		{"NVIDIA B200", "b200", ""},
		{"NVIDIA A100-SXM4-80GB", "a100", ""},
		{"NVIDIA A100 80GB PCIe", "a100-pcie", ""},
		{"NVIDIA GeForce RTX 4090", "rtx-4090", ""}, // the RTX 4090 run's device_name
		{"NVIDIA L40S", "l40s", ""},
		{"NVIDIA A100-SXM4-40GB", "", "add it with --gpus-file"}, // the 40 GB part is another GPU
		{"h10", "", "did you mean h100?"},
	} {
		g, err := c.Get(tc.name)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || g.Name != tc.want {
			t.Errorf("%q: %v %v, want %s", tc.name, g, err, tc.want)
		}
	}
}
