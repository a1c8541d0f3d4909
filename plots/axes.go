package plots

// Axes: number and tick labels, linear and log tick markers, when an axis
// goes log, and the headroom a legend needs above the data.

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// num formats a number for text: up to 3 significant decimals, no
// exponent below 1e9, thousands unseparated.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.Abs(v) >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 1:
		return strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(v, 'f', 2, 64), "0"), ".")
	case v == 0:
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// tickLabel formats an axis tick: thousands separated by commas.
func tickLabel(v float64) string {
	if math.Abs(v) < 1000 || math.Abs(v) >= 1e15 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if len(s) > 8 {
			s = strconv.FormatFloat(v, 'g', 4, 64)
		}
		return s
	}
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// linearTicks labels about six ticks at multiples of 1, 2 or 5 times a
// power of ten (formatted by tickLabel), with unlabelled minor ticks
// between them.
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step, minor := 10*mag, 5
	for _, m := range []struct {
		f float64
		n int
	}{{1, 5}, {2, 4}, {5, 5}} {
		if m.f*mag >= raw {
			step, minor = m.f*mag, m.n
			break
		}
	}
	sub := step / float64(minor)
	var ts []plot.Tick
	for k := math.Ceil(lo / sub); k*sub <= hi*(1+1e-12)+1e-300; k++ {
		v := k * sub
		if math.Abs(v) < sub*1e-9 {
			v = 0
		}
		t := plot.Tick{Value: v}
		if int64(k)%int64(minor) == 0 {
			t.Label = tickLabel(round12(v))
		}
		ts = append(ts, t)
		if len(ts) > 1000 {
			break
		}
	}
	return ts
}

// round12 rounds to 12 significant digits, removing float noise such as
// 0.30000000000000004.
func round12(v float64) float64 {
	if v == 0 {
		return 0
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	return f
}

// logTicks marks 1, 2 and 5 times each power of ten (labelled) when the
// range spans at most three decades, else each power of ten; minor ticks at
// the other multiples.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi >= lo) {
		return nil
	}
	major := map[int]bool{1: true}
	if math.Log10(hi/lo) <= 3 {
		major[2], major[5] = true, true
	}
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		p := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * p
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if major[m] {
				t.Label = tickLabel(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// valueTicks labels exactly the given values (e.g. a sweep's batch sizes).
func valueTicks(vs []float64) plot.ConstantTicks {
	ts := make(plot.ConstantTicks, len(vs))
	for i, v := range vs {
		ts[i] = plot.Tick{Value: v, Label: tickLabel(v)}
	}
	return ts
}

// useLog puts axis a on a log scale when every value is positive and they
// span more than a factor spread; it reports whether it did.
func useLog(a *plot.Axis, vs []float64, spread float64) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if math.IsNaN(v) {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if !(lo > 0) || hi/lo <= spread {
		a.Tick.Marker = linearTicks{}
		return false
	}
	a.Scale = plot.LogScale{}
	a.Tick.Marker = logTicks{}
	return true
}

// headroom raises the y axis maximum so the top share frac of the data
// area is free for the legend. It first settles the axes (settleAxes).
func headroom(p *plot.Plot, frac float64) {
	settleAxes(p)
	if !finite(p.Y.Min) || !finite(p.Y.Max) || !(p.Y.Max > p.Y.Min) {
		return
	}
	if isLog(&p.Y) {
		p.Y.Max *= math.Pow(p.Y.Max/p.Y.Min, frac/(1-frac))
		return
	}
	p.Y.Max += (p.Y.Max - p.Y.Min) * frac / (1 - frac)
}

// legendRoom is the share of a panel's height to keep free above the data
// for a legend of n entries in the top half of a 1600×1000 figure (a data
// area about 280 points high; an entry about 14 points).
func legendRoom(n int) float64 {
	return math.Min(0.6, 0.05+float64(n)*14/280)
}

// settleAxes turns a log axis back to linear when its range is not
// positive (no positive data reached it), where gonum's log scale would
// panic.
func settleAxes(p *plot.Plot) {
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		if isLog(a) && !(a.Min > 0 && a.Max >= a.Min && finite(a.Max)) {
			a.Scale, a.Tick.Marker = plot.LinearScale{}, linearTicks{}
		}
	}
}
