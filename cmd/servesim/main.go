// Command servesim simulates LLM inference serving.
//
// With no arguments it runs an embedded default scenario. Subcommands:
//
//	servesim run [flags]      simulate one scenario (flags and/or --config FILE)
//	servesim models           list the model catalog
//	servesim gpus             list the GPU catalog
//
// Each subcommand is a file here: a flag set, a usage text and a function
// returning an error. Only main prints errors and exits.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) error
}

var commands []command

func init() {
	commands = []command{
		{"run", "simulate one scenario and write its results", runCmd},
		{"models", "list the model catalog", modelsCmd},
		{"gpus", "list the GPU catalog", gpusCmd},
		{"calibrate", "fit kernel-time profiles to kernel traces; accuracy report", calibrateCmd},
		{"trace", "characterize request traces (trace stats FILE)", traceCmd},
		{"sweep", "run an experiment file: a grid of scenarios in parallel", sweepCmd},
		{"merge", "join the shards of a sweep", mergeCmd},
		{"plan", "find the cheapest deployment that serves a rate within SLOs", planCmd},
		{"examples", "run the example experiments and draw their plots", examplesCmd},
		{"place", "search colocated and disaggregated deployments for the best goodput per GPU", placeCmd},
		{"plot", "draw PNG plots from sweep results or run directories", plotCmd},
		{"validate", "replay real vLLM runs and compare measured with simulated metrics", validateCmd},
		{"data", "list and fetch the public data sets the examples use (traces, kernel profiles)", dataCmd},
	}
}

func main() {
	os.Exit(exitCode(dispatch(os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

// exitCode prints err (if any) and returns the process's exit status:
// 0 for success or help, 130 for a run interrupted by SIGINT or SIGTERM
// (128 + SIGINT, as shells report it), 1 for any other error.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "servesim:", err)
	if errors.Is(err, context.Canceled) {
		return 130
	}
	return 1
}

// interruptible returns a context cancelled by the first SIGINT or SIGTERM,
// for a command whose library call observes it (experiments.RunContext,
// DirOptions.Context) and removes its temporary files; stop restores the
// default handling. After the first signal the default handling is back at
// once, so a second one kills the process even if the work does not stop.
// Commands that do not call this keep Go's default: a signal ends them.
//
// It is a variable so that tests can bound a command's run time.
var interruptible = func() (ctx context.Context, stop func()) {
	ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return runCmd(nil, stdout, stderr)
	}
	switch args[0] {
	case "-h", "--help", "help":
		usage(stdout)
		return nil
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	if len(args[0]) > 0 && args[0][0] == '-' {
		return runCmd(args, stdout, stderr) // `servesim --rate 5` means `servesim run --rate 5`
	}
	usage(stderr)
	return fmt.Errorf("unknown command %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "servesim: a discrete-event simulator of LLM inference serving.")
	fmt.Fprintln(w, "\nUsage: servesim [command] [flags]   (no command: run the embedded default scenario)")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `servesim COMMAND --help` for a command's flags.")
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name, usageText string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// isTerminal reports whether w is a terminal (progress output goes only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
