package calibrate_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"reflect"
	"testing"

	"github.com/servesim/servesim/hardware/calibrate"
	"github.com/servesim/servesim/internal/staticgen"
)

// tomlOnly is set in a build with the toml_builtins tag.
var tomlOnly bool

// TestStaticProfiles holds the generated Go form of the built-in profiles
// (static_*.go) to their TOML: each value is reflect.DeepEqual to what
// ParseProfile reads from profiles/<gpu>.toml (nil and empty slices apart,
// every field), so is the generated evaluation form of its GEMM trees to
// newForest's, the digest is the file's, and every generated file is
// byte for byte what cmd/genstatic makes of the shipped TOML now, so a
// TOML edited without `go generate ./hardware/calibrate` fails here.
func TestStaticProfiles(t *testing.T) {
	if tomlOnly {
		t.Skip("built with the toml_builtins tag: no generated profiles")
	}
	read := func(gpu string) ([]byte, error) { return calibrate.BuiltinFS.ReadFile("profiles/" + gpu + ".toml") }
	for _, gpu := range calibrate.BuiltinGPUs {
		data, err := read(gpu)
		if err != nil {
			t.Fatal(err)
		}
		want, err := calibrate.ParseProfile(data, gpu+".toml")
		if err != nil {
			t.Fatal(err)
		}
		got, digest := calibrate.BuiltinStatic(gpu)
		if got == nil {
			t.Fatalf("%s: no generated profile: run `go generate ./hardware/calibrate`", gpu)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the generated profile differs from profiles/%s.toml: run `go generate ./hardware/calibrate`", gpu, gpu)
		}
		// The trees' evaluation form: the generated one as newForest
		// builds it, and what Calibrated takes (forestOf) the same.
		if want.GEMMTrees != nil {
			f := calibrate.BuiltinForest(got.GEMMTrees)
			if f == nil || !reflect.DeepEqual(f, calibrate.Forest(want.GEMMTrees)) {
				t.Errorf("%s: the generated forest differs from newForest's: run `go generate ./hardware/calibrate`", gpu)
			}
			if !reflect.DeepEqual(calibrate.ForestOf(got.GEMMTrees), calibrate.Forest(want.GEMMTrees)) {
				t.Errorf("%s: forestOf differs from newForest", gpu)
			}
			if calibrate.BuiltinForest(want.GEMMTrees) != nil {
				t.Errorf("%s: a generated forest for trees not the built-in profile's", gpu)
			}
		} else if got.GEMMTrees != nil {
			t.Errorf("%s: trees where the TOML has none", gpu)
		}
		sum := sha256.Sum256(data)
		if digest != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: digest %s, want the TOML's %x", gpu, digest, sum)
		}
	}
	files, err := staticgen.Profiles(calibrate.BuiltinGPUs, read)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(calibrate.BuiltinGPUs)+1 {
		t.Fatalf("%d generated files, want %d", len(files), len(calibrate.BuiltinGPUs)+1)
	}
	for name, src := range files {
		shipped, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%v: run `go generate ./hardware/calibrate`", err)
		}
		if !bytes.Equal(shipped, src) {
			t.Errorf("%s is stale: run `go generate ./hardware/calibrate`", name)
		}
	}
	if p, d := calibrate.BuiltinStatic("no-such-gpu"); p != nil || d != "" {
		t.Errorf("no-such-gpu: %v, %q", p != nil, d)
	}
}

// TestBuiltinDigest: the digest of a built-in profile is the SHA-256 of
// what WriteTOML writes for it (run reports identify the profile by it).
func TestBuiltinDigest(t *testing.T) {
	for _, gpu := range append(calibrate.BuiltinGPUs, "h100-sxm") {
		p, ok := calibrate.Builtin(gpu)
		if !ok {
			t.Fatalf("%s: no built-in profile", gpu)
		}
		d, ok := calibrate.BuiltinDigest(gpu)
		sum := sha256.Sum256(p.WriteTOML())
		if !ok || d != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: digest %q, %v; want %x", gpu, d, ok, sum)
		}
	}
	if d, ok := calibrate.BuiltinDigest("no-such-gpu"); ok || d != "" {
		t.Errorf("no-such-gpu: %q, %v", d, ok)
	}
}
