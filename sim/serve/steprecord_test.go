package serve

import (
	"reflect"
	"slices"
	"testing"

	"github.com/servesim/servesim/sim/metrics"
)

// TestStepRecordFields: endStep fills the reused metrics.Step record field
// by field without clearing it first, so it must set every field; a field
// added to metrics.Step fails here until endStep sets it (and this list
// names it).
func TestStepRecordFields(t *testing.T) {
	set := []string{"Instance", "Start", "Duration", "Prefills", "PrefillTokens", "Decodes",
		"KVBlocksUsed", "KVBlocksTotal", "Preempted", "FLOPs", "Bytes"}
	var have []string
	for f := range reflect.TypeFor[metrics.Step]().Fields() {
		have = append(have, f.Name)
	}
	if !slices.Equal(have, set) {
		t.Fatalf("metrics.Step has fields %v; endStep sets %v", have, set)
	}
}
