package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// ResultMode is the mode of every result file servesim writes (requests.csv,
// steps.csv, summary.json, sweep results, profiles, plans): readable by
// all, as the PNG plots are.
const ResultMode os.FileMode = 0o644

// TempPrefix starts the name of every temporary file servesim writes beside
// a result file before renaming it into place: ".servesim-tmp-NAME-RANDOM".
// SweepStale removes only names of this form (and the older forms it
// lists), never a user's file.
const TempPrefix = ".servesim-tmp-"

// StaleAge is how old a temporary file must be, before the start of the
// run that finds it, for SweepStale to remove it. A younger one may belong
// to another servesim writing into the same directory (shards of a sweep
// sharing it), which renames it a moment later.
const StaleAge = time.Minute

// legacyTemp matches the temporary names of earlier versions: .requests-N.csv,
// .steps-N.csv, and .NAME-N for summary.json, results.csv, results.json
// and a sweep point's KEY.json (N: os.CreateTemp's random digits).
var legacyTemp = regexp.MustCompile(`^\.(requests-[0-9]+\.csv|steps-[0-9]+\.csv|(summary\.json|results\.csv|results\.json|[0-9a-f]{16}\.json)-[0-9]+)$`)

// IsTempName reports whether a file name is one of servesim's temporaries.
func IsTempName(name string) bool {
	return strings.HasPrefix(name, TempPrefix) || legacyTemp.MatchString(name)
}

// SweepStale removes servesim's temporary files in dir (not below it) last
// modified more than StaleAge before start, and the temporary set
// directories (runset.go) of runs no longer alive: what an interrupted or
// killed run left. It returns how many it removed; a missing dir is not an
// error.
func SweepStale(dir string, start time.Time) (int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("scenario: %w", err)
	}
	n := 0
	for _, e := range ents {
		isSet := e.IsDir() && strings.HasPrefix(e.Name(), setPrefix)
		if !(e.Type().IsRegular() || isSet) || !IsTempName(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(start.Add(-StaleAge)) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if isSet && liveSet(p) {
			continue // a run still writing it (a slow one, older than StaleAge)
		}
		if err := os.RemoveAll(p); err == nil {
			n++
		}
	}
	return n, nil
}

// atomicFile is a result file being written: a temporary file beside its
// final path, mode ResultMode, renamed into place by commit.
type atomicFile struct {
	*os.File
	path string
	done bool
}

func createAtomic(path string) (*atomicFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	if err := addTemp(f.Name()); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	if err := f.Chmod(ResultMode); err != nil {
		f.Close()
		removeTemp(f.Name())
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return &atomicFile{File: f, path: path}, nil
}

// commit closes the file and renames it to its path; on failure the
// temporary is removed.
func (a *atomicFile) commit() error {
	if err := a.Close(); err != nil {
		a.abort()
		return fmt.Errorf("scenario: writing %s: %w", a.path, err)
	}
	if err := commitTemps(func() error { return os.Rename(a.Name(), a.path) }, a.Name()); err != nil {
		a.abort()
		return fmt.Errorf("scenario: %w", err)
	}
	a.done = true
	return nil
}

// abort closes and removes the temporary unless commit succeeded.
func (a *atomicFile) abort() {
	if a == nil || a.done {
		return
	}
	a.Close()
	removeTemp(a.Name())
	a.done = true
}

// WriteFileAtomic writes data to path, mode ResultMode, through a temporary
// file in the same directory and a rename, so readers see the old file or
// the whole new one.
func WriteFileAtomic(path string, data []byte) error {
	a, err := createAtomic(path)
	if err != nil {
		return err
	}
	if _, err := a.Write(data); err != nil {
		a.abort()
		return fmt.Errorf("scenario: writing %s: %w", path, err)
	}
	return a.commit()
}

// The temporaries this process has open: files and set directories written
// but not yet renamed into place. AbandonTemporaries removes them when the
// process must exit before its work stops (the CLI's interrupt, main.go).
// The mutex is held over every commit's renames, so an abandon never cuts a
// set in half and no commit starts after one.
var temps struct {
	sync.Mutex
	live      map[string]bool
	abandoned bool
}

var errAbandoned = errors.New("scenario: interrupted (the process is exiting; nothing more is written)")

func addTemp(path string) error {
	temps.Lock()
	defer temps.Unlock()
	if temps.abandoned {
		return errAbandoned
	}
	if temps.live == nil {
		temps.live = map[string]bool{}
	}
	temps.live[path] = true
	return nil
}

// removeTemp removes a temporary (a file, or a set directory and its
// files) and forgets it.
func removeTemp(path string) {
	temps.Lock()
	defer temps.Unlock()
	os.RemoveAll(path)
	delete(temps.live, path)
}

// commitTemps runs rename (the renames that put temporaries into place)
// under the registry's lock, then forgets the temporaries in paths.
func commitTemps(rename func() error, paths ...string) error {
	temps.Lock()
	defer temps.Unlock()
	if temps.abandoned {
		return errAbandoned
	}
	if err := rename(); err != nil {
		return err
	}
	for _, p := range paths {
		delete(temps.live, p)
	}
	return nil
}

// AbandonTemporaries removes every temporary this process has written and
// not committed, after waiting for a commit in progress, and makes every
// later write or commit fail: for a process about to exit (os.Exit) while
// its work still runs. It returns how many it removed.
func AbandonTemporaries() int {
	temps.Lock()
	defer temps.Unlock()
	temps.abandoned = true
	n := 0
	for p := range temps.live {
		if os.RemoveAll(p) == nil {
			n++
		}
	}
	clear(temps.live)
	return n
}

// TempDir makes a temporary directory inside dir (os.MkdirTemp's pattern)
// that AbandonTemporaries removes if the process must exit before
// CommitTempDir or RemoveTempDir: for a command that writes several files
// as one set (validate's tables and figures) outside a run's set.
func TempDir(dir, pattern string) (string, error) {
	tmp, err := os.MkdirTemp(dir, pattern)
	if err != nil {
		return "", fmt.Errorf("scenario: %w", err)
	}
	if err := addTemp(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}

// CommitTempDir runs rename (moving tmp's files into place) under the
// temporaries' lock, so an interrupt never leaves half of them moved, then
// removes tmp.
func CommitTempDir(tmp string, rename func() error) error {
	if err := commitTemps(rename, tmp); err != nil {
		return err
	}
	os.RemoveAll(tmp)
	return nil
}

// RemoveTempDir removes a TempDir that was not committed.
func RemoveTempDir(tmp string) { removeTemp(tmp) }
