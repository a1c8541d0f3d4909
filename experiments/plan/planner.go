package plan

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/servesim/servesim/experiments/internal/parallel"
	"github.com/servesim/servesim/experiments/scenario"
)

// PlanOptions configure the capacity planner.
type PlanOptions struct {
	Rate   float64            // target arrival rate, req/s
	GPUs   []string           // candidate GPU types (catalog names)
	Prices map[string]float64 // $/GPU-hour overrides by GPU name (default: the catalog's)
	TPs    []int              // default 1, 2, 4, 8
	// PPs are the pipeline degrees to try with each TP (default 1: no
	// pipeline). A PP > 1 layout is planned colocated only.
	PPs []int
	// DPs are the data-parallel degrees to try (default: 1 for a dense
	// model or EP off; for an MoE model 1, 2, 4, 8 with dp × tp × pp
	// within one NVLink domain), and EP whether the MoE layers' experts
	// are sharded over each layout's DP × TP GPUs: EPAuto (the default)
	// tries each layout of an MoE model with and without, EPOn with, EPOff
	// without. DP and EP layouts are planned colocated only.
	DPs []int
	EP  string
	// MaxNumSeqs are batch limits to try (default: the scenario's).
	MaxNumSeqs []int
	Target     float64 // attainment target (default 0.9)
	Disagg     bool    // also plan disaggregated deployments (same GPU type in both pools)
	MaxGPUs    int     // largest deployment considered (default 64)
	Duration   float64 // seconds of arrivals per simulation (default 60)
	Workers    int
	// NoPrune turns off the analytic capacity bound (capacityBound) and
	// the memo of simulated points: every shape is searched by simulation
	// alone (for checking that pruning changes no ranking).
	NoPrune bool
	// OnProgress, when set, is called after each shape is planned.
	OnProgress func(done, total int)
	// Context, when set, stops the planner when cancelled: no new shape
	// starts, the simulations in flight stop (RunContext), and
	// PlanCapacity returns an error wrapping ctx.Err().
	Context context.Context

	cache *probeCache
	nodes map[string]int // GPUs per NVLink domain by GPU (checkGPUs)
}

// Option is one planned deployment: the smallest of its shape that meets
// the target at the rate.
type Option struct {
	GPU              string
	Name             string // e.g. "colocated 3×TP2" or "disagg 1×TP2 + 2×TP2"
	Disagg           bool
	Replicas, TP     int
	PP               int  // pipeline stages per instance (1: none)
	DP               int  // data-parallel ranks per instance (1: none); GPUs = Replicas × DP × TP × PP
	EP               bool // experts sharded over the DP × TP GPUs (ep = DP × TP)
	MaxNumSeqs       int  // the batch limit (0: the scenario's)
	DecodeRep        int
	DecodeTP         int
	GPUs             int
	CostPerHour      float64
	Attainment       float64
	TTFTp90, TPOTp90 float64 // ms
	CostPerMOutTok   float64
	Err              string // why none of this shape meets the target
}

// PlanCapacity finds, for each GPU type, layout (DP × TP × PP, EP on or
// off) and shape (colocated, or disaggregated with equal TP in both pools
// and no pipeline, DP or EP: the search gives the pools no layouts of
// their own, so such a layout is planned colocated alone), the fewest instances that
// serve the target rate with the attainment target, and ranks them by cost
// per hour. Colocated: replicas are added one at a time from an estimate
// (the rate over one instance's max goodput rate). Disaggregated: for each
// prefill count, the fewest decode instances by bisection.
func PlanCapacity(base scenario.Scenario, o PlanOptions) ([]Option, error) {
	if !(o.Rate > 0) || math.IsInf(o.Rate, 0) {
		return nil, fmt.Errorf("plan: target rate %g: must be > 0", o.Rate)
	}
	if 1/o.Rate > scenario.MaxDurationS {
		// Checked here: each simulation's workload.rate would fail with the
		// scenario file's line of a rate the file does not hold.
		return nil, fmt.Errorf("plan: target rate %g req/s: below %g (one gap, 1/rate, is past the longest run, %g s)", o.Rate, 1/scenario.MaxDurationS, scenario.MaxDurationS)
	}
	if len(o.GPUs) == 0 {
		o.GPUs = []string{base.GPU}
	}
	if o.MaxGPUs < 0 {
		return nil, fmt.Errorf("plan: largest deployment %d GPUs: must be ≥ 1", o.MaxGPUs)
	}
	if !(o.Target >= 0 && o.Target <= 1) {
		return nil, fmt.Errorf("plan: attainment target %g: must be in (0, 1]", o.Target)
	}
	if err := o.checkGPUs(base); err != nil {
		return nil, err
	}
	if len(o.TPs) == 0 {
		o.TPs = []int{1, 2, 4, 8}
	}
	if o.Target == 0 {
		o.Target = 0.9
	}
	if o.MaxGPUs == 0 {
		o.MaxGPUs = 64
	}
	if o.Duration == 0 {
		o.Duration = 60
	}
	if err := searchPP(base, "plan"); err != nil {
		return nil, err
	}
	m, err := base.LookupModel()
	if err != nil {
		return nil, err
	}
	sp, err := checkLayoutSpace(o.TPs, o.PPs, o.DPs, o.EP, EPAuto, m, "plan")
	if err != nil {
		return nil, err
	}
	if !sloSet(base.SLO) {
		return nil, fmt.Errorf("plan: the scenario sets no SLO: the planner needs one")
	}
	type job struct {
		gpu    string
		l      layoutChoice
		seqs   int
		disagg bool
	}
	seqs := o.MaxNumSeqs
	if len(seqs) == 0 {
		seqs = []int{0}
	}
	var jobs []job
	for _, g := range o.GPUs {
		for _, l := range sp.layouts(m.IsMoE(), o.nodes[g]) {
			for _, n := range seqs {
				jobs = append(jobs, job{g, l, n, false})
				if o.Disagg && l.PP == 1 && l.DP == 1 && !l.EP {
					jobs = append(jobs, job{g, l, n, true})
				}
			}
		}
	}
	if o.cache == nil {
		o.cache = newProbeCache(o.NoPrune)
	}
	out := make([]Option, len(jobs))
	ctx := orBackground(o.Context)
	o.Context = ctx
	parallel.Run(len(jobs), o.Workers, func(i int) {
		if ctx.Err() != nil {
			return
		}
		j := jobs[i]
		b := base
		if j.seqs > 0 {
			b.Batch.MaxNumSeqs, b.Disagg.DecodeBatch.MaxNumSeqs = j.seqs, j.seqs
		}
		if j.l.skip != "" {
			out[i] = Option{GPU: j.gpu, TP: j.l.TP, PP: j.l.PP, DP: j.l.DP, EP: j.l.EP, Err: j.l.skip}
		} else {
			out[i] = planShape(b, o, j.gpu, j.l.Layout, j.disagg)
		}
		out[i].MaxNumSeqs = j.seqs
	}, o.OnProgress)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("plan: interrupted (%w)", err)
	}
	if err := noPlanServes(out, o); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		return rankLess(a.Err, b.Err, a.CostPerHour, b.CostPerHour, a.GPUs, b.GPUs)
	})
	return out, nil
}

// evaluate runs one deployment at the target rate (once per deployment
// with the memo).
func evaluate(base scenario.Scenario, o PlanOptions, c *Placement) (*scenario.Report, error) {
	return o.cache.get(probeKey("plan", base, c, o.Rate), func() (*scenario.Report, error) { return evaluateRun(base, o, c) })
}

func evaluateRun(base scenario.Scenario, o PlanOptions, c *Placement) (*scenario.Report, error) {
	p, err := scenarioFor(base, c, o.Rate, PlaceOptions{MinDuration: o.Duration}).Resolve()
	if err != nil {
		return nil, err
	}
	if price, ok := o.Prices[p.GPU.Name]; ok {
		g := *p.GPU
		g.PricePerHour = price
		p.GPU = &g
		if p.Decode != nil {
			p.Decode.GPU = &g
		}
	}
	return scenario.RunContext(orBackground(o.Context), p, "")
}

// planShape plans one GPU type, layout and shape. Disaggregated shapes
// come with l.PP = l.DP = 1 and EP off only (PlanCapacity).
func planShape(base scenario.Scenario, o PlanOptions, gpu string, l Layout, disagg bool) Option {
	tp, pp, dp, ep, g1 := l.TP, l.PP, l.DP, l.EP, l.GPUs() // g1: GPUs of one instance
	opt := Option{GPU: gpu, TP: tp, PP: pp, DP: dp, EP: ep, Disagg: disagg}
	base.GPU, base.Disagg.DecodeGPU = gpu, gpu
	meets := func(c *Placement) (*scenario.Report, bool, error) {
		rep, err := evaluate(base, o, c)
		if err != nil {
			return nil, false, err
		}
		return rep, rep.Summary.Attainment >= o.Target, nil
	}
	var best *scenario.Report
	var bestC Placement
	// bound is one instance's (colocated) or one prefill plus one decode
	// instance's (disaggregated) analytic capacity bound.
	var bound *capacityBound
	if !o.NoPrune && !unbounded(l) {
		one := Placement{Replicas: 1, TP: tp, PP: pp, GPUs: g1, Disagg: disagg, DecodeRep: 1, DecodeTP: tp}
		if p, err := scenarioFor(base, &one, o.Rate, PlaceOptions{MinDuration: o.Duration}).Resolve(); err == nil {
			b := boundOf(p)
			bound = &b
			if why := b.missesUnloaded(base.SLO); why != "" && o.Target > 0 {
				opt.Err = why
				return opt
			}
		}
	}
	if !disagg {
		// Estimate from one instance's capacity, then step; with the bound,
		// never below the replicas it proves necessary.
		rMin := 1
		if bound != nil && bound.ratePrunes {
			need := math.Ceil(o.Rate / (boundSlack * bound.Rate))
			if need*float64(g1) > float64(o.MaxGPUs) {
				opt.Err = fmt.Sprintf("one %s instance serves at most %.3g req/s (analytic bound): %g req/s needs more than %d GPUs", l, bound.Rate, o.Rate, o.MaxGPUs)
				return opt
			}
			rMin = max(1, int(need))
		}
		one := Placement{Replicas: 1, TP: tp, PP: pp, DP: dp, EP: ep, GPUs: g1}
		searchRate(base, &one, PlaceOptions{Target: o.Target, Precision: 0.05, MaxRate: o.Rate, MinDuration: o.Duration, Context: o.Context, cache: o.cache, bound: bound})
		if one.Err != "" && !strings.HasPrefix(one.Err, "meets the target beyond") {
			opt.Err = one.Err
			return opt
		}
		r := 1
		if one.Rate > 0 {
			est := math.Ceil(o.Rate / one.Rate * 0.9)
			if est*float64(g1) > float64(o.MaxGPUs) {
				// Compared as floats: a huge target rate overflows an int.
				opt.Err = fmt.Sprintf("one %s instance serves about %.3g req/s: %g req/s needs about %.3g instances, more than %d GPUs", l, one.Rate, o.Rate, est, o.MaxGPUs)
				return opt
			}
			r = max(1, int(est))
		}
		r = max(r, rMin)
		for ; r*g1 <= o.MaxGPUs; r++ {
			c := Placement{Replicas: r, TP: tp, PP: pp, DP: dp, EP: ep, GPUs: r * g1}
			rep, ok, err := meets(&c)
			if err != nil {
				opt.Err = firstLine(err.Error())
				return opt
			}
			if ok {
				// Step down while a smaller deployment still meets it.
				for r > rMin {
					d := Placement{Replicas: r - 1, TP: tp, PP: pp, DP: dp, EP: ep, GPUs: (r - 1) * g1}
					rep2, ok2, err := meets(&d)
					if err != nil || !ok2 {
						break
					}
					r, c, rep = r-1, d, rep2
				}
				best, bestC = rep, c
				break
			}
		}
	} else {
		bestCost := math.Inf(1)
		for p := 1; p*tp < o.MaxGPUs; p++ {
			if best != nil && float64(p*tp) >= float64(bestC.GPUs) {
				break // the prefill pool alone costs as much as the best found
			}
			maxD := (o.MaxGPUs - p*tp) / tp
			minD := 1 // decode instances the bound proves necessary
			if bound != nil && bound.ratePrunes {
				// bound.Rate is one prefill and one decode instance's: the
				// lower of the two pools' bounds, each scaling with its count.
				if o.Rate > boundSlack*bound.prefill*float64(p) {
					continue // the prefill pool cannot keep up: more prefill
				}
				minD = max(1, int(math.Ceil(o.Rate/(boundSlack*bound.decode))))
				if minD > maxD {
					continue
				}
			}
			c := Placement{Disagg: true, Replicas: p, TP: tp, DecodeRep: maxD, DecodeTP: tp, GPUs: p*tp + maxD*tp}
			if _, ok, err := meets(&c); err != nil {
				opt.Err = firstLine(err.Error())
				return opt
			} else if !ok {
				continue // even the most decode instances do not meet it: more prefill
			}
			lo, hi := minD-1, maxD // hi meets, lo does not (0 decode instances never does; fewer than minD cannot)
			var hiRep *scenario.Report
			for hi-lo > 1 {
				mid := (lo + hi) / 2
				m := Placement{Disagg: true, Replicas: p, TP: tp, DecodeRep: mid, DecodeTP: tp, GPUs: p*tp + mid*tp}
				rep, ok, err := meets(&m)
				if err != nil {
					opt.Err = firstLine(err.Error())
					return opt
				}
				if ok {
					hi, hiRep = mid, rep
				} else {
					lo = mid
				}
			}
			c = Placement{Disagg: true, Replicas: p, TP: tp, DecodeRep: hi, DecodeTP: tp, GPUs: p*tp + hi*tp}
			if hiRep == nil {
				var err error
				if hiRep, _, err = meets(&c); err != nil {
					opt.Err = firstLine(err.Error())
					return opt
				}
			}
			if cost := hiRep.CostPerHour(); cost < bestCost {
				best, bestC, bestCost = hiRep, c, cost
			}
		}
	}
	if best == nil {
		if opt.Err == "" {
			opt.Err = fmt.Sprintf("no deployment of up to %d GPUs meets the target", o.MaxGPUs)
		}
		return opt
	}
	opt.Replicas, opt.DecodeRep, opt.DecodeTP, opt.GPUs = bestC.Replicas, bestC.DecodeRep, bestC.DecodeTP, bestC.GPUs
	opt.Name = fmt.Sprintf("colocated %d×%s", bestC.Replicas, l)
	if disagg {
		opt.Name = fmt.Sprintf("disagg %d×TP%d + %d×TP%d", bestC.Replicas, tp, bestC.DecodeRep, tp)
	}
	if base.Batch.MaxNumSeqs > 0 {
		opt.Name += fmt.Sprintf(", max_num_seqs %d", base.Batch.MaxNumSeqs)
	}
	opt.CostPerHour = best.CostPerHour()
	opt.Attainment = best.Summary.Attainment
	opt.TTFTp90, opt.TPOTp90 = best.Summary.TTFT.P90, best.Summary.TPOT.P90
	opt.CostPerMOutTok = scenario.PerMillion(opt.CostPerHour, best.SteadyOutputThroughput())
	return opt
}

// WritePlan writes the ranked options as Markdown.
func WritePlan(w io.Writer, opts []Option, rate, target float64) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| rank | GPU | deployment | GPUs | $/hour | attainment | p90 TTFT (ms) | p90 TPOT (ms) | $/M output tokens |\n|---|---|---|---|---|---|---|---|---|\n")
	for i, o := range opts {
		if o.Err != "" {
			fmt.Fprintf(&b, "| - | %s | %s %s | — | — | — | — | — | %s |\n", o.GPU, o.shape(), o.layout(), o.Err)
			continue
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %d | %.2f | %.3f | %.1f | %.1f | %.3f |\n", i+1, o.GPU, o.Name, o.GPUs, o.CostPerHour, o.Attainment, o.TTFTp90, o.TPOTp90, o.CostPerMOutTok)
	}
	fmt.Fprintf(&b, "\nEach row: the fewest instances of that shape serving %g req/s with ≥ %.0f %% of requests meeting every SLO.\n", rate, 100*target)
	_, err := io.WriteString(w, b.String())
	return err
}

// WritePlanCSV writes the ranked options as CSV.
func WritePlanCSV(w io.Writer, opts []Option) error {
	var b strings.Builder
	b.WriteString("gpu,deployment,disaggregated,replicas,tp,pp,dp,ep,max_num_seqs,decode_replicas,decode_tp,gpus,cost_per_hour,attainment,ttft_p90_ms,tpot_p90_ms,cost_per_m_output_tokens,error\n")
	for _, o := range opts {
		fmt.Fprintf(&b, "%s,%s,%v,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.4f,%.4f,%.3f,%.3f,%.4f,%s\n", o.GPU, scenario.CSVField(o.Name), o.Disagg, o.Replicas, o.TP, max(1, o.PP), max(1, o.DP), epSize(o.layout()), o.MaxNumSeqs, o.DecodeRep, o.DecodeTP,
			o.GPUs, o.CostPerHour, o.Attainment, o.TTFTp90, o.TPOTp90, o.CostPerMOutTok, scenario.CSVField(o.Err))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// checkGPUs looks every candidate GPU up in the catalog (the built-in one
// and the scenario's gpus_file), so that a misspelt name is one error naming
// the catalog rather than a table of error rows; a GPU given twice is an
// error, and prices are keyed by the catalog's name, whatever the spelling.
func (o *PlanOptions) checkGPUs(base scenario.Scenario) error {
	gc, err := base.GPUCatalog()
	if err != nil {
		return err
	}
	prices := map[string]float64{}
	o.nodes = map[string]int{}
	seen := map[string]string{}
	for i, name := range o.GPUs {
		g, err := gc.Get(name)
		if err != nil {
			return fmt.Errorf("plan: candidate GPU %d: %w", i+1, err)
		}
		if prev, dup := seen[g.Name]; dup {
			return fmt.Errorf("plan: GPU %q is given twice (as %q and %q)", g.Name, prev, name)
		}
		seen[g.Name] = name
		if o.nodes[name], err = base.NodeGPUs(g); err != nil {
			return err
		}
		if p, ok := o.Prices[name]; ok {
			if !(p >= 0) || math.IsInf(p, 0) {
				return fmt.Errorf("plan: price %g $/hour of %s: must be a finite number ≥ 0", p, name)
			}
			prices[g.Name] = p
		} else if g.PricePerHour == 0 {
			// 0 is the catalog's "unknown": ranked by cost, such a GPU
			// would come first at $0/hour.
			return fmt.Errorf("plan: GPU %s has no price (price_per_hour unknown in the catalog): give one as --gpus %s=PRICE ($/GPU-hour)", g.Name, name)
		}
	}
	for name := range o.Prices {
		if !slices.Contains(o.GPUs, name) {
			return fmt.Errorf("plan: a price for %q, which is not a candidate GPU", name)
		}
	}
	o.Prices = prices
	return nil
}

// shape is "disagg" for a disaggregated option, else "colocated".
func (o *Option) shape() string {
	if o.Disagg {
		return "disagg"
	}
	return "colocated"
}

// noPlanServes is an error when no shape meets the target, listing the
// distinct reasons (at most five): a table of error rows is no plan.
func noPlanServes(opts []Option, o PlanOptions) error {
	why, none := failReasons(opts, func(op *Option) (string, string) {
		return op.Err, fmt.Sprintf("%s %s %s", op.GPU, op.shape(), op.layout())
	})
	if !none {
		return nil
	}
	return fmt.Errorf("plan: no deployment of up to %d GPUs serves %g req/s with %.0f %% of requests within the SLOs:\n  %s",
		o.MaxGPUs, o.Rate, 100*o.Target, strings.Join(why, "\n  "))
}
