package plan

import (
	"fmt"
	"testing"
)

// TestNoneServesReasons: both searches' "nothing serves" errors list each
// distinct reason once, at most five, after the failing candidate's name
// (place: its deployment name; plan: GPU, shape and layout), and are nil
// once one candidate has no error.
func TestNoneServesReasons(t *testing.T) {
	var cands []Placement
	var opts []Option
	// Seven failures, six distinct reasons ("e0" twice): five are listed.
	for i, e := range []string{"e0", "e0", "e1", "e2", "e3", "e4", "e5"} {
		cands = append(cands, Placement{Name: fmt.Sprintf("c%d", i), Err: e})
		opts = append(opts, Option{GPU: "h100", Disagg: i%2 == 1, TP: i + 1, Err: e})
	}
	if got, want := fmt.Sprint(noneServes(cands)), "plan: place: none of the 7 deployments can serve:\n  c0: e0\n  c2: e1\n  c3: e2\n  c4: e3\n  c5: e4"; got != want {
		t.Errorf("place:\n got %q\nwant %q", got, want)
	}
	o := PlanOptions{MaxGPUs: 8, Rate: 2, Target: 0.9}
	// Options 0, 2, 3, 4, 5 carry the distinct reasons; odd ones are disaggregated.
	if got, want := fmt.Sprint(noPlanServes(opts, o)), "plan: no deployment of up to 8 GPUs serves 2 req/s with 90 % of requests within the SLOs:\n  h100 colocated TP1: e0\n  h100 colocated TP3: e1\n  h100 disagg TP4: e2\n  h100 colocated TP5: e3\n  h100 disagg TP6: e4"; got != want {
		t.Errorf("plan:\n got %q\nwant %q", got, want)
	}
	cands[3].Err, opts[3].Err = "", ""
	if err := noneServes(cands); err != nil {
		t.Errorf("place with one serving: %v", err)
	}
	if err := noPlanServes(opts, o); err != nil {
		t.Errorf("plan with one serving: %v", err)
	}
}
