package policies

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/sim"
)

// QueueItem is what a queue scheduler sees of a request when it arrives.
type QueueItem struct {
	ID              int64
	Arrival         sim.Time
	Prompt          int
	PredictedOutput int      // the length predictor's guess of the output length
	Deadline        sim.Time // arrival + TTFT SLO; 0 when the request has none
	Class           string
}

// Scheduler orders an instance's waiting queue: requests wait sorted by
// Key (lowest first), ties broken by arrival and then ID. A key is computed
// once, when the request joins the queue (again after a preemption).
type Scheduler interface {
	Key(q QueueItem) int64
	Name() string
}

// FCFS serves in arrival order.
type FCFS struct{}

// SJF serves the shortest job first: by prompt length, or, with
// ByPrediction, by the predicted output length (the predictor's error is
// the engine's, configured in the scenario).
type SJF struct{ ByPrediction bool }

// EDF serves the earliest TTFT deadline first; requests without one go last
// (in arrival order).
type EDF struct{}

// Priority serves classes by priority (lower value first), FCFS within a
// class; classes not listed get Default.
type Priority struct {
	Classes map[string]int
	Default int
}

var (
	_ Scheduler = FCFS{}
	_ Scheduler = SJF{}
	_ Scheduler = EDF{}
	_ Scheduler = Priority{}
)

// Key returns the arrival time.
func (FCFS) Key(q QueueItem) int64 { return int64(q.Arrival) }

// Name returns "fcfs".
func (FCFS) Name() string { return "fcfs" }

// Key returns the prompt or predicted output length.
func (s SJF) Key(q QueueItem) int64 {
	if s.ByPrediction {
		return int64(q.PredictedOutput)
	}
	return int64(q.Prompt)
}

// Name returns "sjf" or "sjf-predicted".
func (s SJF) Name() string {
	if s.ByPrediction {
		return "sjf-predicted"
	}
	return "sjf"
}

// Key returns the deadline, or the largest key when there is none.
func (EDF) Key(q QueueItem) int64 {
	if q.Deadline == 0 {
		return math.MaxInt64
	}
	return int64(q.Deadline)
}

// Name returns "edf".
func (EDF) Name() string { return "edf" }

// Key returns the class's priority.
func (p Priority) Key(q QueueItem) int64 {
	if v, ok := p.Classes[q.Class]; ok {
		return int64(v)
	}
	return int64(p.Default)
}

// Name returns "priority".
func (Priority) Name() string { return "priority" }

// SchedulerByName returns the scheduler a scenario names.
func SchedulerByName(name string, classes map[string]int) (Scheduler, error) {
	switch name {
	case "", "fcfs":
		return FCFS{}, nil
	case "sjf":
		return SJF{}, nil
	case "sjf-predicted":
		return SJF{ByPrediction: true}, nil
	case "edf":
		return EDF{}, nil
	case "priority":
		return Priority{Classes: classes}, nil
	}
	return nil, fmt.Errorf("policies: unknown scheduler %q (known: fcfs, sjf, sjf-predicted, edf, priority)", name)
}
