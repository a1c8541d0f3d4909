package experiments

import (
	"testing"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// TestGroupsByGPUTP: held-out rows are grouped by the simulated GPU and TP
// degree, sorted by GPU name then TP; a row without a plan (a run that
// could not be simulated) is in no group.
func TestGroupsByGPUTP(t *testing.T) {
	v := func(gpu string, tp int) *Validation {
		return &Validation{Plan: &Plan{PoolPlan: PoolPlan{GPU: &hardware.GPU{Name: gpu}, Parallel: models.Parallel{TP: tp}}}}
	}
	vs := []*Validation{v("h100", 4), v("rtx-4090", 1), v("h100", 1), v("h100", 4), {Status: "skipped"}, v("h100", 1), v("a100", 2)}
	gs := groupsByGPUTP(vs)
	want := []struct {
		key string
		n   int
	}{{"a100 TP 2", 1}, {"h100 TP 1", 2}, {"h100 TP 4", 2}, {"rtx-4090 TP 1", 1}}
	if len(gs) != len(want) {
		t.Fatalf("%d groups, want %d: %+v", len(gs), len(want), gs)
	}
	for i, w := range want {
		if gs[i].key != w.key || len(gs[i].vs) != w.n {
			t.Errorf("group %d: %q with %d rows, want %q with %d", i, gs[i].key, len(gs[i].vs), w.key, w.n)
		}
	}
}
