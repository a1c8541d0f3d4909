package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/servesim/servesim/sim/metrics"
)

// A run's result files — requests.csv, steps.csv and summary.json — are
// one set: a reader must never find a summary.json from one run beside a
// steps.csv from another, even when several runs write one directory at
// once (16 runs sharing -o) or a run stops half way (a signal, a full
// disk). The design:
//
//  1. The run writes its three files into a fresh temporary directory of
//     its own inside the output directory (setPrefix + random; os.MkdirTemp
//     makes it, so no two runs share one), the records streamed as the
//     simulation goes. Nothing outside it changes until step 3.
//  2. It holds a shared flock(2) on that directory while it lives: another
//     run that finds the directory can tell a live run (lock held) from
//     one that was killed (the kernel dropped the lock), so it says that
//     two runs share the output directory, and SweepStale removes only
//     dead runs' directories.
//  3. To commit, it takes an exclusive flock(2) on the output directory
//     itself and, holding it, renames its three files into place
//     (replace: an exchange with the file it replaces, if any), then
//     drops the lock and removes its directory and the replaced files in
//     it. Each rename(2) is atomic, and the lock keeps two runs' renames
//     from interleaving, so
//     the directory goes from one whole set to another whole set, never a
//     mix; the last run to commit wins, whole. A reader that takes the
//     shared lock (LockRunDir) sees one set; one that does not can only
//     catch the microseconds between two renames of one commit.
//  4. On an error or an interrupt the temporary directory is removed and
//     the output directory is as before. Only SIGKILL or a power loss
//     inside step 3's three renames could leave a mix; SIGINT and SIGTERM
//     wait for a commit in progress (AbandonTemporaries).
//
// The flock is advisory and local: runs on two machines writing one NFS
// directory are not kept apart (flock over NFS is emulated or absent).

// setPrefix starts a run's temporary set directory (a TempPrefix name).
const setPrefix = TempPrefix + "run-"

// runFiles are the set's file names, in the order they are renamed.
var runFiles = []string{"requests.csv", "steps.csv", "summary.json"}

// RunFiles returns the names of the files a run writes into its output
// directory.
func RunFiles() []string { return slices.Clone(runFiles) }

// fileSink streams records into a run's temporary set directory and
// commits the set into the output directory only when the run succeeded.
type fileSink struct {
	dir, tmp    string
	hold        *os.File // tmp, flocked shared while the run lives
	reqF, stepF *os.File
	req         *metrics.RecordWriter
	step        *metrics.StepWriter
	others      []string // other live runs found writing into dir
	done        bool
}

// newFileSink creates the output directory, removes what dead runs left
// there (SweepStale) and opens the run's temporary set directory.
func newFileSink(dir string) (*fileSink, error) {
	if err := MkdirAll(dir); err != nil {
		return nil, err
	}
	if _, err := SweepStale(dir, time.Now()); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dir, setPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	if err := addTemp(tmp); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	fs := &fileSink{dir: dir, tmp: tmp}
	if fs.hold, err = os.Open(tmp); err != nil {
		fs.abort()
		return nil, fmt.Errorf("scenario: %w", err)
	}
	if err := lockShared(fs.hold); err != nil {
		fs.abort()
		return nil, fmt.Errorf("scenario: %s: %w", tmp, err)
	}
	fs.others = liveSets(dir, tmp)
	for _, f := range []**os.File{&fs.reqF, &fs.stepF} {
		name := "requests.csv"
		if f == &fs.stepF {
			name = "steps.csv"
		}
		if *f, err = createResult(filepath.Join(tmp, name)); err != nil {
			fs.abort()
			return nil, err
		}
	}
	// The writers write chunks of about 200 KB each, one write(2) each: no
	// bufio.Writer between.
	fs.req, fs.step = metrics.NewWriters(fs.reqF, fs.stepF)
	return fs, nil
}

// createResult creates a new file of mode ResultMode (whatever the umask).
func createResult(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, ResultMode)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	if err := f.Chmod(ResultMode); err != nil {
		f.Close()
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return f, nil
}

func (fs *fileSink) Record(r *metrics.Record) error { return fs.req.Write(r) }
func (fs *fileSink) Step(s *metrics.Step) error     { return fs.step.Write(s) }

// commit writes summary.json into the set directory and renames the three
// files into the output directory under its exclusive lock (see the top
// of this file). It returns the other runs seen writing the directory.
func (fs *fileSink) commit(rep *Report) ([]string, error) {
	for _, f := range []func() error{fs.req.Flush, fs.step.Flush, fs.reqF.Close, fs.stepF.Close} {
		if err := f(); err != nil {
			return nil, fmt.Errorf("scenario: writing results in %s: %w", fs.dir, err)
		}
	}
	js, err := json.MarshalIndent(rep.SummaryJSON(), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("scenario: summary: %w", err)
	}
	sf, err := createResult(filepath.Join(fs.tmp, "summary.json"))
	if err != nil {
		return nil, err
	}
	_, err = sf.Write(append(js, '\n'))
	if cerr := sf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("scenario: writing %s: %w", filepath.Join(fs.dir, "summary.json"), err)
	}
	for _, o := range liveSets(fs.dir, fs.tmp) {
		if !slices.Contains(fs.others, o) {
			fs.others = append(fs.others, o)
		}
	}
	d, err := os.Open(fs.dir)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	defer d.Close()
	err = commitTemps(func() error {
		if err := lockExclusive(d); err != nil {
			return fmt.Errorf("%s: %w", fs.dir, err)
		}
		defer unlock(d)
		for _, name := range runFiles {
			if err := replace(filepath.Join(fs.tmp, name), filepath.Join(fs.dir, name)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	fs.abort() // the set directory, holding only the files replaced
	return fs.others, nil
}

// abort removes the set directory (and whatever commit did not rename).
func (fs *fileSink) abort() {
	if fs.done {
		return
	}
	fs.done = true
	if fs.req != nil {
		fs.req.Discard() // nothing writes to reqF and stepF once they are closed
	}
	for _, f := range []*os.File{fs.reqF, fs.stepF, fs.hold} {
		if f != nil {
			f.Close()
		}
	}
	removeTemp(fs.tmp)
}

// liveSets lists the set directories in dir, other than own, of runs still
// alive (their shared lock held).
func liveSets(dir, own string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() && strings.HasPrefix(e.Name(), setPrefix) && p != own && liveSet(p) {
			out = append(out, p)
		}
	}
	return out
}

// liveSet reports whether a set directory's run still holds its lock.
func liveSet(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	free, err := tryLockExclusive(f)
	if err != nil {
		return false
	}
	if free {
		unlock(f)
	}
	return !free
}

// LockRunDir takes a shared lock on a run's output directory, so that no
// run commits a new set into it until unlock is called: a reader holding
// it reads requests.csv, steps.csv and summary.json of one run.
func LockRunDir(dir string) (unlock func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	if err := lockShared(d); err != nil {
		d.Close()
		return nil, fmt.Errorf("scenario: %s: %w", dir, err)
	}
	return func() { d.Close() }, nil // closing the descriptor drops its flock
}
