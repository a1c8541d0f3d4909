package trace_test

import (
	"fmt"

	"github.com/servesim/servesim/sim/workload"
	"github.com/servesim/servesim/sim/workload/trace"
)

// Replay a servesim-format trace at twice its rate, clipped to a 1024-token
// context.
func ExampleOpen() {
	tr, err := trace.Open(trace.Options{File: "testdata/servesim.csv", Scale: 2, MaxContext: 1024}, 1)
	if err != nil {
		panic(err)
	}
	defer tr.Close()
	var r workload.Request
	for tr.Next(&r) {
		fmt.Println(r.ID, r.Arrival, r.PromptTokens, r.OutputTokens, r.Class, r.TTFTSLO, len(r.Prefix))
	}
	if err := tr.Err(); err != nil {
		panic(err)
	}
	fmt.Println(tr)
	// Output:
	// 0 0.250000000s 100 10 chat 0.500000000s 0
	// 1 0.625000000s 1023 1 summarize 2.000000000s 3
	// 2 0.625000000s 30 3  0.000000000s 0
	// trace testdata/servesim.csv (servesim), rate ×2.0000, clipped to 1024 tokens
}
