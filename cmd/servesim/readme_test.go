package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/servesim/servesim/experiments/scenario"
)

// The README is for users (what servesim is, install, the first run, the
// commands people use, accuracy and limits in two tables); docs/*.md holds
// the depth. These tests hold both to what the commands print.

// repoRoot is the repository root, seen from cmd/servesim.
var repoRoot = filepath.Join("..", "..")

// docPage returns the text of page, a path from the repository root
// ("README.md", "docs/validation.md").
func docPage(t *testing.T, page string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// docPages returns README.md and every docs/*.md, by path from the
// repository root.
func docPages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"README.md"}
	for _, d := range docs {
		pages = append(pages, "docs/"+filepath.Base(d))
	}
	if len(pages) < 10 {
		t.Fatalf("only %d documentation pages: %v", len(pages), pages)
	}
	return pages
}

// docHasTable checks that page holds want, the markdown table of what
// (SERVESIM_UPDATE_README=1 prints want to paste).
func docHasTable(t *testing.T, page, want, what string) {
	t.Helper()
	if os.Getenv("SERVESIM_UPDATE_README") != "" {
		t.Log("\n" + want)
	}
	if !strings.Contains(docPage(t, page), want) {
		t.Errorf("%s lacks the table of %s; it should read:\n%s", page, what, want)
	}
}

// docBlock returns the body of the first fenced block opened by fence
// ("```sh", "```") under heading (a whole line, "## Using it") of page.
func docBlock(t *testing.T, page, heading, fence string) string {
	t.Helper()
	text := docPage(t, page)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", page, heading)
	}
	text = text[i:]
	start := strings.Index(text, "\n"+fence+"\n")
	if start < 0 {
		t.Fatalf("%s: no %s block under %q", page, fence, heading)
	}
	text = text[start+len(fence)+2:]
	end := strings.Index(text, "```")
	if end < 0 {
		t.Fatalf("%s: the %s block under %q is not closed", page, fence, heading)
	}
	return text[:end]
}

// shellCommands returns the servesim command lines of an sh block, each as
// its words after "servesim" ("go run ./cmd/servesim" counts as servesim):
// lines ending in `\` are joined to the next, `# …` comments and anything
// after a pipe dropped, lines running another program skipped.
func shellCommands(block string) [][]string {
	var cmds [][]string
	block = strings.ReplaceAll(block, "\\\n", " ")
	for _, line := range strings.Split(block, "\n") {
		if j := strings.Index(line, " #"); j >= 0 {
			line = line[:j]
		}
		if j := strings.Index(line, " | "); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "go" && f[1] == "run" && f[2] == "./cmd/servesim" {
			f = append([]string{"servesim"}, f[3:]...)
		}
		if len(f) == 0 || f[0] != "servesim" {
			continue
		}
		cmds = append(cmds, f[1:])
	}
	return cmds
}

// docCommands returns the commands of the first ```sh block under heading
// of page; every line of it must be a servesim command.
func docCommands(t *testing.T, page, heading string) [][]string {
	t.Helper()
	block := docBlock(t, page, heading, "```sh")
	cmds := shellCommands(block)
	lines := 0
	for _, l := range strings.Split(block, "\n") {
		if strings.TrimSpace(l) != "" {
			lines++
		}
	}
	if len(cmds) != lines {
		t.Fatalf("%s %s: %d lines but %d servesim commands", page, heading, lines, len(cmds))
	}
	return cmds
}

// runCapture runs one servesim command line in-process and returns its
// stdout and stderr together and its exit status.
func runCapture(args []string) (string, int) {
	var out bytes.Buffer
	code := exitCode(dispatch(args, &out, &out), &out)
	return out.String(), code
}

// TestReadmeUsingItRuns runs every command of the README's "Using it"
// section as written, in a temporary directory holding the scenario.toml
// the section refers to (the embedded default, as --print-default prints it).
func TestReadmeUsingItRuns(t *testing.T) {
	cmds := docCommands(t, "README.md", "## Using it")
	if len(cmds) < 10 {
		t.Fatalf("only %d commands found under Using it", len(cmds))
	}
	t.Chdir(t.TempDir())
	if err := os.WriteFile("scenario.toml", []byte(scenario.DefaultTOML()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range cmds {
		if out, code := runCapture(args); code != 0 {
			t.Errorf("servesim %s: exit %d:\n%s", strings.Join(args, " "), code, tail(out))
		}
	}
}

// TestReadmeFirstRun: the README's first run prints, byte for byte, what
// `servesim` with no arguments prints (header, summary, files written).
func TestReadmeFirstRun(t *testing.T) {
	want := docBlock(t, "README.md", "## First run", "```")
	t.Chdir(t.TempDir())
	got, code := runCapture(nil)
	if code != 0 {
		t.Fatalf("servesim: exit %d:\n%s", code, tail(got))
	}
	if got != want {
		t.Errorf("README.md, First run, differs from what servesim prints; it should read:\n%s", got)
	}
}

// TestDocCommandsParse: every servesim command line of every sh block in
// README.md and docs/*.md parses as written: with --help appended, its
// subcommand, flags and flag values are read (an unknown flag exits 2, a
// bad value 1) and only the help is printed, so commands that need data
// sets or take minutes are checked without running them.
func TestDocCommandsParse(t *testing.T) {
	fence := regexp.MustCompile("(?s)```sh\n(.*?)```")
	n := 0
	for _, page := range docPages(t) {
		for _, m := range fence.FindAllStringSubmatch(docPage(t, page), -1) {
			for _, args := range shellCommands(m[1]) {
				n++
				if out, code := runCapture(append(append([]string{}, args...), "--help")); code != 0 {
					t.Errorf("%s: servesim %s: exit %d with --help:\n%s", page, strings.Join(args, " "), code, tail(out))
				}
			}
		}
	}
	// README: 2 install + 10 Using it; the docs: data, calibration,
	// validation, traces, sweeps, front-end blocks, 40 and more.
	if n < 40 {
		t.Errorf("only %d servesim commands found in the documentation", n)
	}
}

// TestReadmeShort: the README stays a page for users (issue 25: at most
// about 400 lines); the depth goes to docs/.
func TestReadmeShort(t *testing.T) {
	if n := strings.Count(docPage(t, "README.md"), "\n"); n > 420 {
		t.Errorf("README.md has %d lines, more than 420: move the depth to a docs/ page", n)
	}
}

// mdLink is a markdown link or image target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// mdAnchors returns the anchors GitHub gives page's headings: lower case,
// letters, digits, spaces, '-' and '_' kept, spaces as '-'.
func mdAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		h := strings.TrimLeft(line, "#")
		if fenced || len(h) == len(line) || len(line)-len(h) > 6 || !strings.HasPrefix(h, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			}
		}
		anchors[b.String()] = true
	}
	return anchors
}

// TestDocLinksResolve: every relative link and image of README.md and
// docs/*.md names a file of the checkout (relative to the page), and an
// anchor names a heading of its page.
func TestDocLinksResolve(t *testing.T) {
	n := 0
	for _, page := range docPages(t) {
		text := docPage(t, page)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Join(repoRoot, filepath.Dir(filepath.FromSlash(page)), filepath.FromSlash(file))
			linked := text
			if file != "" {
				data, err := os.ReadFile(path)
				if err != nil {
					if st, serr := os.Stat(path); serr != nil || !st.IsDir() {
						t.Errorf("%s: link %q: %s does not exist", page, target, path)
					}
					continue
				}
				linked = string(data)
			}
			if anchor != "" && !mdAnchors(linked)[anchor] {
				t.Errorf("%s: link %q: no heading with anchor #%s", page, target, anchor)
			}
		}
	}
	if n < 30 {
		t.Errorf("only %d relative links found", n)
	}
}

// TestDocsAblationTable: Engine model's ablation table is what
// `servesim run --ablation` prints.
func TestDocsAblationTable(t *testing.T) {
	page := docPage(t, "docs/engine-model.md")
	t.Chdir(t.TempDir())
	out, code := runCapture([]string{"run", "--ablation", "-q"})
	if code != 0 {
		t.Fatalf("servesim run --ablation: exit %d:\n%s", code, tail(out))
	}
	var table strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "|") {
			table.WriteString(line + "\n")
		}
	}
	if table.Len() == 0 {
		t.Fatalf("servesim run --ablation printed no table:\n%s", tail(out))
	}
	if !strings.Contains(page, table.String()) {
		t.Errorf("docs/engine-model.md lacks the table servesim run --ablation prints:\n%s", table.String())
	}
}

// TestDocsCalibrationReport: the full report of docs/calibration.md is
// the golden accuracy report (hardware/calibrate/testdata/report.md,
// which TestReportGolden holds to what `calibrate --report` computes).
func TestDocsCalibrationReport(t *testing.T) {
	docHasTable(t, "docs/calibration.md", docPage(t, "hardware/calibrate/testdata/report.md"), "the calibrate --report golden")
}

// TestDocsValidationSuite: the suite's table in docs/validation.md is what
// `servesim validate --suite` prints, and every row of the README's
// accuracy table is the suite's "by model left out" row (mean TTFT, TPOT
// and E2E, the first, fifth and ninth columns).
func TestDocsValidationSuite(t *testing.T) {
	_, out := suiteRun(t)
	text := docPage(t, "docs/validation.md")
	i := strings.Index(text, "\nSigned error")
	if i < 0 {
		t.Fatal("docs/validation.md has no suite table (Signed error ...)")
	}
	block := text[i+1:]
	block = block[:strings.Index(block, "```")]
	if !strings.Contains(out, block) {
		t.Errorf("docs/validation.md's suite table differs from what validate --suite prints; it should read:\n%s", out[strings.Index(out, "Signed error"):])
	}

	row := regexp.MustCompile(`^\| ([^|]+ \(\d+\)) \| (\S+) \| (\S+) \| (\S+) \|$`)
	rows := 0
	for _, line := range strings.Split(docBlockAfter(t, "README.md", "## Accuracy"), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		var got []string
		for _, l := range strings.Split(out, "\n") {
			if rest, ok := strings.CutPrefix(l, "  "+m[1]+" "); ok {
				if f := strings.Fields(rest); len(f) >= 9 {
					got = []string{f[0], f[4], f[8]}
				}
			}
		}
		if want := m[2:5]; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("README.md, Accuracy, %s: TTFT/TPOT/E2E %v, validate --suite prints %v", m[1], want, got)
		}
	}
	if rows < 9 {
		t.Errorf("README.md, Accuracy: %d model rows, want 9 (8 models and their median)", rows)
	}
}

// docBlockAfter is the text of page from heading to the next heading of
// the same or a higher level.
func docBlockAfter(t *testing.T, page, heading string) string {
	t.Helper()
	text := docPage(t, page)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", page, heading)
	}
	text = text[i+len(heading)+2:]
	level := strings.Repeat("#", strings.Count(strings.Fields(heading)[0], "#"))
	if j := strings.Index(text, "\n"+level+" "); j >= 0 {
		text = text[:j]
	}
	return text
}
