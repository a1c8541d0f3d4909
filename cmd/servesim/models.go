package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/servesim/servesim/models"
)

const modelsUsage = `Usage: servesim models [--models-file FILE] [--sources] [-q]

Lists the model catalog: shape, parameters, and KV-cache bytes per token in
BF16 (2 × layers × kv_heads × head_dim × 2 bytes; for MLA models such as
DeepSeek-V3, layers × (kv_lora_rank + qk_rope_head_dim) × 2). --sources
prints each model's HuggingFace id, the ids it also answers to (--model
accepts them) and where its numbers come from. Add models in TOML with
--models-file (the same file a scenario names in models_file), or import a
HuggingFace config.json with servesim run --model-config. It prints only
its table, so -q (accepted, as by every command) changes nothing.
`

func modelsCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("models", modelsUsage, stderr)
	file := fs.String("models-file", "", "TOML file of extra models")
	sources := fs.Bool("sources", false, "print each model's HuggingFace ids and source")
	fs.BoolP("quiet", "q", false, "print the table only (all it prints)")
	if err := parseFlags(fs, args); err != nil {
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
	if err := tw.Flush(); err != nil {
		return err
	}
	if *sources {
		for _, m := range c.All() {
			fmt.Fprintf(stdout, "\n%s:\n  hf_name: %s\n", m.Name, m.HFName)
			if len(m.HFAliases) > 0 {
				fmt.Fprintf(stdout, "  hf_aliases: %s\n", strings.Join(m.HFAliases, ", "))
			}
			fmt.Fprintf(stdout, "  source: %s\n", m.Source)
		}
	}
	return nil
}
