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

// failingSink fails the run at its k-th step.
type failingSink struct{ k, steps int }

var errSink = errors.New("sink full")

func (s *failingSink) Record(*metrics.Record) error { return nil }
func (s *failingSink) Step(*metrics.Step) error {
	if s.steps++; s.steps == s.k {
		return errSink
	}
	return nil
}

// An error of the event that ends a batch of StopCheckEvents is the run's
// error even when Done is closed by then: the first error wins. For every
// k whose step comes within the first batch, the sink's error is the one
// reported (with the error overwritten, the k of the batch's last event
// reported ErrStopped).
func TestDoneKeepsFirstError(t *testing.T) {
	done := make(chan struct{})
	close(done)
	// Arrival spacings (µs) that move which event is a batch's last.
	for _, gap := range []sim.Time{1000, 700, 1300, 2900} {
		reqs := make([]workload.Request, 2000)
		for i := range reqs {
			reqs[i] = workload.Request{ID: int64(i), Arrival: sim.Time(i) * gap * sim.Microsecond, PromptTokens: 50, OutputTokens: 20}
		}
		failed := 0
		for k := 1; ; k++ {
			sink := &failingSink{k: k}
			_, err := Run(Config{Instance: baseConfig(policies.Chunked{}, 1000, 1024), Source: &sliceSource{reqs: reqs},
				Collector: metrics.NewCollector(metrics.SLO{}), Sink: sink, Done: done})
			if sink.steps < k { // stopped before the k-th step: past the first batch
				if !errors.Is(err, ErrStopped) {
					t.Fatalf("gap %v, k %d: error %v, want one wrapping ErrStopped", gap*sim.Microsecond, k, err)
				}
				break
			}
			if !errors.Is(err, errSink) {
				t.Fatalf("gap %v, k %d: the sink failed at its step, but the run's error is %v", gap*sim.Microsecond, k, err)
			}
			failed++
		}
		if failed == 0 {
			t.Fatalf("gap %v: no step within the first batch", gap*sim.Microsecond)
		}
	}
}
