package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/servesim/servesim/hardware"
)

const gpusUsage = `Usage: servesim gpus [--gpus-file FILE] [--sources] [-q]

Lists the GPU catalog: dense tensor-core peaks, HBM, NVLink (bidirectional
aggregate, as datasheets quote it), power and the assumed price. --sources
prints where each number comes from. Add GPUs in TOML with --gpus-file.
It prints only its table, so -q (accepted, as by every command) changes
nothing.
`

func gpusCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("gpus", gpusUsage, stderr)
	file := fs.String("gpus-file", "", "TOML file of extra GPUs")
	sources := fs.Bool("sources", false, "print each number's source")
	fs.BoolP("quiet", "q", false, "print the table only (all it prints)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("gpus: unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	c := hardware.Builtin()
	if *file != "" {
		if err := c.LoadFile(*file); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\tBF16 TFLOP/s\tFP8\tFP4\tHBM GB\tHBM TB/s\tNVLink GB/s\tTDP W\t$/h\tfull name\t")
	opt := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", v/1e12)
	}
	for _, g := range c.All() {
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%.0f\t%.2f\t%.0f\t%.0f\t%.2f\t%s\t\n",
			g.Name, g.BF16FLOPS/1e12, opt(g.FP8FLOPS), opt(g.FP4FLOPS), g.MemBytes/1e9, g.MemBW/1e12,
			2*g.LinkBW/1e9, g.TDP, g.PricePerHour, g.FullName)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if *sources {
		for _, g := range c.All() {
			fmt.Fprintf(stdout, "\n%s:\n", g.Name)
			for _, s := range g.Sources {
				fmt.Fprintf(stdout, "  %s\n", s)
			}
		}
	}
	return nil
}
