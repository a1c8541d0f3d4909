package calibrate

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// gemmKinds are the classes fitted with the saturating compute efficiency
// (four parameters: overhead, compute and memory efficiency, half-saturation
// tokens); the others are bandwidth- and launch-bound and get three
// (overhead, memory efficiency, row memory efficiency), with compute_eff 1
// and half_tokens 0: their FLOPs are nominal and run on CUDA cores.
var gemmKinds = []models.OpKind{models.OpQKV, models.OpOutProj, models.OpMLPUp, models.OpMLPDown, models.OpLMHead, models.OpMoERouter}

func isGEMM(k models.OpKind) bool {
	for _, g := range gemmKinds {
		if g == k {
			return true
		}
	}
	return false
}

// borrow says which fitted class prices a class the trace has no samples
// of: the LM head is a GEMM with K = hidden and a wide N, as the MLP
// up-projection; the MoE router is a narrow GEMM, as the output projection
// (the smallest GEMM profiled).
var borrow = map[models.OpKind]models.OpKind{
	models.OpLMHead:    models.OpMLPUp,
	models.OpMoERouter: models.OpOutProj,
}

// Minimum samples to fit a class: twice its parameters.
const (
	minGEMMSamples = 8
	minElemSamples = 6
)

// DefaultIterOverhead is the per-iteration overhead of a profile fitted to
// a trace without CPU overheads: servesim's default (0.5 ms, an
// assumption; see experiments.DefaultIterOverheadMs).
const DefaultIterOverhead = 0.5e-3

// FitOptions adds provenance to a fit.
type FitOptions struct {
	// Trace names the trace ("vidur-profiling"); Format is "vidur" or
	// "native"; Note is free text for source.note.
	Trace, Format, Note string
	// Notes are added to the profile's notes.
	Notes []string
	// IterOverhead overrides the trace's CPU-overhead fit (nil: use the
	// trace's; none: DefaultIterOverhead).
	IterOverhead *IterOverheadFit
	// NoTrees leaves out the GEMM residual trees (the parametric model
	// alone).
	NoTrees bool
	// OnProgress, when set, is called after each stage of the fit (each
	// operator class, attention, the all-reduce, the residual trees) with
	// the stages done and their total; it does not affect the fit.
	OnProgress func(done, total int)
}

// FitProfile fits a profile for GPU g to the samples of tr that are g's:
// per operator class, the parameters of the calibrated model by
// Levenberg–Marquardt least squares on the log of predicted over measured
// time (so that a 10 µs and a 10 ms kernel weigh the same); per TP degree,
// all-reduce latency and link efficiency by linear least squares on the
// relative error. Classes without enough samples borrow a fitted class's
// parameters or take hardware.DefaultEfficiency, and say so in From.
// Attention is fitted only if the trace has attention samples; otherwise it
// is the documented FlashAttention-like roofline. The fit is deterministic.
func FitProfile(tr *Trace, g *hardware.GPU, opt FitOptions) (*Profile, error) {
	var own []Sample
	for _, s := range tr.Samples {
		if s.GPU == g.Name {
			own = append(own, s)
		}
	}
	if len(own) == 0 {
		src := "the trace"
		if len(tr.Sources) > 0 {
			src = strings.Join(tr.Sources, ", ")
		}
		return nil, fmt.Errorf("calibrate: %s: no timings for gpu %q (the trace has gpus %v)", src, g.Name, tr.GPUs())
	}
	// Screen out what no kernel can take (robust.go), then fit each class
	// and refit it once without its gross outliers.
	var rej rejections
	kept := make([]Sample, 0, len(own))
	for i := range own {
		if r := screen(&own[i], g); r >= 0 {
			rej.add(r, own[i].Where)
			continue
		}
		kept = append(kept, own[i])
	}
	dropped := make([]bool, len(kept))
	byKind := map[models.OpKind][]int{}
	for i, s := range kept {
		byKind[s.Op.Kind] = append(byKind[s.Op.Kind], i)
	}
	class := func(k models.OpKind) []Sample {
		ss := make([]Sample, len(byKind[k]))
		for j, i := range byKind[k] {
			ss[j] = kept[i]
		}
		return ss
	}
	drop := func(k models.OpKind, out []bool) {
		for j, o := range out {
			if o {
				i := byKind[k][j]
				dropped[i] = true
				rej.add(rejectOutlier, kept[i].Where)
			}
		}
	}
	stage, stages := 0, len(fittedKinds)+3 // the classes, attention, all-reduce, trees
	progress := func() {
		if stage++; opt.OnProgress != nil {
			opt.OnProgress(stage, stages)
		}
	}
	fitted := map[models.OpKind]OpParams{}
	counts := map[models.OpKind]int{}
	for _, k := range fittedKinds {
		ss := class(k)
		counts[k] = len(ss)
		if minFor(k).enough(ss, tokenSize) {
			o, out := fitClass(k, ss, g)
			fitted[k] = o
			drop(k, out)
		}
		progress()
	}
	def := hardware.DefaultEfficiency()
	p := &Profile{
		Format:     FormatVersion,
		GPU:        g.Name,
		Derivation: DerivationFitted,
		Source: Source{Trace: opt.Trace, Format: opt.Format, Files: append([]string(nil), tr.Sources...),
			Models: (&Trace{Samples: own}).Models(), Note: opt.Note},
		Peaks: Peaks{BF16FLOPS: g.BF16FLOPS, MemBW: g.MemBW, LinkBW: g.LinkBW, SMs: g.SMs},
	}
	for _, k := range fittedKinds {
		o, ok := fitted[k]
		if !ok {
			if b, has := borrow[k]; has {
				if bo, fit := fitted[b]; fit {
					o = bo
					o.From = "as " + b.String()
					o.Fit = FitStats{}
					ok = true
				}
			}
		}
		if !ok {
			o = OpParams{OverheadS: def.OpOverhead, ComputeEff: def.Compute, MemoryEff: def.Memory, From: "default"}
			if !isGEMM(k) {
				o.ComputeEff = 1
			}
		}
		o.Op = k.String()
		p.Ops = append(p.Ops, o)
	}
	att := append(class(models.OpAttnPrefill), class(models.OpAttnDecode)...)
	attFitted := minAttention.enough(att, tokenSize)
	if attFitted {
		o, out := fitAttention(att, g)
		n := len(byKind[models.OpAttnPrefill])
		drop(models.OpAttnPrefill, out[:min(n, len(out))])
		if len(out) > n {
			drop(models.OpAttnDecode, out[n:])
		}
		p.Attention = Attention{ComputeEff: o.ComputeEff, MemoryEff: o.MemoryEff, OverheadS: o.OverheadS,
			Source: fmt.Sprintf("fit to %d attention timings of the trace: in-sample median error %.1f %%, p90 %.1f %%", o.Fit.Samples, o.Fit.MedianAPE, o.Fit.P90APE)}
	} else {
		p.Attention = Attention{ComputeEff: def.AttnCompute, MemoryEff: def.Memory, OverheadS: def.OpOverhead, Source: attentionAssumption}
	}
	progress()
	ar, out, err := fitAllReduce(class(models.OpAllReduce), g)
	if err != nil {
		return nil, err
	}
	drop(models.OpAllReduce, out)
	progress()
	p.AllReduce = ar
	if len(fitted) == 0 && !attFitted && len(ar) == 0 {
		return nil, notEnoughError(tr, g, len(own))
	}
	var usable []Sample
	for i := range kept {
		if !dropped[i] {
			usable = append(usable, kept[i])
		}
	}
	p.Source.Samples = len(usable)
	p.Source.Rejected = rej.total()
	io := opt.IterOverhead
	if io == nil {
		io = tr.IterOverhead
	}
	if io != nil {
		p.Iteration = Iteration{OverheadS: io.Fixed, PerRequestS: io.PerRequest, Source: fmt.Sprintf(
			"%s: sarathi-serve CPU time per iteration (schedule + sampler_e2e + prepare_inputs_e2e + process_model_outputs, medians) "+
				"fitted as %.3g ms + %.3g ms per request over %d rows at TP 1, batches %d–%d; overhead_s is the batch-independent part, "+
				"per_request_s is recorded but not applied (a step model takes one fixed overhead)",
			io.Source, io.Fixed*1e3, io.PerRequest*1e3, io.Rows, io.MinBatch, io.MaxBatch)}
	} else {
		p.Iteration = Iteration{OverheadS: DefaultIterOverhead, Source: "assumption: servesim's default 0.5 ms; the trace has no CPU overheads"}
	}
	p.Notes = append(p.Notes, opt.Notes...)
	for _, n := range []string{rej.note(len(own)), defaultsNote(p, counts)} {
		if n != "" {
			p.Notes = append(p.Notes, n)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("calibrate: fit produced an invalid profile (a bug): %w", err)
	}
	// What the profile's TOML holds (numbers to 6 digits), so that the
	// trees correct the model a written profile computes and a profile read
	// back predicts what this one does.
	p, err = ParseProfile(p.WriteTOML(), "the fitted profile")
	if err != nil {
		return nil, fmt.Errorf("calibrate: fit produced a profile that does not read back (a bug): %w", err)
	}
	if !opt.NoTrees {
		if err := p.growGEMMTrees(usable, g); err != nil {
			return nil, err
		}
	}
	progress()
	return p, nil
}

// growGEMMTrees grows the GEMM residual trees on the dense BF16 GEMM
// timings of own with N and K known, against p's parametric model, if
// there are minTreeSamples of them and g has an SM count.
func (p *Profile) growGEMMTrees(own []Sample, g *hardware.GPU) error {
	if g.SMs <= 0 {
		return nil
	}
	var kinds [models.NumOpKinds]bool
	for _, k := range treeKinds {
		kinds[k] = true
	}
	var in []*Sample
	for i := range own {
		if treeDomain(&own[i].Op, &kinds, models.BF16) {
			in = append(in, &own[i])
		}
	}
	if len(in) < minTreeSamples {
		return nil
	}
	k, err := p.Calibrated(g, 1)
	if err != nil {
		return fmt.Errorf("calibrate: fit produced an invalid profile (a bug): %w", err)
	}
	ss := make([]treeSample, len(in))
	for i, s := range in {
		param := k.OpTime(&s.Op) // no trees yet: the parametric time
		k.features(&s.Op, param, ss[i].x[:])
		ss[i].y = math.Log(s.Seconds / param)
	}
	p.GEMMTrees = growTrees(ss)
	if k, err = p.Calibrated(g, 1); err != nil {
		return fmt.Errorf("calibrate: fit produced invalid trees (a bug): %w", err)
	}
	ape := make([]float64, len(in))
	for i, s := range in {
		ape[i] = 100 * math.Abs(k.OpTime(&s.Op)/s.Seconds-1)
	}
	p.GEMMTrees.Fit = statsOf(ape)
	return nil
}

// attentionAssumption documents the attention roofline of profiles fitted
// to traces without attention kernels.
const attentionAssumption = "assumption, no attention kernels in the trace (Vidur's attention.csv files were not obtained, see " +
	"vidur-profiling/SOURCE.md): FlashAttention-like roofline at 50 % of the BF16 peak on FLOPs (FlashAttention-2 reaches " +
	"50–73 % on A100, arXiv:2307.08691; serving chunks are short, so the low end), 80 % of HBM bandwidth on Q/O and KV-cache " +
	"bytes and 4 µs per kernel (hardware.DefaultEfficiency)"

// point is a sample reduced to what the model needs.
type point struct {
	a, bm, n, y float64 // FLOPs/peak (s at 100 %), bytes/MemBW (s at 100 %), tokens, log(measured s)
	// w is the padded work of the wave term at 100 % of the peak (s) for
	// the tile set by withTile; 0: no wave term.
	w float64
	// GEMM dimensions (M = tokens), 0 when not a GEMM or unknown, and the
	// FLOPs beyond the GEMM's 2·M·N·K (the LM head's final norm) over the peak.
	gm, gn, gk     int
	invPeak, extra float64
}

func points(ss []Sample, g *hardware.GPU) []point {
	pts := make([]point, len(ss))
	for i, s := range ss {
		inv := 1 / g.PeakFLOPS(s.Op.Compute)
		pts[i] = point{a: s.Op.FLOPs * inv, bm: s.Op.Bytes / g.MemBW,
			n: float64(max(s.Op.Tokens, 1)), y: math.Log(s.Seconds), invPeak: inv}
		if s.Op.N > 0 && s.Op.K > 0 && s.Op.Tokens > 0 {
			pts[i].gm, pts[i].gn, pts[i].gk = s.Op.Tokens, s.Op.N, s.Op.K
			pts[i].extra = max(0, s.Op.FLOPs-2*float64(s.Op.Tokens)*float64(s.Op.N)*float64(s.Op.K)) * inv
		}
	}
	return pts
}

func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
func logit(p float64) float64    { return math.Log(p / (1 - p)) }

// params are the parameters of one class in the units of OpParams, with
// lam = 1/RowMemoryEff (0: no per-row term) and ew = WaveEff (0: no wave
// term).
type params struct {
	o, em, ec, h, lam, ew float64
}

// at is Calibrated.OpTime on a point.
func (m params) at(pt *point) float64 {
	tc := pt.a / m.ec
	if m.h > 0 {
		tc *= 1 + m.h/pt.n
	}
	if m.ew > 0 && pt.w > 0 {
		tc = min(tc, pt.w/m.ew)
	}
	t := max(tc, pt.bm/m.em)
	if m.lam > 0 {
		t = max(t, pt.bm/pt.n*m.lam)
	}
	return m.o + t
}

// grad returns m.at(pt) and fills d with its derivatives with respect to
// the unconstrained parameters of a form: d[0] by log o, d[1] by logit μ,
// d[2] by logit η (GEMM, attention) or by log(λ − 1) (bandwidth-bound),
// d[3] by log h and d[4] by logit η_w (GEMM). Only the active branch of
// the max and the min contributes.
func (m params) grad(pt *point, elem bool, d []float64) float64 {
	for i := range d {
		d[i] = 0
	}
	d[0] = m.o
	sat := 1.0
	if m.h > 0 {
		sat = 1 + m.h/pt.n
	}
	tc := pt.a / m.ec * sat
	tw := math.Inf(1)
	if m.ew > 0 && pt.w > 0 {
		tw = pt.w / m.ew
	}
	tm := pt.bm / m.em
	tr := 0.0
	if m.lam > 0 {
		tr = pt.bm / pt.n * m.lam
	}
	tcw := min(tc, tw)
	switch {
	case tr > tcw && tr > tm:
		d[2] = pt.bm / pt.n * (m.lam - 1)
		return m.o + tr
	case tm >= tcw:
		d[1] = -tm * (1 - m.em)
		return m.o + tm
	case tw < tc:
		d[4] = -tw * (1 - m.ew)
		return m.o + tw
	}
	if !elem {
		d[2] = -tc * (1 - m.ec)
		if len(d) > 3 {
			d[3] = pt.a / m.ec * m.h / pt.n
		}
	}
	return m.o + tc
}

// A form is one of the fitted model shapes: its unconstrained starting
// vectors and how a vector decodes to parameters (logistic for
// efficiencies in (0, 1), exp for positive numbers).
type form struct {
	elem   bool // bandwidth-bound: x[2] is log(λ − 1), not logit η
	starts [][]float64
	decode func(x []float64) params
}

var (
	// GEMMs: x = [log o, logit μ, logit η, log h].
	gemmForm = form{
		starts: [][]float64{
			{math.Log(4e-6), logit(0.8), logit(0.75), math.Log(64)},
			{math.Log(2e-6), logit(0.6), logit(0.6), math.Log(16)},
			{math.Log(8e-6), logit(0.95), logit(0.85), math.Log(256)},
		},
		decode: func(x []float64) params {
			return params{o: math.Exp(x[0]), em: logistic(x[1]), ec: logistic(x[2]), h: math.Exp(x[3])}
		},
	}
	// GEMMs with a wave term: x = [log o, logit μ, logit η, log h, logit η_w].
	// The starts are set from the fit without it (fitGEMM).
	waveForm = form{
		decode: func(x []float64) params {
			return params{o: math.Exp(x[0]), em: logistic(x[1]), ec: logistic(x[2]), h: math.Exp(x[3]), ew: logistic(x[4])}
		},
	}
	// Bandwidth-bound kernels: x = [log o, logit μ, log(λ − 1)], with
	// η = 1 (nominal FLOPs) and the per-row term at 1/λ of the bandwidth.
	elemForm = form{
		elem: true,
		starts: [][]float64{
			{math.Log(2e-6), logit(0.8), math.Log(100)},
			{math.Log(1e-6), logit(0.5), math.Log(10)},
			{math.Log(3e-6), logit(0.9), math.Log(1000)},
		},
		decode: func(x []float64) params {
			return params{o: math.Exp(x[0]), em: logistic(x[1]), ec: 1, lam: 1 + math.Exp(x[2])}
		},
	}
	// Attention: x = [log o, logit μ, logit η], no saturation.
	attForm = form{
		starts: [][]float64{{math.Log(4e-6), logit(0.8), logit(0.5)}, {math.Log(10e-6), logit(0.6), logit(0.3)}},
		decode: func(x []float64) params {
			return params{o: math.Exp(x[0]), em: logistic(x[1]), ec: logistic(x[2])}
		},
	}
)

// fit fits form f to the points from each start and returns the best
// parameters: least squares on r_i = log(predicted) − log(measured), with
// the analytic Jacobian ∂r_i/∂x = (∂predicted/∂x)/predicted.
func (f form) fit(pts []point) params {
	m, _, _ := f.fitFrom(pts, f.starts)
	return m
}

// fitFrom is fit from the given starts; it also returns the best
// unconstrained vector and its sum of squared log residuals.
func (f form) fitFrom(pts []point, starts [][]float64) (params, []float64, float64) {
	res := func(x, r []float64) {
		m := f.decode(x)
		for i := range pts {
			r[i] = math.Log(m.at(&pts[i])) - pts[i].y
		}
	}
	d := make([]float64, len(starts[0]))
	jac := func(x []float64, J *mat.Dense) {
		m := f.decode(x)
		for i := range pts {
			p := m.grad(&pts[i], f.elem, d)
			for j, v := range d {
				J.Set(i, j, v/p)
			}
		}
	}
	var best []float64
	bestCost := math.Inf(1)
	for _, x0 := range starts {
		x, c := levenbergMarquardt(res, jac, x0, len(pts), 200)
		if c < bestCost {
			best, bestCost = x, c
		}
	}
	return f.decode(best), best, bestCost
}

// fitClass fits class k to ss and refits it once without the gross
// outliers of the first fit (grossOutliers), if the rest still meet the
// class's minimum; it returns the fit and which samples it left out (nil:
// none).
func fitClass(k models.OpKind, ss []Sample, g *hardware.GPU) (OpParams, []bool) {
	op, res := fitClassOnce(k, ss, g)
	out := grossOutliers(res)
	if out == nil {
		return op, nil
	}
	keep := without(ss, out)
	if !minFor(k).enough(keep, tokenSize) {
		return op, nil
	}
	op, _ = fitClassOnce(k, keep, g)
	return op, out
}

// without returns the samples of ss not marked in out.
func without(ss []Sample, out []bool) []Sample {
	var keep []Sample
	for i := range ss {
		if !out[i] {
			keep = append(keep, ss[i])
		}
	}
	return keep
}

// fitClassOnce fits class k to ss; it returns the fit and the log residual
// of each sample.
func fitClassOnce(k models.OpKind, ss []Sample, g *hardware.GPU) (OpParams, []float64) {
	pts := points(ss, g)
	var m params
	var t tile
	switch {
	case isGEMM(k):
		m, t = fitGEMM(pts, g.SMs)
	default:
		m = elemForm.fit(pts)
	}
	op := OpParams{Op: k.String(), OverheadS: m.o, ComputeEff: m.ec, HalfTokens: m.h, MemoryEff: m.em,
		WaveEff: m.ew, TileM: t.m, TileN: t.n, From: "fit"}
	if m.lam > 0 {
		op.RowMemoryEff = 1 / m.lam
	}
	op.Fit = stats(pts, m.at)
	return op, residuals(pts, m)
}

// residuals are log(predicted) − log(measured) of each point under m.
func residuals(pts []point, m params) []float64 {
	r := make([]float64, len(pts))
	for i := range pts {
		r[i] = math.Log(m.at(&pts[i])) - pts[i].y
	}
	return r
}

// fitAttention fits the attention roofline to ss, refitted once without
// the first fit's gross outliers (as fitClass).
func fitAttention(ss []Sample, g *hardware.GPU) (OpParams, []bool) {
	once := func(ss []Sample) (OpParams, []float64) {
		pts := points(ss, g)
		m := attForm.fit(pts)
		op := OpParams{OverheadS: m.o, ComputeEff: m.ec, MemoryEff: m.em, From: "fit"}
		op.Fit = stats(pts, m.at)
		return op, residuals(pts, m)
	}
	op, res := once(ss)
	out := grossOutliers(res)
	if out == nil {
		return op, nil
	}
	keep := without(ss, out)
	if !minAttention.enough(keep, tokenSize) {
		return op, nil
	}
	op, _ = once(keep)
	return op, out
}

func stats(pts []point, pred func(*point) float64) FitStats {
	ape := make([]float64, len(pts))
	for i := range pts {
		ape[i] = 100 * math.Abs(pred(&pts[i])/math.Exp(pts[i].y)-1)
	}
	return statsOf(ape)
}

// statsOf summarises absolute percentage errors.
func statsOf(ape []float64) FitStats {
	if len(ape) == 0 {
		return FitStats{}
	}
	s := append([]float64(nil), ape...)
	sort.Float64s(s)
	return FitStats{Samples: len(s), MedianAPE: quantile(s, 0.5), P90APE: quantile(s, 0.9), MaxAPE: s[len(s)-1]}
}

// quantile of sorted data by linear interpolation between order statistics
// (numpy's default).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(i)
	return sorted[i] + f*(sorted[i+1]-sorted[i])
}
