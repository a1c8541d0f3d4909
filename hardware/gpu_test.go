package hardware

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/models"
)

// TestBuiltinNumbers pins every built-in number to ../shared/data/gpu-specs.md
// (main table; tags as there). Per-direction link and host bandwidths are the
// table's bidirectional aggregates halved.
func TestBuiltinNumbers(t *testing.T) {
	type row struct {
		name                     string
		bf16, fp8, fp4           float64
		mem, bw, link, host, tdp float64
		lat, price               float64
		sms                      int
	}
	rows := []row{
		// A100 SXM4 80GB: 312 TFLOPS [S1†,S15†]; no FP8/FP4; 80 GB [S1†]; 2,039 GB/s [S1†,S2†];
		// NVLink 600 GB/s / 2 = 300 GB/s [S1†]; PCIe Gen4 32+32 GB/s [S1†]; 400 W [S1†]; 108 SMs [S1†,S4†].
		{"a100", 312e12, 0, 0, 80e9, 2039e9, 300e9, 32e9, 400, 32.5e-6, 1.50, 108},
		// H100 SXM5: 989.4 / 1,978.9 TFLOPS dense [S8†,S15†]; 80 GB [S5†]; 3,350 GB/s [S5†,S8†];
		// NVLink 900 / 2 = 450 GB/s [S5†]; PCIe Gen5 128 / 2 = 64 GB/s [S5†]; 700 W [S5†]; 132 SMs [S5†,S8†].
		{"h100", 989.4e12, 1978.9e12, 0, 80e9, 3350e9, 450e9, 64e9, 700, 35.5e-6, 3.00, 132},
		// H200 SXM: 989 / 1,979 [S15†,S19†]; 141 GB [S9,S10]; 4,800 GB/s [S9]; 900 / 2 [S10]; 700 W [S10];
		// 132 SMs [S21†] ‡ (inferred: the H100's GH100 die).
		{"h200", 989e12, 1979e12, 0, 141e9, 4800e9, 450e9, 64e9, 700, 35.5e-6, 4.00, 132},
		// B200: 2,250 / 4,500 / 9,000 [S12†,S15†]; 180 GB [S10,S11]; 8,000 GB/s [S12†,S14†];
		// 1,800 / 2 = 900 GB/s [S11,S12†]; 1,000 W [S10,S11]; 148 SMs [S16⚠].
		{"b200", 2250e12, 4500e12, 9000e12, 180e9, 8000e9, 900e9, 64e9, 1000, 35.5e-6, 6.00, 148},
		// PCIe GPUs (vendor documents named in gpus.toml, not in data/gpu-specs.md); no NVLink, so
		// link = host PCIe per direction: Gen5 x16 128 / 2 = 64 GB/s, Gen4 x16 64 / 2 = 32 GB/s.
		// RTX PRO 6000 Blackwell Server: 503.8 / 1,007.6 / 2,015.2 dense; 96 GB; 1,792 GB/s; 600 W; 188 SMs.
		{"rtx-pro-6000", 503.8e12, 1007.6e12, 2015.2e12, 96e9, 1792e9, 64e9, 64e9, 600, 35.5e-6, 0, 188},
		// RTX 4090: 165.2 BF16 (FP32 accumulate) / 330.3 FP8; memory as the run's driver reported it
		// (meta.json: 25,250,627,584 bytes); 1,008 GB/s; 450 W; 128 SMs.
		{"rtx-4090", 165.2e12, 330.3e12, 0, 25250627584, 1008e9, 32e9, 32e9, 450, 35.5e-6, 0, 128},
		// L40S: 362.05 / 733 dense; 48 GB; 864 GB/s; 350 W; 142 SMs.
		{"l40s", 362.05e12, 733e12, 0, 48e9, 864e9, 32e9, 32e9, 350, 35.5e-6, 0, 142},
		// H100 PCIe 80GB: 756 / 1,513 dense [S15†]; 80 GB [S5†,S6]; 2,000 GB/s [S5†]; PCIe Gen5
		// 128 / 2 = 64 GB/s for TP and host [S5†]; 350 W [S7]; 114 SMs [S5†,S6].
		{"h100-pcie", 756e12, 1513e12, 0, 80e9, 2000e9, 64e9, 64e9, 350, 35.5e-6, 0, 114},
		// A100 PCIe 80GB: 312 BF16 (GA100) [S1†,S15†]; 80 GB; 1,935 GB/s, 300 W [S2†]; PCIe Gen4
		// 32 GB/s per direction [S1†]; 108 SMs [S1†].
		{"a100-pcie", 312e12, 0, 0, 80e9, 1935e9, 32e9, 32e9, 300, 35.5e-6, 0, 108},
		// GB200, per GPU: 2,500 / 5,000 / 10,000 [S12†,S15†]; 186 GB [S11]; 8,000 GB/s [S12†];
		// NVLink5 1,800 / 2 = 900 GB/s [S12†]; NVLink-C2C 900 / 2 = 450 GB/s; 1,200 W [S11]; 148 SMs ‡.
		{"gb200", 2500e12, 5000e12, 10000e12, 186e9, 8000e9, 900e9, 450e9, 1200, 35.5e-6, 0, 148},
		// B300 (HGX), per GPU: 2,250 / 4,500 / 14,000 dense (verda.com†); 288 GB; 8,000 GB/s;
		// NVLink5 1,800 / 2; PCIe Gen5 hosts 64 GB/s ‡; 1,100 W (nvidia-smi cap); 148 SMs (device reports).
		{"b300", 2250e12, 4500e12, 14000e12, 288e9, 8000e9, 900e9, 64e9, 1100, 35.5e-6, 0, 148},
		// GB300, per GPU: 2,500 / 5,000 / 15,000 dense (NVL72 1,080 PF FP4 / 72); 288 GB; 576 TB/s / 72;
		// NVLink5 900 GB/s; NVLink-C2C 450 GB/s ‡; 1,400 W; 148 SMs ‡ (the B300's).
		{"gb300", 2500e12, 5000e12, 15000e12, 288e9, 8000e9, 900e9, 450e9, 1400, 35.5e-6, 0, 148},
	}
	c := Builtin()
	if got := strings.Join(c.Names(), ","); got != "a100,a100-pcie,b200,b300,gb200,gb300,h100,h100-pcie,h200,l40s,rtx-4090,rtx-pro-6000" {
		t.Fatalf("Builtin names = %s, want a100,a100-pcie,b200,b300,gb200,gb300,h100,h100-pcie,h200,l40s,rtx-4090,rtx-pro-6000", got)
	}
	for _, r := range rows {
		g, err := c.Get(r.name)
		if err != nil {
			t.Fatal(err)
		}
		got := []float64{g.BF16FLOPS, g.FP8FLOPS, g.FP4FLOPS, g.MemBytes, g.MemBW, g.LinkBW, g.HostBW, g.TDP, g.LinkLatency, g.PricePerHour}
		want := []float64{r.bf16, r.fp8, r.fp4, r.mem, r.bw, r.link, r.host, r.tdp, r.lat, r.price}
		keys := []string{"bf16_flops", "fp8_flops", "fp4_flops", "mem_bytes", "mem_bw", "link_bw", "host_bw", "tdp", "link_latency", "price_per_hour"}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s %s = %g, want %g", r.name, keys[i], got[i], want[i])
			}
		}
		if g.SMs != r.sms {
			t.Errorf("%s sms = %d, want %d", r.name, g.SMs, r.sms)
		}
		if !strings.HasPrefix(g.FullName, "NVIDIA ") {
			t.Errorf("%s full name %q", r.name, g.FullName)
		}
	}
}

// citesVendor reports whether a source names a vendor document (the PCIe
// GPUs' numbers are not in data/gpu-specs.md).
func citesVendor(s string) bool {
	// nvidia-smi and device reports: readings of the GPU itself, published.
	for _, w := range []string{"datasheet", "whitepaper", "product page", "nvidia-smi", "device report"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// TestBuiltinSources requires one Sources entry per number of every
// built-in GPU, citing the data file, a Vidur profile, a vendor document by name or (for
// the price) the word "assumption".
func TestBuiltinSources(t *testing.T) {
	keys := []string{"bf16_flops", "fp8_flops", "fp4_flops", "mem_bytes", "mem_bw", "link_bw", "link_latency", "sms", "host_bw", "tdp", "price_per_hour"}
	for _, g := range Builtin().All() {
		for _, k := range keys {
			n := 0
			for _, s := range g.Sources {
				if strings.HasPrefix(s, k+":") {
					n++
					if !strings.Contains(s, "data/") && !strings.Contains(s, "assumption") && !strings.Contains(s, "‡") && !citesVendor(s) {
						t.Errorf("%s: source %q cites neither a data file nor an assumption", g.Name, s)
					}
				}
			}
			if n != 1 {
				t.Errorf("%s: %d sources for %s, want 1", g.Name, n, k)
			}
		}
		want := len(keys)
		if g.DeviceBytes > 0 { // device_bytes is optional, cited when given
			want++
			n := 0
			for _, s := range g.Sources {
				if strings.HasPrefix(s, "device_bytes:") {
					n++
					if !strings.Contains(s, "data/") && !strings.Contains(s, "assumption") && !strings.Contains(s, "‡") && !strings.Contains(s, "github.com/") && !strings.Contains(s, "commit ") && !strings.Contains(s, "PR ") && !strings.Contains(s, "search index") {
						t.Errorf("%s: source %q cites neither a data file, a public reading nor a derivation (‡)", g.Name, s)
					}
				}
			}
			if n != 1 {
				t.Errorf("%s: %d sources for device_bytes, want 1", g.Name, n)
			}
		}
		if g.FrontEndRequestMs > 0 { // optional, cited by the run that measured it
			want++
			if src := g.FrontEndSource(); !strings.Contains(src, "data/") && !strings.Contains(src, "runs") {
				t.Errorf("%s: front_end_request_ms source %q names no measured run", g.Name, src)
			}
		}
		if len(g.Sources) != want {
			t.Errorf("%s: %d sources, want %d", g.Name, len(g.Sources), want)
		}
	}
}

func TestPeakFLOPSFallback(t *testing.T) {
	c := Builtin()
	cases := []struct {
		gpu  string
		d    models.DType
		want float64
	}{
		{"a100", models.BF16, 312e12},
		{"a100", models.FP8, 312e12}, // no FP8 on Ampere: W8A16 math at BF16
		{"a100", models.FP4, 312e12}, // no FP4 or FP8: BF16
		{"h100", models.BF16, 989.4e12},
		{"h100", models.FP8, 1978.9e12},
		{"h100", models.FP4, 1978.9e12}, // FP4 weights dequantized to FP8 on Hopper
		{"b200", models.FP8, 4500e12},
		{"b200", models.FP4, 9000e12},
	}
	for _, tc := range cases {
		g, _ := c.Get(tc.gpu)
		if got := g.PeakFLOPS(tc.d); got != tc.want {
			t.Errorf("%s PeakFLOPS(%v) = %g, want %g", tc.gpu, tc.d, got, tc.want)
		}
	}
	// A GPU with FP4 but no FP8 falls back from FP8 straight to BF16.
	g := &GPU{BF16FLOPS: 1, FP4FLOPS: 4}
	if got := g.PeakFLOPS(models.FP8); got != 1 {
		t.Errorf("FP8 without FP8 path = %g, want BF16 peak 1", got)
	}
}

func validGPU() *GPU {
	return &GPU{Name: "x", BF16FLOPS: 1e15, MemBytes: 80e9, MemBW: 3e12, LinkBW: 4e11, HostBW: 6e10}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(g *GPU)
		field string // "" = valid
	}{
		{"valid", func(g *GPU) {}, ""},
		{"empty name", func(g *GPU) { g.Name = "" }, "name"},
		{"upper-case name", func(g *GPU) { g.Name = "H100" }, "name"},
		{"space in alias", func(g *GPU) { g.Aliases = []string{"h100 sxm"} }, "aliases"},
		{"no bf16", func(g *GPU) { g.BF16FLOPS = 0 }, "bf16_flops"},
		{"negative fp8", func(g *GPU) { g.FP8FLOPS = -1 }, "fp8_flops"},
		{"NaN fp4", func(g *GPU) { g.FP4FLOPS = math.NaN() }, "fp4_flops"},
		{"zero memory", func(g *GPU) { g.MemBytes = 0 }, "mem_bytes"},
		{"negative bandwidth", func(g *GPU) { g.MemBW = -3.35e12 }, "mem_bw"},
		{"infinite link", func(g *GPU) { g.LinkBW = math.Inf(1) }, "link_bw"},
		{"negative latency", func(g *GPU) { g.LinkLatency = -1e-6 }, "link_latency"},
		{"zero host", func(g *GPU) { g.HostBW = 0 }, "host_bw"},
		{"negative tdp", func(g *GPU) { g.TDP = -1 }, "tdp"},
		{"negative sms", func(g *GPU) { g.SMs = -1 }, "sms"},
		{"unknown sms", func(g *GPU) { g.SMs = 0 }, ""},
		{"negative price", func(g *GPU) { g.PricePerHour = -2 }, "price_per_hour"},
		// Physical bounds: a typo's extra exponent digits are errors.
		{"bf16 1e18 (10× MaxFLOPS)", func(g *GPU) { g.BF16FLOPS = 1e18 }, "bf16_flops"},
		{"fp4 1e300", func(g *GPU) { g.FP4FLOPS = 1e300 }, "fp4_flops"},
		{"bf16 denormal", func(g *GPU) { g.BF16FLOPS = 5e-324 }, "bf16_flops"},
		{"mem_bw 3.35e15 (e15 for e12)", func(g *GPU) { g.MemBW = 3.35e15 }, "mem_bw"},
		{"link_bw 1e300", func(g *GPU) { g.LinkBW = 1e300 }, "link_bw"},
		{"host_bw 1e15", func(g *GPU) { g.HostBW = 1e15 }, "host_bw"},
		{"80 TB of HBM as 80e12 bytes", func(g *GPU) { g.MemBytes = 80e12 }, "mem_bytes"},
		{"link latency 1 h", func(g *GPU) { g.LinkLatency = 3600 }, "link_latency"},
		{"sms 1e6", func(g *GPU) { g.SMs = 1e6 }, "sms"},
		{"tdp 1e9 W", func(g *GPU) { g.TDP = 1e9 }, "tdp"},
		{"price 1e9 $/h", func(g *GPU) { g.PricePerHour = 1e9 }, "price_per_hour"},
		// A legal but very slow GPU loads (its runs report their overflow).
		{"1 MFLOP/s, 1 kB/s", func(g *GPU) { g.BF16FLOPS, g.MemBW, g.LinkBW, g.HostBW = 1e6, 1e3, 1e3, 1e3 }, ""},
		{"at the bounds", func(g *GPU) {
			g.BF16FLOPS, g.MemBW, g.MemBytes, g.LinkLatency = MaxFLOPS, MaxBandwidth, MaxMemBytes, MaxLatency
		}, ""},
	}
	for _, tc := range cases {
		g := validGPU()
		tc.edit(g)
		err := g.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.HasPrefix(err.Error(), "hardware: ") || !strings.Contains(err.Error(), `field "`+tc.field+`"`) {
			t.Errorf("%s: error %q does not name field %q", tc.name, err, tc.field)
		}
	}
	g := validGPU()
	if err := g.Validate(); err != nil || g.FullName != "x" {
		t.Errorf("Validate fills FullName from Name: got %q, %v", g.FullName, err)
	}
}
