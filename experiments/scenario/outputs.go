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
				return fmt.Errorf("experiments: %s is an input of this run (%s) and would be overwritten by its results: write them elsewhere", o, in)
			}
		}
		for _, o2 := range outputs[:i] {
			if sameFile(o, o2) {
				return fmt.Errorf("experiments: two results of this run would be written to one file, %s (also named %s): give them different names", o, o2)
			}
		}
	}
	return nil
}

// sameFile reports whether paths a and b name one file: equal once made
// absolute and cleaned, or both existing and the same file.
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	if err1 == nil && err2 == nil && aa == bb {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
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
