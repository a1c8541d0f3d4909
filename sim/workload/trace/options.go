package trace

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// Options is a trace replay as a scenario file writes it (the table
// [workload.trace]). Zero values mean "off" or "default". The steps apply
// in this order: read (format, bad rows, BurstGPT filter, failed rows) →
// synthetic arrivals (length-only traces, or any trace when Arrival is set)
// → window → sample → first N → rate scaling → clipping → repetition.
type Options struct {
	File   string `toml:"file" json:"file"`
	Format string `toml:"format" json:"format,omitempty"` // azure, mooncake, burstgpt, lengths, servesim; "" or "auto" detects
	// SkipBadRows skips malformed rows (counted, see Trace.Counts) instead
	// of failing at the first.
	SkipBadRows bool `toml:"skip_bad_rows" json:"skip_bad_rows,omitempty"`
	// ModelFilter and LogTypeFilter keep the BurstGPT rows of one model
	// ("ChatGPT", "GPT-4") and one log type ("Conversation log", "API log").
	ModelFilter   string `toml:"model_filter" json:"model_filter,omitempty"`
	LogTypeFilter string `toml:"log_type_filter" json:"log_type_filter,omitempty"`
	// Failed treats rows with zero output tokens: "drop" (default) or "one".
	Failed string `toml:"failed" json:"failed,omitempty"`

	// StartS and EndS keep the requests arriving in [StartS, EndS) seconds
	// of trace time (EndS 0: to the end), shifted to start at 0.
	StartS float64 `toml:"start_s" json:"start_s,omitempty"`
	EndS   float64 `toml:"end_s" json:"end_s,omitempty"`
	// Sample keeps each request with this probability, in (0, 1] (0: all).
	Sample float64 `toml:"sample" json:"sample,omitempty"`
	// First keeps the first N requests (0: all).
	First int `toml:"first" json:"first,omitempty"`
	// Rate is the target mean rate in requests/s. For a timed trace it
	// rescales every arrival time so that the replay's mean rate (requests
	// over the span from first to last arrival, as Stats.MeanRate) equals
	// Rate, which takes a first pass over the file to measure it. For a
	// length-only trace, or when Arrival is set, it is the synthetic
	// arrival process's rate (required then).
	Rate float64 `toml:"rate" json:"rate,omitempty"`
	// Scale multiplies a timed trace's rate by a factor instead (no first
	// pass): 2 halves every inter-arrival gap. Rate and Scale exclude each other.
	Scale float64 `toml:"scale" json:"scale,omitempty"`
	// MaxContext clips every request to prompt + output ≤ MaxContext tokens
	// (see Clip); 0: no clipping.
	MaxContext int `toml:"max_context" json:"max_context,omitempty"`
	// Repeat replays the (transformed) trace this many times back to back
	// (0 or 1: once). The period is EndS − StartS when a window end is set
	// (rescaled with the rate), else one copy's span plus its mean gap.
	Repeat int `toml:"repeat" json:"repeat,omitempty"`

	// Arrival ("poisson", "gamma", "constant") gives the requests synthetic
	// arrival times at Rate, replacing the trace's own. A length-only trace
	// uses "poisson" when it is empty.
	Arrival    string  `toml:"arrival" json:"arrival,omitempty"`
	Burstiness float64 `toml:"burstiness" json:"burstiness,omitempty"` // gamma shape, as in workload.Arrival
}

func optErr(field, format string, args ...any) error {
	return fmt.Errorf("trace: option %q: %s", field, fmt.Sprintf(format, args...))
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

// Validate checks the options that do not need the file.
func (o Options) Validate() error {
	if o.File == "" {
		return optErr("file", "missing: name a trace file")
	}
	if _, err := ParseFormat(o.Format); err != nil {
		return optErr("format", "%v", strings.TrimPrefix(err.Error(), "trace: "))
	}
	switch o.Failed {
	case "", FailedDrop, FailedOne:
	default:
		return optErr("failed", "%q: want %q or %q", o.Failed, FailedDrop, FailedOne)
	}
	switch {
	case !finiteNonNeg(o.StartS):
		return optErr("start_s", "%v must be a number ≥ 0", o.StartS)
	case !finiteNonNeg(o.EndS):
		return optErr("end_s", "%v must be a number ≥ 0 (0 = to the end)", o.EndS)
	case o.EndS > 0 && o.EndS <= o.StartS:
		return optErr("end_s", "%v must be after start_s %v", o.EndS, o.StartS)
	case o.StartS > maxSeconds || o.EndS > maxSeconds:
		return optErr("end_s", "past what simulated time holds")
	case !(o.Sample >= 0 && o.Sample <= 1):
		return optErr("sample", "%v must be in (0, 1] (0 = keep all)", o.Sample)
	case o.First < 0:
		return optErr("first", "%d must be ≥ 0 (0 = all)", o.First)
	case !finiteNonNeg(o.Rate):
		return optErr("rate", "%v must be a number > 0 (0 = the trace's own)", o.Rate)
	case !finiteNonNeg(o.Scale):
		return optErr("scale", "%v must be a number > 0 (0 = no scaling)", o.Scale)
	case o.Rate > 0 && o.Scale > 0:
		return optErr("scale", "give a target rate or a scale factor, not both")
	case o.MaxContext < 0 || o.MaxContext == 1:
		return optErr("max_context", "%d must be ≥ 2 (a prompt token and an output token), or 0 for no clipping", o.MaxContext)
	case o.Repeat < 0:
		return optErr("repeat", "%d must be ≥ 0", o.Repeat)
	}
	if o.Arrival != "" {
		if o.Scale > 0 {
			return optErr("scale", "applies to a trace's own timestamps; with arrival %q set the rate instead", o.Arrival)
		}
		if err := o.arrival().Validate(); err != nil {
			return optErr("arrival", "%v", strings.TrimPrefix(err.Error(), "workload: "))
		}
	} else if o.Burstiness != 0 {
		return optErr("burstiness", "applies to a synthetic arrival process: set arrival = \"gamma\"")
	}
	return nil
}

const maxSeconds = float64(math.MaxInt64) / 1e9

func (o Options) arrival() workload.Arrival {
	p := o.Arrival
	if p == "" {
		p = workload.ProcessPoisson
	}
	return workload.Arrival{Process: p, Rate: o.Rate, Burstiness: o.Burstiness}
}

func (o Options) readerOptions() (ReaderOptions, error) {
	f, err := ParseFormat(o.Format)
	return ReaderOptions{Format: f, SkipBadRows: o.SkipBadRows, Model: o.ModelFilter, LogType: o.LogTypeFilter, Failed: o.Failed}, err
}

// Trace is an opened replay: a workload.ErrSource over the file with the
// Options' transformations, reading lazily. Close it when done.
type Trace struct {
	opt       Options
	seed      uint64
	ropt      ReaderOptions
	format    Format
	timed     bool // the replay's times come from the file
	synthetic bool // arrivals from a synthetic process
	factor    float64

	src    workload.Source
	clip   *Clipper
	rep    *repeat
	copy   *copySource // the copy being read, when not repeating
	counts Counts      // of the copies already closed
	// firstCopy is the first counted pass, whose tallies explain an empty
	// replay.
	firstCopy *copySource
	badErr    []error
	n         int64
	err       error
}

var _ workload.ErrSource = (*Trace)(nil)

// Open validates o, opens the file and returns the replay. seed drives the
// synthetic arrivals (workload.StreamArrivals) and the sampling
// (StreamSample). A target Rate on a timed trace reads the file once
// before returning, to measure its mean rate.
func Open(o Options, seed uint64) (*Trace, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ropt, _ := o.readerOptions()
	t := &Trace{opt: o, seed: seed, ropt: ropt, factor: 1}
	probe, err := t.openCopy(false)
	if err != nil {
		return nil, err
	}
	t.format = probe.rd.Format()
	t.synthetic = o.Arrival != "" || !probe.rd.Timed()
	t.timed = !t.synthetic
	if t.synthetic && !(o.Rate > 0) {
		probe.Close()
		return nil, optErr("rate", "the trace has no timestamps (format %s): give the synthetic arrival rate in requests/s", t.format)
	}
	if !t.synthetic {
		switch {
		case o.Scale > 0:
			t.factor = o.Scale
		case o.Rate > 0:
			var n int64
			var first, last sim.Time
			var r workload.Request
			src := t.pipeline(probe)
			for src.Next(&r) {
				if n == 0 {
					first = r.Arrival
				}
				last = r.Arrival
				n++
			}
			if err := workload.SourceErr(src); err != nil {
				probe.Close()
				return nil, t.named(err)
			}
			if n == 0 {
				err := t.emptyError(probe)
				probe.Close()
				return nil, err
			}
			if n < 2 || last == first {
				probe.Close()
				return nil, fmt.Errorf("trace: %s: option \"rate\": the replay (after window, sample and first) has %d requests over %v: no mean rate to scale (use scale instead)", o.File, n, last-first)
			}
			mean := float64(n) / (last - first).Seconds()
			t.factor = o.Rate / mean
		}
	}
	if err := probe.Close(); err != nil {
		return nil, err
	}
	if o.Repeat > 1 {
		var period sim.Time
		if o.EndS > 0 {
			period = sim.FromSeconds((o.EndS - o.StartS) / t.factor)
		}
		t.rep = &repeat{n: o.Repeat, period: period, open: func() (workload.Source, error) {
			c, err := t.openCopy(true)
			if err != nil {
				return nil, err
			}
			return t.pipeline(c), nil
		}}
		t.src = t.rep
	} else {
		c, err := t.openCopy(true)
		if err != nil {
			return nil, err
		}
		t.copy = c
		t.src = t.pipeline(c)
	}
	if o.MaxContext > 0 {
		t.clip = Clip(t.src, o.MaxContext)
		t.src = t.clip
	}
	return t, nil
}

// copySource is one pass over the file: the reader and its file. Closing it
// adds its counts to the Trace's (when counted).
type copySource struct {
	t       *Trace
	f       *os.File
	rd      *Reader
	counted bool
	closed  bool
	stages  stages // set by pipeline
}

func (c *copySource) Next(r *workload.Request) bool { return c.rd.Next(r) }
func (c *copySource) Err() error                    { return c.rd.Err() }

func (c *copySource) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.counted {
		c.t.counts.add(c.rd.Counts())
		for _, e := range c.rd.BadRows() {
			if len(c.t.badErr) < maxBadKept {
				c.t.badErr = append(c.t.badErr, e)
			}
		}
		if c.t.copy == c {
			c.t.copy = nil
		}
	}
	if err := c.f.Close(); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

func (t *Trace) openCopy(counted bool) (*copySource, error) {
	f, err := os.Open(t.opt.File)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	rd, err := NewReader(f, t.opt.File, t.ropt)
	if err != nil {
		f.Close()
		return nil, err
	}
	c := &copySource{t: t, f: f, rd: rd, counted: counted}
	if counted && t.firstCopy == nil {
		t.firstCopy = c
	}
	return c, nil
}

// pipeline wraps one pass over the file with the per-copy steps: arrivals,
// window, sample, first, scale. The copySource stays reachable as an
// io.Closer through the returned source.
func (t *Trace) pipeline(c *copySource) workload.Source {
	o := t.opt
	var src workload.Source = c
	if t.synthetic {
		src, _ = Arrivals(src, t.opt.arrival(), t.seed) // validated in Open
	}
	c.stages.read = &tally{src: src}
	src = c.stages.read
	if o.StartS > 0 || o.EndS > 0 {
		var end sim.Time
		if o.EndS > 0 {
			end = sim.FromSeconds(o.EndS)
		}
		c.stages.window = &tally{src: Window(src, sim.FromSeconds(o.StartS), end)}
		src = c.stages.window
	}
	if o.Sample > 0 && o.Sample < 1 {
		c.stages.sample = &tally{src: Sample(src, o.Sample, rand.New(rand.NewPCG(t.seed, StreamSample)))}
		src = c.stages.sample
	}
	if o.First > 0 {
		src = Limit(src, int64(o.First))
	}
	if t.factor != 1 {
		src = Scale(src, t.factor)
	}
	return closerSource{src, c}
}

// closerSource gives a wrapped pass the Close of its copySource.
type closerSource struct {
	workload.Source
	c *copySource
}

func (s closerSource) Err() error   { return workload.SourceErr(s.Source) }
func (s closerSource) Close() error { return s.c.Close() }

// Next yields the next request of the replay, numbered 0, 1, 2, ...
func (t *Trace) Next(r *workload.Request) bool {
	if t.err != nil || t.src == nil {
		return false
	}
	if !t.src.Next(r) {
		t.err = t.named(workload.SourceErr(t.src))
		if t.err == nil && t.n == 0 && t.firstCopy != nil {
			t.err = t.emptyError(t.firstCopy)
		}
		if t.err == nil && t.copy != nil {
			t.err = t.copy.Close()
		}
		if t.err != nil {
			t.src = nil
		}
		return false
	}
	r.ID = t.n
	t.n++
	return true
}

// named puts the file's name into an error of a transform that does not
// know it (rate scaling or repetition past what simulated time holds);
// reader errors name it already.
func (t *Trace) named(err error) error {
	if err == nil || strings.Contains(err.Error(), t.opt.File) {
		return err
	}
	return fmt.Errorf("trace: %s: %s", t.opt.File, strings.TrimPrefix(err.Error(), "trace: "))
}

// Err returns the error that ended the replay, nil at a normal end.
func (t *Trace) Err() error { return t.err }

// Close closes the file being read. It is safe to call more than once.
func (t *Trace) Close() error {
	var err error
	if t.copy != nil {
		err = t.copy.Close()
	}
	if t.rep != nil {
		err = errors.Join(err, t.rep.Close())
	}
	return err
}

// Counts returns the reader counts summed over every pass of the replay so
// far (a repeated trace counts its rows once per copy); the measuring pass
// of a target Rate is not counted.
func (t *Trace) Counts() Counts {
	c := t.counts
	if t.copy != nil {
		c.add(t.copy.rd.Counts())
	}
	if t.rep != nil {
		if cs, ok := t.rep.cur.(closerSource); ok && !cs.c.closed {
			c.add(cs.c.rd.Counts())
		}
	}
	return c
}

// Skipped returns how many malformed rows were skipped (SkipBadRows).
func (t *Trace) Skipped() int64 { return t.Counts().Bad }

// BadRows returns the first few skipped rows' errors.
func (t *Trace) BadRows() []error {
	errs := slicesClone(t.badErr)
	if t.copy != nil {
		errs = append(errs, t.copy.rd.BadRows()...)
	}
	if len(errs) > maxBadKept {
		errs = errs[:maxBadKept]
	}
	return errs
}

func slicesClone(e []error) []error { return append([]error(nil), e...) }

// Clipped returns how many requests MaxContext clipped so far.
func (t *Trace) Clipped() int64 {
	if t.clip == nil {
		return 0
	}
	return t.clip.Clipped()
}

// Format returns the trace's format.
func (t *Trace) Format() Format { return t.format }

// Timed reports whether the replay's arrival times come from the file
// (false for synthetic arrivals).
func (t *Trace) Timed() bool { return t.timed }

// ScaleFactor returns the factor applied to the trace's rate (1: none).
func (t *Trace) ScaleFactor() float64 { return t.factor }

// String describes the replay in one line, e.g.
// "trace code.csv (azure), window [600 s, 1200 s), rate ×2.34 (target 6 req/s), clipped to 8192 tokens".
func (t *Trace) String() string {
	o := t.opt
	s := "trace " + o.File + " (" + string(t.format) + ")"
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
	if o.ModelFilter != "" || o.LogTypeFilter != "" {
		s += fmt.Sprintf(", model %q log type %q", o.ModelFilter, o.LogTypeFilter)
	}
	if t.synthetic {
		s += ", arrivals " + o.arrival().String()
	}
	if o.StartS > 0 || o.EndS > 0 {
		end := "end"
		if o.EndS > 0 {
			end = g(o.EndS) + " s"
		}
		s += ", window [" + g(o.StartS) + " s, " + end + ")"
	}
	if o.Sample > 0 && o.Sample < 1 {
		s += ", sample " + g(o.Sample)
	}
	if o.First > 0 {
		s += ", first " + strconv.Itoa(o.First)
	}
	if t.factor != 1 {
		s += ", rate ×" + strconv.FormatFloat(t.factor, 'f', 4, 64)
		if o.Rate > 0 {
			s += " (target " + g(o.Rate) + " req/s)"
		}
	}
	if o.MaxContext > 0 {
		s += ", clipped to " + strconv.Itoa(o.MaxContext) + " tokens"
	}
	if o.Repeat > 1 {
		s += ", " + strconv.Itoa(o.Repeat) + " repeats"
	}
	if o.SkipBadRows {
		s += ", skipping bad rows"
	}
	return s
}
