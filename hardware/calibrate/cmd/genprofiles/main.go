// Command genprofiles regenerates servesim's built-in calibrated profiles
// (hardware/calibrate/profiles/*.toml) from a copy of Vidur's profiling
// data: A100 and H100 are fitted to their traces, H200 and B200 are the
// H100 fit transferred through their specs, RTX PRO 6000 and RTX 4090 are
// fitted to LLMServingSim's bundles, and H100 PCIe, A100 PCIe, GB200 and
// L40S are derived by architecture (see calibrate.GenerateBuiltin). Attention is
// fitted to LLMServingSim's profile bundles, which must sit beside the
// Vidur copy (../shared/data/llmservingsim/profiles).
//
// From the repository root:
//
//	go run ./hardware/calibrate/cmd/genprofiles -data ../shared/data/vidur-profiling \
//	    -measured hardware/calibrate/testdata/h200_randn.csv -out hardware/calibrate/profiles
//
// or, equivalently, `go generate ./hardware/calibrate`. The result is
// deterministic; TestBuiltinProfilesUpToDate checks that the shipped files
// equal what this command makes.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/servesim/servesim/hardware/calibrate"
	"github.com/servesim/servesim/internal/genwrite"
)

func main() {
	data := flag.String("data", "../shared/data/vidur-profiling", "copy of Vidur's data/profiling")
	out := flag.String("out", "hardware/calibrate/profiles", "directory to write the profiles to")
	measured := flag.String("measured", "hardware/calibrate/testdata/h200_randn.csv", "native CSV of a transferred GPU to quote the error against (\"\" for none)")
	flag.Parse()
	var m []string
	if *measured != "" {
		m = []string{*measured}
	}
	if err := run(*data, *out, m); err != nil {
		fmt.Fprintln(os.Stderr, "genprofiles:", err)
		os.Exit(1)
	}
}

func run(data, out string, measured []string) error {
	files, err := calibrate.GenerateBuiltin(data, measured)
	if err != nil {
		return err
	}
	named := make(map[string][]byte, len(files))
	for n, f := range files {
		named[n+".toml"] = f
	}
	return genwrite.Files(out, named, os.Stdout)
}
