package calibrate

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/report.md from ../shared/data")

// The shipped profiles are what `go generate ./hardware/calibrate` makes
// from ../shared/data. Text must match exactly; numbers to 1 part in 10⁴:
// the fit stops where the cost improves by less than 1 part in 10¹³, which
// leaves the flattest parameters uncertain in about the sixth digit, and a
// platform that fuses multiply-adds (arm64) may take a different path to
// the same optimum. On one platform the output is byte-for-byte stable.
func TestBuiltinProfilesUpToDate(t *testing.T) {
	t.Parallel() // with TestReportGolden: the package's two long fits, on separate cores
	dir := vidurDir(t)
	gen, err := GenerateBuiltin(dir, []string{"testdata/h200_randn.csv"})
	if err != nil {
		t.Fatal(err)
	}
	if len(gen) != len(BuiltinGPUs) {
		t.Fatalf("generated %d profiles, want %d", len(gen), len(BuiltinGPUs))
	}
	for _, name := range BuiltinGPUs {
		shipped, err := builtinFS.ReadFile("profiles/" + name + ".toml")
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(shipped, gen[name]) {
			continue
		}
		if msg := diffNumeric(string(shipped), string(gen[name]), 1e-4); msg != "" {
			t.Errorf("profiles/%s.toml is stale (%s): run `go generate ./hardware/calibrate`", name, msg)
		}
	}
}

// diffNumeric compares two texts token by token: numbers within rel, the
// rest exactly. It returns "" when they agree, else the first difference.
func diffNumeric(a, b string, rel float64) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(la) != len(lb) {
		return fmt.Sprintf("%d lines vs %d", len(la), len(lb))
	}
	for i := range la {
		if la[i] == lb[i] {
			continue
		}
		fa, fb := strings.Fields(la[i]), strings.Fields(lb[i])
		if len(fa) != len(fb) {
			return fmt.Sprintf("line %d: %q vs %q", i+1, la[i], lb[i])
		}
		for j := range fa {
			if fa[j] == fb[j] {
				continue
			}
			x, e1 := strconv.ParseFloat(strings.Trim(fa[j], ",%()"), 64)
			y, e2 := strconv.ParseFloat(strings.Trim(fb[j], ",%()"), 64)
			if e1 != nil || e2 != nil || math.Abs(x-y) > rel*math.Max(math.Abs(x), math.Abs(y)) {
				return fmt.Sprintf("line %d: %q vs %q", i+1, la[i], lb[i])
			}
		}
	}
	return ""
}

// The accuracy report on the shared data is golden: testdata/report.md
// (the full report of docs/calibration.md, TestDocsCalibrationReport). Regenerate with
// `go test ./hardware/calibrate -run TestReportGolden -update` and read the
// diff.
func TestReportGolden(t *testing.T) {
	t.Parallel() // with TestBuiltinProfilesUpToDate (it reads only; -update writes testdata/report.md alone)
	dir := vidurDir(t)
	acc, err := Evaluate(dir, ReportOptions{Measured: []string{"testdata/h200_randn.csv", "testdata/h200_zeros.csv"}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := acc.Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.md")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if msg := diffNumeric(string(want), buf.String(), 2e-3); msg != "" {
		t.Errorf("report differs from %s (%s); rerun with -update and read the diff", golden, msg)
	}

	// Internal consistency of the report.
	for _, tb := range []*ErrTable{acc.InSample, acc.HeldOutModel, acc.HeldOutGPU, acc.Floor, acc.Measured} {
		for i, r := range tb.Rows {
			for j, c := range tb.Cells[i] {
				if c.N > 0 && (c.P90 < c.Median || math.Abs(c.Bias) > c.P90+1e-9) {
					t.Errorf("%s / %s / %s: median %g, p90 %g, bias %g", tb.Title, r, tb.Columns[j], c.Median, c.P90, c.Bias)
				}
			}
		}
	}
	// The held-out GEMM pool has every GEMM timing: 4 operators × the samples per operator.
	for _, gpu := range traceGPUs {
		g, _ := acc.HeldOutModel.Cell(RowGEMMs, gpu)
		q, _ := acc.HeldOutModel.Cell("qkv", gpu)
		if g.N != 4*q.N {
			t.Errorf("%s: %d GEMM timings, want 4 × %d", gpu, g.N, q.N)
		}
	}
	// The residual trees must earn their place held out by model: lower
	// median and p90 GEMM error than the same fits without them, on both
	// GPUs.
	for _, gpu := range traceGPUs {
		with, _ := acc.HeldOutModel.Cell(RowGEMMs, gpu)
		bare, _ := acc.HeldOutModel.Cell(RowGEMMs, gpu+", no trees")
		if !(with.N == bare.N && with.Median < bare.Median && with.P90 < bare.P90) {
			t.Errorf("%s held out by model: with trees %+v, without %+v", gpu, with, bare)
		}
	}
	// Step rows: 2 cases × 4 token counts, each with a positive measured sum.
	if len(acc.Steps) != 8 {
		t.Errorf("%d step rows, want 8", len(acc.Steps))
	}
	for _, r := range acc.Steps {
		if !(r.Measured > 0 && r.Calibrated > 0 && r.Roofline > 0 && r.HeldOut > 0) {
			t.Errorf("step row %+v", r)
		}
	}
}
