package validate

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
)

// ttftBiasRow is one held-out suite row's signed mean-TTFT error beside
// what could carry it: the prompt length (a per-prompt-token front end,
// tokenization, would scale with it, the same µs a token on every model)
// and the simulated prefill (first scheduling → first token, the prefill
// kernels' part, which differs by model at one length).
type ttftBiasRow struct {
	name, gpu, workload string
	tp                  int
	prompt              float64 // mean prompt tokens, simulated (the profile's lengths)
	real, sim           float64 // mean TTFT, ms
	tpotErr             float64 // signed TPOT mean error
	prefill             float64 // simulated mean first token − scheduled, ms
}

func (r ttftBiasRow) err() float64      { return (r.sim - r.real) / r.real }
func (r ttftBiasRow) deltaMs() float64  { return r.sim - r.real }
func (r ttftBiasRow) usPerTok() float64 { return r.deltaMs() * 1e3 / r.prompt }

// suiteTTFTBias collects the held-out, non-overlapping rows of the suite.
func suiteTTFTBias(t *testing.T) []ttftBiasRow {
	_, per := runSuite(t)
	var vs []*Validation
	for _, g := range per {
		vs = append(vs, g...)
	}
	var rows []ttftBiasRow
	for _, v := range HeldOut(vs) {
		if v.Overlap || v.Plan == nil || len(v.SimRecs) == 0 {
			continue
		}
		r := ttftBiasRow{name: suiteRowName(v), gpu: v.Plan.GPU.Name, workload: v.Workload, tp: v.Plan.Parallel.TP, real: math.NaN(), sim: math.NaN()}
		for _, m := range v.Metrics {
			switch m.Metric {
			case "ttft_mean":
				r.real, r.sim = m.Real, m.Sim
			case "tpot_mean":
				r.tpotErr = m.Err()
			}
		}
		var p, pf float64
		for _, rec := range v.SimRecs {
			p += float64(rec.PromptTokens)
			pf += (rec.FirstToken - rec.Scheduled).Seconds() * 1e3
		}
		r.prompt, r.prefill = p/float64(len(v.SimRecs)), pf/float64(len(v.SimRecs))
		if !math.IsNaN(r.real) && r.real > 0 {
			rows = append(rows, r)
		}
	}
	return rows
}

// suiteRowName is the run and, for a stage row, its stage.
func suiteRowName(v *Validation) string {
	if v.Run.Stage != nil {
		return ShortRunName(v.Run.Stage.Experiment) + "/" + v.Run.Stage.Scope
	}
	return v.Run.Name
}

func pearson(xs, ys []float64) float64 {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i]/n, my+ys[i]/n
	}
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy, sxx, syy = sxy+dx*dy, sxx+dx*dx, syy+dy*dy
	}
	return sxy / math.Sqrt(sxx*syy)
}

func signedMedian(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// TestSuiteTTFTBias prints the held-out rows' signed mean-TTFT error by
// GPU and by prompt length, and per row the error in ms, per prompt token
// and as a share of the simulated prefill (docs/validation.md: "TTFT bias
// by GPU and prompt length"). It checks the findings docs/validation.md states,
// so that a change that moves them fails here until docs/validation.md says so:
//   - the H100 rows on prompts under 700 tokens are within ±10 % (signed
//     median), those of 700 tokens and more are below −10 %;
//   - the error per prompt token is not one constant across models at
//     the longest prompts (reasoning-lite, 1,034 tokens): the three
//     models' µs/token differ by more than 2×, so a per-prompt-token
//     front end (one µs/token for the host) cannot carry it.
func TestSuiteTTFTBias(t *testing.T) {
	rows := suiteTTFTBias(t)
	if len(rows) < 20 {
		t.Fatalf("%d held-out rows with a mean TTFT, want ≥ 20", len(rows))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-52s %-12s %2s %-14s %6s %8s %8s %8s %7s %8s %8s %7s %7s\n", "row", "gpu", "tp", "workload", "prompt", "real ms", "sim ms", "Δ ms", "err", "µs/tok", "prefill", "Δ/pref", "TPOT")
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].prompt < rows[j].prompt })
	for _, r := range rows {
		fmt.Fprintf(&b, "%-52s %-12s %2d %-14s %6.0f %8.1f %8.1f %+8.1f %+6.1f%% %+8.1f %8.1f %+6.2f %+6.1f%%\n",
			r.name, r.gpu, r.tp, r.workload, r.prompt, r.real, r.sim, r.deltaMs(), 100*r.err(), r.usPerTok(), r.prefill, r.deltaMs()/r.prefill, 100*r.tpotErr)
	}
	group := func(title string, key func(ttftBiasRow) string) map[string]float64 {
		errs := map[string][]float64{}
		for _, r := range rows {
			errs[key(r)] = append(errs[key(r)], r.err())
		}
		keys := make([]string, 0, len(errs))
		for k := range errs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "signed median TTFT mean error, held out, %s:\n", title)
		med := map[string]float64{}
		for _, k := range keys {
			med[k] = signedMedian(errs[k])
			fmt.Fprintf(&b, "  %-28s %+6.1f%% (%d rows)\n", k, 100*med[k], len(errs[k]))
		}
		return med
	}
	group("by GPU", func(r ttftBiasRow) string { return r.gpu })
	bucket := func(r ttftBiasRow) string {
		switch {
		case r.gpu != "h100":
			return "sharegpt (RTX, queue-bound)"
		case r.prompt < 700:
			return "h100, prompt < 700"
		}
		return "h100, prompt ≥ 700"
	}
	med := group("by prompt length", bucket)
	// Does the TTFT error follow the step times? The Pearson correlation
	// of the signed TTFT and TPOT mean errors over the H100 rows, the
	// saturated Llama-2-7B general stage_1 (+327 %) left out.
	var xs, ys []float64
	for _, r := range rows {
		if r.gpu == "h100" && math.Abs(r.err()) < 1 && !math.IsNaN(r.tpotErr) {
			xs, ys = append(xs, r.err()), append(ys, r.tpotErr)
		}
	}
	corr := pearson(xs, ys)
	fmt.Fprintf(&b, "correlation of signed TTFT and TPOT mean errors, H100 rows under 100 %% error (%d): %+.2f\n", len(xs), corr)
	t.Log("\n" + b.String())
	if !(corr > 0.7) {
		t.Errorf("TTFT and TPOT errors correlate %+.2f; docs/validation.md says above 0.7 (TTFT low where steps are priced too fast)", corr)
	}

	if m := med["h100, prompt < 700"]; !(math.Abs(m) <= 0.10) {
		t.Errorf("H100 rows under 700 prompt tokens: signed median %+.1f %%, docs/validation.md says within ±10 %%", 100*m)
	}
	if m := med["h100, prompt ≥ 700"]; !(m < -0.10) {
		t.Errorf("H100 rows of 700 prompt tokens and more: signed median %+.1f %%, docs/validation.md says below −10 %%", 100*m)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	n := 0
	for _, r := range rows {
		if r.workload == "reasoning-lite" {
			n++
			lo, hi = math.Min(lo, math.Abs(r.usPerTok())), math.Max(hi, math.Abs(r.usPerTok()))
		}
	}
	if n < 3 || !(hi > 2*lo) {
		t.Errorf("reasoning-lite: %d rows, |Δ| per prompt token %.1f to %.1f µs: docs/validation.md says the models differ by more than 2×", n, lo, hi)
	}
}
