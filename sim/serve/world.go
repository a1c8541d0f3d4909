package serve

import (
	"fmt"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/metrics"
	"github.com/servesim/servesim/sim/workload"
)

// Event priorities at equal times: arrivals first, so that a request
// arriving exactly when an iteration ends joins the next one.
const (
	prioArrival = iota
	prioStepEnd
)

// Sink receives the run's records as they are produced: one per request when
// it finishes or is rejected, and one per iteration. Records are reused:
// a sink must copy what it keeps.
type Sink interface {
	Record(r *metrics.Record) error
	Step(s *metrics.Step) error
}

// Config is one simulation: a workload served by one instance.
type Config struct {
	Instance  InstanceConfig
	Source    workload.Source
	Collector *metrics.Collector
	Sink      Sink // optional
}

// Result counts what happened in a run.
type Result struct {
	Arrived, Finished, Rejected int64
	Preemptions                 int64
	Steps                       int64
	Events                      uint64
	End                         sim.Time // time of the last event
}

// World is the serving world of one run: the engine, the arrival stream and
// the instances.
type World struct {
	eng         sim.Engine
	src         workload.Source
	coll        *metrics.Collector
	sink        Sink
	inst        []*Instance
	free        []*request
	next        workload.Request
	arriveEv    *sim.Event
	rec         metrics.Record
	step        metrics.Step
	err         error
	res         Result
	preemptions int64
	inFlight    int64
}

// Validate checks an instance configuration.
func (c *InstanceConfig) Validate() error {
	switch {
	case c.Step == nil:
		return fmt.Errorf("serve: no step-time model")
	case c.Batcher == nil:
		return fmt.Errorf("serve: no batching policy")
	case c.BlockSize <= 0:
		return fmt.Errorf("serve: block size %d: must be > 0", c.BlockSize)
	case c.Blocks <= 0:
		return fmt.Errorf("serve: KV cache has %d blocks: must be > 0", c.Blocks)
	case c.Limits.MaxNumSeqs <= 0:
		return fmt.Errorf("serve: max_num_seqs %d: must be > 0", c.Limits.MaxNumSeqs)
	case c.Limits.MaxNumBatchedTokens <= 0:
		return fmt.Errorf("serve: max_num_batched_tokens %d: must be > 0", c.Limits.MaxNumBatchedTokens)
	}
	return nil
}

// Run simulates cfg to the end of its workload and returns what happened.
// Every request that arrives either finishes or is rejected with a reason;
// a request left over at the end is a bug and returns an error.
func Run(cfg Config) (Result, error) {
	if err := cfg.Instance.Validate(); err != nil {
		return Result{}, err
	}
	if cfg.Source == nil || cfg.Collector == nil {
		return Result{}, fmt.Errorf("serve: config needs a workload source and a collector")
	}
	w := &World{src: cfg.Source, coll: cfg.Collector, sink: cfg.Sink}
	w.inst = append(w.inst, newInstance(0, cfg.Instance, w))
	w.arriveEv = sim.NewEvent(prioArrival, sim.HandlerFunc(w.arrive))
	if w.src.Next(&w.next) {
		w.eng.ScheduleEvent(w.arriveEv, w.next.Arrival)
	}
	for w.err == nil && w.eng.Step() {
	}
	if w.err != nil {
		return w.res, w.err
	}
	if e, ok := w.src.(interface{ Err() error }); ok && e.Err() != nil {
		return w.res, e.Err()
	}
	w.res.Preemptions = w.preemptions
	w.res.Events = w.eng.Fired()
	w.res.End = w.eng.Now()
	if w.inFlight != 0 || w.res.Arrived != w.res.Finished+w.res.Rejected {
		return w.res, fmt.Errorf("serve: %d requests arrived but %d finished and %d were rejected: requests lost (a bug)",
			w.res.Arrived, w.res.Finished, w.res.Rejected)
	}
	return w.res, nil
}

// arrive takes the pending arrival, hands it to an instance and schedules
// the next one.
func (w *World) arrive(now sim.Time) {
	r := w.alloc()
	*r = request{id: w.next.ID, arrival: now, prompt: w.next.PromptTokens, output: w.next.OutputTokens, hidx: -1}
	w.res.Arrived++
	if w.src.Next(&w.next) {
		if w.next.Arrival < now {
			w.err = fmt.Errorf("serve: request %d arrives at %v, before request %d at %v: the workload must be in arrival order",
				w.next.ID, w.next.Arrival, r.id, now)
			return
		}
		w.eng.ScheduleEvent(w.arriveEv, w.next.Arrival)
	}
	in := w.inst[0]
	if r.prompt < 1 || r.output < 1 {
		w.reject(r, in.id, "empty-request")
		return
	}
	if reason := in.admitCheck(r); reason != "" {
		w.reject(r, in.id, reason)
		return
	}
	w.inFlight++
	in.enqueue(r, now)
}

func (w *World) alloc() *request {
	if n := len(w.free); n > 0 {
		r := w.free[n-1]
		w.free = w.free[:n-1]
		return r
	}
	return new(request)
}

func (w *World) reject(r *request, inst int, reason string) {
	w.rec = metrics.Record{ID: r.id, Instance: inst, Arrival: r.arrival, PromptTokens: r.prompt, OutputTokens: r.output, Rejected: reason}
	w.res.Rejected++
	w.emit()
	w.free = append(w.free, r)
}

// addRecord records a finished request and recycles it.
func (w *World) addRecord(r *request) {
	w.res.Finished++
	w.inFlight--
	w.emit()
	*r = request{}
	w.free = append(w.free, r)
}

func (w *World) emit() {
	w.coll.Add(&w.rec)
	if w.sink != nil && w.err == nil {
		w.err = w.sink.Record(&w.rec)
	}
}

func (w *World) addStep() {
	w.res.Steps++
	w.coll.AddStep(&w.step)
	if w.sink != nil && w.err == nil {
		w.err = w.sink.Step(&w.step)
	}
}
