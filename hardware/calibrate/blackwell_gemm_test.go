package calibrate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware"
)

// TestCheckFP4 prices the table's six shapes on the built-in b200 and
// compares each with its fastest backend: at 1024×7168×4608 that is
// CUTLASS's 3,370.423 TFLOP/s (cuDNN 2,975.9, TRTLLM 2,187.4), i.e.
// 2·1024·7168·4608 / 3.370423e15 = 20.07 µs.
func TestCheckFP4(t *testing.T) {
	p, ok := Builtin("b200")
	if !ok {
		t.Fatal("no built-in b200 profile")
	}
	g, err := hardware.Builtin().Get("b200")
	if err != nil {
		t.Fatal(err)
	}
	c, err := CheckFP4(p, g)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.PE) != 6 || c.Stats.N != 6 {
		t.Fatalf("%d shapes checked, want 6 (5 of vLLM PR 42235, 1 of FlashInfer PR 1979)", len(c.PE))
	}
	if last := c.Shapes[5]; last != "1024×7168×4608 (cutlass, flashinfer-1979)" {
		t.Errorf("largest shape %q, want CUTLASS's row of FlashInfer PR 1979 (its fastest backend)", last)
	}
	t.Logf("%s", c.note())
	// The shipped profile carries the same sentence (go generate).
	found := false
	for _, n := range p.Notes {
		found = found || n == c.note()
	}
	if !found {
		t.Error("the b200 profile's notes lack the FP4 kernel check: run go generate ./hardware/calibrate")
	}
}

func TestReadFP4GEMMErrors(t *testing.T) {
	head := strings.Join(B200FP4Columns, ",") + "\n"
	for _, c := range []struct{ name, csv, want string }{
		{"empty backend", head + "x,1,2,3,,4\n", `line 2: column "backend": empty`},
		{"zero m", head + "x,0,2,3,cutlass,4\n", `line 2: column "m"`},
		{"huge", head + "x,1,2,3,cutlass,2e6\n", `line 2: column "tflops"`},
	} {
		if _, err := ReadFP4GEMM(strings.NewReader(c.csv), "x.csv"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one naming %s", c.name, err, c.want)
		}
	}
}

// TestDecodeFromTOML: decode_from round-trips through the TOML, the run
// header says where the decode bandwidth was measured, and a decode_from
// that is not a bare GPU name is refused by field.
func TestDecodeFromTOML(t *testing.T) {
	for _, c := range []struct{ gpu, want string }{
		{"b200", "decode attention's bandwidth fitted to this GPU's kernel timings"},
		{"b300", "decode attention's bandwidth: the b200's measured, transferred"},
	} {
		p, ok := Builtin(c.gpu)
		if !ok {
			t.Fatalf("no built-in %s profile", c.gpu)
		}
		q, err := ParseProfile(p.WriteTOML(), c.gpu+".toml")
		if err != nil {
			t.Fatal(err)
		}
		if q.Attention.DecodeFrom != "b200" {
			t.Errorf("%s: decode_from %q after a round trip, want b200", c.gpu, q.Attention.DecodeFrom)
		}
		if d := q.Describe(); !strings.Contains(d, c.want) {
			t.Errorf("%s: Describe() = %q, want it to say %q", c.gpu, d, c.want)
		}
	}
	p, _ := Builtin("h100")
	data := p.WriteTOML()
	if strings.Contains(string(data), "decode_from") {
		t.Fatal("h100 profile has decode_from")
	}
	bad := bytes.Replace(data, []byte("[attention]\n"), []byte("[attention]\ndecode_from = \" b200\"\n"), 1)
	if _, err := ParseProfile(bad, "bad.toml"); err == nil || !strings.Contains(err.Error(), "attention.decode_from") {
		t.Errorf("decode_from %q: err = %v, want one naming attention.decode_from", " b200", err)
	}
}
