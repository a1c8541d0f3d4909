package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/servesim/servesim/sim/workload/trace"
)

const traceUsage = `Usage: servesim trace stats FILE... [--format F] [--skip-bad-rows] [--json] [-q]

Characterizes request traces: rows, duration, mean and peak rate, the
coefficient of variation of inter-arrival gaps, prompt and output length
percentiles, and prefix reuse where the trace has block hashes (Mooncake).

Formats (detected from the first line unless --format names one):
  azure      Azure LLM inference 2023/2024 CSV: TIMESTAMP,ContextTokens,GeneratedTokens
  mooncake   Mooncake JSONL: timestamp (ms), input_length, output_length, hash_ids
  burstgpt   BurstGPT CSV: Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
  lengths    length-only CSV (Vidur/Sarathi): num_prefill_tokens,num_decode_tokens
  servesim   servesim CSV or JSONL: arrival_s,prompt_tokens,output_tokens[,class,...]

A malformed row is an error naming the file, line and column; with
--skip-bad-rows it is skipped and counted. Rows with zero output tokens
(BurstGPT's failed requests) are dropped and counted unless --failed=one.
It prints only the statistics, so -q (accepted, as by every command)
changes nothing.

Examples:
  servesim trace stats ../shared/data/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv
  servesim trace stats ../shared/data/traces/mooncake-fast25/*.jsonl --json
  servesim trace stats BurstGPT_1.csv --model ChatGPT --log-type "Conversation log"
`

func traceCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, traceUsage)
		if len(args) == 0 {
			return errors.New("trace: name a subcommand (stats)")
		}
		return nil
	}
	switch args[0] {
	case "stats":
		return traceStatsCmd(args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, traceUsage)
	return fmt.Errorf("trace: unknown subcommand %q (known: stats)", args[0])
}

func traceStatsCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("trace stats", traceUsage, stderr)
	format := fs.String("format", "auto", "trace format: auto, azure, mooncake, burstgpt, lengths, servesim")
	skip := fs.Bool("skip-bad-rows", false, "skip malformed rows (counted) instead of failing")
	model := fs.String("model", "", "BurstGPT: keep only this model (ChatGPT, GPT-4)")
	logType := fs.String("log-type", "", `BurstGPT: keep only this log type ("Conversation log", "API log")`)
	failed := fs.String("failed", trace.FailedDrop, "rows with zero output tokens: drop, or one (replay with one output token)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	fs.BoolP("quiet", "q", false, "print the statistics only (all it prints)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, stopSignals := interruptible() // SIGINT/SIGTERM: exit 130 within a second, no temporary left
	defer stopSignals()
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("trace stats: name at least one trace file")
	}
	f, err := trace.ParseFormat(*format)
	if err != nil {
		return err
	}
	o := trace.ReaderOptions{Format: f, SkipBadRows: *skip, Model: *model, LogType: *logType, Failed: *failed}
	var all []trace.Stats
	for _, path := range fs.Args() {
		if err := resolveData(&path); err != nil {
			return err
		}
		st, err := trace.StatsFile(path, o)
		if err != nil {
			return err
		}
		all = append(all, st)
	}
	if *asJSON {
		b, err := json.MarshalIndent(all, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	for i := range all {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := writeTraceStats(stdout, &all[i]); err != nil {
			return err
		}
	}
	return nil
}

func writeTraceStats(w io.Writer, st *trace.Stats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	c := st.Counts
	fmt.Fprintf(tw, "trace\t%s (%s)\n", st.Name, st.Format)
	fmt.Fprintf(tw, "rows\t%d read: %d requests, %d bad rows skipped, %d filtered out, %d failed (zero output tokens)\n",
		c.Rows, st.Requests, c.Bad, c.Filtered, c.Failed)
	for _, e := range st.BadRows {
		fmt.Fprintf(tw, "  bad row\t%s\n", e)
	}
	if st.Timed {
		fmt.Fprintf(tw, "duration\t%.2f s (first to last arrival)\n", st.DurationS)
		fmt.Fprintf(tw, "mean rate\t%.3f req/s = %.1f req/min\n", st.MeanRate, st.MeanPerMin)
		fmt.Fprintf(tw, "peak rate\t%d req/min (the minute from %.0f s after the first arrival)\n", st.PeakPerMin, st.PeakMinuteS)
		if math.IsNaN(st.GapCV) {
			fmt.Fprintf(tw, "inter-arrival CV\tn/a\n")
		} else {
			fmt.Fprintf(tw, "inter-arrival CV\t%.3f (1 = Poisson)\n", st.GapCV)
		}
	} else {
		fmt.Fprintf(tw, "arrivals\tnone in the file (length-only: replay with a synthetic arrival process)\n")
	}
	if st.PrefixKnown {
		fmt.Fprintf(tw, "prefix reuse\t%.2f %% of %d prefix blocks seen before (unbounded cache)\n", 100*st.PrefixReuse, st.PrefixBlocks)
	} else {
		fmt.Fprintf(tw, "prefix reuse\tn/a (no prefix hashes)\n")
	}
	for _, name := range st.ClassNames() {
		fmt.Fprintf(tw, "class %s\t%d requests\n", name, st.Classes[name])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tokens\tmean\tmin\tp50\tp90\tp99\tmax\t")
	for _, l := range []struct {
		name string
		s    trace.LengthStats
	}{{"input", st.Input}, {"output", st.Output}} {
		fmt.Fprintf(tw, "%s\t%.1f\t%d\t%s\t%s\t%s\t%d\t\n", l.name, l.s.Mean, l.s.Min, num(l.s.P50), num(l.s.P90), num(l.s.P99), l.s.Max)
	}
	return tw.Flush()
}

// num prints a percentile with at most two decimals and no trailing zeros.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}
