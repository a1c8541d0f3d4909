package serve

import "github.com/servesim/servesim/sim"

// The World's side of the engine model (Engine): the front end's delays
// and the scheduling pipeline's join lag.

// setupEngine fills the engine defaults and has every instance price its
// steps through the engine's Kernels. It works on cfg's copies, never on
// the caller's structures.
func setupEngine(cfg *Config) {
	if cfg.Engine == nil {
		cfg.Engine = Ideal{}
	}
	cfg.Instance.Step = cfg.Engine.Kernels(cfg.Instance.Step)
	if cfg.Disagg != nil {
		d := *cfg.Disagg
		d.Decode.Step = cfg.Engine.Kernels(d.Decode.Step)
		cfg.Disagg = &d
	}
}

// ingress offers an arrived request to the cluster once it has crossed
// the front end (Engine.Ingress): at once when that takes no time, else
// from the request's own event (made once per request object, which the
// World recycles, so the hot path allocates nothing).
func (w *World) ingress(r *request, now sim.Time) {
	d := w.engine.Ingress(r.prompt)
	if d == 0 {
		w.offer(r, now)
		return
	}
	if r.ingressEv == nil {
		r.ingressEv = sim.NewEvent(prioArrival, sim.HandlerFunc(func(t sim.Time) { w.offer(r, t) }))
	}
	w.eng.ScheduleEvent(r.ingressEv, now+d)
}

// hold keeps a request that reached a busy engine core out of the
// batcher's sight until JoinLag more steps have ended (Engine.JoinLag).
func (in *Instance) hold(r *request) {
	r.visibleAt = in.stepSeq + int64(in.w.joinLag)
	in.held.insertBack(r)
}

// showHeld moves the held requests whose lag has passed (all of them when
// all is set) into the waiting queue. Held requests are in arrival order
// and so in visibleAt order.
func (in *Instance) showHeld(all bool) {
	for in.held.len() > 0 {
		r := in.held.at(0)
		if !all && r.visibleAt > in.stepSeq {
			return
		}
		in.held.removeAt(0)
		in.waiting.insert(r)
	}
}
