package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/experiments/scenario"
)

// readmeHasTable checks that README.md holds want, the markdown table of
// what (SERVESIM_UPDATE_README=1 prints want to paste).
func readmeHasTable(t *testing.T, want, what string) {
	t.Helper()
	if os.Getenv("SERVESIM_UPDATE_README") != "" {
		t.Log("\n" + want)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), want) {
		t.Errorf("README.md lacks the table of %s; it should read:\n%s", what, want)
	}
}

// readmeCommands returns the commands of the first ```sh block under the
// README heading, without their `# …` comments and the leading "servesim".
func readmeCommands(t *testing.T, heading string) [][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README.md has no heading %q", heading)
	}
	text = text[i:]
	start := strings.Index(text, "```sh\n")
	if start < 0 {
		t.Fatalf("README.md: no sh block under %q", heading)
	}
	text = text[start+len("```sh\n"):]
	end := strings.Index(text, "```")
	var cmds [][]string
	for _, line := range strings.Split(text[:end], "\n") {
		if j := strings.Index(line, " #"); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] != "servesim" {
			t.Fatalf("README.md %s: %q does not start with servesim", heading, line)
		}
		cmds = append(cmds, f[1:])
	}
	return cmds
}

// TestReadmeUsingItRuns runs every command of the README's "Using it"
// section as written, in a temporary directory holding the scenario.toml
// the section refers to (the embedded default, as --print-default prints it).
func TestReadmeUsingItRuns(t *testing.T) {
	cmds := readmeCommands(t, "## Using it")
	if len(cmds) < 5 {
		t.Fatalf("only %d commands found under Using it", len(cmds))
	}
	t.Chdir(t.TempDir())
	if err := os.WriteFile("scenario.toml", []byte(scenario.DefaultTOML()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range cmds {
		var out bytes.Buffer
		if code := exitCode(dispatch(args, &out, &out), &out); code != 0 {
			t.Errorf("servesim %s: exit %d:\n%s", strings.Join(args, " "), code, tail(out.String()))
		}
	}
}
