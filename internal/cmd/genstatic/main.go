// Command genstatic writes servesim's built-in tables as Go source (see
// internal/staticgen): the calibrated profiles of hardware/calibrate
// (-profiles DIR: DIR/profiles/*.toml → DIR/static_*.go), the GPU catalog
// (-gpus DIR: DIR/gpus.toml → DIR/static_gpus.go) and the model catalog
// (-models DIR: DIR/builtin.toml → DIR/static_models.go). `go generate`
// in each package runs it, built with the toml_builtins tag (the
// generated files left out), so that a stale file cannot stop it; from
// the repository root:
//
//	go run -tags toml_builtins ./internal/cmd/genstatic -profiles hardware/calibrate -gpus hardware -models models
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/servesim/servesim/hardware/calibrate"
	"github.com/servesim/servesim/internal/genwrite"
	"github.com/servesim/servesim/internal/staticgen"
)

func main() {
	profiles := flag.String("profiles", "", "the hardware/calibrate directory (profiles/ inside it)")
	gpus := flag.String("gpus", "", "the hardware directory (gpus.toml inside it)")
	mods := flag.String("models", "", "the models directory (builtin.toml inside it)")
	flag.Parse()
	if err := run(*profiles, *gpus, *mods); err != nil {
		fmt.Fprintln(os.Stderr, "genstatic:", err)
		os.Exit(1)
	}
}

func run(profiles, gpus, mods string) error {
	if profiles != "" {
		files, err := staticgen.Profiles(calibrate.BuiltinGPUs, func(gpu string) ([]byte, error) {
			return os.ReadFile(filepath.Join(profiles, "profiles", gpu+".toml"))
		})
		if err != nil {
			return err
		}
		if err := genwrite.Files(profiles, files, os.Stdout); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		dir, toml, out string
		gen            func([]byte) ([]byte, error)
	}{{gpus, "gpus.toml", staticgen.GPUsFile, staticgen.GPUs}, {mods, "builtin.toml", staticgen.ModelsFile, staticgen.Models}} {
		if c.dir == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(c.dir, c.toml))
		if err != nil {
			return err
		}
		src, err := c.gen(data)
		if err != nil {
			return err
		}
		if err := genwrite.Files(c.dir, map[string][]byte{c.out: src}, os.Stdout); err != nil {
			return err
		}
	}
	return nil
}
