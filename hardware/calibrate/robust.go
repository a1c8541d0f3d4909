package calibrate

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// This file keeps bad timings out of a fit. A trace row can be wrong in two
// ways a reader cannot see: a time that no kernel takes (a corrupt cell, a
// unit slip), and a time that is a valid number but far from every other
// timing of its class (a profiler hiccup, a row of another GPU). The first
// kind is screened before fitting, by physics; the second after a first
// fit, by the robust rule of grossOutliers, and the class is refitted once
// without them. Both are counted by reason in the profile's notes and
// source.rejected, so a fit says what it left out.

// Screening bounds. A kernel occurrence longer than maxKernelSeconds is not
// a serving kernel (Vidur's longest timing is 0.136 s, on A100; its
// longest H100 one 5.7 ms). A kernel faster than
// its roofline time at physFactor times the GPU's peaks is impossible: the
// factor leaves room for datasheet peaks below the silicon's and for
// operands resident in L2, which let Vidur's small element-wise kernels beat
// the HBM roofline (the fastest add runs at 1.32× the HBM bandwidth on A100,
// 1.26× on H100; GEMMs reach at most 0.90× the BF16 peak, all-reduces 0.81×
// the link bandwidth).
const (
	maxKernelSeconds = 10.0
	physFactor       = 4.0
)

// The outlier rule: a timing whose log residual under its class's first fit
// is farther from the residuals' median than outlierMADs median absolute
// deviations, and than a factor of 10 (ln 10), is a gross outlier. For
// normally distributed residuals 10 MADs are 6.7 σ, so the rule leaves
// ordinary scatter alone; the factor-10 floor keeps it from trimming real
// kernels that the model misses: every Vidur timing lies within 4.1× of
// its class's fit (the worst, an H100 activation kernel predicted 4.04×
// too slow), GEMM times step by up to 2× with cuBLAS's kernel choice, and a
// floor of 2× dropped 0.1–0.4 % of them. What it catches is a unit slip
// (ms for µs: 1000×), a row of another GPU or model, a corrupt cell.
const (
	outlierMADs     = 10.0
	outlierMinRatio = math.Ln10
)

// Reasons a timing is rejected, in the order they are tested and reported.
const (
	rejectNonFinite = iota // time not finite or ≤ 0
	rejectTooLong          // longer than maxKernelSeconds
	rejectFLOPs            // faster than physFactor × peak FLOP/s allows
	rejectBytes            // faster than physFactor × HBM bandwidth allows
	rejectLink             // an all-reduce faster than physFactor × link bandwidth allows
	rejectOutlier          // gross outlier of its class's first fit
	numRejectReasons
)

var rejectReasons = [numRejectReasons]string{
	"time not finite or <= 0",
	fmt.Sprintf("longer than %g s (no serving kernel takes that long)", maxKernelSeconds),
	fmt.Sprintf("faster than %g× the GPU's peak FLOP/s allows", physFactor),
	fmt.Sprintf("faster than %g× the GPU's HBM bandwidth allows", physFactor),
	fmt.Sprintf("an all-reduce faster than %g× the GPU's link bandwidth allows", physFactor),
	fmt.Sprintf("gross outlier of its class's fit (log residual off the median by > %g MADs and > 10×; the class refitted without it)", outlierMADs),
}

// rejections tallies rejected timings by reason, with the first of each.
type rejections struct {
	n     [numRejectReasons]int
	first [numRejectReasons]string
}

func (r *rejections) add(reason int, where string) {
	if r.n[reason] == 0 {
		r.first[reason] = where
	}
	r.n[reason]++
}

func (r *rejections) total() int {
	t := 0
	for _, n := range r.n {
		t += n
	}
	return t
}

// note is the profile note that lists the rejections, or "" when none.
func (r *rejections) note(of int) string {
	if r.total() == 0 {
		return ""
	}
	var parts []string
	for i, n := range r.n {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (first: %s)", n, rejectReasons[i], r.first[i]))
		}
	}
	return fmt.Sprintf("Rejected %d of %d timings: %s.", r.total(), of, strings.Join(parts, "; "))
}

// screen returns the reason sample s cannot be a measurement of its
// operator on g, or -1.
func screen(s *Sample, g *hardware.GPU) int {
	t := s.Seconds
	switch {
	case !(t > 0) || math.IsInf(t, 0):
		return rejectNonFinite
	case t > maxKernelSeconds:
		return rejectTooLong
	}
	if s.Op.Kind == models.OpAllReduce {
		if s.TP >= 2 {
			n := float64(s.TP)
			if t*physFactor < 2*(n-1)/n*s.Op.CommBytes/g.LinkBW {
				return rejectLink
			}
		}
		return -1
	}
	if t*physFactor < s.Op.FLOPs/g.PeakFLOPS(s.Op.Compute) {
		return rejectFLOPs
	}
	if t*physFactor < s.Op.Bytes/g.MemBW {
		return rejectBytes
	}
	return -1
}

// grossOutliers marks the residuals that the outlier rule rejects; it
// returns nil when there are none.
func grossOutliers(res []float64) []bool {
	if len(res) < 3 {
		return nil
	}
	s := append([]float64(nil), res...)
	sort.Float64s(s)
	med := quantile(s, 0.5)
	for i := range s {
		s[i] = math.Abs(s[i] - med)
	}
	sort.Float64s(s)
	lim := max(outlierMADs*quantile(s, 0.5), outlierMinRatio)
	var out []bool
	for i, r := range res {
		if math.Abs(r-med) > lim || math.IsNaN(r) {
			if out == nil {
				out = make([]bool, len(res))
			}
			out[i] = true
		}
	}
	return out
}

// minimum is how much data a class needs to be fitted: timings and distinct
// sizes (token counts; message sizes for the all-reduce). Twice the
// parameters in timings, and a size more than parameters that depend on
// size, so that a fit is not an interpolation of a handful of points.
type minimum struct{ timings, sizes int }

var (
	minGEMM      = minimum{minGEMMSamples, 4} // overhead, μ, η, half_tokens
	minElem      = minimum{minElemSamples, 3} // overhead, μ, row μ
	minAttention = minimum{minGEMMSamples, 3} // overhead, μ, η
	minAllReduce = minimum{4, 3}              // latency, link efficiency; per TP
)

func minFor(k models.OpKind) minimum {
	if isGEMM(k) {
		return minGEMM
	}
	return minElem
}

// enough reports whether ss meet m, counting sizes by size.
func (m minimum) enough(ss []Sample, size func(*Sample) float64) bool {
	if len(ss) < m.timings {
		return false
	}
	seen := map[float64]bool{}
	for i := range ss {
		seen[size(&ss[i])] = true
		if len(seen) >= m.sizes {
			return true
		}
	}
	return false
}

func tokenSize(s *Sample) float64 { return float64(s.Op.Tokens) }
func commSize(s *Sample) float64  { return s.Op.CommBytes }

// notEnoughError is the error of a fit without one fittable class.
func notEnoughError(tr *Trace, g *hardware.GPU, n int) error {
	src := "the trace"
	if len(tr.Sources) > 0 {
		src = strings.Join(tr.Sources, ", ")
	}
	what := fmt.Sprintf("only %d timings for gpu %q", n, g.Name)
	if n >= minElem.timings {
		what = fmt.Sprintf("%d timings for gpu %q, but no operator class has enough", n, g.Name)
	}
	return fmt.Errorf("calibrate: %s: %s; a fit needs at least %d per operator class at %d distinct token counts "+
		"(%d at %d for a GEMM or attention class; %d all_reduce timings at %d message sizes per TP)",
		src, what, minElem.timings, minElem.sizes, minGEMM.timings, minGEMM.sizes, minAllReduce.timings, minAllReduce.sizes)
}

// defaultsNote names the classes a fit left at hardware.DefaultEfficiency
// for want of data, or "".
func defaultsNote(p *Profile, counts map[models.OpKind]int) string {
	var ds []string
	for _, o := range p.Ops {
		if o.From != "default" {
			continue
		}
		k, _ := models.ParseOpKind(o.Op)
		ds = append(ds, fmt.Sprintf("%s (%d)", o.Op, counts[k]))
	}
	if len(ds) == 0 {
		return ""
	}
	return fmt.Sprintf("Not fitted, too few usable timings (count in parentheses; a class needs %d at %d token counts, a GEMM %d at %d): %s: "+
		"priced by hardware.DefaultEfficiency (from = \"default\"), an assumption, not a measurement.",
		minElem.timings, minElem.sizes, minGEMM.timings, minGEMM.sizes, strings.Join(ds, ", "))
}

// FitWarnings returns the notes of a fitted profile that say what the fit
// left out: rejected timings by reason, and classes at defaults for want
// of data (none for the built-in profiles).
func (p *Profile) FitWarnings() []string {
	var out []string
	for _, n := range p.Notes {
		if strings.HasPrefix(n, "Rejected ") || strings.HasPrefix(n, "Not fitted, ") {
			out = append(out, n)
		}
	}
	return out
}
