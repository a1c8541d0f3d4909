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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/servesim/servesim/experiments/scenario"
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
		{"version", "print servesim's version", versionCmd},
		{"completion", "print a shell completion script (completion bash|zsh|fish)", completionCmd},
	}
}

func main() {
	// A write to a closed stdout (`servesim run | head -1`) returns EPIPE
	// instead of killing the process at once with SIGPIPE, which could
	// strike between two result files; the command then stops as with any
	// write error, and exits 141 quietly (exitBrokenPipe).
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(exitCode(dispatch(os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

// Exit statuses.
const (
	exitOK          = 0   // success, or help
	exitBadInput    = 1   // a bad scenario, flag value, file or data
	exitUsage       = 2   // an unknown command or flag, a missing argument
	exitInterrupted = 130 // SIGINT or SIGTERM (128 + SIGINT, as shells report it)
	exitBrokenPipe  = 141 // stdout closed by its reader (128 + SIGPIPE, as shells report `yes | head -1`)
)

// usageError is a command line servesim cannot parse: an unknown command
// or flag, a flag without its value, a missing argument.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// pflagUsage are the starts of pflag's errors for a command line it cannot
// parse (pflag's errors have no types); a flag with a bad value is bad
// input instead ("invalid argument ...").
var pflagUsage = []string{"unknown flag", "unknown shorthand flag", "flag needs an argument", "bad flag syntax"}

// missingArgument are the commands' errors for missing or extra
// arguments (matched here so that the command files keep plain errors).
var missingArgument = []string{
	": unexpected argument",                // run, models, gpus, calibrate
	"validate: give one or more RUN paths", // validate
	"merge: want an experiment file",       // merge
	"sweep: want one experiment file",      // sweep
	"trace stats: name at least one trace", // trace stats
	"trace: unknown subcommand",            // trace
	"completion: want one shell",           // completion
	"plot: name a kind",                    // plot
	": name an input",                      // plot KIND
	"trace: name a subcommand",             // trace
	"data: name a subcommand",              // data
	"data fetch: name a data set",          // data fetch
}

// exitCode prints err (if any) and returns the process's exit status:
// exitOK, exitUsage for a usageError or a pflag parse error,
// exitInterrupted for a run interrupted by a signal, exitBrokenPipe (and
// nothing printed) for a write to a closed stdout, else exitBadInput.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	if errors.Is(err, syscall.EPIPE) {
		return exitBrokenPipe // its reader is gone: nothing to tell it
	}
	fmt.Fprintln(stderr, "servesim:", err)
	if errors.Is(err, context.Canceled) {
		return exitInterrupted
	}
	var u usageError
	if errors.As(err, &u) {
		return exitUsage
	}
	for _, p := range pflagUsage {
		if strings.HasPrefix(err.Error(), p) {
			return exitUsage
		}
	}
	for _, p := range missingArgument {
		if strings.Contains(err.Error(), p) {
			return exitUsage
		}
	}
	return exitBadInput
}

// interruptible returns a context cancelled by the first SIGINT or SIGTERM,
// for a command whose library calls observe it (scenario.RunContext,
// DirOptions.Context) and remove their temporary files; stop restores the
// default handling. After the first signal the default handling is back at
// once, so a second one kills the process even if the work does not stop.
// Commands that do not call this keep Go's default: a signal ends them.
//
// A phase that does not observe the context (a read blocked on a pipe that
// never ends, a digest of a large trace, a data set parsed whole) must not
// hold the signal up: if the command has not returned interruptGrace after
// the signal, the process removes every temporary it has open
// (scenario.AbandonTemporaries, which waits for a commit in progress, so
// no result set is cut in half), says "interrupted" and exits 130 itself.
//
// It is a variable so that tests can bound a command's run time.
var interruptible = func() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-sig:
		}
		signal.Stop(sig) // a second signal: the default handling, death
		cancel()
		select {
		case <-done:
			return
		case <-time.After(interruptGrace):
		}
		scenario.AbandonTemporaries()
		fmt.Fprintln(os.Stderr, "servesim: interrupted")
		os.Exit(exitInterrupted)
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sig)
			close(done)
			cancel()
		})
	}
}

// interruptGrace is how long a command has to stop by itself after a
// signal before the process exits under it: half of the second within
// which servesim promises to stop (README, Using it: the exit statuses), leaving the other
// half for removing temporaries and exiting on a loaded machine. A run
// that observes its context stops in milliseconds (serve.StopCheckEvents).
const interruptGrace = 500 * time.Millisecond

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return runCmd(nil, stdout, stderr)
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 && args[0] == "help" { // `servesim help run` is `servesim run --help`
			return dispatch([]string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return nil
	case "--version", "-V":
		return versionCmd(args[1:], stdout, stderr)
	}
	// Help goes to stdout (`servesim run --help | grep max-num-seqs`):
	// a command asked for help writes its usage where its errors would go.
	if wantsHelp(args) {
		stderr = stdout
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
	return usageError{fmt.Errorf("unknown command %q", args[0])}
}

// wantsHelp reports whether args ask for help (-h or --help before "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--help":
			return true
		}
	}
	return false
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

// isTerminal reports whether w is a terminal (progress output goes only
// there). It is a variable so that tests can pretend stderr is one.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
