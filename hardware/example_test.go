package hardware_test

import (
	"fmt"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// How many 16-token KV blocks Llama-3.1-8B leaves on one H100, and why
// Llama-3.1-405B needs more than one GPU.
func ExamplePlanMemory() {
	gpu, _ := hardware.Builtin().Get("H100-SXM")
	cat := models.Builtin()
	bf16 := models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}

	m, _ := cat.Get("llama-3.1-8b")
	plan, err := hardware.PlanMemory(m, gpu, bf16, hardware.DefaultUtilization, hardware.DefaultBlockSize, hardware.DefaultActivationReserve)
	if err != nil {
		panic(err)
	}
	fmt.Printf("weights %.2f GB, KV %.2f GB, %d blocks = %d tokens\n",
		plan.WeightBytesPerGPU/1e9, plan.KVBytesPerGPU/1e9, plan.Blocks, plan.TokenCapacity())

	big, _ := cat.Get("llama-3.1-405b")
	_, err = hardware.PlanMemory(big, gpu, bf16, hardware.DefaultUtilization, hardware.DefaultBlockSize, hardware.DefaultActivationReserve)
	fmt.Println(err)
	// Output:
	// weights 16.06 GB, KV 52.72 GB, 25138 blocks = 402208 tokens
	// hardware: llama-3.1-405b needs 811.7 GB of bf16 weights per GPU at tp 1 but h100 has 72.0 GB usable (80 GB × 0.90) of which 3.2 GB is reserved for activations: raise tp or use a larger GPU
}

// The time of one decode step, and of a long prefill, on three GPUs.
func ExampleStepModel() {
	m, _ := models.Builtin().Get("llama-3.1-8b")
	p := models.Parallel{TP: 1, Weights: models.BF16, KV: models.BF16}
	decode := models.Batch{Decodes: 1, DecodeCtx: 128}
	prefill := models.Batch{Prefills: 1, PrefillTokens: 8192, PrefillPairs: 8192 * 8193 / 2.0}
	for _, name := range []string{"a100", "h100", "h200"} {
		gpu, _ := hardware.Builtin().Get(name)
		k := hardware.Roofline{GPU: gpu, Eff: hardware.DefaultEfficiency(), TP: p.TP}
		s, err := hardware.NewStepModel(m, gpu, p, k, 0)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: decode %.2f ms, 8k prefill %.0f ms\n", name, s.StepTime(decode)*1e3, s.StepTime(prefill)*1e3)
	}
	// Output:
	// a100: decode 10.64 ms, 8k prefill 641 ms
	// h100: decode 7.03 ms, 8k prefill 212 ms
	// h200: decode 5.33 ms, 8k prefill 206 ms
}

// A user file adds a GPU; its mistakes are reported by file, line and field.
func ExampleCatalog_Load() {
	cat := hardware.Builtin()
	src := `[[gpu]]
name = "my-gpu"
bf16_flops = 500e12
mem_bytes = 96e9
mem_bw = -4e12
link_bw = 400e9
host_bw = 64e9
`
	fmt.Println(cat.Load(strings.NewReader(src), "mine.toml"))
	err := cat.Load(strings.NewReader(strings.Replace(src, "-4e12", "4e12", 1)), "mine.toml")
	fmt.Println(err, cat.Names())
	// Output:
	// hardware: mine.toml line 5: gpu "my-gpu": field "mem_bw": must be > 0, got -4e+12
	// <nil> [a100 a100-pcie b200 b300 gb200 gb300 h100 h100-pcie h200 l40s my-gpu rtx-4090 rtx-pro-6000]
}
