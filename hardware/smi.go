package hardware

import (
	"slices"
	"strings"

	"github.com/servesim/servesim/models"
)

// smiNames maps the device names nvidia-smi prints (and CUDA reports
// through torch.cuda.get_device_name, which vLLM records as device_name)
// to catalog GPUs, after normalize and without the "nvidia-" prefix, for
// the names whose words come in another order than the catalog's
// aliases: "NVIDIA H100 80GB HBM3" (the H100 SXM5: LLMServingSim's H100
// profile meta.yaml, ../shared/data/llmservingsim/profiles/H100) and
// "NVIDIA A100 80GB PCIe". Other names ("NVIDIA H200", "NVIDIA B200",
// "NVIDIA L40S", "NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 4090") are
// a catalog name or alias once the prefix is dropped.
var smiNames = map[string]string{
	"h100-80gb-hbm3": "h100",
	"a100-80gb-pcie": "a100-pcie",
}

// deviceName returns the catalog name or alias an nvidia-smi device name n
// (normalized) stands for, or "" when it names none.
func deviceName(n string) string {
	n, ok := strings.CutPrefix(n, "nvidia-")
	if !ok {
		return ""
	}
	if g, ok := smiNames[n]; ok {
		return g
	}
	return n
}

// suggest returns " (did you mean X?)" for the catalog name or alias
// closest to n, when close (models.Suggest).
// An nvidia-smi name the catalog lacks gets no suggestion (the closest
// name of "NVIDIA A100-SXM4-40GB" is the 80 GB part: another GPU) but the
// way to add it.
func (c *Catalog) suggest(n string) string {
	if strings.HasPrefix(n, "nvidia-") {
		return ": a device name of a GPU not in the catalog; add it with --gpus-file (a [[gpu]] with this name in its aliases)"
	}
	names := c.Names()
	for a := range c.alias {
		names = append(names, a)
	}
	slices.Sort(names) // a tie goes to the same name every run
	return models.Suggest(n, names)
}
