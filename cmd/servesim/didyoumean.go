package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servesim/servesim/models"
)

// didYouMean returns " (did you mean X?)" for the candidate closest to s
// by edit distance, when close (models.Suggest), else "".
func didYouMean(s string, candidates []string) string { return models.Suggest(s, candidates) }

// parseFlags parses args on fs; an unknown flag's error gains the closest
// flag's name ("unknown flag: --max-num-seq (did you mean
// --max-num-seqs?)"). The error still starts as pflag's, so that it exits
// with the usage status.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, pflag.ErrHelp) {
		return err
	}
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if s := didYouMean(name, names); s != "" {
		return fmt.Errorf("%w%s", err, strings.Replace(s, "mean ", "mean --", 1))
	}
	return err
}
