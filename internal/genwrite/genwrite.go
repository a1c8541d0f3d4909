// Package genwrite writes the files of servesim's generators
// (hardware/calibrate/cmd/genprofiles, internal/cmd/genstatic).
package genwrite

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// Files puts each of files (name → contents) in dir, in name order, each
// by a rename of a temporary file beside it, so that a reader never sees
// half a file; the temporary file is removed when writing or renaming it
// fails. It prints "wrote PATH" to log for each.
func Files(dir string, files map[string][]byte, log io.Writer) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(dir, n)
		tmp := path + ".tmp"
		err := os.WriteFile(tmp, files[n], 0o644)
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			os.Remove(tmp) // nothing to remove when WriteFile could not create it
			return err
		}
		fmt.Fprintln(log, "wrote", path)
	}
	return nil
}
