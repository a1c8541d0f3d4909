package policies

import (
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/sim"
)

// AdmitView is what an admission policy sees of the instance a request was
// routed to.
type AdmitView interface {
	Now() sim.Time
	Waiting() int
	// PredictTTFT estimates the time from now to the request's first token
	// if it joined the queue now: the prefill work queued ahead of it plus
	// its own, at the instance's prefill throughput.
	PredictTTFT(prompt int) sim.Time
}

// Verdict is an admission decision.
type Verdict struct {
	Admit   bool
	Reason  string   // why not, when rejected (a metrics rejection reason)
	RetryAt sim.Time // when not admitted and > 0: offer the request again then (deferral)
}

// Admission decides whether an arriving (or deferred) request may join an
// instance's queue. Policies may keep state (a token bucket); the engine
// builds one per run.
type Admission interface {
	Admit(v AdmitView, q QueueItem) Verdict
	Name() string
}

// AdmitAll admits everything.
type AdmitAll struct{}

// QueueCap rejects a request when Max requests already wait.
type QueueCap struct{ Max int }

// TokenBucket limits the admitted request rate to Rate per second with
// bursts of Burst: each admission takes a token; tokens refill
// continuously. Without a token a request is rejected, or, with Defer,
// offered again when the next token is due.
type TokenBucket struct {
	Rate, Burst float64
	Defer       bool
	tokens      float64
	last        sim.Time
	started     bool
}

// SLOAware rejects (or, with Defer, holds back) a request whose predicted
// TTFT exceeds its deadline. A deferred request is offered again after the
// predicted excess, and rejected once its deadline has passed.
type SLOAware struct{ Defer bool }

var (
	_ Admission = AdmitAll{}
	_ Admission = QueueCap{}
	_ Admission = (*TokenBucket)(nil)
	_ Admission = SLOAware{}
)

// Rejection reasons of the admission policies.
const (
	RejectQueueFull   = "queue-full"
	RejectRateLimited = "rate-limited"
	RejectSLO         = "slo-unattainable"
)

// Admit admits.
func (AdmitAll) Admit(AdmitView, QueueItem) Verdict { return Verdict{Admit: true} }

// Name returns "none".
func (AdmitAll) Name() string { return "none" }

// Admit rejects when the queue is full.
func (p QueueCap) Admit(v AdmitView, _ QueueItem) Verdict {
	if v.Waiting() >= p.Max {
		return Verdict{Reason: RejectQueueFull}
	}
	return Verdict{Admit: true}
}

// Name returns "queue-cap".
func (QueueCap) Name() string { return "queue-cap" }

// Admit takes a token if one is available.
func (p *TokenBucket) Admit(v AdmitView, _ QueueItem) Verdict {
	now := v.Now()
	if !p.started {
		p.tokens, p.last, p.started = p.Burst, now, true
	}
	p.tokens = math.Min(p.Burst, p.tokens+p.Rate*(now-p.last).Seconds())
	p.last = now
	if p.tokens >= 1 {
		p.tokens--
		return Verdict{Admit: true}
	}
	if p.Defer {
		wait := sim.FromSeconds((1 - p.tokens) / p.Rate)
		return Verdict{RetryAt: now + max(wait, 1)}
	}
	return Verdict{Reason: RejectRateLimited}
}

// Name returns "token-bucket".
func (*TokenBucket) Name() string { return "token-bucket" }

// Admit compares the predicted TTFT with the deadline.
func (p SLOAware) Admit(v AdmitView, q QueueItem) Verdict {
	if q.Deadline == 0 {
		return Verdict{Admit: true}
	}
	now := v.Now()
	finish := now + v.PredictTTFT(q.Prompt)
	if finish <= q.Deadline {
		return Verdict{Admit: true}
	}
	if p.Defer && now < q.Deadline {
		return Verdict{RetryAt: now + max(finish-q.Deadline, sim.Millisecond)}
	}
	return Verdict{Reason: RejectSLO}
}

// Name returns "slo-aware".
func (SLOAware) Name() string { return "slo-aware" }

// AdmissionParams configure AdmissionByName.
type AdmissionParams struct {
	QueueCap    int
	Rate, Burst float64
	Defer       bool
}

// AdmissionByName returns a fresh admission policy by name.
func AdmissionByName(name string, p AdmissionParams) (Admission, error) {
	switch strings.ToLower(name) {
	case "", "none":
		return AdmitAll{}, nil
	case "queue-cap":
		if p.QueueCap <= 0 {
			return nil, fmt.Errorf("policies: admission queue-cap needs queue_cap > 0")
		}
		return QueueCap{Max: p.QueueCap}, nil
	case "token-bucket":
		if !(p.Rate > 0) || !(p.Burst >= 1) {
			return nil, fmt.Errorf("policies: admission token-bucket needs rate > 0 and burst ≥ 1")
		}
		return &TokenBucket{Rate: p.Rate, Burst: p.Burst, Defer: p.Defer}, nil
	case "slo-aware":
		return SLOAware{Defer: p.Defer}, nil
	}
	return nil, fmt.Errorf("policies: unknown admission policy %q (known: none, queue-cap, token-bucket, slo-aware)", name)
}
