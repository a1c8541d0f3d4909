package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// InputFiles lists the files the plan reads: the scenario file, the models
// and GPUs files, an imported config.json, a profile file and a replayed
// trace (those that it names). An output must not be one of them
// (CheckOutputs).
func (p *Plan) InputFiles() []string {
	s := p.Scenario
	var in []string
	if s.file != "" && s.dir != "" { // read from a file (LoadScenario), not from text
		in = append(in, s.file)
	}
	for _, f := range []string{s.ModelsFile, s.GPUsFile, s.ModelConfig, s.ExpertSkewFile} {
		if f != "" {
			in = append(in, s.Path(f))
		}
	}
	if mc := s.ModelConfig; mc != "" {
		in = append(in, filepath.Join(s.Path(mc), "config.json")) // a directory's config.json (ReadHFConfig)
	}
	switch prof := s.Hardware.Profile; prof {
	case "", "builtin", "roofline":
	default:
		in = append(in, s.Path(prof))
	}
	if p.Trace != nil && p.Trace.File != "" {
		in = append(in, p.Trace.File)
	}
	return in
}

// CheckOutputs returns an error if an output path names one of the inputs
// (the same file by path, or through a link or another spelling of the
// path: os.SameFile) or if two outputs name one file: a command must not
// write over what it reads (`run --trace DIR/requests.csv -o DIR`), nor
// one of its files over another (`--result-filename requests.csv`).
func CheckOutputs(outputs, inputs []string) error {
	for i, o := range outputs {
		for _, in := range inputs {
			if sameFile(o, in) {
				return fmt.Errorf("scenario: %s is an input of this run (%s) and would be overwritten by its results: write them elsewhere", o, in)
			}
		}
		for _, o2 := range outputs[:i] {
			if sameFile(o, o2) {
				return fmt.Errorf("scenario: two results of this run would be written to one file, %s (also named %s): give them different names", o, o2)
			}
		}
	}
	return nil
}

// sameFile reports whether paths a and b name one directory entry: equal
// once made absolute and cleaned, equal once their links are resolved
// (a linked directory, a link to the file), or the same name in one
// directory (os.SameFile on the directories). Results are written to a
// temporary and renamed over their name (files.go, runset.go), so two hard links
// are two entries that never overwrite each other. Files themselves are
// not compared by inode: a file that another run replaces between two
// os.Stat calls frees its inode, which the file system may give the next
// file (a concurrent run's requests.csv), and two distinct names would
// then read as one. A name spelled in another case is one entry on a
// case-insensitive file system: that alone is also compared by inode.
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	ra, rb := resolvedPath(a), resolvedPath(b)
	if ra == rb {
		return true
	}
	da, err1 := os.Stat(filepath.Dir(ra))
	db, err2 := os.Stat(filepath.Dir(rb))
	if err1 != nil || err2 != nil || !os.SameFile(da, db) {
		return false
	}
	na, nb := filepath.Base(ra), filepath.Base(rb)
	if na == nb {
		return true
	}
	if !strings.EqualFold(na, nb) {
		return false
	}
	sa, err1 := os.Stat(ra)
	sb, err2 := os.Stat(rb)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// resolvedPath is p made absolute, with its links resolved: the whole path
// where it exists, else its directory (an output not yet written).
func resolvedPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(r, filepath.Base(p))
	}
	return p
}

// Inside reports whether path is dir or lies below it (by path, after
// making both absolute, or because dir is one of path's existing parents
// by os.SameFile): an output inside an input directory (a calibrate
// trace's bundle) may overwrite one of its files.
func Inside(path, dir string) bool {
	if path == "" || dir == "" {
		return false
	}
	ap, err1 := filepath.Abs(path)
	ad, err2 := filepath.Abs(dir)
	if err1 == nil && err2 == nil {
		if rel, err := filepath.Rel(ad, ap); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	sd, err := os.Stat(dir)
	if err != nil || !sd.IsDir() {
		return false
	}
	for p := filepath.Dir(ap); ; p = filepath.Dir(p) {
		if sp, err := os.Stat(p); err == nil && os.SameFile(sp, sd) {
			return true
		}
		if p == filepath.Dir(p) {
			return false
		}
	}
}
