package workload_test

import (
	"fmt"

	"github.com/servesim/servesim/sim/workload"
)

// Four requests a second, evenly spaced, with 128-token prompts and output
// lengths drawn from a uniform distribution.
func Example() {
	out, err := workload.ParseDist("uniform:10,20")
	if err != nil {
		panic(err)
	}
	src, err := workload.Synthetic{
		Arrival: workload.Arrival{Process: workload.ProcessConstant, Rate: 4},
		Prompt:  workload.Constant{Value: 128},
		Output:  out,
		Count:   3,
		Seed:    1,
	}.Source()
	if err != nil {
		panic(err)
	}
	var r workload.Request
	for src.Next(&r) {
		fmt.Println(r.ID, r.Arrival, r.PromptTokens, r.OutputTokens >= 10 && r.OutputTokens <= 20)
	}
	// Output:
	// 0 0.250000000s 128 true
	// 1 0.500000000s 128 true
	// 2 0.750000000s 128 true
}
