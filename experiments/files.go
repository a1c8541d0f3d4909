package experiments

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/servesim/servesim/sim/metrics"
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
// modified more than StaleAge before start: what an interrupted or killed
// run left. It returns how many it removed; a missing dir is not an error.
func SweepStale(dir string, start time.Time) (int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("experiments: %w", err)
	}
	n := 0
	for _, e := range ents {
		if !e.Type().IsRegular() || !IsTempName(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(start.Add(-StaleAge)) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
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
		return nil, fmt.Errorf("experiments: %w", err)
	}
	if err := f.Chmod(ResultMode); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("experiments: %w", err)
	}
	return &atomicFile{File: f, path: path}, nil
}

// commit closes the file and renames it to its path; on failure the
// temporary is removed.
func (a *atomicFile) commit() error {
	if err := a.Close(); err != nil {
		a.abort()
		return fmt.Errorf("experiments: writing %s: %w", a.path, err)
	}
	if err := os.Rename(a.Name(), a.path); err != nil {
		a.abort()
		return fmt.Errorf("experiments: %w", err)
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
	os.Remove(a.Name())
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
		return fmt.Errorf("experiments: writing %s: %w", path, err)
	}
	return a.commit()
}

// fileSink streams records to temporary files in the output directory and
// renames them into place only when the run succeeded.
type fileSink struct {
	dir             string
	reqF, stepF     *atomicFile
	reqBuf, stepBuf *bufio.Writer
	req             *metrics.RecordWriter
	step            *metrics.StepWriter
}

// newFileSink creates the output directory, removes the temporaries that
// earlier runs left there (SweepStale) and opens the run's own.
func newFileSink(dir string) (*fileSink, error) {
	if err := MkdirAll(dir); err != nil {
		return nil, err
	}
	if _, err := SweepStale(dir, time.Now()); err != nil {
		return nil, err
	}
	fs := &fileSink{dir: dir}
	var err error
	if fs.reqF, err = createAtomic(filepath.Join(dir, "requests.csv")); err != nil {
		return nil, err
	}
	if fs.stepF, err = createAtomic(filepath.Join(dir, "steps.csv")); err != nil {
		fs.abort()
		return nil, err
	}
	fs.reqBuf = bufio.NewWriterSize(fs.reqF, 1<<16)
	fs.stepBuf = bufio.NewWriterSize(fs.stepF, 1<<16)
	fs.req = metrics.NewRecordWriter(fs.reqBuf)
	fs.step = metrics.NewStepWriter(fs.stepBuf)
	return fs, nil
}

func (fs *fileSink) Record(r *metrics.Record) error { return fs.req.Write(r) }
func (fs *fileSink) Step(s *metrics.Step) error     { return fs.step.Write(s) }

// commit writes summary.json, then renames requests.csv and steps.csv into
// place.
func (fs *fileSink) commit(rep *Report) error {
	for _, f := range []func() error{fs.req.Flush, fs.step.Flush, fs.reqBuf.Flush, fs.stepBuf.Flush} {
		if err := f(); err != nil {
			return fmt.Errorf("experiments: writing results: %w", err)
		}
	}
	js, err := json.MarshalIndent(rep.summaryJSON(), "", "  ")
	if err != nil {
		return fmt.Errorf("experiments: summary: %w", err)
	}
	if err := WriteFileAtomic(filepath.Join(fs.dir, "summary.json"), append(js, '\n')); err != nil {
		return err
	}
	if err := fs.reqF.commit(); err != nil {
		return err
	}
	return fs.stepF.commit()
}

// abort removes the temporary files that commit did not rename.
func (fs *fileSink) abort() {
	fs.reqF.abort()
	fs.stepF.abort()
}
