package calibrate

import (
	"strings"
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// TestPrecisionNote: a weight precision whose math has no [[gemm_precision]]
// entry in the profile is named as assumed; BF16 math (A100 has no FP8
// tensor cores) and precisions with an entry (H100 FP4 runs as FP8, which
// is measured) are not.
func TestPrecisionNote(t *testing.T) {
	cat := hardware.Builtin()
	for _, c := range []struct {
		gpu  string
		d    models.DType
		want string // "" or a fragment
	}{
		{"rtx-pro-6000", models.FP4, "fp4 GEMMs: no fp4 scale"},
		{"rtx-pro-6000", models.FP8, "fp8 GEMMs: no fp8 scale"},
		{"rtx-pro-6000", models.BF16, ""},
		{"h100", models.FP8, ""},
		{"h100", models.FP4, ""}, // no FP4 tensor cores: FP8 math, measured
		{"b200", models.FP4, ""},
		{"a100", models.FP8, ""}, // no FP8 tensor cores: BF16 math
	} {
		p, ok := Builtin(c.gpu)
		if !ok {
			t.Fatalf("no built-in profile for %s", c.gpu)
		}
		g, err := cat.Get(c.gpu)
		if err != nil {
			t.Fatal(err)
		}
		got := p.PrecisionNote(g, c.d)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s %s: note %q, want %q", c.gpu, c.d, got, c.want)
		}
	}
}
