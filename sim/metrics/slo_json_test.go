package metrics

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/servesim/servesim/sim"
)

// The SLO's JSON form is milliseconds, named so; older files' integer
// nanoseconds still read.
func TestSLOJSON(t *testing.T) {
	s := SLO{TTFT: 300 * ms, TPOT: 25*ms + 500*sim.Microsecond, E2E: 0}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	// 25 ms + 500 µs = 25.5 ms.
	if want := `{"ttft_ms":300,"tpot_ms":25.5,"e2e_ms":0}`; string(b) != want {
		t.Errorf("marshal: %s, want %s", b, want)
	}
	cases := []struct {
		name, json string
		want       SLO
		err        string
	}{
		{"round trip", string(b), s, ""},
		{"fraction of a ns rounds", `{"ttft_ms": 0.0000015}`, SLO{TTFT: 2}, ""}, // 1.5 ns rounds to 2
		{"legacy ns", `{"ttft_ns": 100000000, "tpot_ns": 20000000, "e2e_ns": 0}`, SLO{TTFT: 100 * ms, TPOT: 20 * ms}, ""},
		{"negative kept for Validate", `{"tpot_ms": -5}`, SLO{TPOT: -5 * ms}, ""},
		{"out of range", `{"e2e_ms": 1e300}`, SLO{}, "e2e_ms"},
		{"wrong type", `{"ttft_ms": "fast"}`, SLO{}, "string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got SLO
			err := json.Unmarshal([]byte(c.json), &got)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}
