package plan

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/servesim/servesim/experiments/internal/parallel"
	"github.com/servesim/servesim/experiments/scenario"
)

// PlaceOptions configure a placement search.
type PlaceOptions struct {
	GPUs int   // GPU budget
	TPs  []int // tensor-parallel degrees to try (default 1, 2, 4, 8)
	// PPs are the pipeline degrees to try with each TP for colocated
	// candidates (default 1: no pipeline); disaggregated ones have none.
	PPs []int
	// DPs are the data-parallel degrees (default 1) and EP the expert
	// parallelism (EPAuto, EPOn, EPOff; default EPOff: each DP or EP
	// layout adds a rate search per colocated split) of colocated
	// candidates; with EP and DPs unset an MoE model's DP degrees are
	// PlanOptions'.
	DPs       []int
	EP        string
	Target    float64 // SLO attainment target (default 0.9, DistServe's)
	Colocated bool    // search colocated deployments
	Disagg    bool    // search disaggregated ones
	Precision float64 // relative precision of the rate search (default 0.02)
	Workers   int     // parallel candidates (default all cores)
	MaxRate   float64 // upper bound of the rate search, req/s (default 1e4)
	// MinDuration is the shortest stretch of arrivals each simulation runs
	// (s, default 60): at a high rate a fixed count of requests arrives in a
	// burst that ends before queues reach their steady state.
	MinDuration float64
	// OnProgress, when set, is called after each candidate deployment is
	// searched, with the candidates done and their total; the calls are
	// serialized (never two at once) and do not affect the result.
	OnProgress func(done, total int)
	// NoPrune turns off the analytic capacity bound (see capacityBound):
	// every candidate is searched by simulation alone.
	NoPrune bool
	// Context, when set, stops the search when cancelled: no new
	// candidate starts, the simulations in flight stop (RunContext), and
	// Place returns an error wrapping ctx.Err().
	Context context.Context

	cache *probeCache    // memo of simulated points (nil: none)
	bound *capacityBound // the candidate's bound (nil: none)
}

// MaxPlaceGPUs bounds a placement search's GPU budget: the search lists
// every colocated and xPyD split of the budget (about budget² / 2 at TP 1
// alone, 3.5 × that over TPs 1, 2, 4, 8: 115,000 at 256 GPUs, each a rate
// search of several simulations), so a budget past this is out of reach.
const MaxPlaceGPUs = 256

// Placement is one searched deployment and its max goodput rate.
type Placement struct {
	Name         string // e.g. "colocated 2×TP4" or "disagg 1×TP2 + 3×TP2"
	Disagg       bool
	Replicas, TP int  // colocated instances, or the prefill pool
	PP           int  // pipeline stages per colocated instance (0 or 1: none)
	DP           int  // data-parallel ranks per colocated instance (0 or 1: none); GPUs = Replicas × DP × TP × PP
	EP           bool // experts sharded over the DP × TP GPUs
	DecodeRep    int  // decode pool (disaggregated)
	DecodeTP     int
	GPUs         int
	Rate         float64 // max goodput rate: highest arrival rate with attainment ≥ target (req/s)
	PerGPU       float64 // Rate / GPUs
	Attainment   float64 // at Rate
	CostPerMTok  float64 // $ per million output tokens at Rate
	Err          string  // why the deployment cannot serve at all (does not fit, ...)
}

// Place searches deployments of the base scenario's model, workload and
// SLOs within a GPU budget for the highest goodput per GPU (DistServe's
// definition, DESIGN §2): for each candidate, the highest arrival rate at
// which the attainment target holds, found by doubling then bisection.
// Each rate is one simulation of arrivals over max(MinDuration, the base's
// requests / rate) seconds, so that queues reach their steady state.
func Place(base scenario.Scenario, o PlaceOptions) ([]Placement, error) {
	if o.GPUs <= 0 || o.GPUs > MaxPlaceGPUs {
		return nil, fmt.Errorf("plan: place: GPU budget %d: must be in [1, %d]", o.GPUs, MaxPlaceGPUs)
	}
	if len(o.TPs) == 0 {
		o.TPs = []int{1, 2, 4, 8}
	}
	if o.Target == 0 {
		o.Target = 0.9
	}
	if !(o.Target > 0 && o.Target <= 1) {
		return nil, fmt.Errorf("plan: place: attainment target %g: must be in (0, 1]", o.Target)
	}
	if o.Precision == 0 {
		o.Precision = 0.02
	}
	if o.MaxRate == 0 {
		o.MaxRate = 1e4
	}
	if o.MinDuration == 0 {
		o.MinDuration = 60
	}
	if !o.Colocated && !o.Disagg {
		o.Colocated, o.Disagg = true, true
	}
	if err := searchPP(base, "plan: place"); err != nil {
		return nil, err
	}
	if !sloSet(base.SLO) {
		return nil, fmt.Errorf("plan: place: the scenario sets no SLO (slo.ttft_ms, slo.tpot_ms or slo.e2e_ms): goodput needs one")
	}
	m, err := base.LookupModel()
	if err != nil {
		return nil, err
	}
	sp, err := checkLayoutSpace(o.TPs, o.PPs, o.DPs, o.EP, EPOff, m, "plan: place")
	if err != nil {
		return nil, err
	}
	node := 8
	if sp.nodeDP {
		gc, err := base.GPUCatalog()
		if err != nil {
			return nil, err
		}
		g, err := gc.Get(base.GPU)
		if err != nil {
			return nil, fmt.Errorf("plan: place: %w (field \"gpu\")", err)
		}
		if node, err = base.NodeGPUs(g); err != nil {
			return nil, err
		}
	}
	if base.Workload.Rate == 0 {
		base.Workload.Rate = 1 // any valid rate: the search sets it
	}
	var cands []Placement
	for _, l := range sp.layouts(m.IsMoE(), node) {
		tp := l.TP
		if o.Colocated {
			if l.skip != "" {
				cands = append(cands, Placement{Name: "colocated " + l.String(), TP: tp, PP: l.PP, DP: l.DP, EP: l.EP, GPUs: l.GPUs(), Err: l.skip})
			}
			for r := 1; l.skip == "" && r*l.GPUs() <= o.GPUs; r++ {
				cands = append(cands, Placement{Name: fmt.Sprintf("colocated %d×%s", r, l.Layout), Replicas: r, TP: tp, PP: l.PP, DP: l.DP, EP: l.EP, GPUs: r * l.GPUs()})
			}
		}
		// Disaggregated pools are searched at PP 1, DP 1 without EP (a
		// scenario runs them with stages, DP ranks and EP, but the search
		// sizes the two pools' replicas only).
		if o.Disagg && l.PP == 1 && l.DP == 1 && !l.EP {
			for _, dtp := range o.TPs {
				for p := 1; p*tp+dtp <= o.GPUs; p++ {
					for d := 1; p*tp+d*dtp <= o.GPUs; d++ {
						cands = append(cands, Placement{Name: fmt.Sprintf("disagg %d×TP%d + %d×TP%d", p, tp, d, dtp), Disagg: true,
							Replicas: p, TP: tp, DecodeRep: d, DecodeTP: dtp, GPUs: p*tp + d*dtp})
					}
				}
			}
		}
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("plan: place: no deployment fits %d GPUs with TP %v%s: each needs more GPUs (a disaggregated one at least two instances)", o.GPUs, o.TPs, ppList(sp.PPs))
	}
	if o.cache == nil {
		o.cache = newProbeCache(o.NoPrune)
	}
	ctx := o.ctx()
	parallel.Run(len(cands), o.Workers, func(i int) {
		if ctx.Err() != nil {
			return
		}
		if cands[i].Err != "" {
			return // a layout skipped with its reason
		}
		co := o
		if !o.NoPrune && !unbounded(cands[i].layout()) {
			// At the search's top rate each run is MinDuration long, the
			// shortest any is: the bound's rate pruning checks against it.
			p, err := scenarioFor(base, &cands[i], o.MaxRate, o).Resolve()
			if err == nil {
				b := boundOf(p)
				if why := b.missesUnloaded(base.SLO); why != "" {
					cands[i].Err = why
					return
				}
				co.bound = &b
			}
		}
		searchRate(base, &cands[i], co)
	}, o.OnProgress)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("plan: place: interrupted (%w)", err)
	}
	if err := noneServes(cands); err != nil {
		return nil, err
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := &cands[i], &cands[j]
		return rankLess(a.Err, b.Err, -a.PerGPU, -b.PerGPU, a.GPUs, b.GPUs)
	})
	return cands, nil
}

// noneServes is an error when every candidate failed, listing the distinct
// reasons (at most five), so that an empty ranking never passes for a result.
func noneServes(cands []Placement) error {
	why, none := failReasons(cands, func(c *Placement) (string, string) { return c.Err, c.Name })
	if !none {
		return nil
	}
	return fmt.Errorf("plan: place: none of the %d deployments can serve:\n  %s", len(cands), strings.Join(why, "\n  "))
}

// failReasons returns the distinct errors of cands (at most five), each
// after its candidate's label (of returns the error, "" for none, and the
// label), and whether every candidate failed (true for none at all).
func failReasons[T any](cands []T, of func(*T) (err, label string)) (why []string, allFailed bool) {
	seen := map[string]bool{}
	for i := range cands {
		err, label := of(&cands[i])
		if err == "" {
			return nil, false
		}
		if !seen[err] && len(why) < 5 {
			seen[err] = true
			why = append(why, label+": "+err)
		}
	}
	return why, true
}

// rankLess orders two searched deployments the way place's and plan's
// rankings do: one that serves (err "") before one that failed, then the
// lower key (pass a negated key to rank the higher first), then the fewer
// GPUs.
func rankLess(aErr, bErr string, aKey, bKey float64, aGPUs, bGPUs int) bool {
	if (aErr == "") != (bErr == "") {
		return aErr == ""
	}
	if aKey != bKey {
		return aKey < bKey
	}
	return aGPUs < bGPUs
}

// ctx is o.Context, or the background context when unset.
func (o PlaceOptions) ctx() context.Context { return orBackground(o.Context) }

// orBackground is ctx, or the background context when ctx is nil.
func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// sloSet reports whether s sets any target.
func sloSet(s scenario.SLO) bool { return s.TTFTms > 0 || s.TPOTms > 0 || s.E2Ems > 0 }

// scenarioFor returns the base scenario deployed as c at rate.
func scenarioFor(base scenario.Scenario, c *Placement, rate float64, o PlaceOptions) scenario.Scenario {
	s := base
	s.Workload.Rate = rate
	if t := base.Workload.Trace; t != nil {
		// A trace replays at the searched mean rate, keeping its burst
		// shape (or, for a length-only trace, with synthetic arrivals at it).
		tc := *t
		tc.Rate, tc.Scale = rate, 0
		s.Workload.Trace = &tc
	} else {
		s.Workload.DurationS = max(o.MinDuration, float64(base.Workload.Requests)/rate)
		s.Workload.Requests = 0
	}
	s.TP, s.Replicas = c.TP, c.Replicas
	s.PP = 0 // the base has none (searchPP); 0 leaves the TOML form as before pipelines
	if c.PP > 1 {
		s.PP = c.PP
	}
	s.DP, s.ExpertParallel = 0, c.EP // the base has none (searchPP); 0 leaves the TOML form as before
	if c.DP > 1 {
		s.DP = c.DP
	}
	s.Disagg.DecodeReplicas = 0
	if c.Disagg {
		s.Disagg.DecodeReplicas, s.Disagg.DecodeTP = c.DecodeRep, c.DecodeTP
	}
	return s
}

// attainment runs c at rate and returns the SLO attainment and the report
// (once per point with the memo).
func attainment(base scenario.Scenario, c *Placement, rate float64, o PlaceOptions) (float64, *scenario.Report, error) {
	rep, err := o.cache.get(probeKey("place", base, c, rate), func() (*scenario.Report, error) {
		p, err := scenarioFor(base, c, rate, o).Resolve()
		if err != nil {
			return nil, err
		}
		return scenario.RunContext(o.ctx(), p, "")
	})
	if err != nil {
		return 0, nil, err
	}
	return rep.Summary.Attainment, rep, nil
}

// missesPrefix starts the error of a deployment that misses the target at
// every rate tried: its unloaded latency misses the SLOs, so neither a
// higher rate nor more replicas of it can help.
const missesPrefix = "misses the target even at"

// searchRate finds c's max goodput rate: it doubles the rate from 0.25
// req/s per GPU while the target holds, then bisects to o.Precision. When
// even the first rate misses, the bisection goes down only to 1/64 of it
// (a lower rate only stretches the simulated time): below that c gets an
// error starting with missesPrefix.
func searchRate(base scenario.Scenario, c *Placement, o PlaceOptions) {
	lo, hi := 0.0, 0.25*float64(c.GPUs)
	floor := hi / 64
	var best *scenario.Report
	bestAtt := 0.0
	for {
		if o.bound != nil && o.bound.cannotServe(hi) {
			break // above twice the analytic capacity bound: misses, unsimulated
		}
		att, rep, err := attainment(base, c, hi, o)
		if err != nil {
			c.Err = firstLine(err.Error())
			return
		}
		if att < o.Target {
			break
		}
		lo, best, bestAtt = hi, rep, att
		if hi *= 2; hi > o.MaxRate {
			c.Err = fmt.Sprintf("meets the target beyond %g req/s", o.MaxRate)
			return
		}
	}
	for hi-lo > o.Precision*hi {
		if lo == 0 && hi < floor {
			c.Err = fmt.Sprintf("%s %.3g req/s (%.0f %% of requests must meet every SLO; they miss it unloaded)", missesPrefix, hi, 100*o.Target)
			return
		}
		mid := (lo + hi) / 2
		if o.bound != nil && o.bound.cannotServe(mid) {
			hi = mid
			continue
		}
		att, rep, err := attainment(base, c, mid, o)
		if err != nil {
			c.Err = firstLine(err.Error())
			return
		}
		if att >= o.Target {
			lo, best, bestAtt = mid, rep, att
		} else {
			hi = mid
		}
	}
	c.Rate, c.PerGPU, c.Attainment = lo, lo/float64(c.GPUs), bestAtt
	if best == nil {
		return // not even the lowest rate tried meets the target: goodput 0
	}
	c.CostPerMTok = scenario.PerMillion(best.CostPerHour(), best.SteadyOutputThroughput())
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// WritePlacements writes the ranked table as Markdown.
func WritePlacements(w io.Writer, ps []Placement, target float64) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| rank | deployment | GPUs | max goodput rate (req/s) | per GPU | attainment | $/M output tokens |\n|---|---|---|---|---|---|---|\n")
	for i, p := range ps {
		if p.Err != "" {
			fmt.Fprintf(&b, "| - | %s | %d | — | — | — | %s |\n", p.Name, p.GPUs, p.Err)
			continue
		}
		cost := "—"
		if p.CostPerMTok > 0 && !math.IsInf(p.CostPerMTok, 0) {
			cost = fmt.Sprintf("%.3f", p.CostPerMTok)
		}
		fmt.Fprintf(&b, "| %d | %s | %d | %.2f | %.3f | %.3f | %s |\n", i+1, p.Name, p.GPUs, p.Rate, p.PerGPU, p.Attainment, cost)
	}
	fmt.Fprintf(&b, "\nMax goodput rate: the highest Poisson rate at which ≥ %.0f %% of requests meet every SLO (rejections count as misses).\n", 100*target)
	_, err := io.WriteString(w, b.String())
	return err
}

// WritePlacementsCSV writes the ranked table as CSV.
func WritePlacementsCSV(w io.Writer, ps []Placement) error {
	var b strings.Builder
	b.WriteString("deployment,disaggregated,replicas,tp,pp,dp,ep,decode_replicas,decode_tp,gpus,max_goodput_rate,per_gpu,attainment,cost_per_m_output_tokens,error\n")
	for _, p := range ps {
		fmt.Fprintf(&b, "%s,%v,%d,%d,%d,%d,%d,%d,%d,%d,%.4f,%.4f,%.4f,%.4f,%s\n", p.Name, p.Disagg, p.Replicas, p.TP, max(1, p.PP), max(1, p.DP), epSize(p.layout()), p.DecodeRep, p.DecodeTP, p.GPUs,
			p.Rate, p.PerGPU, p.Attainment, p.CostPerMTok, scenario.CSVField(p.Err))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
