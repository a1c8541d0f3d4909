package models_test

import (
	"fmt"
	"strings"

	"github.com/servesim/servesim/models"
)

func ExampleCatalog_Get() {
	m, err := models.Builtin().Get("llama-3.1-70b")
	if err != nil {
		panic(err)
	}
	p := models.Parallel{TP: 4, Weights: models.FP8, KV: models.FP8}
	if err := m.CheckParallel(p); err != nil {
		panic(err)
	}
	fmt.Printf("%s: %.1fB parameters\n", m.Name, m.Params()/1e9)
	fmt.Printf("KV cache: %.0f bytes/token (bf16), %.0f per GPU at TP 4 in fp8\n",
		m.KVBytesPerToken(models.BF16), m.KVBytesPerTokenPerGPU(p))
	fmt.Printf("weights: %.1f GB per GPU\n", m.WeightBytesPerGPU(p)/1e9)
	// Output:
	// llama-3.1-70b: 70.6B parameters
	// KV cache: 327680 bytes/token (bf16), 40960 per GPU at TP 4 in fp8
	// weights: 17.6 GB per GPU
}

func ExampleModel_Ops() {
	m, _ := models.Builtin().Get("llama-3.1-8b")
	// Two decodes with 1000 tokens of context each.
	b := models.Batch{Decodes: 2, DecodeCtx: 2000}
	var buf [models.NumOpKinds]models.Op // Ops allocates nothing with room for every kind
	for _, op := range m.Ops(b, models.Parallel{TP: 1}, buf[:0]) {
		fmt.Printf("%-12s ×%-2d %9.3g FLOPs %9.3g bytes\n", op.Kind, op.Count, op.FLOPs, op.Bytes)
	}
	// Output:
	// embed        ×1          0 FLOPs  3.28e+04 bytes
	// norm         ×64  3.28e+04 FLOPs   4.1e+04 bytes
	// qkv          ×32  1.01e+08 FLOPs  5.04e+07 bytes
	// rope         ×32  3.07e+04 FLOPs   4.1e+04 bytes
	// attn_decode  ×32  3.28e+07 FLOPs  8.24e+06 bytes
	// out_proj     ×32  6.71e+07 FLOPs  3.36e+07 bytes
	// mlp_up       ×32   4.7e+08 FLOPs  2.35e+08 bytes
	// act          ×32  1.43e+05 FLOPs  1.72e+05 bytes
	// mlp_down     ×32  2.35e+08 FLOPs  1.18e+08 bytes
	// add          ×64  8.19e+03 FLOPs  4.92e+04 bytes
	// lm_head      ×1    2.1e+09 FLOPs  1.05e+09 bytes
}

func ExampleCatalog_Load() {
	c := models.Builtin()
	err := c.Load(strings.NewReader(`
[[model]]
name = "my-model"
layers = 16
hidden = 2048
heads = 16
kv_heads = -4
ffn = 8192
vocab = 32000
gated_mlp = true
max_context = 4096
`), "my.toml")
	fmt.Println(err)
	// Output:
	// models: my.toml line 7: model "my-model": field "kv_heads": must be >= 0, not -4
}
