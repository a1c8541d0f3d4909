package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadFile loads the scenario file at path, failing the test on an error.
func loadFile(t *testing.T, path string) Scenario {
	t.Helper()
	s, err := LoadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// resolveRun resolves s and runs it without writing files, failing the
// test on any error.
func resolveRun(t *testing.T, s Scenario) (*Plan, *Report) {
	t.Helper()
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(p, "")
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

// runDir resolves s and runs it into a temporary directory, failing the
// test on any error; it returns the plan, the report and the directory.
func runDir(t *testing.T, s Scenario) (*Plan, *Report, string) {
	t.Helper()
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r, err := Run(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	return p, r, dir
}

// errHas reports a nil err, or one that lacks any of want, after label
// and a colon when label is not "".
func errHas(t *testing.T, label string, err error, want []string) {
	t.Helper()
	if label != "" {
		label += ": "
	}
	if err == nil {
		t.Errorf("%sno error", label)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%serror %q does not contain %q", label, err, w)
		}
	}
}

// readSummary decodes dir's summary.json into v, failing the test on an
// error.
func readSummary(t *testing.T, dir string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

// goldenFiles lists the golden scenarios, testdata/golden/*.toml, failing
// the test when there are none.
func goldenFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/golden/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden scenarios: %v", err)
	}
	return files
}

// header returns p's run header (Describe), failing the test on an error.
func header(t *testing.T, p *Plan) string {
	t.Helper()
	var b strings.Builder
	if err := p.Describe(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
