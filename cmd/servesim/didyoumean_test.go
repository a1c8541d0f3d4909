package main

import (
	"bytes"
	"strings"
	"testing"
)

// Every subcommand answers a misspelled flag with the closest one it has
// (issue 21: "unknown flags and names get did you mean"), and the usage
// status, 2: the error is still pflag's unknown-flag error.
func TestUnknownFlagDidYouMean(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--max-num-seq", "8"}, "--max-num-seqs"},
		{[]string{"validate", "--suit"}, "--suite"},
		{[]string{"sweep", "--workrs", "2", "x.toml"}, "--workers"},
		{[]string{"plan", "--rat", "3"}, "--rate"},
		{[]string{"place", "--gpu", "8"}, "--gpus"},
		{[]string{"calibrate", "--trac", "x"}, "--trace"},
		{[]string{"trace", "stats", "--formt", "csv", "x.csv"}, "--format"},
		{[]string{"plot", "goodput", "--targt", "0.9", "x.csv"}, "--target"},
		{[]string{"merge", "--outt", "x"}, "--out"},
		{[]string{"examples", "--quiett"}, "--quiet"},
		{[]string{"models", "--model-file", "x"}, "--models-file"},
		{[]string{"gpus", "--gpu-file", "x"}, "--gpus-file"},
	} {
		var out bytes.Buffer
		code := exitCode(dispatch(c.args, &out, &out), &out)
		if code != 2 || !strings.Contains(out.String(), "did you mean "+c.want+"?") {
			t.Errorf("servesim %s: exit %d, output %q; want exit 2 and \"did you mean %s?\"", strings.Join(c.args, " "), code, tail(out.String()), c.want)
		}
	}
}
