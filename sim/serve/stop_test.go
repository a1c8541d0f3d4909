package serve

import (
	"errors"
	"testing"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/workload"
)

// A closed Done channel stops the run with an error wrapping ErrStopped.
func TestDoneStopsRun(t *testing.T) {
	reqs := make([]workload.Request, 5000)
	for i := range reqs {
		reqs[i] = workload.Request{ID: int64(i), Arrival: sim.Time(i) * sim.Millisecond, PromptTokens: 50, OutputTokens: 20}
	}
	done := make(chan struct{})
	close(done)
	coll := metrics.NewCollector(metrics.SLO{})
	res, err := Run(Config{Instance: baseConfig(policies.Chunked{}, 1000, 1024), Source: &sliceSource{reqs: reqs}, Collector: coll, Done: done})
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("error %v, want one wrapping ErrStopped", err)
	}
	// It looks at Done after StopCheckEvents events, long before the end.
	if res.Finished >= 5000 {
		t.Errorf("finished %d of 5000 requests after Done closed", res.Finished)
	}
	// Open Done: the run is the same as without one.
	open := make(chan struct{})
	a, err := Run(Config{Instance: baseConfig(policies.Chunked{}, 1000, 1024), Source: &sliceSource{reqs: reqs}, Collector: metrics.NewCollector(metrics.SLO{}), Done: open})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(Config{Instance: baseConfig(policies.Chunked{}, 1000, 1024), Source: &sliceSource{reqs: reqs}, Collector: metrics.NewCollector(metrics.SLO{})})
	if err != nil || a != b {
		t.Fatalf("with an open Done %+v, without %+v (%v)", a, b, err)
	}
}
