package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servesim/servesim/sim/workload/trace"
)

// Sixteen runs writing one output directory at once leave one run's
// requests.csv, steps.csv and summary.json, never a mix (runset.go): each
// run has its own seed, so its three files differ from every other run's,
// and the files left must all equal one run's, written alone into a
// directory of its own. Three rounds, each starting the runs together.
func TestConcurrentRunsLeaveOneSet(t *testing.T) {
	const runs = 16
	plans := make([]*Plan, runs)
	ref := make([]map[string][]byte, runs)
	for i := range plans {
		s := small()
		s.Workload.Requests = 60 // 60 requests: a run of a few ms, so that the runs overlap
		s.Seed = uint64(i + 1)
		s.SetByFlag("seed")
		p, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		plans[i] = p
		d := t.TempDir()
		if _, err := Run(p, d); err != nil {
			t.Fatal(err)
		}
		ref[i] = readSet(t, d)
	}
	for i := range ref {
		for j := range i {
			for _, f := range runFiles {
				if bytes.Equal(ref[i][f], ref[j][f]) {
					t.Fatalf("seeds %d and %d give the same %s: the check below could not tell their sets apart", i+1, j+1, f)
				}
			}
		}
	}
	for round := range 3 {
		dir := t.TempDir()
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, runs)
		for i := range plans {
			wg.Go(func() {
				<-start
				_, errs[i] = Run(plans[i], dir)
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, run %d: %v", round, i, err)
			}
		}
		got := readSet(t, dir)
		which := -1
		for i := range ref {
			if bytes.Equal(got["summary.json"], ref[i]["summary.json"]) {
				which = i
			}
		}
		if which < 0 {
			t.Fatalf("round %d: summary.json is no run's", round)
		}
		for _, f := range runFiles {
			if !bytes.Equal(got[f], ref[which][f]) {
				t.Errorf("round %d: summary.json is seed %d's, %s is not: a mixed set", round, which+1, f)
			}
		}
		if left := tempsIn(dir); len(left) != 0 {
			t.Errorf("round %d: temporaries left: %v", round, left)
		}
	}
}

func readSet(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, f := range runFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		m[f] = b
	}
	return m
}

// A run that finds another live run's set directory in its output
// directory says so (Report.SharedDir); a dead run's (its lock gone) is
// not reported, and is removed once older than StaleAge.
func TestRunReportsSharedDirectory(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	p, err := small().Resolve()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	live := filepath.Join(dir, setPrefix+"live")
	dead := filepath.Join(dir, setPrefix+"dead")
	for _, d := range []string{live, dead} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * StaleAge)
	for _, d := range []string{live, dead} {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	h, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := lockShared(h); err != nil { // as a live run holds it
		t.Fatal(err)
	}
	rep, err := Run(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.SharedDir, []string{live}) {
		t.Errorf("SharedDir = %v, want [%s]", rep.SharedDir, live)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live run's directory was removed: %v", err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead run's directory is still there (%v)", err)
	}
	// Alone, a run reports nothing.
	h.Close()
	rep, err = Run(p, t.TempDir())
	if err != nil || len(rep.SharedDir) != 0 {
		t.Errorf("alone: SharedDir %v, error %v; want none", rep.SharedDir, err)
	}
}

// An output that is an input is refused before the run, by path, by
// another spelling of it and through a symbolic link; so are two outputs
// naming one file.
func TestCheckOutputsRefusesInputs(t *testing.T) {
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "requests.csv")
	if err := os.WriteFile(tracePath, []byte("arrival_s,prompt_tokens,output_tokens\n0,10,5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		out, in   []string
		wantError string
	}{
		{"same path", []string{tracePath}, []string{tracePath}, "is an input of this run"},
		{"other spelling", []string{filepath.Join(dir, ".", "x", "..", "requests.csv")}, []string{tracePath}, "is an input of this run"},
		{"through a link", []string{filepath.Join(link, "requests.csv")}, []string{tracePath}, "is an input of this run"},
		{"two outputs", []string{filepath.Join(dir, "a.json"), filepath.Join(dir, "a.json")}, nil, "two results of this run"},
		{"distinct", []string{filepath.Join(dir, "steps.csv"), filepath.Join(dir, "summary.json")}, []string{tracePath}, ""},
	} {
		err := CheckOutputs(c.out, c.in)
		if c.wantError == "" && err != nil || c.wantError != "" && (err == nil || !strings.Contains(err.Error(), c.wantError)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.wantError)
		}
	}
	// Run refuses a trace at outDir/requests.csv, and leaves it as it was.
	s := small()
	s.Workload.Trace = &trace.Options{File: tracePath}
	p, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(p, dir); err == nil || !strings.Contains(err.Error(), "is an input of this run") {
		t.Errorf("run with its trace at -o/requests.csv: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(tracePath); !strings.HasSuffix(string(b), "0,10,5\n") {
		t.Errorf("the trace was overwritten: %q", b)
	}
	if !Inside(filepath.Join(link, "meta.yaml"), dir) || Inside(filepath.Join(t.TempDir(), "x"), dir) {
		t.Error("Inside: wrong on a path through a link or outside")
	}
}

// Two names in one directory are two outputs, even when a file under one
// of them was just replaced by another run's and the file system gave its
// inode to the other (the inode reuse behind a failed CI run of
// TestConcurrentRunsLeaveOneSet); a hard link is another entry, which the
// rename of a result over it never writes through; a link to a file and a
// linked directory name the entry they resolve to.
func TestSameFileByEntry(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	if err := os.WriteFile(a, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, b); err != nil {
		t.Skip("no hard links here:", err)
	}
	ln := filepath.Join(dir, "ln.csv")
	if err := os.Symlink(a, ln); err != nil {
		t.Fatal(err)
	}
	dl := filepath.Join(t.TempDir(), "d")
	if err := os.Symlink(dir, dl); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		x, y string
		want bool
	}{
		{"hard links: two entries", a, b, false},
		{"a link to the file", ln, a, true},
		{"through a linked directory", filepath.Join(dl, "a.csv"), a, true},
		{"not yet written, through a linked directory", filepath.Join(dl, "new.csv"), filepath.Join(dir, "new.csv"), true},
		{"two names not yet written", filepath.Join(dir, "x.csv"), filepath.Join(dir, "y.csv"), false},
	} {
		if got := sameFile(c.x, c.y); got != c.want {
			t.Errorf("%s: sameFile(%s, %s) = %v, want %v", c.name, c.x, c.y, got, c.want)
		}
	}
}
