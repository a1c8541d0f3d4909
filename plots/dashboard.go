package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// DashboardOptions configure Dashboard.
type DashboardOptions struct {
	// Window is the width of the time windows in seconds; 0 chooses
	// span/N with N = served requests/25 clamped to [10, 60], so that a
	// window holds about 25 completions and there are at most 60.
	Window float64
	// SLO objectives override the run's summary.json ones.
	SLO SLO
	// Bins is the number of histogram bins (default 40).
	Bins int
}

// Gauge colours of the SLO-compliance gauge.
const (
	GaugeGreen  = "green"  // attainment ≥ 95 %
	GaugeYellow = "yellow" // 90 % ≤ attainment < 95 %
	GaugeRed    = "red"    // attainment < 90 %
	GaugeNone   = "none"   // no SLO to check, or no attainment (NaN): grey, "no data"
)

// GaugeColor classifies an SLO attainment (a fraction); NaN is GaugeNone.
func GaugeColor(attainment float64) string {
	switch {
	case math.IsNaN(attainment):
		return GaugeNone
	case attainment >= 0.95:
		return GaugeGreen
	case attainment >= 0.90:
		return GaugeYellow
	}
	return GaugeRed
}

// DashboardNumbers are the numbers behind the dashboard.
//
// Time runs from the first arrival (Start) to the last event End (the
// latest of arrivals, finishes and step ends) in windows of Window
// seconds; the last window may be shorter, and rates divide by the
// window's length within [Start, End].
type DashboardNumbers struct {
	Run         string
	SLO         SLO
	Start, End  float64 // s
	Window      float64 // s
	WindowStart []float64
	// Per window, requests per second: arrivals (served or rejected),
	// completions (Throughput) and completions meeting every SLO (Goodput),
	// each counted in the window of its arrival or finish time.
	Arrivals, Throughput, Goodput []float64
	// Per window, the share of time (0–1) an instance spent in iterations
	// that carry prefill tokens (Prefill) and in iterations that only
	// decode (Decode), averaged over Instances; 1 − both is idle. A step is
	// split over the windows it overlaps.
	Prefill, Decode []float64
	// Per window, the fraction of KV blocks in use, weighted by step
	// duration over every instance's steps in the window (idle time not
	// counted, as sim/metrics' mean KV use); NaN when no step ran.
	KVUse     []float64
	Instances int
	Steps     bool // the run has steps.csv

	Requests, Served, Rejected, Met int
	// Duration runs from the first arrival to the last completion (s), as
	// sim/metrics' benchmark duration; 0 with no completion.
	Duration float64
	// ArrivalSpan runs from the first arrival to the last (s): the stretch
	// under load. Offered is Requests / ArrivalSpan and WindowGoodput is
	// Met / ArrivalSpan (every request arrives within it; each meeting the
	// SLO counts at its arrival): offered load × attainment, which the
	// drain tail after the last arrival does not dilute as Met / Duration
	// does. WindowThroughput is the completions finishing within the span
	// (WindowServed) per second of it: under overload it stays at what the
	// deployment completes, not what it is offered. All three are NaN when
	// the span is 0 (one arrival, or all at once).
	ArrivalSpan                              float64
	WindowServed                             int
	Offered, WindowThroughput, WindowGoodput float64
	// Attainment is Met/Requests: a rejected request does not meet the SLO.
	// NaN when there is no SLO to check (no summary.json and no o.SLO):
	// the gauge then says "no SLO", never green.
	Attainment float64
	// SummaryAttainment is summary.json's slo_attainment (NaN without one);
	// it equals Attainment when the SLO is the run's own.
	SummaryAttainment float64
	// Saturation is summary.json's verdict (nil without one).
	Saturation *Saturation
	Gauge      string
	TTFT, TPOT Histogram

	requests []Request
}

// Histogram is a latency histogram in ms: Counts[i] samples in
// [i·Width, (i+1)·Width), Above beyond the last bin. The range is 1.1 ×
// the larger of the p99 and the SLO objective, so the objective shows.
type Histogram struct {
	N        int
	Width    float64
	Counts   []int
	Above    int
	P50, P99 float64
}

func histogram(sorted []float64, objective float64, bins int) Histogram {
	h := Histogram{N: len(sorted), Counts: make([]int, bins), P50: math.NaN(), P99: math.NaN()}
	hi := objective
	if len(sorted) > 0 {
		h.P50, h.P99 = quantile(sorted, 0.5), quantile(sorted, 0.99)
		hi = math.Max(hi, h.P99)
	}
	if !(hi > 0) {
		hi = 1
	}
	h.Width = 1.1 * hi / float64(bins)
	for _, v := range sorted {
		i := int(v / h.Width)
		if i >= bins {
			h.Above++
			continue
		}
		h.Counts[max(i, 0)]++
	}
	return h
}

// String is a plain-text table of the numbers (the golden form).
func (n *DashboardNumbers) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dashboard %s: %s\n", n.Run, n.SLO)
	fmt.Fprintf(&b, "requests %d, served %d, rejected %d, met SLO %d, attainment %.6f (summary.json %.6f), gauge %s\n",
		n.Requests, n.Served, n.Rejected, n.Met, n.Attainment, n.SummaryAttainment, n.Gauge)
	fmt.Fprintf(&b, "time %.6f–%.6f s, duration %.6f s, window %.6f s, %d instances, steps %v\n", n.Start, n.End, n.Duration, n.Window, n.Instances, n.Steps)
	fmt.Fprintf(&b, "arrivals over %.6f s: offered %.4f req/s, goodput %.4f req/s; finished within them %d (%.4f req/s)\n",
		n.ArrivalSpan, n.Offered, n.WindowGoodput, n.WindowServed, n.WindowThroughput)
	if st := n.Saturation; st != nil {
		fmt.Fprintf(&b, "saturation (summary.json): judged %v, saturated %v, offered %.4f req/s, capacity %.4f req/s, queue grew %.4f–%.4f s to %d\n",
			st.Judged, st.Saturated, st.OfferedRate, st.CapacityRate, st.GrowthStart, st.GrowthEnd, st.OutstandingPeak)
	}
	fmt.Fprintf(&b, "  %10s %9s %9s %9s %8s %8s %8s\n", "start_s", "arrive/s", "thru/s", "good/s", "prefill", "decode", "kv_use")
	for i := range n.WindowStart {
		fmt.Fprintf(&b, "  %10.4f %9.3f %9.3f %9.3f %8.4f %8.4f %8.4f\n", n.WindowStart[i], n.Arrivals[i], n.Throughput[i], n.Goodput[i], n.Prefill[i], n.Decode[i], n.KVUse[i])
	}
	for _, h := range []struct {
		name string
		h    Histogram
	}{{"ttft", n.TTFT}, {"tpot", n.TPOT}} {
		fmt.Fprintf(&b, "%s histogram: n %d, p50 %.4f, p99 %.4f, bin width %.6f ms, above %d\n  counts %v\n", h.name, h.h.N, h.h.P50, h.h.P99, h.h.Width, h.h.Above, h.h.Counts)
	}
	return b.String()
}

// met reports whether served request q meets every set objective, exactly
// as sim/metrics.SLO.Met does, in integer nanoseconds: TTFT ≤ objective,
// (finish − first token) ≤ TPOT objective × (output − 1) for more than one
// output token, E2E ≤ objective.
func met(q *Request, slo SLO) bool {
	if !q.Served() {
		return false
	}
	ns := func(ms float64) int64 { return int64(math.Round(ms * 1e6)) }
	if slo.TTFTms > 0 && q.FirstToken-q.Arrival > ns(slo.TTFTms) {
		return false
	}
	if slo.TPOTms > 0 && q.Output > 1 && q.Finish-q.FirstToken > ns(slo.TPOTms)*int64(q.Output-1) {
		return false
	}
	if slo.E2Ems > 0 && q.Finish-q.Arrival > ns(slo.E2Ems) {
		return false
	}
	return true
}

// Dashboard draws a goodput dashboard for one run: goodput, throughput and
// arrivals over time; TTFT and TPOT histograms with the SLO and the p99;
// prefill and decode utilization over time and KV-cache use over time
// (from steps.csv; the panels say so when the run has none); and an
// SLO-compliance gauge, green at ≥ 95 % attainment, yellow at 90–95 %, red
// below. The SLO is the run's summary.json's, overridden by o.SLO; with
// neither, the gauge is grey and says "no SLO" (every request trivially
// meets no objective, which is no reason for a green gauge).
func Dashboard(run *Run, o DashboardOptions) (*Figure, *DashboardNumbers, error) {
	if len(run.Requests) == 0 {
		return nil, nil, fmt.Errorf("plots: dashboard: %s: no requests", run.Dir)
	}
	if err := o.SLO.validate(); err != nil {
		return nil, nil, fmt.Errorf("plots: %v", err)
	}
	if !(o.Window >= 0) || math.IsInf(o.Window, 0) {
		return nil, nil, fmt.Errorf("plots: dashboard: window %v s: want a positive number of seconds (0: automatic)", o.Window)
	}
	bins := o.Bins
	if bins == 0 {
		bins = 40
	}
	if bins < 1 || bins > 1000 {
		return nil, nil, fmt.Errorf("plots: dashboard: %d histogram bins: want 1 to 1000", o.Bins)
	}
	n := &DashboardNumbers{Run: run.Label, SummaryAttainment: math.NaN(), Steps: run.Steps != nil, requests: run.Requests}
	slo := o.SLO
	if run.Summary != nil {
		slo = run.Summary.SLO.Override(o.SLO)
		n.SummaryAttainment = run.Summary.Attainment
		n.Saturation = run.Summary.Saturation
	}
	n.SLO = slo

	// Time span.
	start, end := int64(math.MaxInt64), int64(0)
	for i := range run.Requests {
		q := &run.Requests[i]
		start = min(start, q.Arrival)
		end = max(end, q.Arrival, q.Finish)
	}
	instances := 0
	for _, s := range run.Steps {
		end = max(end, s.Start+s.Duration)
		instances = max(instances, s.Instance+1)
	}
	if run.Summary != nil && run.Summary.Instances > 0 {
		instances = max(instances, run.Summary.Instances)
	}
	n.Instances = instances
	var ttft, tpot []float64
	for i := range run.Requests {
		q := &run.Requests[i]
		n.Requests++
		if !q.Served() {
			n.Rejected++
			continue
		}
		n.Served++
		ttft = append(ttft, q.TTFTms)
		if !math.IsNaN(q.TPOTms) {
			tpot = append(tpot, q.TPOTms)
		}
		if met(q, slo) {
			n.Met++
		}
	}
	n.Attainment = float64(n.Met) / float64(n.Requests)
	if !slo.IsSet() {
		n.Attainment = math.NaN()
	}
	if lastFinish := maxFinish(run.Requests); lastFinish >= 0 {
		n.Duration = float64(lastFinish-start) / 1e9
	}
	n.arrivalWindow()
	n.Gauge = GaugeColor(n.Attainment)

	span := float64(end-start) / 1e9
	if span <= 0 {
		span = 1e-9 // one instant: a single window of 1 ns
	}
	windows := 0
	if o.Window > 0 {
		n.Window = o.Window
		w := math.Ceil(span / o.Window) // compared as a float: a tiny window overflows int
		if w > 100000 {
			return nil, nil, fmt.Errorf("plots: dashboard: window %v s makes %.4g windows over %.3f s: at most 100000", o.Window, w, span)
		}
		windows = int(w)
	} else {
		windows = min(max(n.Served/25, 10), 60)
		n.Window = span / float64(windows)
	}
	windows = max(windows, 1)
	n.Start, n.End = float64(start)/1e9, float64(end)/1e9
	// Window k is [edges[k], edges[k+1]) in integer ns; the last ends at End.
	edges := make([]int64, windows+1)
	for k := range edges {
		edges[k] = min(start+int64(math.Round(float64(k)*n.Window*1e9)), end)
	}
	edges[windows] = end
	index := func(t int64) int {
		return min(sort.Search(windows, func(k int) bool { return edges[k+1] > t }), windows-1)
	}
	length := make([]float64, windows) // s of [Start, End] in each window
	for k := range windows {
		length[k] = float64(max(edges[k+1]-edges[k], 1)) / 1e9
		n.WindowStart = append(n.WindowStart, float64(edges[k])/1e9)
	}
	n.Arrivals = make([]float64, windows)
	n.Throughput = make([]float64, windows)
	n.Goodput = make([]float64, windows)
	for i := range run.Requests {
		q := &run.Requests[i]
		n.Arrivals[index(q.Arrival)]++
		if q.Served() {
			k := index(q.Finish)
			n.Throughput[k]++
			if met(q, slo) {
				n.Goodput[k]++
			}
		}
	}
	for k := range windows {
		n.Arrivals[k] /= length[k]
		n.Throughput[k] /= length[k]
		n.Goodput[k] /= length[k]
	}

	// Utilization and KV use from the steps.
	n.Prefill = make([]float64, windows)
	n.Decode = make([]float64, windows)
	n.KVUse = make([]float64, windows)
	busy := make([]float64, windows) // s of steps (all instances) in each window
	for _, s := range run.Steps {
		a, b := s.Start, s.Start+s.Duration
		use := 0.0
		if s.KVTotal > 0 {
			use = float64(s.KVUsed) / float64(s.KVTotal)
		}
		for k := index(a); k < windows && edges[k] < b; k++ {
			ov := float64(min(b, edges[k+1])-max(a, edges[k])) / 1e9
			if ov <= 0 {
				continue
			}
			switch {
			case s.PrefillTokens > 0:
				n.Prefill[k] += ov
			case s.Decodes > 0:
				n.Decode[k] += ov
			}
			busy[k] += ov
			n.KVUse[k] += ov * use
		}
	}
	for k := range windows {
		if instances > 0 {
			n.Prefill[k] /= length[k] * float64(instances)
			n.Decode[k] /= length[k] * float64(instances)
		}
		if busy[k] > 0 {
			n.KVUse[k] /= busy[k]
		} else {
			n.KVUse[k] = math.NaN()
		}
	}

	slices.Sort(ttft)
	slices.Sort(tpot)
	n.TTFT = histogram(ttft, slo.TTFTms, bins)
	n.TPOT = histogram(tpot, slo.TPOTms, bins)

	rates, err := n.ratesPlot()
	if err != nil {
		return nil, nil, err
	}
	hT, err := histPlot("TTFT distribution", "time to first token (ms)", n.TTFT, slo.TTFTms, seriesColors[0])
	if err != nil {
		return nil, nil, err
	}
	hP, err := histPlot("TPOT distribution", "time per output token (ms)", n.TPOT, slo.TPOTms, seriesColors[2])
	if err != nil {
		return nil, nil, err
	}
	util, err := n.utilPlot()
	if err != nil {
		return nil, nil, err
	}
	kv, err := n.kvPlot()
	if err != nil {
		return nil, nil, err
	}
	gauge := n.gaugePlot()
	title := "Goodput dashboard: " + run.Label
	if s := run.Summary; s != nil {
		title += fmt.Sprintf(" (%s on %s, TP %d, %s batching; %d instance(s))", s.Model, s.GPU, s.TP, s.Policy, max(instances, 1))
	}
	if st := n.Saturation; st != nil && st.Saturated {
		title += fmt.Sprintf(": SATURATED (offered %s req/s, capacity %s req/s)", num(st.OfferedRate), num(st.CapacityRate))
	}
	fig := &Figure{
		Title: title,
		Caption: fmt.Sprintf("Windows of %s s from the first arrival. Utilization: the share of each window an instance spends in iterations with prefill tokens, or in decode-only iterations, averaged over %d instance(s); the rest is idle.\n"+
			"KV use: the fraction of KV blocks in use, weighted by step duration over the steps in the window. A rejected request counts as missing the SLO.", num(n.Window), max(instances, 1)),
		Panels: [][]*plot.Plot{{rates, hT, hP}, {util, kv, gauge}},
	}
	return fig, n, nil
}

// arrivalWindow fills ArrivalSpan and the rates over it (after Met).
func (n *DashboardNumbers) arrivalWindow() {
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range n.requests {
		first, last = min(first, n.requests[i].Arrival), max(last, n.requests[i].Arrival)
	}
	n.ArrivalSpan = float64(last-first) / 1e9
	n.Offered, n.WindowThroughput, n.WindowGoodput = math.NaN(), math.NaN(), math.NaN()
	if !(n.ArrivalSpan > 0) {
		n.ArrivalSpan = 0
		return
	}
	for i := range n.requests {
		q := &n.requests[i]
		if q.Served() && q.Finish <= last {
			n.WindowServed++
		}
	}
	n.Offered = float64(n.Requests) / n.ArrivalSpan
	n.WindowThroughput = float64(n.WindowServed) / n.ArrivalSpan
	n.WindowGoodput = float64(n.Met) / n.ArrivalSpan
}

func maxFinish(qs []Request) int64 {
	m := int64(-1)
	for i := range qs {
		m = max(m, qs[i].Finish)
	}
	return m
}

// steps returns a post-step line's points: the window starts, then the
// end, with the last value repeated.
func (n *DashboardNumbers) steps(ys []float64, scale float64) plotter.XYs {
	xys := make(plotter.XYs, 0, len(ys)+1)
	for k, y := range ys {
		xys = append(xys, plotter.XY{X: n.WindowStart[k], Y: scale * y})
	}
	if len(ys) > 0 {
		xys = append(xys, plotter.XY{X: math.Min(n.WindowStart[len(ys)-1]+n.Window, n.End), Y: scale * ys[len(ys)-1]})
	}
	return xys
}

func (n *DashboardNumbers) ratesPlot() (*plot.Plot, error) {
	p := newPlot("Goodput and throughput over time", "simulated time (s)", "requests per second")
	p.Legend.Left = true
	for _, s := range []struct {
		name string
		ys   []float64
		col  color.Color
		dash []vg.Length
		w    float64
	}{
		{"arrivals", n.Arrivals, grey, dashes[1], 1.5},
		// Throughput drawn wide under goodput, so it shows where they agree.
		{"throughput (completions)", n.Throughput, seriesColors[0], nil, 4},
		{"goodput (completions within SLO)", n.Goodput, seriesColors[2], nil, 1.8},
	} {
		l, err := plotter.NewLine(n.steps(s.ys, 1))
		if err != nil {
			return nil, err
		}
		l.StepStyle = plotter.PostStep
		l.Color, l.Dashes, l.Width = s.col, s.dash, vg.Points(s.w)
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	if n.ArrivalSpan > 0 {
		v := vline{X: n.Start + n.ArrivalSpan, LineStyle: draw.LineStyle{Color: color.Black, Width: vg.Points(1), Dashes: dashes[2]}}
		p.Add(v)
		p.Legend.Add(fmt.Sprintf("last arrival (%s req/s completed before it)", num(n.WindowThroughput)), v)
	}
	if st := n.Saturation; st != nil && st.Saturated {
		h := hline{Y: st.CapacityRate, LineStyle: draw.LineStyle{Color: sloRed, Width: vg.Points(1.5), Dashes: dashes[1]}}
		p.Add(h)
		p.Legend.Add(fmt.Sprintf("saturated: capacity %s req/s (offered %s)", num(st.CapacityRate), num(st.OfferedRate)), h)
	}
	p.Y.Min = 0
	p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks{}, linearTicks{}
	headroom(p, 0.25)
	return p, nil
}

func histPlot(title, xLabel string, h Histogram, objective float64, col color.Color) (*plot.Plot, error) {
	p := newPlot(title, xLabel, "share of requests (%)")
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max = h.Width * float64(len(h.Counts))
	p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks{}, linearTicks{}
	if h.N == 0 {
		p.Y.Max = 1
		p.Add(newNote(0.5, 0.5, "no samples", draw.XCenter, draw.YCenter))
		return p, nil
	}
	hist := &plotter.Histogram{Width: h.Width, FillColor: col, LineStyle: draw.LineStyle{Color: color.White, Width: vg.Points(0.5)}}
	for i, c := range h.Counts {
		hist.Bins = append(hist.Bins, plotter.HistogramBin{Min: float64(i) * h.Width, Max: float64(i+1) * h.Width, Weight: 100 * float64(c) / float64(h.N)})
	}
	p.Add(hist)
	p.Legend.Add(fmt.Sprintf("%d requests", h.N), hist)
	p99 := vline{X: h.P99, LineStyle: draw.LineStyle{Color: color.Black, Width: vg.Points(1.5), Dashes: dashes[2]}, Top: 0.7}
	p.Add(p99)
	p.Legend.Add(fmt.Sprintf("p99 %s ms (p50 %s)", num(h.P99), num(h.P50)), p99)
	if objective > 0 {
		v := vline{X: objective, LineStyle: draw.LineStyle{Color: sloRed, Width: vg.Points(2), Dashes: dashes[1]}, Top: 0.7}
		p.Add(v)
		p.Legend.Add(fmt.Sprintf("SLO %s ms", num(objective)), v)
	}
	if h.Above > 0 {
		p.Legend.Add(fmt.Sprintf("%d above %s ms, not shown", h.Above, num(p.X.Max)))
	}
	headroom(p, 0.3)
	return p, nil
}

func (n *DashboardNumbers) utilPlot() (*plot.Plot, error) {
	p := newPlot("Prefill and decode utilization over time", "simulated time (s)", "share of time (%), mean over instances")
	p.Y.Min, p.Y.Max = 0, 100
	p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks{}, linearTicks{}
	p.X.Min, p.X.Max = n.Start, n.End
	if !n.Steps {
		p.Add(newNote(0.5, 0.5, "no steps.csv in this run", draw.XCenter, draw.YCenter))
		return p, nil
	}
	total := make([]float64, len(n.Prefill))
	for k := range total {
		total[k] = n.Prefill[k] + n.Decode[k]
	}
	decodeCol := color.RGBA{R: 86, G: 180, B: 233, A: 255}
	prefillCol := color.RGBA{R: 213, G: 94, B: 0, A: 255}
	dl, err := plotter.NewLine(n.steps(total, 100))
	if err != nil {
		return nil, err
	}
	dl.StepStyle, dl.FillColor, dl.Color, dl.Width = plotter.PostStep, decodeCol, decodeCol, vg.Points(1)
	pl, err := plotter.NewLine(n.steps(n.Prefill, 100))
	if err != nil {
		return nil, err
	}
	pl.StepStyle, pl.FillColor, pl.Color, pl.Width = plotter.PostStep, prefillCol, prefillCol, vg.Points(1)
	p.Add(dl, pl)
	p.Legend.Add("decode-only iterations", dl)
	p.Legend.Add("iterations with prefill tokens", pl)
	p.Y.Max = 135 // room for the legend above 100 %
	p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}}
	return p, nil
}

func (n *DashboardNumbers) kvPlot() (*plot.Plot, error) {
	p := newPlot("KV-cache use over time", "simulated time (s)", "KV blocks in use (%)")
	p.Y.Min = 0
	p.X.Tick.Marker, p.Y.Tick.Marker = linearTicks{}, linearTicks{}
	p.X.Min, p.X.Max = n.Start, n.End
	if !n.Steps {
		p.Y.Max = 100
		p.Add(newNote(0.5, 0.5, "no steps.csv in this run", draw.XCenter, draw.YCenter))
		return p, nil
	}
	// One line per run of windows with steps (a window without steps, NaN,
	// breaks it).
	first := true
	for k := 0; k < len(n.KVUse); {
		if math.IsNaN(n.KVUse[k]) {
			k++
			continue
		}
		var seg plotter.XYs
		for ; k < len(n.KVUse) && !math.IsNaN(n.KVUse[k]); k++ {
			seg = append(seg, plotter.XY{X: n.WindowStart[k], Y: 100 * n.KVUse[k]})
		}
		seg = append(seg, plotter.XY{X: math.Min(n.WindowStart[k-1]+n.Window, n.End), Y: seg[len(seg)-1].Y})
		l, err := plotter.NewLine(seg)
		if err != nil {
			return nil, err
		}
		l.StepStyle, l.Color, l.Width = plotter.PostStep, seriesColors[3], vg.Points(2)
		l.FillColor = color.RGBA{R: 230, G: 200, B: 218, A: 255}
		p.Add(l)
		if first {
			p.Legend.Add("mean KV use while running", l)
			first = false
		}
	}
	if p.Y.Max < 1 {
		p.Y.Max = 1
	}
	headroom(p, 0.2)
	return p, nil
}
