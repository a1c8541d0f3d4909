package trace

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/workload"
)

// A replay of zero requests is an error, not a run that measures nothing:
// the header-only file, the window past the trace's end, the sample that
// keeps none. emptyError says which step left nothing, from the tallies a
// pass keeps at each step that can drop requests (first N cannot: N ≥ 1
// of a non-empty stream; rate scaling, clipping and repetition drop none).

// tally counts the requests that pass one step of a pipeline, with the
// first and last arrival.
type tally struct {
	src         workload.Source
	n           int64
	first, last sim.Time
}

func (c *tally) Next(r *workload.Request) bool {
	if !c.src.Next(r) {
		return false
	}
	if c.n == 0 {
		c.first = r.Arrival
	}
	c.last = r.Arrival
	c.n++
	return true
}

func (c *tally) Err() error { return workload.SourceErr(c.src) }

// stages are the tallies of one pass: after reading (and synthetic
// arrivals), after the window, after sampling; nil where the step is off.
type stages struct {
	read, window, sample *tally
}

// emptyError explains why a pass over t's file yielded no request.
func (t *Trace) emptyError(c *copySource) error {
	o := t.opt
	name := o.File
	st := c.stages
	cn := c.rd.Counts()
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	switch {
	case st.read == nil || st.read.n == 0:
		if cn.Rows == 0 {
			return fmt.Errorf("trace: %s: no requests: the file has no data rows (only a header, or empty)", name)
		}
		var why []string
		if cn.Bad > 0 {
			why = append(why, fmt.Sprintf("%d malformed and skipped (skip_bad_rows)", cn.Bad))
		}
		if cn.Filtered > 0 {
			why = append(why, fmt.Sprintf("%d left out by the filter (model %q, log type %q)", cn.Filtered, o.ModelFilter, o.LogTypeFilter))
		}
		if cn.Failed > 0 {
			why = append(why, fmt.Sprintf("%d failed (zero output tokens) and dropped (failed = %q keeps them with one)", cn.Failed, FailedOne))
		}
		return fmt.Errorf("trace: %s: no requests: all %d rows were left out: %s", name, cn.Rows, strings.Join(why, ", "))
	case st.window != nil && st.window.n == 0:
		end := "the end"
		if o.EndS > 0 {
			end = g(o.EndS) + " s"
		}
		what := "the trace spans"
		if t.synthetic {
			what = "the synthetic arrivals span"
		}
		return fmt.Errorf("trace: %s: no requests in window [%s s, %s) (start_s, end_s); %s %s–%s s (%d requests)",
			name, g(o.StartS), end, what, g(st.read.first.Seconds()), g(st.read.last.Seconds()), st.read.n)
	case st.sample != nil && st.sample.n == 0:
		in := st.read.n
		if st.window != nil {
			in = st.window.n
		}
		return fmt.Errorf("trace: %s: sample %s kept none of the %d requests (option \"sample\"): raise it, or 0 to keep all", name, g(o.Sample), in)
	}
	return fmt.Errorf("trace: %s: no requests after the replay's transforms", name)
}
