package hardware

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestGet(t *testing.T) {
	c := Builtin()
	cases := []struct{ in, want string }{
		{"h100", "h100"},
		{"H100", "h100"},
		{" h100-sxm ", "h100"},
		{"H100 SXM5", "h100"},
		{"a100_sxm4_80gb", "a100"},
		{"H200-141GB", "h200"},
		{"b200", "b200"},
		// The driver's device names, as vLLM runs record them (meta.json hardware.device_name).
		{"NVIDIA GeForce RTX 4090", "rtx-4090"},
		{"NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000"},
		{"RTXPRO6000", "rtx-pro-6000"}, // LLMServingSim's hardware label
		{"NVIDIA L40S", "l40s"},
	}
	for _, tc := range cases {
		g, err := c.Get(tc.in)
		if err != nil || g.Name != tc.want {
			t.Errorf("Get(%q) = %v, %v; want %s", tc.in, g, err, tc.want)
		}
	}
	_, err := c.Get("h300")
	if err == nil || !strings.Contains(err.Error(), `"h300"`) || !strings.Contains(err.Error(), "a100, a100-pcie, b200, b300, gb200, gb300, h100, h100-pcie, h200, l40s, rtx-4090, rtx-pro-6000") {
		t.Errorf("Get(h300) error = %v; want it to list the known names", err)
	}
	var empty Catalog
	if _, err := empty.Get("h100"); err == nil {
		t.Error("Get on an empty catalog: no error")
	}
}

func TestBuiltinIsACopy(t *testing.T) {
	a, b := Builtin(), Builtin()
	ga, _ := a.Get("h100")
	ga.PricePerHour = 99
	ga.Sources[0] = "changed"
	gb, _ := b.Get("h100")
	if gb.PricePerHour == 99 || gb.Sources[0] == "changed" {
		t.Error("changing one Builtin() catalog changed another")
	}
}

func TestAdd(t *testing.T) {
	c := Builtin()
	g := validGPU()
	g.Name, g.Aliases = "a10g", []string{"a10g-24gb"}
	if err := c.Add(g); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get("A10G 24GB"); err != nil || got != g {
		t.Errorf("Get after Add = %v, %v", got, err)
	}
	if got := len(c.All()); got != 13 {
		t.Errorf("All has %d GPUs, want 12 built-in + 1", got)
	}
	bad := []struct {
		name    string
		aliases []string
		want    string
	}{
		{"h100", nil, "already in the catalog"},
		{"h100-sxm", nil, "alias of gpu \"h100\""},
		{"new", []string{"h200"}, "name of another GPU"},
		{"new", []string{"h200-sxm"}, "already belongs to gpu \"h200\""},
		{"new", []string{"dup", "dup"}, "given twice"},
	}
	for _, tc := range bad {
		g := validGPU()
		g.Name, g.Aliases = tc.name, tc.aliases
		err := c.Add(g)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Add(%s %v) error = %v; want %q", tc.name, tc.aliases, err, tc.want)
		}
	}
	if err := c.Add(nil); err == nil {
		t.Error("Add(nil): no error")
	}
	if err := c.Add(&GPU{Name: "zero"}); err == nil {
		t.Error("Add of an invalid GPU: no error")
	}
}

const goodTOML = `# a user file (illustrative numbers, not a checked spec)
[[gpu]]
name = "l40s"
aliases = ["l40s-48gb"]
full_name = "NVIDIA L40S"
bf16_flops = 362e12
fp8_flops = 733e12
mem_bytes = 48_000_000_000
mem_bw = 864e9
link_bw = 32e9
host_bw = 32e9
`

func TestLoad(t *testing.T) {
	c := Builtin()
	if err := c.Load(strings.NewReader(goodTOML), "user.toml"); err != nil {
		t.Fatal(err)
	}
	g, err := c.Get("l40s-48gb")
	if err != nil {
		t.Fatal(err)
	}
	if g.MemBytes != 48e9 || g.FP4FLOPS != 0 || g.TDP != 0 || g.PricePerHour != 0 {
		t.Errorf("decoded %+v", g)
	}
	// An absent link_latency gets the documented default.
	if g.LinkLatency != DefaultLinkLatency {
		t.Errorf("link_latency = %g, want default %g", g.LinkLatency, DefaultLinkLatency)
	}
	// An explicit zero stays zero.
	src := strings.Replace(goodTOML, `host_bw = 32e9`, "host_bw = 32e9\nlink_latency = 0", 1)
	c2 := new(Catalog)
	if err := c2.Load(strings.NewReader(src), "user.toml"); err != nil {
		t.Fatal(err)
	}
	if g, _ := c2.Get("l40s"); g.LinkLatency != 0 {
		t.Errorf("explicit link_latency = 0 became %g", g.LinkLatency)
	}
}

// TestLoadRedefines: a file may redefine a built-in GPU (here to set its
// price); its old aliases go with it.
// TestLoadFrontEnd: a user entry's front_end_request_ms with its source
// loads, and FrontEndSource returns the source's text.
func TestLoadFrontEnd(t *testing.T) {
	src := strings.Replace(goodTOML, "mem_bw = 864e9", "mem_bw = 864e9\nfront_end_request_ms = 4.2\nsources = [\"front_end_request_ms: 4.2 ms, my host, 8 requests at 0.5 req/s\"]", 1)
	c := Builtin()
	if err := c.Load(strings.NewReader(src), "gpus.toml"); err != nil {
		t.Fatal(err)
	}
	g, _ := c.Get("l40s")
	if g.FrontEndRequestMs != 4.2 || g.FrontEndSource() != "4.2 ms, my host, 8 requests at 0.5 req/s" {
		t.Errorf("front end %g ms from %q", g.FrontEndRequestMs, g.FrontEndSource())
	}
	h, _ := c.Get("h100")
	if h.FrontEndRequestMs != 5.504 || !strings.Contains(h.FrontEndSource(), "vllm-h100-runs") {
		t.Errorf("built-in h100: front end %g ms from %q, want 5.504 from the vllm-h100-runs fit", h.FrontEndRequestMs, h.FrontEndSource())
	}
}

func TestLoadRedefines(t *testing.T) {
	c := Builtin()
	src := `[[gpu]]
name = "h100"
bf16_flops = 989.4e12
mem_bytes = 80e9
mem_bw = 3350e9
link_bw = 450e9
host_bw = 64e9
price_per_hour = 2.10
`
	if err := c.Load(strings.NewReader(src), "prices.toml"); err != nil {
		t.Fatal(err)
	}
	g, _ := c.Get("h100")
	if g.PricePerHour != 2.10 {
		t.Errorf("price = %g, want 2.10", g.PricePerHour)
	}
	if _, err := c.Get("h100-sxm"); err == nil {
		t.Error("old alias h100-sxm still resolves after redefinition without aliases")
	}
	if len(c.All()) != 12 {
		t.Errorf("%d GPUs after redefinition, want 12", len(c.All()))
	}
}

// TestLoadErrors: every error names the file, the line and, where there is
// one, the field.
func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"unknown key", goodTOML + "boost_clock = 1.98e9\n",
			[]string{"gpus.toml line 12:", `gpu "l40s"`, `unknown field "boost_clock"`}},
		{"bad type", strings.Replace(goodTOML, "mem_bw = 864e9", `mem_bw = "864 GB/s"`, 1),
			[]string{"gpus.toml line 9:", `field "mem_bw"`, "want a number, got a string"}},
		{"negative bandwidth", strings.Replace(goodTOML, "mem_bw = 864e9", "mem_bw = -864e9", 1),
			[]string{"gpus.toml line 9:", `field "mem_bw"`, "must be > 0, got -8.64e+11"}},
		{"missing required field", strings.Replace(goodTOML, "host_bw = 32e9\n", "", 1),
			[]string{"gpus.toml line 2:", `field "host_bw"`, "(missing)"}},
		{"missing name", strings.Replace(goodTOML, `name = "l40s"`+"\n", "", 1),
			[]string{"gpus.toml line 2:", `gpu #1`, `field "name": missing`}},
		{"upper-case name", strings.Replace(goodTOML, `name = "l40s"`, `name = "L40S"`, 1),
			[]string{"gpus.toml line 3:", `field "name"`, "lower case"}},
		{"alias element type", strings.Replace(goodTOML, `aliases = ["l40s-48gb"]`, `aliases = ["a", 7]`, 1),
			[]string{"gpus.toml line 4:", `field "aliases"`, "element 2: want a string, got an integer"}},
		{"fractional sms", strings.Replace(goodTOML, "mem_bw = 864e9", "mem_bw = 864e9\nsms = 142.5", 1),
			[]string{"gpus.toml line 10:", `field "sms"`, "want an integer, got a float"}},
		{"negative sms", strings.Replace(goodTOML, "mem_bw = 864e9", "mem_bw = 864e9\nsms = -1", 1),
			[]string{"gpus.toml line 10:", `field "sms"`, "must be >= 0"}},
		{"huge sms", strings.Replace(goodTOML, "mem_bw = 864e9", "mem_bw = 864e9\nsms = 9999999999", 1),
			[]string{"gpus.toml line 10:", `field "sms"`, "out of range"}},
		{"peak 1000× a typo", strings.Replace(goodTOML, "bf16_flops = 362e12", "bf16_flops = 362e18", 1),
			[]string{"gpus.toml line 6:", `field "bf16_flops"`, "outside the physical range"}},
		{"nan", strings.Replace(goodTOML, "fp8_flops = 733e12", "fp8_flops = nan", 1),
			[]string{"gpus.toml line 7:", `field "fp8_flops"`, "finite"}},
		{"subtable", goodTOML + "[gpu.clocks]\nboost = 1\n",
			[]string{"gpus.toml line 12:", `unknown field "clocks"`}},
		{"second table, unknown key", goodTOML + "\n[[gpu]]\nname = \"b\"\n\n# c\nmem_bytez = 1\n",
			[]string{"gpus.toml line 17:", `gpu "b"`, `unknown field "mem_bytez"`}},
		{"duplicate in file", goodTOML + "\n" + goodTOML,
			[]string{"gpus.toml line 15:", `field "name"`, `gpu "l40s" already defined at line 3`}},
		{"top-level key", "version = 2\n" + goodTOML,
			[]string{"gpus.toml line 1:", `unknown key "version"`}},
		{"wrong table name", strings.Replace(goodTOML, "[[gpu]]", "[[gpus]]", 1),
			[]string{"gpus.toml line 2:", `unknown key "gpus"`}},
		{"syntax error", strings.Replace(goodTOML, "mem_bw = 864e9", "mem_bw = 864e9 GB", 1),
			[]string{"gpus.toml line 9:"}},
		{"inline tables", "# inline\ngpu = [ { name = \"a\" } ]\n",
			[]string{"gpus.toml line 2:", `gpu "a"`, `field "bf16_flops"`, "(missing)"}},
		{"gpu not a table array", "gpu = 5\n",
			[]string{"gpus.toml line 1", "gpu"}},
		// front_end_request_ms: a number within (0, 1000] ms with a source naming the run that measured it.
		{"front end without a source", strings.Replace(goodTOML, "mem_bw = 864e9", "mem_bw = 864e9\nfront_end_request_ms = 4.2", 1),
			[]string{"gpus.toml line 10:", `field "front_end_request_ms"`, "4.2 ms has no source"}},
		{"front end negative", strings.Replace(goodTOML, "mem_bw = 864e9", "mem_bw = 864e9\nfront_end_request_ms = -1", 1),
			[]string{"gpus.toml line 10:", `field "front_end_request_ms"`, "must be >= 0"}},
		{"front end in seconds, not ms", strings.Replace(goodTOML, "mem_bw = 864e9", "mem_bw = 864e9\nfront_end_request_ms = 5504", 1),
			[]string{"gpus.toml line 10:", `field "front_end_request_ms"`, "5504 ms is outside the physical range [0, 1000]"}},
		{"front end a string", strings.Replace(goodTOML, "mem_bw = 864e9", "mem_bw = 864e9\nfront_end_request_ms = \"5 ms\"", 1),
			[]string{"gpus.toml line 10:", `field "front_end_request_ms"`, "want a number"}},
		{"alias collides with built-in", strings.Replace(goodTOML, `aliases = ["l40s-48gb"]`, `aliases = ["h100-sxm"]`, 1),
			[]string{"gpus.toml line 3:", `alias "h100-sxm" already belongs to gpu "h100"`}},
	}
	for _, tc := range cases {
		c := Builtin()
		before := c.Names()
		err := c.Load(strings.NewReader(tc.src), "gpus.toml")
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "hardware: gpus.toml") {
			t.Errorf("%s: error %q does not start with the package and file", tc.name, msg)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q lacks %q", tc.name, msg, w)
			}
		}
		if !reflect.DeepEqual(c.Names(), before) {
			t.Errorf("%s: failed Load changed the catalog: %v", tc.name, c.Names())
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mine.toml")
	if err := os.WriteFile(path, []byte(strings.Replace(goodTOML, "mem_bw = 864e9", "mem_bw = -1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var c Catalog
	err := c.LoadFile(path)
	if err == nil || !strings.Contains(err.Error(), "mine.toml line 9:") {
		t.Errorf("LoadFile error = %v; want file and line", err)
	}
	if err := c.LoadFile(filepath.Join(dir, "absent.toml")); err == nil || !strings.HasPrefix(err.Error(), "hardware: ") {
		t.Errorf("LoadFile of a missing file: %v", err)
	}
}

// TestRoundTrip: the built-in catalog written with the TOML encoder loads
// back equal, so every field has a tag the loader knows.
func TestRoundTrip(t *testing.T) {
	want := Builtin()
	got := new(Catalog)
	if err := got.Load(bytes.NewReader(encode(t, want)), "roundtrip.toml"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.All(), want.All()) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", got.All(), want.All())
	}
}

func encode(t testing.TB, c *Catalog) []byte {
	var buf bytes.Buffer
	doc := struct {
		GPU []*GPU `toml:"gpu"`
	}{c.All()}
	if err := toml.NewEncoder(&buf).Encode(doc); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzLoad: Load never panics; when it succeeds every GPU is valid, can be
// found by name, and survives an encode/load round trip unchanged.
func FuzzLoad(f *testing.F) {
	f.Add(goodTOML)
	f.Add(builtinTOML)
	f.Add("[[gpu]]\nname = \"x\"\nbf16_flops = 1\nmem_bytes = 1\nmem_bw = 1\nlink_bw = 1\nhost_bw = 1\n")
	f.Add("[[gpu]]\nname = \"x\"\nsources = [\n  \"a = b\",\n  'c [d',\n]\nmem_bw = -1\n")
	f.Add("[[gpu]]\nname = \"x\"\nbf16_flops = 1\nmem_bytes = 1\nmem_bw = 1\nlink_bw = 1\nhost_bw = 1\nsms = 142\n")
	f.Add("[gpu.x]\ny = 1\n")
	f.Add(`gpu = [{name = "x", bf16_flops = 1}]`)
	f.Add("[[gpu]]\nname = \"\"\"x\n\"\"\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		var c Catalog
		if err := c.Load(strings.NewReader(src), "fuzz.toml"); err != nil {
			if !strings.HasPrefix(err.Error(), "hardware: fuzz.toml") {
				t.Fatalf("error without package and file: %v", err)
			}
			if strings.Contains(err.Error(), "line 0") {
				t.Fatalf("error names line 0: %v", err)
			}
			return
		}
		for _, g := range c.All() {
			cp := *g
			if err := cp.Validate(); err != nil {
				t.Fatalf("loaded GPU invalid: %v", err)
			}
			if got, err := c.Get(g.Name); err != nil || got != g {
				t.Fatalf("Get(%q) = %v, %v", g.Name, got, err)
			}
		}
		var back Catalog
		if err := back.Load(bytes.NewReader(encode(t, &c)), "again.toml"); err != nil {
			t.Fatalf("reloading encoded catalog: %v", err)
		}
		if !reflect.DeepEqual(back.All(), c.All()) {
			t.Fatalf("round trip differs")
		}
	})
}
