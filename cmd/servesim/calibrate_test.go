package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware/calibrate"
)

func TestCalibrateCommand(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer

	// A built-in profile prints as TOML that loads back.
	if err := dispatch([]string{"calibrate", "--builtin", "h100", "-o", filepath.Join(dir, "h100.toml")}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := calibrate.LoadProfile(filepath.Join(dir, "h100.toml")); err != nil {
		t.Fatal(err)
	}

	// Fit a native trace (this project's H200 measurements), then transfer it.
	h200 := filepath.Join(dir, "h200.toml")
	out.Reset()
	if err := dispatch([]string{"calibrate", "--trace", "../../hardware/calibrate/testdata/h200_randn.csv", "--gpu", "h200", "-o", h200}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "h200: fitted from h200_randn.csv (native, 2 models, 850 kernel timings)") {
		t.Errorf("output:\n%s", out.String())
	}
	p, err := calibrate.LoadProfile(h200)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := p.Op(0); p.GPU != "h200" || p.Derivation != calibrate.DerivationFitted || o.Op == "" {
		t.Errorf("profile %+v", p)
	}
	out.Reset()
	if err := dispatch([]string{"calibrate", "--transfer", h200, "--gpu", "b200"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `derivation = "transferred"`) || !strings.Contains(out.String(), `transferred_from = "h200"`) {
		t.Errorf("transfer output:\n%s", out.String())
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate"}, "--trace and --gpu are required"},
		{[]string{"calibrate", "--trace", dir, "--gpu", "h100", "--format", "native"}, "needs a CSV file"},
		{[]string{"calibrate", "--trace", "../../hardware/calibrate/testdata/h200_randn.csv", "--gpu", "h100"}, `no timings for gpu "h100"`},
		{[]string{"calibrate", "--builtin", "tpu"}, `no built-in profile for "tpu"`},
		{[]string{"calibrate", "--report", "--builtin", "h100"}, "exclusive"},
		{[]string{"calibrate", "--transfer", h200}, "--transfer needs --gpu"},
		{[]string{"calibrate", "--trace", "../../hardware/calibrate/testdata/h200_randn.csv", "--gpu", "h200", "--format", "csv"}, `--format "csv"`},
	} {
		out.Reset()
		err := dispatch(c.args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}

// With the shared Vidur data, `calibrate --trace DIR --gpu h100` writes
// the built-in H100 profile but for the fields that name the trace
// directory and its upstream commit.
func TestCalibrateVidurMatchesBuiltin(t *testing.T) {
	t.Parallel() // the package's longest test (a full fit), beside TestNumericFlagEdges
	data := "../../../shared/data/vidur-profiling"
	if _, err := os.Stat(filepath.Join(data, "SOURCE.md")); err != nil {
		t.Skip("../shared/data/vidur-profiling not found")
	}
	path := filepath.Join(t.TempDir(), "h100.toml")
	var out bytes.Buffer
	if err := dispatch([]string{"calibrate", "--trace", data, "--gpu", "h100", "-o", path}, &out, &out); err != nil {
		t.Fatal(err)
	}
	got, err := calibrate.LoadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := calibrate.Builtin("h100")
	got.Source.Note, want.Source.Note = "", ""
	// The built-in profile adds XLA's per-precision GEMM scales and their
	// notes (hardware/calibrate/precision.go); a Vidur fit alone has neither.
	want.GEMMPrecisions = nil
	var notes []string
	for _, n := range want.Notes {
		if !strings.Contains(n, "XLA's measured") {
			notes = append(notes, n)
		}
	}
	want.Notes = notes
	if !bytes.Equal(got.WriteTOML(), want.WriteTOML()) {
		t.Error("calibrate --trace ../shared/data/vidur-profiling --gpu h100 differs from the built-in h100 profile")
	}
}
