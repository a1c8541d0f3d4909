package main

import (
	"context"
	"io"

	"github.com/schollz/progressbar/v3"
)

// progress is a progress bar with an ETA on stderr when it is a terminal
// and the command is not quiet; otherwise every method does nothing.
// Every long command draws its bar with it (sweep, place, plan, calibrate,
// examples, validate --suite), so they look and stay quiet alike.
type progress struct{ bar *progressbar.ProgressBar }

func newProgress(stderr io.Writer, quiet bool, n int, desc string) progress {
	if quiet || n <= 0 || !isTerminal(stderr) {
		return progress{}
	}
	return progress{progressbar.NewOptions(n, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())}
}

// Add advances the bar by one.
func (p progress) Add() {
	if p.bar != nil {
		p.bar.Add(1)
	}
}

// Describe changes the text before the bar (the stage now running).
func (p progress) Describe(desc string) {
	if p.bar != nil {
		p.bar.Describe(desc)
	}
}

// Done clears the bar (once: a bar already full is cleared already).
func (p progress) Done() {
	if p.bar != nil && !p.bar.IsFinished() {
		p.bar.Finish()
	}
}

// progressFunc adapts a bar to a library's OnProgress callback (done of
// total, where total is known only once the work starts and may change):
// the bar is made at the first call. It returns a nil callback when no bar
// is drawn (quiet, or stderr not a terminal), so the library does no
// progress work at all; done clears the bar and is always safe to call.
func progressFunc(stderr io.Writer, quiet bool, desc string) (fn func(done, total int), done func()) {
	if quiet || !isTerminal(stderr) {
		return nil, func() {}
	}
	var p progress
	fn = func(n, total int) {
		if p.bar == nil {
			if p = newProgress(stderr, quiet, total, desc); p.bar == nil {
				return
			}
		}
		p.bar.ChangeMax(total)
		p.bar.Set(n)
	}
	return fn, func() { p.Done() }
}

// searchInterruptibly runs a long library search (plan's, place's,
// sweep's) the one way: search gets a context that the first SIGINT or
// SIGTERM cancels (interruptible) and the OnProgress callback of a bar
// labelled desc (progressFunc: none when quiet or stderr is not a
// terminal), and the bar is cleared once search returns. The signal
// handler stays in until the caller calls stop, which it defers, so what
// the command writes after the search is covered as well.
func searchInterruptibly(stderr io.Writer, quiet bool, desc string, search func(ctx context.Context, onProgress func(done, total int)) error) (stop func(), err error) {
	onProgress, bar := progressFunc(stderr, quiet, desc)
	ctx, stop := interruptible()
	err = search(ctx, onProgress)
	bar()
	return stop, err
}

// unlessQuiet is w, or io.Discard for a quiet command: where a command
// writes what is not its result ("Wrote FILE." lines).
func unlessQuiet(w io.Writer, quiet bool) io.Writer {
	if quiet {
		return io.Discard
	}
	return w
}
