package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// vllmWord is a vLLM flag of vllmFlags that is not honoured: it keeps the
// value given, for the run header or the error.
// hiddenWord binds another server's flag that servesim does not honour
// (no effect or refused) as a hidden word recorded in words, a switch
// when isBool, so that pre-checks can name it.
func hiddenWord(fs *pflag.FlagSet, words map[string]*vllmWord, name string, isBool bool, usage string) *vllmWord {
	w := &vllmWord{bool: isBool}
	words[name] = w
	fs.Var(w, name, usage)
	if isBool {
		fs.Lookup(name).NoOptDefVal = "true"
	}
	fs.MarkHidden(name)
	return w
}

type vllmWord struct {
	val  string
	bool bool
}

func (w *vllmWord) String() string { return w.val }
func (w *vllmWord) Set(s string) error {
	if w.val != "" && s != "" {
		w.val += " " + s // repeated (--middleware, append)
	} else {
		w.val = s
	}
	return nil
}
func (w *vllmWord) Type() string {
	if w.bool {
		return "bool"
	}
	return "string"
}

// vllmAccepted binds the flags of vllmFlags that servesim does not honour
// (hidden from --help, which points at docs/vllm-sglang.md's table instead).
type vllmAccepted struct {
	fs    *pflag.FlagSet
	words map[string]*vllmWord // by the bound name
}

// addVLLMTable binds on fs every flag of vllmFlags of class noEffect or
// refused (and its --no- form for a BooleanOptionalAction). It panics if
// one is already bound: the table and the flag set disagree.
func addVLLMTable(fs *pflag.FlagSet) *vllmAccepted {
	a := &vllmAccepted{fs: fs, words: map[string]*vllmWord{}}
	for _, f := range vllmFlags {
		if f.class == honoured || f.as == "-" {
			continue
		}
		for _, name := range f.names() {
			if fs.Lookup(name) != nil {
				panic(fmt.Sprintf("vllmtable: --%s is bound already", name))
			}
			hiddenWord(fs, a.words, name, f.kind == vBool || f.kind == vSwitch || strings.HasPrefix(name, "no-"), fmt.Sprintf("vLLM's --%s (%s in servesim)", f.name, f.class))
			if f.kind == vOpt {
				fs.Lookup(name).NoOptDefVal = "true"
			}
		}
	}
	return a
}

// names are the flag names f is bound under.
func (f vllmFlag) names() []string {
	n := f.name
	if f.as != "" && f.as != "-" {
		n = f.as
	}
	if f.kind == vBool {
		return []string{n, "no-" + n}
	}
	return []string{n}
}

// check returns the no-effect flags given (for the run header, "--host
// 0.0.0.0") and an error naming every refused flag given, with its
// servesim equivalent where one exists. A refused flag given vLLM's
// default value counts as no effect.
func (a *vllmAccepted) check() (ignored []string, err error) {
	var bad []string
	for _, f := range vllmFlags {
		if f.class == honoured || f.as == "-" {
			continue
		}
		for _, name := range f.names() {
			if !a.fs.Changed(name) {
				continue
			}
			w := a.words[name]
			given := "--" + name
			if f.as != "" {
				given = "--" + f.name
			}
			if !w.bool && w.val != "" {
				given += " " + w.val
			}
			// A refused switch's --no- form, or =false, is vLLM's default
			// (every refused switch is off by default: LoRA, EP, DBO).
			off := w.bool && (w.val == "false") != strings.HasPrefix(name, "no-")
			if f.class == noEffect || (!w.bool && slices.Contains(f.dflt, w.val)) || off {
				ignored = append(ignored, given)
				continue
			}
			msg := given + ": " + f.note
			if f.note == "" {
				msg = given + ": not modelled"
			}
			if f.equiv != "" {
				msg += " (servesim: " + f.equiv + ")"
			}
			bad = append(bad, msg)
		}
	}
	if len(bad) > 0 {
		return ignored, fmt.Errorf("run: vLLM flag(s) servesim does not model: %s", strings.Join(bad, "; "))
	}
	return ignored, nil
}

// vllmShort maps vLLM's multi-letter shorthands (-pp, -dp, -asc) to their
// flags; pflag's shorthands are one letter, so vllmArgs rewrites them.
var vllmShort = func() map[string]string {
	m := map[string]string{}
	for _, f := range vllmFlags {
		if f.short != "" {
			m["-"+f.short] = "--" + f.name
		}
	}
	return m
}()

// vllmOpt are the flags argparse reads with nargs "?": a value when the
// next word is not a flag.
var vllmOpt = vllmFlagsOfKind(vOpt)

// vllmList are the flags argparse reads with nargs "+" or "*": every word
// up to the next flag.
var vllmList = vllmFlagsOfKind(vList)

// vllmFlagsOfKind is the set of vllmFlags of kind k, by their long
// spelling ("--name").
func vllmFlagsOfKind(k vllmKind) map[string]bool {
	m := map[string]bool{}
	for _, f := range vllmFlags {
		if f.kind == k {
			m["--"+f.name] = true
		}
	}
	return m
}

// vllmRewrite rewrites one vLLM word at args[i] that pflag cannot parse,
// returning the words to parse instead and how many of args it used (0:
// none, leave it). See vllmArgs.
func vllmRewrite(args []string, i int) ([]string, int) {
	a := args[i]
	name, val, hasVal := strings.Cut(a, "=")
	if long, ok := vllmShort[name]; ok {
		if hasVal {
			return []string{long + "=" + val}, 1
		}
		return []string{long}, 1
	}
	// -O3, -O.cudagraph_mode=FULL: argparse's attached short value.
	if strings.HasPrefix(a, "-O") && len(a) > 2 {
		return []string{"--compilation-config=" + strings.TrimPrefix(strings.TrimPrefix(a, "-O"), "=")}, 1
	}
	// vllm bench's bare --profile switch; servesim's --profile takes a value.
	if a == "--profile" && (i+1 == len(args) || strings.HasPrefix(args[i+1], "-")) {
		return []string{"--vllm-profile"}, 1
	}
	if vllmOpt[a] && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
		return []string{a + "=" + args[i+1]}, 2
	}
	if vllmList[name] && name != "--goodput" {
		words := []string{}
		if hasVal {
			words = append(words, val)
		}
		n := 1
		for i+n < len(args) && !strings.HasPrefix(args[i+n], "-") {
			words = append(words, args[i+n])
			n++
		}
		return []string{name + "=" + strings.Join(words, " ")}, n
	}
	return nil, 0
}
