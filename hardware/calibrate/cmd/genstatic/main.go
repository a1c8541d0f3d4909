// Command genstatic writes the built-in profiles of hardware/calibrate
// (profiles/*.toml) as Go source, static_<gpu>.go and static_profiles.go
// beside them, which Builtin serves them from without parsing TOML (see
// hardware/calibrate/internal/staticgen). `go generate ./hardware/calibrate`
// runs it after cmd/genprofiles, built with the calibrate_toml tag (the
// generated files left out), so a stale file cannot stop it:
//
//	go run -tags calibrate_toml ./hardware/calibrate/cmd/genstatic -dir hardware/calibrate
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/servesim/servesim/hardware/calibrate"
	"github.com/servesim/servesim/hardware/calibrate/internal/staticgen"
)

func main() {
	dir := flag.String("dir", "hardware/calibrate", "the calibrate package directory (profiles/ inside it)")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "genstatic:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	files, err := staticgen.Files(calibrate.BuiltinGPUs, func(gpu string) ([]byte, error) {
		return os.ReadFile(filepath.Join(dir, "profiles", gpu+".toml"))
	})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(dir, n)
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, files[n], 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
		fmt.Println("wrote", path)
	}
	return nil
}
