package hardware_test

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/internal/staticgen"
)

// TestStaticGPUs holds the generated Go form of the built-in catalog
// (static_gpus.go) to gpus.toml: Builtin, which reads it, is
// reflect.DeepEqual to the catalog Load reads from the file, and the file
// is byte for byte what internal/cmd/genstatic makes of the shipped TOML,
// so a gpus.toml edited without `go generate ./hardware` fails here.
func TestStaticGPUs(t *testing.T) {
	if hardware.StaticGPUs == nil {
		t.Skip("built with the toml_builtins tag: no generated catalog")
	}
	var want hardware.Catalog
	if err := want.Load(strings.NewReader(hardware.BuiltinTOML), "gpus.toml"); err != nil {
		t.Fatal(err)
	}
	var all []hardware.GPU // what the generator writes: the loaded values, by name
	for _, v := range want.All() {
		all = append(all, *v)
	}
	if !reflect.DeepEqual(hardware.StaticGPUs, all) {
		t.Errorf("the generated values differ from what Load reads: run `go generate ./hardware`")
	}
	if got := hardware.Builtin(); !reflect.DeepEqual(got, &want) {
		t.Errorf("the generated catalog differs from gpus.toml: run `go generate ./hardware`")
	}
	src, err := staticgen.GPUs([]byte(hardware.BuiltinTOML))
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(staticgen.GPUsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shipped, src) {
		t.Errorf("%s is stale: run `go generate ./hardware`", staticgen.GPUsFile)
	}
}
