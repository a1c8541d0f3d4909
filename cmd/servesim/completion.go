package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
)

const completionUsage = `Usage: servesim completion bash|zsh|fish

Prints a shell completion script for servesim's commands and each command's
flags, generated from the command list and the commands' flag sets.

  bash:  source <(servesim completion bash)      (or save it under /etc/bash_completion.d/)
  zsh:   source <(servesim completion zsh)       (or save it as _servesim in $fpath)
  fish:  servesim completion fish > ~/.config/fish/completions/servesim.fish
`

// cmdFlag is one flag of a command, for completion.
type cmdFlag struct{ short, long, usage string }

// flagLine is a line of pflag's PrintDefaults: "  -o, --out string   usage".
var flagLine = regexp.MustCompile(`^\s+(?:-(\w), )?--([\w-]+)(?:\[=[^\]]*\])?(?: [^\s]+)?\s{2,}(.*)$`)

// commandFlags returns each command's flags, read from its --help.
func commandFlags() map[string][]cmdFlag {
	out := map[string][]cmdFlag{}
	for _, c := range commands {
		if c.name == "completion" {
			continue
		}
		var buf bytes.Buffer
		_ = c.run([]string{"--help"}, io.Discard, &buf)
		for _, line := range strings.Split(buf.String(), "\n") {
			if m := flagLine.FindStringSubmatch(line); m != nil {
				out[c.name] = append(out[c.name], cmdFlag{m[1], m[2], strings.TrimSpace(m[3])})
			}
		}
	}
	return out
}

func completionCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("completion", completionUsage, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("completion: want one shell (bash, zsh or fish), got %d arguments", fs.NArg())
	}
	flags := commandFlags()
	var b strings.Builder
	switch fs.Arg(0) {
	case "bash":
		bashCompletion(&b, flags)
	case "zsh":
		zshCompletion(&b, flags)
	case "fish":
		fishCompletion(&b, flags)
	default:
		return fmt.Errorf("completion: unknown shell %q (want bash, zsh or fish)", fs.Arg(0))
	}
	_, err := io.WriteString(stdout, b.String())
	return err
}

func flagWords(fl []cmdFlag) string {
	var w []string
	for _, f := range fl {
		w = append(w, "--"+f.long)
		if f.short != "" {
			w = append(w, "-"+f.short)
		}
	}
	return strings.Join(w, " ")
}

func commandNames() string {
	var n []string
	for _, c := range commands {
		n = append(n, c.name)
	}
	return strings.Join(n, " ")
}

func bashCompletion(b *strings.Builder, flags map[string][]cmdFlag) {
	b.WriteString("# bash completion for servesim (servesim completion bash)\n_servesim() {\n")
	b.WriteString("  local cur=\"${COMP_WORDS[COMP_CWORD]}\" opts\n")
	fmt.Fprintf(b, "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n    COMPREPLY=( $(compgen -W %q -- \"$cur\") )\n    return\n  fi\n", commandNames()+" --help --version")
	b.WriteString("  case \"${COMP_WORDS[1]}\" in\n")
	for _, c := range commands {
		fmt.Fprintf(b, "    %s) opts=%q ;;\n", c.name, flagWords(flags[c.name])+" --help")
	}
	b.WriteString("    completion) opts=\"bash zsh fish\" ;;\n")
	b.WriteString("  esac\n  if [[ \"$cur\" == -* || \"${COMP_WORDS[1]}\" == completion ]]; then\n    COMPREPLY=( $(compgen -W \"$opts\" -- \"$cur\") )\n  else\n    COMPREPLY=( $(compgen -f -- \"$cur\") )\n  fi\n}\ncomplete -o default -F _servesim servesim\n")
}

func zshCompletion(b *strings.Builder, flags map[string][]cmdFlag) {
	b.WriteString("#compdef servesim\n# zsh completion for servesim (servesim completion zsh)\n_servesim() {\n  local -a cmds opts\n  cmds=(\n")
	for _, c := range commands {
		fmt.Fprintf(b, "    %s\n", shQuote(c.name+":"+c.summary))
	}
	b.WriteString("  )\n  if (( CURRENT == 2 )); then\n    _describe 'command' cmds\n    return\n  fi\n  case $words[2] in\n")
	for _, c := range commands {
		fmt.Fprintf(b, "    %s) opts=(%s --help) ;;\n", c.name, flagWords(flags[c.name]))
	}
	b.WriteString("    completion) compadd bash zsh fish; return ;;\n  esac\n")
	b.WriteString("  if [[ $words[CURRENT] == -* ]]; then\n    compadd -a opts\n  else\n    _files\n  fi\n}\n")
	b.WriteString("if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n  _servesim \"$@\"\nelse\n  compdef _servesim servesim\nfi\n")
}

func fishCompletion(b *strings.Builder, flags map[string][]cmdFlag) {
	b.WriteString("# fish completion for servesim (servesim completion fish)\n")
	for _, c := range commands {
		fmt.Fprintf(b, "complete -c servesim -n __fish_use_subcommand -f -a %s -d %s\n", c.name, shQuote(c.summary))
	}
	for _, c := range commands {
		for _, f := range flags[c.name] {
			short := ""
			if f.short != "" {
				short = " -s " + f.short
			}
			fmt.Fprintf(b, "complete -c servesim -n '__fish_seen_subcommand_from %s' -l %s%s -d %s\n", c.name, f.long, short, shQuote(f.usage))
		}
	}
	b.WriteString("complete -c servesim -n '__fish_seen_subcommand_from completion' -f -a 'bash zsh fish'\n")
}

// shQuote quotes s for sh, zsh and fish: in single quotes, each ' as '\”
// (fish: '\” also works, as \' inside single quotes).
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
