package calibrate

import (
	"fmt"
	"sort"

	"github.com/servesim/servesim/models"
)

// Sample is one measured kernel time: the median time of one occurrence of
// an operator on one GPU, with the operator's cost (FLOPs, HBM bytes,
// message bytes) as package models computes it for the same shape. It is
// what every reader produces and what the fit consumes.
type Sample struct {
	GPU   string // catalog GPU name ("h100")
	Model string // catalog model name ("llama-2-7b"); "" when the trace gives the cost directly
	// Name is the operator's name in the trace (Vidur's "input_layernorm",
	// "attn_pre_proj", ...; the op name in a native trace).
	Name string
	TP   int // tensor-parallel degree (GPUs in the collective for OpAllReduce)
	// Op is the cost of one occurrence: Kind, Tokens, FLOPs, Bytes,
	// CommBytes and Compute are set; Count is 1.
	Op models.Op
	// Seconds is the measured time of one occurrence.
	Seconds float64
	// Where says where the measurement came from: "FILE line N" (the first
	// line when several rows were averaged).
	Where string
}

// Trace is a set of samples with what they were read from.
type Trace struct {
	Samples []Sample
	// Sources are the files read, relative to the trace directory, sorted.
	Sources []string
	// IterOverhead is the per-iteration CPU overhead read from a
	// cpu_overheads.csv, if the trace had one.
	IterOverhead *IterOverheadFit
}

// GPUs returns the distinct GPU names of the samples, sorted.
func (t *Trace) GPUs() []string { return distinct(t.Samples, func(s *Sample) string { return s.GPU }) }

// Models returns the distinct model names of the samples, sorted ("" left out).
func (t *Trace) Models() []string {
	out := distinct(t.Samples, func(s *Sample) string { return s.Model })
	if len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	return out
}

// Filter returns the samples for which keep is true, in order.
func (t *Trace) Filter(keep func(*Sample) bool) []Sample {
	var out []Sample
	for i := range t.Samples {
		if keep(&t.Samples[i]) {
			out = append(out, t.Samples[i])
		}
	}
	return out
}

func distinct(ss []Sample, key func(*Sample) string) []string {
	seen := map[string]bool{}
	for i := range ss {
		seen[key(&ss[i])] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// LineError is the error of a malformed trace file: it names the file, the
// line (1-based; 0 when the error concerns the whole file) and the column.
type LineError struct {
	File   string
	Line   int
	Column string // column name, or ""
	Msg    string
}

// Error formats as
//
//	calibrate: mlp.csv line 7: column "num_tokens": not an integer: "x"
func (e *LineError) Error() string {
	s := "calibrate: " + e.File
	if e.Line > 0 {
		s += fmt.Sprintf(" line %d", e.Line)
	}
	s += ": "
	if e.Column != "" {
		s += fmt.Sprintf("column %q: ", e.Column)
	}
	return s + e.Msg
}

// opOf returns the operator of kind k in ops, or false.
func opOf(ops []models.Op, k models.OpKind) (models.Op, bool) {
	for _, op := range ops {
		if op.Kind == k {
			return op, true
		}
	}
	return models.Op{}, false
}
