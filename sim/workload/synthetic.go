package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/servesim/servesim/sim"
)

// Random stream identifiers. Each purpose draws from its own generator,
// rand.New(rand.NewPCG(seed, Stream...)), so that changing how one quantity
// is drawn (another output-length distribution, say) never shifts the
// values drawn for another (the arrival times stay identical).
const (
	StreamArrivals     uint64 = 1
	StreamPrompt       uint64 = 2
	StreamOutput       uint64 = 3
	StreamPrefix       uint64 = 4
	StreamConversation uint64 = 5
)

// MaxTokens is the largest length a Synthetic workload yields when no
// MaxPrompt or MaxOutput is set (2³¹−1), so any sampled value fits an int.
const MaxTokens = math.MaxInt32

// Synthetic is a generated workload: arrivals from an Arrival process and
// prompt and output lengths drawn independently from two distributions.
//
// The stream stops after Count requests, or at the first arrival at or after
// Duration (only arrivals strictly before Duration are yielded), whichever
// comes first; a zero Count or Duration means that rule is off, and at least
// one must be set.
//
// Request i (from 0) arrives at the sum of i+1 sampled gaps: the first
// request arrives after one gap, not at time 0, as vLLM's bench sends its
// first request after the first sampled delay. Gaps are summed in float64
// seconds and each arrival converted once by sim.FromSeconds, so rounding to
// nanoseconds does not accumulate; constant gaps put request i at exactly
// (i+1)/Rate. Arrival times are not rescaled to make the span exactly
// Count/Rate, as recent vLLM does, unless Rescale is set (the gaps are then
// drawn twice from one seed, once to sum them, so the stream stays O(1)).
//
// Lengths are sampled values rounded to the nearest integer (halves away
// from zero), then clamped to at least 1 and to at most MaxPrompt or
// MaxOutput when set (MaxTokens otherwise).
type Synthetic struct {
	Arrival   Arrival
	Prompt    Dist
	Output    Dist
	Count     int      // stop after this many requests; 0 = no limit
	Duration  sim.Time // stop at the first arrival ≥ Duration; 0 = no limit
	Seed      uint64
	MaxPrompt int // clamp for prompt lengths; 0 = none
	MaxOutput int // clamp for output lengths; 0 = none

	// SharedPrefix models shared system prompts: each request picks one of
	// PrefixGroups groups uniformly (its own stream) and its prompt is the
	// group's SharedPrefix tokens followed by a sampled Prompt length. The
	// prefix's full blocks of PrefixBlockTokens (default 256) carry hashes
	// unique to the group, for prefix caching. 0 = no shared prefix.
	SharedPrefix, PrefixGroups, PrefixBlockTokens int

	// Multi-turn conversations: when Turns ≥ 2, Conversations conversations
	// are in flight at once; each arrival is the next turn of one of them,
	// chosen uniformly (its own stream), and a conversation that has had its
	// Turns is replaced by a new one. A turn's prompt is the conversation's
	// history (every earlier prompt and output) followed by a sampled new
	// message; the history's full blocks of PrefixBlockTokens carry hashes
	// unique to the conversation, so a prefix cache can reuse them. Shared
	// system prompts, when also set, come before the history.
	Turns, Conversations int

	// Stages, when set, replace Arrival.Rate, Count and Duration with a
	// rate schedule: the stages run one after another, each from where the
	// previous one ended (its start plus its duration, plus Gap). With
	// Drain, a stage starts only when every request of the previous one has
	// finished (plus Gap): the Source is then a Feedback, as the serving
	// world must say when requests finish. Stages need Count and Duration 0.
	Stages []Stage
	Drain  bool
	Gap    sim.Time
	// Rescale scales each stage's gaps so that its arrivals fill it
	// exactly: int(rate × duration) requests, the last one at the stage's
	// end (inference-perf's `constant` load type); with a Count and no
	// Duration, Count requests, the last at Count/Rate (vLLM bench).
	Rescale bool

	// Data, when set, gives every request's lengths and prefix from
	// inference-perf's shared_prefix generator; Prompt, Output, SharedPrefix
	// and Turns are then unused and must be unset.
	Data *SharedPrefixData
}

// DefaultPrefixBlockTokens is the hash-block size of synthetic shared
// prefixes when none is given.
const DefaultPrefixBlockTokens = 256

// Validate reports whether s describes a valid, finite workload.
func (s Synthetic) Validate() error {
	a := s.Arrival
	if len(s.Stages) > 0 {
		if err := validateStages(s.Stages); err != nil {
			return err
		}
		a.Rate = s.Stages[0].Rate
	}
	if err := a.Validate(); err != nil {
		return err
	}
	if d := s.Data; d != nil {
		if err := d.Validate(); err != nil {
			return err
		}
		if s.Prompt != nil || s.Output != nil || s.SharedPrefix != 0 || s.Turns != 0 {
			return errors.New("workload: synthetic: shared_prefix data sets the lengths: leave prompt, output, shared prefix and turns unset")
		}
	}
	switch {
	case s.Data == nil && s.Prompt == nil:
		return errors.New("workload: synthetic: prompt length distribution not set")
	case s.Data == nil && s.Output == nil:
		return errors.New("workload: synthetic: output length distribution not set")
	case len(s.Stages) > 0 && (s.Count != 0 || s.Duration != 0):
		return errors.New("workload: synthetic: stages set the length of the run: leave count and duration 0")
	case len(s.Stages) < 2 && (s.Drain || s.Gap != 0):
		return errNoStages
	case s.Gap < 0:
		return fmt.Errorf("workload: synthetic: gap between stages %v: must be >= 0", s.Gap)
	case math.IsInf(a.Rate, 1) && (s.Count == 0 || s.Duration != 0):
		return errors.New("workload: synthetic: rate inf sends every request at time 0: give a count and no duration")
	case s.Count < 0:
		return fmt.Errorf("workload: synthetic: count %d: must be >= 0", s.Count)
	case s.Duration < 0:
		return fmt.Errorf("workload: synthetic: duration %v: must be >= 0", s.Duration)
	case s.Count == 0 && s.Duration == 0 && len(s.Stages) == 0:
		return errors.New("workload: synthetic: set a count, a duration or both, or the stream never ends")
	case s.MaxPrompt < 0:
		return fmt.Errorf("workload: synthetic: max prompt %d: must be >= 0 (0 = no limit)", s.MaxPrompt)
	case s.MaxOutput < 0:
		return fmt.Errorf("workload: synthetic: max output %d: must be >= 0 (0 = no limit)", s.MaxOutput)
	case s.SharedPrefix < 0 || s.PrefixGroups < 0 || s.PrefixBlockTokens < 0:
		return fmt.Errorf("workload: synthetic: shared prefix %d, groups %d, block tokens %d: must be >= 0", s.SharedPrefix, s.PrefixGroups, s.PrefixBlockTokens)
	case s.SharedPrefix > 0 && s.PrefixGroups == 0:
		return errors.New("workload: synthetic: a shared prefix needs prefix groups ≥ 1")
	case s.Turns < 0 || s.Conversations < 0:
		return fmt.Errorf("workload: synthetic: turns %d, conversations %d: must be >= 0", s.Turns, s.Conversations)
	case s.Turns >= 2 && s.Conversations == 0:
		return errors.New("workload: synthetic: multi-turn conversations need conversations ≥ 1 (how many are in flight at once)")
	}
	return nil
}

// Source validates s and returns a Source that generates its requests
// lazily, with IDs 0, 1, 2, ... in arrival order. The returned Source is an
// ErrSource: if the sum of gaps grows past what sim.Time holds (about 292
// years) before a stop rule fires, the stream ends and Err reports it.
func (s Synthetic) Source() (Source, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	maxP, maxO := s.MaxPrompt, s.MaxOutput
	if maxP == 0 {
		maxP = MaxTokens
	}
	if maxO == 0 {
		maxO = MaxTokens
	}
	st := []stage{{rate: s.Arrival.Rate, dur: s.Duration.Seconds(), count: int64(s.Count)}}
	if len(s.Stages) > 0 {
		st = make([]stage, len(s.Stages))
		for i, g := range s.Stages {
			st[i] = stage{rate: g.Rate, dur: g.Duration.Seconds()}
		}
	}
	src := &synthSource{
		clock:     newClock(s.Arrival, s.Seed, st, s.Rescale, s.Drain, s.Gap.Seconds()),
		prompts:   rand.New(rand.NewPCG(s.Seed, StreamPrompt)),
		outputs:   rand.New(rand.NewPCG(s.Seed, StreamOutput)),
		prompt:    s.Prompt,
		output:    s.Output,
		bounded:   s.Duration > 0 || len(s.Stages) > 0,
		maxPrompt: maxP,
		maxOutput: maxO,
	}
	if s.Data != nil {
		src.data = newDataCycle(*s.Data, s.Seed, maxP)
	}
	bt := s.PrefixBlockTokens
	if bt == 0 {
		bt = DefaultPrefixBlockTokens
	}
	src.blockTokens = bt
	if s.Turns >= 2 {
		src.turns = s.Turns
		src.convRand = rand.New(rand.NewPCG(s.Seed, StreamConversation))
		src.convs = make([]conversation, s.Conversations)
		for i := range src.convs {
			src.convs[i] = conversation{id: src.nextConv}
			src.nextConv++
		}
	}
	if s.SharedPrefix > 0 {
		src.prefixRand = rand.New(rand.NewPCG(s.Seed, StreamPrefix))
		src.prefixTokens = s.SharedPrefix
		src.groups = make([][]uint64, s.PrefixGroups)
		for g := range src.groups {
			h := make([]uint64, s.SharedPrefix/bt)
			for j := range h {
				h[j] = splitmix(uint64(g)<<32 | uint64(j))
			}
			src.groups[g] = h
		}
	}
	if s.Drain {
		return &drainSource{synthSource: src}, nil
	}
	return src, nil
}

// drainSource is a synthSource whose stages drain: it counts the requests
// in flight from the serving world's Finished calls.
type drainSource struct {
	*synthSource
	finished   int64
	lastFinish float64 // seconds
	blocked    bool
}

func (d *drainSource) Next(r *Request) bool {
	ok := d.synthSource.next(r, d.synthSource.next0-d.finished, d.lastFinish)
	d.blocked = !ok && d.synthSource.blocked
	return ok
}

func (d *drainSource) Finished(id int64, now sim.Time) {
	d.finished++
	d.lastFinish = now.Seconds()
}

func (d *drainSource) Blocked() bool { return d.blocked }

var _ Feedback = (*drainSource)(nil)

// splitmix is SplitMix64's finalizer: distinct inputs give distinct,
// well-spread hashes.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// maxSeconds is the largest time in seconds sim.FromSeconds accepts.
const maxSeconds = float64(math.MaxInt64) / 1e9

type synthSource struct {
	clock                     *clock
	prompts, outputs          *rand.Rand
	prompt, output            Dist
	bounded                   bool // a duration ends the stream (an overflow is then a normal end)
	data                      *dataCycle
	maxPrompt, maxOutput      int
	prefixRand                *rand.Rand
	groups                    [][]uint64 // per group, its prefix's block hashes
	convRand                  *rand.Rand
	convs                     []conversation // in flight
	turns                     int
	nextConv                  uint64
	hashBuf                   []uint64 // the current request's prefix hashes (valid until the next Next)
	prefixTokens, blockTokens int
	next0                     int64 // ID of the next request
	done, blocked             bool
	err                       error
}

func (s *synthSource) Next(r *Request) bool { return s.next(r, 0, 0) }

// next yields the next request; inflight and lastFinish (seconds) feed a
// draining schedule.
func (s *synthSource) next(r *Request, inflight int64, lastFinish float64) bool {
	s.blocked = false
	if s.done {
		return false
	}
	t, st := s.clock.next(inflight, lastFinish)
	switch {
	case st == clockBlocked:
		s.blocked = true
		return false
	case st == clockEnd:
		s.done = true
		return false
	case !(t <= maxSeconds):
		s.done = true
		if !s.bounded { // past any duration otherwise: a normal end
			s.err = fmt.Errorf("workload: synthetic: arrival %d at %g s overflows simulated time", s.next0, t)
		}
		return false
	}
	at := sim.FromSeconds(t)
	if s.data != nil {
		s.data.fill(r, s.next0, at)
		s.next0++
		return true
	}
	*r = Request{
		ID:           s.next0,
		Arrival:      at,
		PromptTokens: tokens(s.prompt.Sample(s.prompts), s.maxPrompt),
		OutputTokens: tokens(s.output.Sample(s.outputs), s.maxOutput),
	}
	var group []uint64
	if s.groups != nil {
		group = s.groups[s.prefixRand.IntN(len(s.groups))]
		r.PromptTokens += s.prefixTokens
		r.Prefix, r.PrefixBlockTokens = group, s.blockTokens
	}
	if s.convs != nil {
		s.nextTurn(r, group)
	}
	s.next0++
	return true
}

func (s *synthSource) Err() error { return s.err }

// tokens rounds a sampled length to the nearest integer and clamps it to
// [1, hi]; NaN becomes 1.
func tokens(v float64, hi int) int {
	x := math.Round(v)
	if !(x >= 1) {
		return 1
	}
	if x >= float64(hi) {
		return hi
	}
	return int(x)
}

// conversation is one multi-turn conversation in flight.
type conversation struct {
	id      uint64
	history int // tokens of earlier turns (prompts and outputs)
	turn    int // turns done
}

// nextTurn makes r the next turn of a conversation chosen uniformly: its
// prompt is the shared prefix (if any), the history and the new message.
func (s *synthSource) nextTurn(r *Request, group []uint64) {
	c := &s.convs[s.convRand.IntN(len(s.convs))]
	msg := r.PromptTokens - s.prefixTokens // the sampled new message
	lead := s.prefixTokens + c.history     // tokens before the new message
	s.hashBuf = append(s.hashBuf[:0], group...)
	// History blocks: after the shared prefix's full blocks, numbered from
	// the history's start, so they stay the same as the history grows.
	first := len(group)
	for j := first; j < lead/s.blockTokens; j++ {
		s.hashBuf = append(s.hashBuf, splitmix(c.id<<20|uint64(j)|1<<63))
	}
	r.PromptTokens = min(lead+msg, s.maxPrompt)
	r.Prefix, r.PrefixBlockTokens = s.hashBuf, s.blockTokens
	c.history += msg + r.OutputTokens
	c.turn++
	if c.turn >= s.turns {
		*c = conversation{id: s.nextConv}
		s.nextConv++
	}
}
