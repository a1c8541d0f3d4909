package plots_test

import (
	"fmt"
	"strings"

	"github.com/servesim/servesim/plots"
)

// A sweep over the request rate: the max-goodput rate is where the SLO
// attainment first falls below 90 %, interpolated between the swept rates:
// 8 + (0.96 − 0.9)/(0.96 − 0.60)·(12 − 8) = 8.667 req/s.
func ExampleGoodput() {
	const results = `workload.rate,seed,goodput_req_per_s,request_throughput,slo_attainment
4,1,4.0,4.0,1.00
8,1,7.7,8.0,0.96
12,1,7.0,11.7,0.60
`
	res, err := plots.ReadResults(strings.NewReader(results), "results.csv")
	if err != nil {
		fmt.Println(err)
		return
	}
	fig, nums, err := plots.Goodput(res, plots.GoodputOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = fig // plots.Save(fig, "goodput.png", 1600, 1000) writes the PNG
	fmt.Printf("max goodput rate %.3f req/s\n", nums.Curves[0].MaxRate)
	// Output: max goodput rate 8.667 req/s
}

// An error names the file, the line and the column.
func ExampleReadResults_error() {
	_, err := plots.ReadResults(strings.NewReader("workload.rate,seed,slo_attainment\n4,1,high\n"), "results.csv")
	fmt.Println(err)
	// Output: plots: results.csv line 2, column 3 (slo_attainment): invalid number "high"
}
