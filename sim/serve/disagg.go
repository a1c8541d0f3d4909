package serve

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/policies"
	"github.com/servesim/servesim/sim"
)

// Disagg configures prefill/decode disaggregation (DistServe, Splitwise,
// Mooncake). Prefill instances run prompts and produce the first token; the
// request's KV then crosses a link to a decode instance, which runs the
// remaining tokens.
type Disagg struct {
	Decode         InstanceConfig
	DecodeReplicas int
	// DecodeLockstep groups the decode instances in DP lock-step groups,
	// as Config.DPLockstep the prefill instances: the decode pool's own
	// data- and expert-parallel layout.
	DecodeLockstep DPLockstep
	DecodeRouter   policies.Router // default round-robin
	// Link is each prefill instance's outbound link for KV (all its GPUs'
	// NICs together): transfers leaving one prefill instance share it.
	Link Link
	// KVBytesPerToken is the KV moved per prompt token: the whole model's
	// (every layer and KV head, at the KV precision), whatever the TPs.
	KVBytesPerToken float64
	// Streaming sends each layer's KV while later layers compute, so a
	// transfer's bytes overlap the prefill (see handoff). Layers is the
	// model's layer count, the streaming granularity.
	Streaming bool
	Layers    int
	// MaxPending bounds the finished prefills a prefill instance holds
	// while their KV waits for or crosses the link; past it the instance
	// admits no new prompts (backpressure). 0 means its max_num_seqs.
	MaxPending int
	// DecodeReserveTokens is KV, in tokens, a decode instance keeps free
	// for each request it runs, waits on or pulls before it starts another
	// pull (SGLang's DecodePreallocQueue._allocatable_tokens:
	// num_reserved_decode_tokens × (running + transfer + waiting)); 0 is
	// none (vLLM's pull takes what fits).
	DecodeReserveTokens int
	// FirstTokenAtDecode streams the first token from the decode instance
	// once the KV has arrived, as SGLang's PD router does (it relays the
	// decode server's stream, and the decode server sends the prefill's
	// token with its first batch), instead of from the prefill instance.
	FirstTokenAtDecode bool
}

// Link is a KV transfer link.
type Link struct {
	Bandwidth float64  // bytes/s
	Latency   sim.Time // per transfer
}

// Instance roles.
const (
	roleColocated uint8 = iota
	rolePrefill
	roleDecode
)

func (w *World) setupDisagg() error {
	d := w.cfg.Disagg
	if d == nil {
		return nil
	}
	if err := d.Decode.Validate(); err != nil {
		return fmt.Errorf("serve: decode pool: %w", err)
	}
	switch {
	case d.DecodeReplicas <= 0:
		return fmt.Errorf("serve: decode pool of %d instances", d.DecodeReplicas)
	case !(d.Link.Bandwidth > 0) || math.IsInf(d.Link.Bandwidth, 0) || d.Link.Latency < 0:
		return fmt.Errorf("serve: KV link bandwidth %g B/s and latency %v: want > 0 and ≥ 0", d.Link.Bandwidth, d.Link.Latency)
	case !(d.KVBytesPerToken > 0):
		return fmt.Errorf("serve: KV bytes per token %g: want > 0", d.KVBytesPerToken)
	case d.Streaming && d.Layers <= 0:
		return fmt.Errorf("serve: streaming KV transfer needs the model's layer count")
	case d.MaxPending < 0:
		return fmt.Errorf("serve: max pending transfers %d: want ≥ 0", d.MaxPending)
	case d.DecodeReserveTokens < 0:
		return fmt.Errorf("serve: decode reserve of %d tokens a request: want ≥ 0", d.DecodeReserveTokens)
	}
	router := d.DecodeRouter
	if router == nil {
		router = &policies.RoundRobin{}
	}
	w.decode = &pool{w: w, router: router, staleness: w.cfg.RouterStaleness}
	for range d.DecodeReplicas {
		in := newInstance(len(w.inst), d.Decode, w)
		in.role = roleDecode
		w.inst = append(w.inst, in)
		w.decode.insts = append(w.decode.insts, in)
	}
	w.dpGroups(d.DecodeLockstep, w.decode.insts)
	for _, in := range w.front.insts {
		in.maxPending = d.MaxPending
		if in.maxPending == 0 {
			in.maxPending = in.cfg.Limits.MaxNumSeqs
		}
		l := &link{w: w, bw: d.Link.Bandwidth, lat: d.Link.Latency}
		l.ev = sim.NewEvent(prioStepEnd, sim.HandlerFunc(l.fire))
		in.kvLink = l
		w.links = append(w.links, l)
	}
	return nil
}

// handoff takes a request whose prefill finished on a prefill instance out
// of its running set (its KV stays until the transfer ends) and asks a
// decode instance to pull it.
func (in *Instance) handoff(r *request, now sim.Time) {
	in.unlink(r)
	r.state = stateHandoff
	r.src = in
	in.handoffs = append(in.handoffs, r)
	item := policies.QueueItem{ID: r.id, Arrival: r.arrival, Prompt: r.prompt, PredictedOutput: r.predOut, Deadline: r.deadline, Class: r.class}
	dst := in.w.decode.route(r, item)
	dst.pulls.insertBack(r)
	dst.tryPulls(now)
}

// tryPulls starts the transfers of waiting handoffs, oldest first, while
// the decode instance has room for their KV and a sequence slot (pull: the
// decode side takes a transfer only when it can hold it).
func (in *Instance) tryPulls(now sim.Time) {
	for in.pulls.len() > 0 {
		r := in.pulls.at(0)
		need := in.blocksOf(r.computed)
		if t := in.w.cfg.Disagg.DecodeReserveTokens; t > 0 {
			need += in.blocksOf(t * (in.running + in.incoming + len(in.ready)))
		}
		if need > in.FreeBlocks() || in.running+in.incoming >= in.cfg.Limits.MaxNumSeqs {
			return
		}
		in.pulls.removeAt(0)
		need = in.blocksOf(r.computed) // the reserve stays free
		in.allocate(need)
		in.incoming++
		in.incomingBlocks += need
		r.dstBlocks = need
		r.dst = in
		r.xferStart = now
		bytes := float64(r.computed) * in.w.cfg.Disagg.KVBytesPerToken
		in.w.res.TransferBytes += bytes
		in.w.res.Transfers++
		if d := in.w.cfg.Disagg; d.Streaming && now == r.lastToken {
			// Layer-wise streaming: the layers' KV left while the prefill
			// ran, at the link's full rate (optimistic when the link is
			// shared); at least the last layer's share is left to send.
			sent := d.Link.Bandwidth * (now - r.scheduled).Seconds()
			bytes = max(bytes/float64(d.Layers), bytes-sent)
		}
		r.src.kvLink.start(r, bytes, now)
	}
}

// deliver completes a KV transfer: the prefill instance frees the KV and
// the request starts decoding on the decode instance.
func (w *World) deliver(r *request, now sim.Time) {
	src, dst := r.src, r.dst
	src.release(r)
	for i, x := range src.handoffs {
		if x == r {
			src.handoffs = append(src.handoffs[:i], src.handoffs[i+1:]...)
			break
		}
	}
	r.src, r.dst = nil, nil
	r.xferEnd = now
	if w.cfg.Disagg.FirstTokenAtDecode {
		r.firstToken, r.lastToken = now, now
	}
	// The request leaves the prefill instance's outstanding count for the
	// decode instance's (routers read both: least-outstanding and vLLM's DP
	// load balancer would otherwise see prefill ranks fill up forever and
	// decode ranks go negative).
	src.outstanding--
	dst.outstanding++

	r.inst = dst
	r.blocks = r.dstBlocks
	// It joins the decode set at the next iteration boundary: an iteration
	// in flight was priced without it.
	dst.ready = append(dst.ready, r)
	if !dst.busy {
		dst.startStep(now)
	}
	if !src.busy {
		src.startStep(now)
	}
}

// link is one prefill instance's outbound KV link. Transfers in flight
// share its bandwidth equally (processor sharing); each is delivered a
// latency after its last byte leaves.
type link struct {
	w      *World
	bw     float64
	lat    sim.Time
	active []xfer
	last   sim.Time // time the remaining bytes were last brought up to date
	ev     *sim.Event
}

type xfer struct {
	r         *request
	remaining float64 // bytes
}

// advance brings the remaining bytes up to now.
func (l *link) advance(now sim.Time) {
	if n := len(l.active); n > 0 && now > l.last {
		el := (now - l.last).Seconds()
		l.w.res.LinkBusySeconds += el
		sent := el * l.bw / float64(n)
		for i := range l.active {
			l.active[i].remaining -= sent
		}
	}
	l.last = now
}

// start adds a transfer of bytes for r.
func (l *link) start(r *request, bytes float64, now sim.Time) {
	l.advance(now)
	l.active = append(l.active, xfer{r: r, remaining: bytes})
	l.schedule(now)
}

// schedule sets the event for the next transfer to finish.
func (l *link) schedule(now sim.Time) {
	if len(l.active) == 0 {
		l.w.eng.Cancel(l.ev)
		return
	}
	least := l.active[0].remaining
	for _, x := range l.active[1:] {
		least = min(least, x.remaining)
	}
	sec := max(least, 0) * float64(len(l.active)) / l.bw
	at, ok := now.AddSeconds(sec)
	if !ok {
		l.w.fail(fmt.Errorf("serve: simulated time would pass the clock's range (%.3g s, about 292 years) at %v: a KV transfer of %g s (%g bytes at %g B/s shared by %d); check the link bandwidth",
			sim.MaxSeconds, now, sec, least, l.bw, len(l.active)))
		return
	}
	l.w.eng.ScheduleEvent(l.ev, at)
}

// fire finishes the transfers whose bytes have all left (within one
// nanosecond's worth, for rounding) and schedules their delivery.
func (l *link) fire(now sim.Time) {
	l.advance(now)
	eps := l.bw * 1e-9 * float64(len(l.active))
	kept := l.active[:0]
	for _, x := range l.active {
		if x.remaining > eps {
			kept = append(kept, x)
			continue
		}
		r := x.r
		switch {
		case l.lat == 0:
			l.w.deliver(r, now)
		case l.lat >= sim.Forever-now:
			l.w.fail(fmt.Errorf("serve: simulated time would pass the clock's range (%.3g s, about 292 years) at %v: a KV link latency of %v", sim.MaxSeconds, now, l.lat))
		default:
			l.w.eng.Schedule(now+l.lat, prioStepEnd, sim.HandlerFunc(func(t sim.Time) { l.w.deliver(r, t) }))
		}
	}
	clear(l.active[len(kept):])
	l.active = kept
	l.schedule(now)
}
