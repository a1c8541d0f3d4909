package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/servesim/servesim/experiments/scenario"
)

const versionUsage = `Usage: servesim version   (or servesim --version)

Prints servesim's version (the module version of a tagged build, else
"devel") and the Go version that built it. summary.json records the same
version.
`

func versionCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", versionUsage, stderr)
	quiet := fs.BoolP("quiet", "q", false, "print the version only")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("version: unexpected argument %q", fs.Arg(0))
	}
	if *quiet {
		_, err := fmt.Fprintln(stdout, scenario.Version())
		return err
	}
	_, err := fmt.Fprintf(stdout, "servesim %s (%s)\n", scenario.Version(), runtime.Version())
	return err
}
