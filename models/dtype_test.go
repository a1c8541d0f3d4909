package models

import (
	"encoding"
	"strings"
	"testing"
)

func TestDTypeBytesAndString(t *testing.T) {
	tests := []struct {
		d     DType
		bytes float64
		name  string
	}{
		{BF16, 2, "bf16"}, // 16 bits
		{FP8, 1, "fp8"},   // 8 bits
		{FP4, 0.5, "fp4"}, // 4 bits, two per byte
	}
	for _, tc := range tests {
		if got := tc.d.Bytes(); got != tc.bytes {
			t.Errorf("%v.Bytes() = %v, want %v", tc.d, got, tc.bytes)
		}
		if got := tc.d.String(); got != tc.name {
			t.Errorf("DType(%d).String() = %q, want %q", tc.d, got, tc.name)
		}
		if !tc.d.Valid() {
			t.Errorf("%v.Valid() = false", tc.d)
		}
	}
	if got := DType(7).String(); got != "DType(7)" {
		t.Errorf("DType(7).String() = %q", got)
	}
	if DType(3).Valid() {
		t.Error("DType(3).Valid() = true")
	}
}

func TestDTypeBytesPanicsOnInvalid(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("DType(9).Bytes() did not panic")
		}
	}()
	DType(9).Bytes()
}

func TestParseDType(t *testing.T) {
	tests := []struct {
		in   string
		want DType
	}{
		{"bf16", BF16},
		{"BF16", BF16},
		{" fp16 ", BF16}, // alias: same size as bf16
		{"fp8", FP8},
		{"FP8", FP8},
		{"fp4", FP4},
		{"Fp4", FP4},
	}
	for _, tc := range tests {
		got, err := ParseDType(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseDType(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "int8", "fp32", "bf 16", "fp8e4m3"} {
		_, err := ParseDType(in)
		want := `models: unknown precision "` + in + `" (want bf16, fp8 or fp4)`
		if err == nil || err.Error() != want {
			t.Errorf("ParseDType(%q) error = %v, want %q", in, err, want)
		}
	}
}

func TestDTypeText(t *testing.T) {
	var _ encoding.TextMarshaler = BF16
	var _ encoding.TextUnmarshaler = new(DType)
	for _, d := range []DType{BF16, FP8, FP4} {
		b, err := d.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back DType
		if err := back.UnmarshalText(b); err != nil || back != d {
			t.Errorf("round trip of %v: got %v, %v", d, back, err)
		}
		var flag DType
		if err := flag.Set(d.String()); err != nil || flag != d {
			t.Errorf("Set(%q) = %v, %v", d.String(), flag, err)
		}
	}
	if _, err := DType(5).MarshalText(); err == nil {
		t.Error("MarshalText of DType(5) succeeded")
	}
	d := FP8
	if err := d.UnmarshalText([]byte("int4")); err == nil || d != FP8 {
		t.Errorf("UnmarshalText(int4) = %v, left %v", err, d)
	}
	if got := new(DType).Type(); got != "precision" {
		t.Errorf("Type() = %q", got)
	}
}

func FuzzParseDType(f *testing.F) {
	for _, s := range []string{"bf16", "FP8", " fp4", "fp16", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDType(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "models: ") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
			return
		}
		back, err := ParseDType(d.String())
		if err != nil || back != d {
			t.Fatalf("ParseDType(%q) = %v, but its String %q parses to %v, %v", s, d, d.String(), back, err)
		}
	})
}

func TestOpKindNames(t *testing.T) {
	// Names are part of the file formats (CSV headers, calibration files).
	want := []string{"embed", "norm", "qkv", "rope", "attn_prefill", "attn_decode", "out_proj",
		"all_reduce", "moe_router", "mlp_up", "act", "mlp_down", "add", "lm_head", "qk_norm"}
	if len(want) != int(NumOpKinds) {
		t.Fatalf("%d names for %d kinds", len(want), NumOpKinds)
	}
	for k := OpKind(0); k < NumOpKinds; k++ {
		if got := k.String(); got != want[k] {
			t.Errorf("OpKind(%d).String() = %q, want %q", k, got, want[k])
		}
		for _, in := range []string{want[k], strings.ToUpper(want[k]), " " + want[k]} {
			if got, err := ParseOpKind(in); err != nil || got != k {
				t.Errorf("ParseOpKind(%q) = %v, %v; want %v", in, got, err, k)
			}
		}
		b, err := k.MarshalText()
		var back OpKind
		if err != nil || back.UnmarshalText(b) != nil || back != k {
			t.Errorf("text round trip of %v failed: %v", k, err)
		}
	}
	if got := NumOpKinds.String(); got != "OpKind(15)" {
		t.Errorf("NumOpKinds.String() = %q", got)
	}
	if _, err := NumOpKinds.MarshalText(); err == nil {
		t.Error("MarshalText of NumOpKinds succeeded")
	}
	_, err := ParseOpKind("attention")
	if err == nil || !strings.HasPrefix(err.Error(), `models: unknown operator "attention" (want one of embed, norm, qkv,`) {
		t.Errorf("ParseOpKind(attention) error = %v", err)
	}
}

func FuzzParseOpKind(f *testing.F) {
	for _, s := range []string{"qkv", "ATTN_DECODE", "lm_head ", "", "nope"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseOpKind(s)
		if err != nil {
			return
		}
		if k >= NumOpKinds {
			t.Fatalf("ParseOpKind(%q) = %d, out of range", s, k)
		}
		if back, err := ParseOpKind(k.String()); err != nil || back != k {
			t.Fatalf("round trip of %q: %v, %v", s, back, err)
		}
	})
}
