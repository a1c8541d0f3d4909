package plots

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

// TestNaNPointsSkipped: a NaN throughput drops the point, a NaN latency only
// leaves it out of its panel; the figure still draws.
func TestNaNPointsSkipped(t *testing.T) {
	res, err := ReadResults(strings.NewReader("batch.max_num_seqs,seed,output_tok_per_s,ttft_p95_ms,tpot_p95_ms,cost_per_m_output_tokens\n"+
		"1,1,100,5000,10,1\n2,1,NaN,3000,10,1\n4,1,380,NaN,10,0.5\n8,1,400,500,NaN,0.4\n"), "nan.csv")
	if err != nil {
		t.Fatal(err)
	}
	fig, nums, err := BatchLatency(res, BatchLatencyOptions{SLO: SLO{TTFTms: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	c := nums.Curves[0]
	// x = 2 dropped; gains: (380 − 100)/(4 − 1) = 93.3 first, (400 − 380)/4 =
	// 5 = 0.054·g1 < 0.1: knee x = 4 (NaN TTFT: misses), so the sweet spot is
	// the smallest meeting point above it, x = 8 (TTFT 500 ≤ 1000).
	if c.Dropped != 1 || len(c.X) != 3 || c.X[c.Knee] != 4 || c.SweetSpot != 2 {
		t.Errorf("curve %+v", c)
	}
	save(t, fig, "nan")
}

func TestPixelSize(t *testing.T) {
	// 1600 px at 96 dpi = 1600/96 in = 1200 points.
	if l := Length(1600); l != 1200 {
		t.Errorf("Length(1600) = %v points, want 1200", l)
	}
	// gonum's own Save with Length gives the exact pixel size too, odd sizes included.
	p := plot.New()
	p.Title.Text = "size"
	for _, wh := range [][2]int{{1600, 1000}, {801, 333}} {
		path := filepath.Join(t.TempDir(), "p.png")
		if err := p.Save(Length(wh[0]), Length(wh[1]), path); err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(path)
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != wh[0] || cfg.Height != wh[1] {
			t.Errorf("p.Save(Length(%d), Length(%d)) → %d×%d, %v", wh[0], wh[1], cfg.Width, cfg.Height, err)
		}
	}
	// Save honours any size exactly.
	path := filepath.Join(t.TempDir(), "s.png")
	fig, _, err := Goodput(readResults(t, "goodput.csv"), GoodputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Save(fig, path, 1201, 777); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, path, 1201, 777)
	for _, ext := range []string{"svg", "pdf"} {
		path := filepath.Join(t.TempDir(), "s."+ext)
		if err := Save(fig, path, 800, 500); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v", path, err)
		}
	}
}

func TestTicks(t *testing.T) {
	// 0–160 ms: raw step 160/6 = 26.7 → 50; labels at 0, 50, 100, 150.
	var labels []string
	for _, tk := range (linearTicks{}).Ticks(0, 160) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if strings.Join(labels, " ") != "0 50 100 150" {
		t.Errorf("linear labels %v", labels)
	}
	labels = nil
	for _, tk := range (logTicks{}).Ticks(115.98, 1805410.08) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	// More than three decades: powers of ten only, thousands separated.
	if strings.Join(labels, " ") != "1,000 10,000 100,000 1,000,000" {
		t.Errorf("log labels %v", labels)
	}
	for _, tc := range []struct {
		v    float64
		want string
	}{{0.5, "0.5"}, {1500, "1,500"}, {-25000, "-25,000"}, {0.30000000000000004, "0.3"}} {
		if got := tickLabel(round12(tc.v)); got != tc.want {
			t.Errorf("tickLabel(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
