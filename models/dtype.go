package models

import (
	"fmt"
	"strconv"
	"strings"
)

// Bytes returns the storage size of one element: 2 for BF16, 1 for FP8 and
// 0.5 for FP4. The block scales of FP8/FP4 formats (e.g. one E8M0 byte per
// 32 MXFP4 elements) are not counted. It panics on a DType outside the
// declared constants: that is a programmer error, as every DType built by
// ParseDType or UnmarshalText is valid.
func (d DType) Bytes() float64 {
	switch d {
	case BF16:
		return 2
	case FP8:
		return 1
	case FP4:
		return 0.5
	}
	panic("models: invalid DType " + strconv.Itoa(int(d)))
}

// String returns "bf16", "fp8" or "fp4" (the names ParseDType accepts), or
// "DType(n)" for an invalid value.
func (d DType) String() string {
	switch d {
	case BF16:
		return "bf16"
	case FP8:
		return "fp8"
	case FP4:
		return "fp4"
	}
	return "DType(" + strconv.Itoa(int(d)) + ")"
}

// Valid reports whether d is one of the declared precisions.
func (d DType) Valid() bool { return d <= FP4 }

// ParseDType parses a precision name, ignoring case and surrounding space:
// "bf16", "fp8" or "fp4". "fp16" is accepted as an alias of bf16: both are
// two bytes and the simulator only needs the size and the tensor-core peak,
// which are the same for the two on every GPU in the catalog.
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "bf16", "fp16":
		return BF16, nil
	case "fp8":
		return FP8, nil
	case "fp4":
		return FP4, nil
	}
	return 0, fmt.Errorf("models: unknown precision %q (want bf16, fp8 or fp4)", s)
}

// MarshalText implements encoding.TextMarshaler, so that a DType field of a
// TOML or JSON configuration reads and writes as its name.
func (d DType) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("models: invalid precision %s", d)
	}
	return []byte(d.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseDType.
func (d *DType) UnmarshalText(text []byte) error {
	v, err := ParseDType(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Set implements the Set method of flag.Value and pflag.Value, so that a
// DType can be a command-line flag (fs.Var(&p.Weights, "weights", ...)).
func (d *DType) Set(s string) error { return d.UnmarshalText([]byte(s)) }

// Type implements pflag.Value: the type name shown in usage texts.
func (d *DType) Type() string { return "precision" }
