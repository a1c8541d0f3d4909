package models_test

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/servesim/servesim/internal/staticgen"
	"github.com/servesim/servesim/models"
)

// TestStaticModels holds the generated Go form of the built-in catalog
// (static_models.go) to builtin.toml: Builtin, which reads it, is
// reflect.DeepEqual to the catalog Load reads from the file, and the file
// is byte for byte what internal/cmd/genstatic makes of the shipped TOML,
// so a builtin.toml edited without `go generate ./models` fails here.
func TestStaticModels(t *testing.T) {
	if models.StaticModels == nil {
		t.Skip("built with the toml_builtins tag: no generated catalog")
	}
	var want models.Catalog
	if err := want.Load(bytes.NewReader(models.BuiltinTOML), "builtin.toml"); err != nil {
		t.Fatal(err)
	}
	var all []models.Model // what the generator writes: the loaded values, by name
	for _, v := range want.All() {
		all = append(all, *v)
	}
	if !reflect.DeepEqual(models.StaticModels, all) {
		t.Errorf("the generated values differ from what Load reads: run `go generate ./models`")
	}
	if got := models.Builtin(); !reflect.DeepEqual(got, &want) {
		t.Errorf("the generated catalog differs from builtin.toml: run `go generate ./models`")
	}
	src, err := staticgen.Models(models.BuiltinTOML)
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(staticgen.ModelsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shipped, src) {
		t.Errorf("%s is stale: run `go generate ./models`", staticgen.ModelsFile)
	}
}
