package calibrate

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// ErrStats summarises percentage errors 100·(predicted/measured − 1).
type ErrStats struct {
	N           int
	Median, P90 float64 // of the absolute errors, percent
	// Bias is the median of the signed errors, percent: > 0 means the
	// model predicts slower kernels than measured.
	Bias float64
}

// ErrTable is an error table: rows (operator groups) by columns (GPUs or
// transfers).
type ErrTable struct {
	Title string
	// RowHeader heads the row-name column ("" means "operator").
	RowHeader string
	Note      string
	Columns   []string
	Rows      []string
	Cells     [][]ErrStats // [row][column]; N = 0 where there is no data
}

// Cell returns the stats of (row, column), or false.
func (t *ErrTable) Cell(row, col string) (ErrStats, bool) {
	for i, r := range t.Rows {
		if r != row {
			continue
		}
		for j, c := range t.Columns {
			if c == col && t.Cells[i][j].N > 0 {
				return t.Cells[i][j], true
			}
		}
	}
	return ErrStats{}, false
}

// Row groups of the error tables, beyond one row per operator class.
const (
	RowGEMMs      = "GEMMs (qkv, out_proj, mlp_up, mlp_down)"
	RowGEMMsSmall = "GEMMs, 1–128 tokens"
	RowGEMMsLarge = "GEMMs, > 128 tokens"
	RowARSmall    = "all_reduce, < 1 MiB"
	RowARLarge    = "all_reduce, ≥ 1 MiB"
	RowAll        = "all operators"

	// Rows of Accuracy.Floor.
	RowFloorSmooth     = "smooth, per shape"
	RowFloorWaves      = "with waves, per shape"
	RowFloorNeighbours = "neighbours"
)

// reportKinds are the operator rows of the tables, in this order.
var reportKinds = []models.OpKind{models.OpEmbed, models.OpNorm, models.OpQKV, models.OpRoPE, models.OpOutProj,
	models.OpMLPUp, models.OpAct, models.OpMLPDown, models.OpAdd, models.OpAllReduce}

var reportGEMMs = []models.OpKind{models.OpQKV, models.OpOutProj, models.OpMLPUp, models.OpMLPDown}

// StepRow compares one layer's time (the operators of Vidur's mlp.csv and
// the TP all-reduces; no attention) with the measured sum.
type StepRow struct {
	Model  string
	TP     int
	Tokens int
	// Measured is Σ over servesim's per-layer operators of the measured
	// median time × occurrences per layer (2 norms, 2 residual adds, 2
	// all-reduces at TP > 1), seconds.
	Measured float64
	// Calibrated uses the in-sample profile, HeldOut the profile fitted
	// without this model, Roofline hardware.DefaultEfficiency.
	Calibrated, HeldOut, Roofline float64
}

// Accuracy is the accuracy report of the calibration on the Vidur data.
type Accuracy struct {
	InSample     *ErrTable
	HeldOutModel *ErrTable
	// HeldOutPerModel splits the held-out GEMM errors by the model held
	// out (rows: models; columns: GPUs, with and without the trees).
	HeldOutPerModel *ErrTable
	HeldOutGPU      *ErrTable
	// Floor bounds what the model can do on the GEMMs: rows
	// RowFloorSmooth (the model without its wave term fitted to each
	// (model, TP, operator) curve alone), RowFloorWaves (the same with the
	// wave term and the curve's best tile) and RowFloorNeighbours (each
	// timing predicted by the median of its two neighbours on the token
	// grid, same curve).
	Floor *ErrTable
	// Measured compares transferred profiles with this project's own
	// measurements (nil when none are given).
	Measured *ErrTable
	Steps    []StepRow
	// XLAFits and XLACheck are the GEMM-precision section (precision.go):
	// nil without XLA's matmul table.
	XLAFits, XLACheck *ErrTable
	// Profiles are the in-sample fits by GPU.
	Profiles map[string]*Profile
	// Attention is the attention model's error table (EvaluateAttention),
	// when the LLMServingSim bundles sit beside the trace (BundlesDir).
	Attention *ErrTable
	// MoE is the MoE block error table (EvaluateMoE), with the bundles.
	MoE *ErrTable
}

// ReportOptions say what Evaluate reads besides the Vidur data.
type ReportOptions struct {
	// Measured are native CSVs of other GPUs (e.g. testdata/h200_*.csv):
	// each is predicted by the H100 fit transferred to that GPU.
	Measured []string
	// XLA is XLA's matmul table (matmul.csv) for the GEMM-precision
	// section; "" reads DefaultXLAPath(dir) if it exists.
	XLA string
}

// traceGPUs are the GPUs of the Vidur data.
var traceGPUs = []string{"a100", "h100"}

// cpuOverheadsFile is the only CPU-overhead profile in the Vidur data; the
// built-in profiles of every GPU take their iteration overhead from it.
const cpuOverheadsFile = "historical/a100/cpu_overheads.csv"

// loadVidurGPU reads the Vidur trace of a catalog GPU.
func loadVidurGPU(dir, gpu string) (*Trace, *hardware.GPU, error) {
	g, err := hardware.Builtin().Get(gpu)
	if err != nil {
		return nil, nil, err
	}
	tr, err := LoadVidur(dir, gpu, VidurOptions{CPUOverheads: cpuOverheadsFile})
	if err != nil {
		return nil, nil, err
	}
	return tr, g, nil
}

// Evaluate computes the accuracy report from dir, a copy of Vidur's
// data/profiling (../shared/data/vidur-profiling):
//
//   - in-sample: each GPU's fit on all its samples, evaluated on them;
//   - held out by model: for each model, the fit on the GPU's other models
//     (and its all-reduce profile) predicts that model's operators;
//   - held out by GPU: the A100 fit transferred to the H100 through the
//     specs predicts every H100 sample, and the reverse;
//   - measured: the H100 fit transferred to another GPU predicts this
//     project's measurements of it (ReportOptions.Measured);
//   - per-layer step times of Llama-2-7B (TP 1) and Llama-2-70B (TP 4) on
//     H100 at 1, 16, 256 and 4096 tokens.
func Evaluate(dir string, opt ReportOptions) (*Accuracy, error) {
	acc := &Accuracy{Profiles: map[string]*Profile{}}
	// XLA's table first, so that a bad file fails before the fits.
	xla := opt.XLA
	if xla == "" {
		if _, err := os.Stat(DefaultXLAPath(dir)); err == nil {
			xla = DefaultXLAPath(dir)
		}
	}
	var xt *XLATable
	if xla != "" {
		var err error
		if xt, err = LoadXLA(xla); err != nil {
			return nil, err
		}
	}
	traces := map[string]*Trace{}
	gpus := map[string]*hardware.GPU{}
	inCols := make([][]labelled, 0, len(traceGPUs))
	for _, name := range traceGPUs {
		tr, g, err := loadVidurGPU(dir, name)
		if err != nil {
			return nil, err
		}
		traces[name], gpus[name] = tr, g
		p, err := FitProfile(tr, g, FitOptions{Trace: "vidur-profiling", Format: "vidur"})
		if err != nil {
			return nil, err
		}
		acc.Profiles[name] = p
		l, err := predictAll(p, g, tr.Samples)
		if err != nil {
			return nil, err
		}
		inCols = append(inCols, l)
	}
	acc.InSample = table("In-sample: each GPU's profile fitted to all its samples, evaluated on them", traceGPUs, inCols)

	// Held out by model, with the residual trees and without them (the
	// same fits, trees dropped).
	var hoCols, paramCols [][]labelled
	heldOut := map[string]*Profile{}     // "gpu/model"
	perModel := map[string][][]float64{} // model → GEMM errors by column (GPUs, then GPUs without trees)
	for gi, name := range traceGPUs {
		tr, g := traces[name], gpus[name]
		var col, pcol []labelled
		for _, m := range tr.Models() {
			train := &Trace{Samples: tr.Filter(func(s *Sample) bool { return s.Model != m }), IterOverhead: tr.IterOverhead}
			p, err := FitProfile(train, g, FitOptions{Trace: "vidur-profiling", Format: "vidur"})
			if err != nil {
				return nil, err
			}
			heldOut[name+"/"+m] = p
			test := tr.Filter(func(s *Sample) bool { return s.Model == m })
			l, err := predictAll(p, g, test)
			if err != nil {
				return nil, err
			}
			col = append(col, l...)
			bare := p.Clone()
			bare.GEMMTrees = nil
			if l, err = predictAll(bare, g, test); err != nil {
				return nil, err
			}
			pcol = append(pcol, l...)
			if perModel[m] == nil {
				perModel[m] = make([][]float64, 2*len(traceGPUs))
			}
			for c, ls := range [][]labelled{col[len(col)-len(l):], l} {
				for _, e := range ls {
					if slices.Contains(reportGEMMs, e.kind) {
						perModel[m][c*len(traceGPUs)+gi] = append(perModel[m][c*len(traceGPUs)+gi], e.pe)
					}
				}
			}
		}
		hoCols = append(hoCols, col)
		paramCols = append(paramCols, pcol)
	}
	hoNames := append([]string(nil), traceGPUs...)
	for _, name := range traceGPUs {
		hoNames = append(hoNames, name+", no trees")
	}
	acc.HeldOutModel = table("Held out by model: fit on the GPU's other models, predict this one (pooled over models); "+
		"\"no trees\": the same fits without the GEMM residual trees", hoNames, append(hoCols, paramCols...))
	pm := &ErrTable{Title: "Held out by model, GEMMs (qkv, out_proj, mlp_up, mlp_down), by the model held out",
		Note: "Rows: the model left out of the fit and predicted; its GEMM shapes (N, K per TP) are shared with another model of " +
			"the same GPU's trace only where the hidden size is (Llama-2-70B, Llama-3-70B, CodeLlama-34B and Qwen-72B: 8192; " +
			"Llama-2-7B and, on A100 only, Llama-3-8B: 4096; InternLM-20B 5120 and phi-2 2560 alone).",
		RowHeader: "model held out", Columns: hoNames}
	var pmRows []string
	for m := range perModel {
		pmRows = append(pmRows, m)
	}
	sort.Strings(pmRows)
	for _, m := range pmRows {
		line := make([]ErrStats, len(hoNames))
		for c := range hoNames {
			line[c] = errStats(perModel[m][c])
		}
		pm.Rows = append(pm.Rows, m)
		pm.Cells = append(pm.Cells, line)
	}
	acc.HeldOutPerModel = pm
	acc.Floor = floorTable(traces, gpus)

	// Held out by GPU.
	var hgCols [][]labelled
	var hgNames []string
	for _, pair := range [][2]string{{"a100", "h100"}, {"h100", "a100"}} {
		t, err := Transfer(acc.Profiles[pair[0]], gpus[pair[1]])
		if err != nil {
			return nil, err
		}
		l, err := predictAll(t, gpus[pair[1]], traces[pair[1]].Samples)
		if err != nil {
			return nil, err
		}
		hgCols = append(hgCols, l)
		hgNames = append(hgNames, pair[0]+" → "+pair[1])
	}
	acc.HeldOutGPU = table("Held out by GPU: one GPU's fit transferred through the specs predicts the other GPU's samples", hgNames, hgCols)

	// This project's measurements of GPUs without a Vidur trace.
	if len(opt.Measured) > 0 {
		var cols [][]labelled
		var names []string
		for _, path := range opt.Measured {
			ss, err := readFile(path, filepath.Base(path), func(r io.Reader, name string) ([]Sample, error) { return ReadNative(r, name, nil) })
			if err != nil {
				return nil, err
			}
			g, err := hardware.Builtin().Get(ss[0].GPU)
			if err != nil {
				return nil, fmt.Errorf("calibrate: %s: %w", path, err)
			}
			t, err := Transfer(acc.Profiles["h100"], g)
			if err != nil {
				return nil, err
			}
			l, err := predictAll(t, g, ss)
			if err != nil {
				return nil, err
			}
			base := strings.TrimSuffix(filepath.Base(path), ".csv")
			cols = append(cols, l)
			names = append(names, "h100 → "+g.Name+" ("+base+")")
			// The same measurements fitted in-sample: what the model form
			// does on this GPU and software stack once calibrated to it.
			own, err := FitProfile(&Trace{Samples: ss}, g, FitOptions{Trace: base, Format: "native"})
			if err != nil {
				return nil, err
			}
			if l, err = predictAll(own, g, ss); err != nil {
				return nil, err
			}
			cols = append(cols, l)
			names = append(names, g.Name+" fitted to "+base+" (in-sample)")
		}
		acc.Measured = table("A GPU without a trace: the H100 fit transferred through the specs, and a fit to the measurements themselves, "+
			"against this project's own measurements (hardware/calibrate/testdata)", names, cols)
	}

	if xt != nil {
		var err error
		if acc.XLAFits, acc.XLACheck, err = xt.tables(acc.Profiles["h100"]); err != nil {
			return nil, err
		}
	}

	steps, err := stepRows(dir, traces["h100"], gpus["h100"], acc.Profiles["h100"], heldOut)
	if err != nil {
		return nil, err
	}
	acc.Steps = steps
	if bd := BundlesDir(dir); bundlesPresent(bd) {
		t, _, err := EvaluateAttention(bd)
		if err != nil {
			return nil, err
		}
		acc.Attention = t
		if acc.MoE, _, err = EvaluateMoE(bd); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// floorTable computes Accuracy.Floor.
func floorTable(traces map[string]*Trace, gpus map[string]*hardware.GPU) *ErrTable {
	t := &ErrTable{
		Title: "What the model can reach on the GEMMs, fitted to each shape alone",
		Note: "smooth, per shape: the calibrated model without its wave term fitted to each (model, TP, operator) curve alone, " +
			"evaluated on it. with waves, per shape: the same with the wave term, its tile chosen for the curve. " +
			"neighbours: each timing predicted by the median of its two neighbours on the token grid of the same curve " +
			"(the point-to-point jitter of cuBLAS's kernel choice, tile and wave quantization).",
		Columns: traceGPUs,
		Rows:    []string{RowFloorSmooth, RowFloorWaves, RowFloorNeighbours},
		Cells:   [][]ErrStats{make([]ErrStats, len(traceGPUs)), make([]ErrStats, len(traceGPUs)), make([]ErrStats, len(traceGPUs))},
	}
	for j, name := range traceGPUs {
		tr, g := traces[name], gpus[name]
		type key struct {
			model string
			tp    int
			kind  models.OpKind
		}
		groups := map[key][]Sample{}
		var keys []key
		for _, s := range tr.Samples {
			if !isGEMM(s.Op.Kind) || s.Model == "" {
				continue
			}
			k := key{s.Model, s.TP, s.Op.Kind}
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], s)
		}
		var smooth, waved, nb []float64
		for _, k := range keys {
			ss := groups[k]
			pts := points(ss, g)
			m := gemmForm.fit(pts)
			for i := range pts {
				smooth = append(smooth, 100*(m.at(&pts[i])/ss[i].Seconds-1))
			}
			m, _ = fitGEMM(pts, g.SMs)
			for i := range pts {
				waved = append(waved, 100*(m.at(&pts[i])/ss[i].Seconds-1))
			}
			sort.Slice(ss, func(a, b int) bool { return ss[a].Op.Tokens < ss[b].Op.Tokens })
			for i := range ss {
				var v []float64
				if i > 0 {
					v = append(v, ss[i-1].Seconds)
				}
				if i+1 < len(ss) {
					v = append(v, ss[i+1].Seconds)
				}
				sort.Float64s(v)
				nb = append(nb, 100*(quantile(v, 0.5)/ss[i].Seconds-1))
			}
		}
		t.Cells[0][j] = errStats(smooth)
		t.Cells[1][j] = errStats(waved)
		t.Cells[2][j] = errStats(nb)
	}
	return t
}

// labelled is one prediction error with what it is about.
type labelled struct {
	kind   models.OpKind
	tokens int
	bytes  float64 // all-reduce message bytes
	pe     float64 // signed percentage error
}

// predictAll returns the absolute percentage error of p on each sample.
func predictAll(p *Profile, g *hardware.GPU, ss []Sample) ([]labelled, error) {
	kernels := map[int]*Calibrated{}
	out := make([]labelled, 0, len(ss))
	for i := range ss {
		s := &ss[i]
		k := kernels[s.TP]
		if k == nil {
			var err error
			if k, err = p.Calibrated(g, s.TP); err != nil {
				return nil, err
			}
			kernels[s.TP] = k
		}
		out = append(out, labelled{kind: s.Op.Kind, tokens: s.Op.Tokens, bytes: s.Op.CommBytes, pe: 100 * (k.OpTime(&s.Op)/s.Seconds - 1)})
	}
	return out, nil
}

// table groups labelled errors into the report's rows.
func table(title string, cols []string, data [][]labelled) *ErrTable {
	t := &ErrTable{Title: title, Columns: cols}
	rows := map[string][][]float64{}
	add := func(row string, col int, v float64) {
		if rows[row] == nil {
			rows[row] = make([][]float64, len(cols))
		}
		rows[row][col] = append(rows[row][col], v)
	}
	isReportGEMM := func(k models.OpKind) bool {
		for _, g := range reportGEMMs {
			if g == k {
				return true
			}
		}
		return false
	}
	for j, col := range data {
		for _, l := range col {
			add(l.kind.String(), j, l.pe)
			add(RowAll, j, l.pe)
			if l.kind == models.OpAllReduce {
				if l.bytes < 1<<20 {
					add(RowARSmall, j, l.pe)
				} else {
					add(RowARLarge, j, l.pe)
				}
			}
			if isReportGEMM(l.kind) {
				add(RowGEMMs, j, l.pe)
				if l.tokens <= 128 {
					add(RowGEMMsSmall, j, l.pe)
				} else {
					add(RowGEMMsLarge, j, l.pe)
				}
			}
		}
	}
	var order []string
	for _, k := range reportKinds {
		order = append(order, k.String())
		if k == models.OpAllReduce {
			order = append(order, RowARSmall, RowARLarge)
		}
	}
	order = append(order, RowGEMMs, RowGEMMsSmall, RowGEMMsLarge, RowAll)
	for _, r := range order {
		cells, ok := rows[r]
		if !ok {
			continue
		}
		t.Rows = append(t.Rows, r)
		line := make([]ErrStats, len(cols))
		for j := range cols {
			line[j] = errStats(cells[j])
		}
		t.Cells = append(t.Cells, line)
	}
	return t
}

// errStats summarises signed percentage errors.
func errStats(pe []float64) ErrStats {
	if len(pe) == 0 {
		return ErrStats{}
	}
	signed := append([]float64(nil), pe...)
	sort.Float64s(signed)
	abs := make([]float64, len(pe))
	for i, v := range pe {
		abs[i] = math.Abs(v)
	}
	sort.Float64s(abs)
	return ErrStats{N: len(pe), Median: quantile(abs, 0.5), P90: quantile(abs, 0.9), Bias: quantile(signed, 0.5)}
}

// Markdown writes the report as Markdown tables: each error table with
// median and p90 absolute percentage error (and sample counts), then the
// per-layer step times.
func (a *Accuracy) Markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("Cells: median / p90 of the absolute percentage error |predicted/measured − 1|, the median signed error " +
		"(> 0: predicted slower than measured), and the number of kernel timings.\n\n")
	for _, t := range []*ErrTable{a.InSample, a.HeldOutModel, a.HeldOutPerModel, a.Floor, a.HeldOutGPU, a.Measured, a.XLAFits, a.XLACheck, a.Attention, a.MoE} {
		if t == nil {
			continue
		}
		fmt.Fprintf(&b, "**%s**\n\n", t.Title)
		if t.Note != "" {
			fmt.Fprintf(&b, "%s\n\n", t.Note)
		}
		head := t.RowHeader
		if head == "" {
			head = "operator"
		}
		fmt.Fprintf(&b, "| %s |", head)
		for _, c := range t.Columns {
			fmt.Fprintf(&b, " %s |", c)
		}
		b.WriteString("\n|---|")
		for range t.Columns {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for i, r := range t.Rows {
			fmt.Fprintf(&b, "| %s |", r)
			for _, c := range t.Cells[i] {
				if c.N == 0 {
					b.WriteString(" — |")
					continue
				}
				fmt.Fprintf(&b, " %.1f / %.1f / %+.1f (%d) |", c.Median, c.P90, c.Bias, c.N)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	if len(a.Steps) > 0 {
		b.WriteString("**One layer on H100 without attention** (the operators of Vidur's mlp.csv plus the TP all-reduces), µs: " +
			"measured = Σ measured median × occurrences per layer; calibrated = built-in H100 profile; held out = H100 profile fitted " +
			"without this model; roofline = hardware.DefaultEfficiency\n\n")
		b.WriteString("| model | TP | tokens | measured | calibrated | held out | roofline |\n|---|---|---|---|---|---|---|\n")
		for _, r := range a.Steps {
			e := func(v float64) string { return fmt.Sprintf("%.1f (%+.1f %%)", v*1e6, 100*(v/r.Measured-1)) }
			fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %s | %s | %s |\n", r.Model, r.TP, r.Tokens, r.Measured*1e6, e(r.Calibrated), e(r.HeldOut), e(r.Roofline))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
