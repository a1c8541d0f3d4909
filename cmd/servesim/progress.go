package main

import (
	"io"

	"github.com/schollz/progressbar/v3"
)

// progress is a progress bar with an ETA on stderr when it is a terminal
// and the command is not quiet; otherwise every method does nothing.
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

// Done clears the bar.
func (p progress) Done() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
