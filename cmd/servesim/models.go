package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/servesim/servesim/models"
)

const modelsUsage = `Usage: servesim models [--models-file FILE]

Lists the model catalog: shape, parameters, and KV-cache bytes per token in
BF16 (2 × layers × kv_heads × head_dim × 2 bytes). Add models in TOML with
--models-file (the same file a scenario names in models_file).
`

func modelsCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("models", modelsUsage, stderr)
	file := fs.String("models-file", "", "TOML file of extra models")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("models: unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	c := models.Builtin()
	if *file != "" {
		if err := c.LoadFile(*file); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "name\tlayers\thidden\theads\tkv_heads\thead_dim\tffn\texperts\tparams(B)\tactive(B)\tKV KiB/token\tcontext\t")
	for _, m := range c.All() {
		experts := "-"
		if m.Experts > 0 {
			experts = fmt.Sprintf("%d top-%d", m.Experts, m.TopK)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%.1f\t%.1f\t%.0f\t%d\t\n",
			m.Name, m.Layers, m.Hidden, m.Heads, m.KVHeads, m.HeadDim, m.FFN, experts,
			m.Params()/1e9, m.ActiveParams()/1e9, m.KVBytesPerToken(models.BF16)/1024, m.MaxContext)
	}
	return tw.Flush()
}
