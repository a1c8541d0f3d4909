package plots

import (
	"math"
	"strings"
	"testing"
)

const miniHeader = "gpu,batch.max_num_seqs,seed,output_tok_per_s,ttft_p95_ms\n"

func TestReadResults(t *testing.T) {
	for _, tc := range []struct {
		name, csv string
		rows      int
		axes      string // joined by |
		err       string // substring of the error; "" = no error
	}{
		{"ok", miniHeader + "h100,8,1,100.5,20\nh100,8,2,99.5,NaN\n", 2, "gpu|batch.max_num_seqs", ""},
		{"no axes", "seed,completed\n1,5\n", 1, "", ""},
		{"quoted axis value with comma", "batch,seed,x\n\"a=1, b=2\",1,3\n", 1, "batch", ""},
		{"header only", miniHeader, 0, "gpu|batch.max_num_seqs", ""},
		{"empty file", "", 0, "", "empty file"},
		{"no seed column", "gpu,completed\nh100,1\n", 0, "", `line 1: no "seed" column`},
		{"duplicate column", "seed,x,x\n1,2,3\n", 0, "", `line 1, column 3: column "x" repeats column 2`},
		{"empty column name", "gpu,,seed\n", 0, "", "line 1, column 2: empty column name"},
		{"too few fields", miniHeader + "h100,8,1,100\n", 0, "", "line 2: 4 fields, want 5"},
		{"bad seed", miniHeader + "h100,8,-1,1,2\n", 0, "", `line 2, column 3 (seed): invalid seed "-1"`},
		{"bad number", miniHeader + "h100,8,1,1,abc\n", 0, "", `line 2, column 5 (ttft_p95_ms): invalid number "abc"`},
		{"empty number", miniHeader + "h100,8,1,,2\n", 0, "", `line 2, column 4 (output_tok_per_s): invalid number ""`},
		{"bare quote", miniHeader + "h\"100,8,1,1,2\n", 0, "", "line 2, column 2 (byte)"},
		{"error on line 3", miniHeader + "h100,8,1,1,2\nh100,8,2,1,x\n", 0, "", "line 3, column 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ReadResults(strings.NewReader(tc.csv), "results.csv")
			if wantError(t, err, "plots: results.csv", tc.err) {
				return
			}
			if len(res.Rows) != tc.rows || strings.Join(res.Axes, "|") != tc.axes {
				t.Fatalf("%d rows, axes %q; want %d, %q", len(res.Rows), res.Axes, tc.rows, tc.axes)
			}
		})
	}
}

func TestReadResultsValues(t *testing.T) {
	res, err := ReadResults(strings.NewReader(miniHeader+"h100,8,1,100.5,20\nh100,8,2,99.5,NaN\n\"a,b\",16,1,1,2\n"), "r.csv")
	if err != nil {
		t.Fatal(err)
	}
	r := res.Rows[2]
	if r.Line != 4 || r.Axis["gpu"] != "a,b" || r.Axis["batch.max_num_seqs"] != "16" || r.Seed != 1 || r.Metrics["ttft_p95_ms"] != 2 {
		t.Errorf("row %+v", r)
	}
	if !math.IsNaN(res.Rows[1].Metrics["ttft_p95_ms"]) {
		t.Errorf("NaN not kept: %v", res.Rows[1].Metrics)
	}
	cs := res.Configs()
	if len(cs) != 2 || cs[0].Seeds != 2 || cs[1].Seeds != 1 {
		t.Fatalf("configs %+v", cs)
	}
	// Mean over the two seeds: (100.5 + 99.5)/2 = 100; a NaN in one seed
	// makes the mean NaN.
	if cs[0].Metrics["output_tok_per_s"] != 100 || !math.IsNaN(cs[0].Metrics["ttft_p95_ms"]) {
		t.Errorf("config 0 metrics %v", cs[0].Metrics)
	}
}

func TestLayout(t *testing.T) {
	mk := func(header string, rows ...string) *Results {
		res, err := ReadResults(strings.NewReader(header+"\n"+strings.Join(rows, "\n")+"\n"), "r.csv")
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	gpuBatch := mk("gpu,batch.max_num_seqs,seed,m", "a,1,1,0", "b,2,1,0")
	policyRate := mk("batch,workload.rate,seed,m", "x,2,1,0", "y,5,1,0")
	twoUnknown := mk("p,q,seed,m", "a,1,1,0", "b,2,1,0")
	bothNumeric := mk("p,q,seed,m", "1,1,1,0", "2,2,1,0")
	threeAxes := mk("gpu,tp,batch.max_num_seqs,seed,m", "a,1,1,1,0", "a,2,2,1,0", "b,1,1,1,0")
	constant := mk("gpu,model,workload.rate,seed,m", "a,m1,1,1,0", "b,m1,2,1,0")
	for _, tc := range []struct {
		name             string
		res              *Results
		x, group, prefer string
		wantX, wantGroup string // group axes joined by |
		err              string
	}{
		{"known x", gpuBatch, "", "", "", "batch.max_num_seqs", "gpu", ""},
		{"prefer wins", policyRate, "", "", "workload.rate", "workload.rate", "batch", ""},
		{"rate known", policyRate, "", "", "", "workload.rate", "batch", ""},
		{"only numeric axis", twoUnknown, "", "", "", "q", "p", ""},
		{"named x", twoUnknown, "p", "", "", "p", "q", ""},
		{"ambiguous", bothNumeric, "", "", "", "", "", "cannot tell which axis is x"},
		{"named group first", threeAxes, "", "tp", "", "batch.max_num_seqs", "tp|gpu", ""},
		{"all varying axes group", threeAxes, "", "", "", "batch.max_num_seqs", "gpu|tp", ""},
		{"constant axis not a group", constant, "", "", "", "workload.rate", "gpu", ""},
		{"unknown x", gpuBatch, "nope", "", "", "", "", `no axis "nope"`},
		{"unknown group", gpuBatch, "", "nope", "", "", "", `no axis "nope"`},
		{"x is group", gpuBatch, "gpu", "gpu", "", "", "", "both x and group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := tc.res.Layout(tc.x, tc.group, tc.prefer)
			if wantError(t, err, "", tc.err) {
				return
			}
			if l.X != tc.wantX || strings.Join(l.Group, "|") != tc.wantGroup {
				t.Errorf("layout %+v, want x %q group %q", l, tc.wantX, tc.wantGroup)
			}
		})
	}
}

func TestCurves(t *testing.T) {
	res, err := ReadResults(strings.NewReader("gpu,tp,batch.max_num_seqs,seed,m\n"+
		"b,1,8,1,3\na,1,4,1,1\na,1,2,1,2\na,2,2,1,4\n"), "r.csv")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := res.Layout("", "", "")
	cs, err := res.Curves(l)
	if err != nil {
		t.Fatal(err)
	}
	// Curves in order of first appearance; points sorted by x; two group
	// axes label as "name=value, name=value".
	want := []struct {
		label string
		xs    []float64
	}{{"gpu=b, tp=1", []float64{8}}, {"gpu=a, tp=1", []float64{2, 4}}, {"gpu=a, tp=2", []float64{2}}}
	if len(cs) != len(want) {
		t.Fatalf("%d curves, want %d", len(cs), len(want))
	}
	for i, w := range want {
		if cs[i].Label != w.label || len(cs[i].X) != len(w.xs) {
			t.Fatalf("curve %d: %q %v, want %q %v", i, cs[i].Label, cs[i].X, w.label, w.xs)
		}
		for j := range w.xs {
			if cs[i].X[j] != w.xs[j] {
				t.Errorf("curve %d x %v, want %v", i, cs[i].X, w.xs)
			}
		}
	}
	if cs[1].Points[0].Metrics["m"] != 2 {
		t.Errorf("points not reordered with x: %+v", cs[1].Points)
	}

	bad, _ := ReadResults(strings.NewReader("batch,seed,m\npolicy=x,1,0\n"), "r.csv")
	if _, err := bad.Curves(Layout{X: "batch"}); err == nil || !strings.Contains(err.Error(), `r.csv line 2, column 1 (batch): x value "policy=x" is not a finite number`) {
		t.Errorf("non-numeric x: error %v", err)
	}
}
