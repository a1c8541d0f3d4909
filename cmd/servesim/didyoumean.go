package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// didYouMean returns " (did you mean X?)" for the candidate closest to s
// by edit distance, when it is close: at most a third of s's length, and
// at least 1 (so that a typo of a short name still matches). "" otherwise.
func didYouMean(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > max(1, len(s)/3) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance is the Levenshtein distance of a and b (insertions,
// deletions and substitutions of bytes, each 1).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

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
