package scenario

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// skewCSV writes the rows of a per-layer skew file for DeepSeek-V3's MoE
// layers 3 … 60, skew f(layer) each, in the layer,skew form.
func skewCSV(f func(layer int) string) string {
	var b strings.Builder
	b.WriteString("layer,skew\n")
	for l := 3; l < 61; l++ {
		fmt.Fprintf(&b, "%d,%s\n", l, f(l))
	}
	return b.String()
}

// TestReadExpertSkew reads both forms (layer,skew and layer,max,mean, rows
// in any order) and refuses bad files with the line and field.
func TestReadExpertSkew(t *testing.T) {
	m, err := models.Builtin().Lookup("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	good := skewCSV(func(l int) string { return fmt.Sprint(1 + float64(l)/100) })
	got, err := ReadExpertSkew(strings.NewReader(good), "s.csv", m, 32)
	if err != nil {
		t.Fatal(err)
	}
	// Layer 3 is MoE layer 0: 1.03; layer 60 the last: 1.60.
	if len(got) != 58 || got[0] != 1.03 || got[57] != 1.6 {
		t.Errorf("read %d skews, first %v, last %v; want 58, 1.03, 1.6", len(got), got[0], got[57])
	}
	// max/mean, rows reversed, a BOM and spaces: 1310 / 1000 = 1.31.
	var b strings.Builder
	b.WriteString("\ufeffLayer, max ,mean\n")
	for l := 60; l >= 3; l-- {
		fmt.Fprintf(&b, "%d, %d ,1000\n", l, 1000+10*l)
	}
	got, err = ReadExpertSkew(strings.NewReader(b.String()), "s.csv", m, 32)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got[0]-1.03) > 1e-12 || math.Abs(got[57]-1.6) > 1e-12 {
		t.Errorf("max/mean: first %v, last %v; want 1.03, 1.6", got[0], got[57])
	}
	rows := strings.Split(good, "\n")
	cases := []struct{ name, text, want string }{
		{"empty", "", "s.csv: empty file"},
		{"header", "layer,load\n3,1.1\n", "s.csv line 1: header \"layer,load\""},
		{"both forms", "layer,skew,max,mean\n", "s.csv line 1: header"},
		{"max without mean", "layer,max\n", "s.csv line 1: header"},
		{"twice", "layer,skew,skew\n", "line 1: column \"skew\" twice"},
		{"dense layer", "layer,skew\n2,1.1\n", "s.csv line 2: field \"layer\": \"2\" is not a MoE layer of deepseek-v3 (layers 3 … 60)"},
		{"past the end", "layer,skew\n61,1.1\n", "line 2: field \"layer\": \"61\""},
		{"not a number", "layer,skew\n3,fast\n", "s.csv line 2: field \"skew\": \"fast\" is not a finite number"},
		{"inf", "layer,skew\n3,+Inf\n", "field \"skew\": \"+Inf\" is not a finite number"},
		{"below 1", "layer,skew\n3,0.9\n", "s.csv line 2: layer 3: skew 0.9 must be in [1, 32]"},
		{"above ep", "layer,skew\n3,33\n", "skew 33 must be in [1, 32]"},
		{"zero mean", "layer,max,mean\n3,5,0\n", "line 2: field \"mean\": max 5 and mean 0"},
		{"short row", "layer,max,mean\n3,5\n", "line 2: field \"mean\" missing"},
		{"repeated", strings.Join(rows[:3], "\n") + "\n3,1.2\n", "s.csv line 4: field \"layer\": layer 3 given twice"},
		{"missing layer", strings.Join(append(rows[:5], rows[6:]...), "\n"), "s.csv: MoE layer 7 of deepseek-v3 has no row"},
		{"quote", "layer,skew\n3,\"1.1\n", "s.csv line 2:"},
	}
	for _, c := range cases {
		_, err := ReadExpertSkew(strings.NewReader(c.text), "s.csv", m, 32)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "scenario: ") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	dense, _ := models.Builtin().Lookup("llama-3.1-8b")
	if _, err := ReadExpertSkew(strings.NewReader(good), "s.csv", dense, 32); err == nil || !strings.Contains(err.Error(), "is dense") {
		t.Errorf("dense model: %v", err)
	}
}

// FuzzReadExpertSkew: any input gives skews (one a MoE layer, each in [1,
// ep]) or an error starting with the package name, never a panic.
func FuzzReadExpertSkew(f *testing.F) {
	m, err := models.Builtin().Lookup("qwen3-30b-a3b")
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("layer,skew\n0,1.1\n"))
	f.Add([]byte("layer,max,mean\n0,12,10\n1,11,10\n"))
	f.Add([]byte("layer,skew\n0,\"1.1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		skews, err := ReadExpertSkew(bytes.NewReader(data), "f.csv", m, 8)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "scenario: f.csv") {
				t.Fatalf("error %q does not name the package and file", err)
			}
			return
		}
		if len(skews) != m.Layers-m.DenseLayers {
			t.Fatalf("%d skews for %d MoE layers", len(skews), m.Layers-m.DenseLayers)
		}
		for _, v := range skews {
			if !(v >= 1 && v <= 8) {
				t.Fatalf("skew %v outside [1, 8]", v)
			}
		}
	})
}

// TestExpertSkewLayers: a scenario's per-layer skews (a list, or a file
// next to the scenario) reach the step: the header and summary.json name
// them, the rank's step is slower than with the sourced median for every
// layer when the layers are hotter, and bad fields are errors naming them.
func TestExpertSkewLayers(t *testing.T) {
	hot := strings.Repeat("1.5, ", 47) + "1.5"
	base := "dp = 2\nexpert_parallel = true\n"
	p, hdr := expertHeader(t, epScenario(t, "qwen3-30b-a3b", base+"expert_skew_layers = ["+hot+"]\n", ""))
	if want := "expert load skew 1.500 (busiest rank's rows / mean, the mean of 48 MoE layers' own from expert_skew_layers, 1.500 to 1.500, each layer priced at its own)"; !strings.Contains(hdr, want) {
		t.Errorf("header\n%s\nlacks %q", hdr, want)
	}
	flat, err := epScenario(t, "qwen3-30b-a3b", base, "").Resolve()
	if err != nil {
		t.Fatal(err)
	}
	b := models.Batch{Decodes: 64, DecodeCtx: 64 * 1000}
	sHot, _, _ := p.Expert.Step(b)
	sFlat, _, _ := flat.Expert.Step(b)
	if !(sHot > sFlat) {
		t.Errorf("48 layers at 1.5: step %v not above the median 1.069's %v", sHot, sFlat)
	}
	r, err := Run(p, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if es := r.expertSummary(); es == nil || es.SkewLayers != 48 || es.SkewMax != 1.5 || es.Skew != 1.5 {
		t.Errorf("summary %+v: want 48 layers, max and mean 1.5", es)
	}

	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("layer,max,mean\n")
	for l := 0; l < 48; l++ {
		fmt.Fprintf(&csv, "%d,%d,100\n", l, 100+l) // 1.00 … 1.47
	}
	if err := os.WriteFile(filepath.Join(dir, "skew.csv"), []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := filepath.Join(dir, "s.toml")
	text := "model = \"qwen3-30b-a3b\"\ngpu = \"h100\"\n" + base + "expert_skew_file = \"skew.csv\"\n[workload]\nrate = 4\nrequests = 20\nprompt = \"constant:100\"\noutput = \"constant:10\"\n"
	if err := os.WriteFile(sc, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := loadFile(t, sc)
	fp, err := fs.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	// Mean of 1 + l/100 over l = 0 … 47: 1.235.
	if got := fp.Parallel.EP.Skew; math.Abs(got-1.235) > 1e-12 {
		t.Errorf("file skews' mean %v, want 1.235", got)
	}
	if in := fp.InputFiles(); !strings.Contains(strings.Join(in, " "), "skew.csv") {
		t.Errorf("input files %v lack skew.csv", in)
	}

	for _, c := range []struct{ head, want string }{
		{base + "expert_skew_layers = [1.1, 1.2]\n", "field \"expert_skew_layers\": 2 values: model qwen3-30b-a3b has 48 MoE layers (0 … 47)"},
		{base + "expert_skew_layers = [" + strings.Repeat("1.1, ", 47) + "0.5]\n", "value 48 (layer 47): skew 0.5 must be in [1, 2]"},
		{base + "expert_skew = 1.2\nexpert_skew_layers = [" + hot + "]\n", "and expert_skew both give the skew"},
		{base + "expert_skew_file = \"a.csv\"\nexpert_skew_layers = [" + hot + "]\n", "field \"expert_skew_file\": and expert_skew_layers both"},
		{base + "expert_skew_file = \"/nonexistent/skew.csv\"\n", "field \"expert_skew_file\": open /nonexistent/skew.csv"},
		{"expert_skew_layers = [1.1]\n", "field \"expert_skew_layers\""}, // needs expert_parallel
		{"pp = 2\n" + base + "expert_skew_layers = [" + hot + "]\n", "field \"expert_skew_layers\": per-layer expert skews are modelled without pipeline stages (pp = 2 here)"},
	} {
		_, err := epScenario(t, "qwen3-30b-a3b", c.head, "").Resolve()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "scenario: ") {
			t.Errorf("%q: %v, want %q", c.head, err, c.want)
		}
	}
}
