package calibrate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/servesim/servesim/hardware"
)

// BundlesDir is where the LLMServingSim profile bundles sit beside a copy
// of Vidur's data/profiling (../shared/data/vidur-profiling →
// ../shared/data/llmservingsim/profiles).
func BundlesDir(vidurDir string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(vidurDir)), "llmservingsim", "profiles")
}

// attnSet is the attention samples of the bundles of one GPU, by bundle.
type attnSet struct {
	gpu     *hardware.GPU
	bundles []*Bundle
	samples [][]AttnSample
}

// all returns the samples of the bundles whose model contains model ("":
// all) at TP tp (0: all), filtered by keep (nil: all).
func (s *attnSet) all(model string, tp int, keep func(*AttnSample) bool) []AttnSample {
	var out []AttnSample
	for i, b := range s.bundles {
		if model != "" && !strings.Contains(b.Meta.Model, model) {
			continue
		}
		for _, x := range s.samples[i] {
			if (tp == 0 || x.TP == tp) && (keep == nil || keep(&x)) {
				out = append(out, x)
			}
		}
	}
	return out
}

// loadAttnSets reads every bundle under dir that has attention timings,
// grouped by catalog GPU.
func loadAttnSets(dir string, cat *hardware.Catalog) (map[string]*attnSet, error) {
	dirs, err := FindBundles(dir)
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("calibrate: no profile bundle (meta.yaml) under %s", dir)
	}
	sets := map[string]*attnSet{}
	for _, d := range dirs {
		b, err := ReadBundle(d)
		if err != nil {
			return nil, err
		}
		g, err := b.BundleGPU(cat)
		if err != nil {
			return nil, err
		}
		ss, err := b.AttnSamples()
		if err != nil {
			return nil, err
		}
		if len(ss) == 0 {
			continue
		}
		s := sets[g.Name]
		if s == nil {
			s = &attnSet{gpu: g}
			sets[g.Name] = s
		}
		s.bundles = append(s.bundles, b)
		s.samples = append(s.samples, ss)
	}
	return sets, nil
}

// attnColumns are the call types of the attention table.
var attnColumns = []string{"all calls", "prefill only", "decode only", "mixed"}

// attnCells are the signed-error statistics of a on ss by call type.
func attnCells(a *Attention, g *hardware.GPU, ss []AttnSample) []ErrStats {
	pe := make([][]float64, len(attnColumns))
	for i := range ss {
		e := 100 * (AttnTime(a, g, &ss[i])/ss[i].Seconds - 1)
		pe[0] = append(pe[0], e)
		switch s := &ss[i]; {
		case s.HasP && s.HasD:
			pe[3] = append(pe[3], e)
		case s.HasP:
			pe[1] = append(pe[1], e)
		default:
			pe[2] = append(pe[2], e)
		}
	}
	out := make([]ErrStats, len(pe))
	for i := range pe {
		out[i] = errStats(pe[i])
	}
	return out
}

// attnKVHeads is the KV heads per GPU of a call's model and TP degree.
func attnKVHeads(s *AttnSample) int {
	if s.HasD {
		return s.Decode.KVHeads
	}
	return s.Prefill.KVHeads
}

// attnMaxKV is the largest KV axis value of a call.
func attnMaxKV(s *AttnSample) int { return max(s.Row.KVPrefill, s.Row.KVDecode) }

// attnMemo caches EvaluateAttention by directory: the fit is
// deterministic and takes seconds, and the built-in profiles and the
// report both need it.
var attnMemo struct {
	sync.Mutex
	m map[string]attnResult
}

type attnResult struct {
	t    *ErrTable
	fits map[string]Attention
}

// EvaluateAttention fits the attention model to the bundles under dir and
// returns its error table: in sample per GPU, held out by model (RTX PRO
// 6000: fit Llama-3.1-8B TP 1, predict the others), by grid (fit the
// doubling-grid calls, predict the ×1.5 ones), by TP, by context (H100:
// fit KV ≤ 256, predict KV 1024) and by GPU (one GPU's fit on another's
// peaks: the transfer the built-in A100, H200 and B200 profiles make). It
// also returns the in-sample fit of each GPU.
func EvaluateAttention(dir string) (*ErrTable, map[string]Attention, error) {
	attnMemo.Lock()
	defer attnMemo.Unlock()
	if r, ok := attnMemo.m[dir]; ok {
		return r.t, r.fits, nil
	}
	t, fits, err := evaluateAttention(dir)
	if err != nil {
		return nil, nil, err
	}
	if attnMemo.m == nil {
		attnMemo.m = map[string]attnResult{}
	}
	attnMemo.m[dir] = attnResult{t, fits}
	return t, fits, nil
}

func evaluateAttention(dir string) (*ErrTable, map[string]Attention, error) {
	sets, err := loadAttnSets(dir, hardware.Builtin())
	if err != nil {
		return nil, nil, err
	}
	t := &ErrTable{Title: "Attention (LLMServingSim bundles, vLLM 0.19 FlashAttention calls of one layer)", RowHeader: "fit → predicted",
		Note: "Each call is one attention layer of a batch of at most one prefill chunk and N decodes (attention.csv); " +
			"the model prices the prefill and the decodes as two operators and sums them (hardware/calibrate/attention.go). " +
			"A transfer applies one GPU's fitted efficiencies and overheads to another GPU's peaks.",
		Columns: attnColumns}
	fits := map[string]Attention{}
	add := func(row string, a *Attention, g *hardware.GPU, ss []AttnSample) {
		if len(ss) == 0 {
			return
		}
		t.Rows = append(t.Rows, row)
		t.Cells = append(t.Cells, attnCells(a, g, ss))
	}
	fit := func(ss []AttnSample, g *hardware.GPU) (*Attention, error) {
		a, err := FitAttention(ss, g)
		return &a, err
	}
	// older adds the rows of the other decode-only forms (fitAttnCalls)
	// on the same split, for comparison: the residual table keyed by the
	// decode count alone instead of decodes × KV heads, the additive form
	// without the table, and the older form without a per-sequence cost.
	older := func(row string, fitOn []AttnSample, g *hardware.GPU, pred []AttnSample) error {
		bySeqs := func(ss []AttnSample) []AttnSample {
			out := append([]AttnSample(nil), ss...)
			for i := range out {
				out[i].Decode.KVHeads = 0 // work units = decodes (decodeWork)
			}
			return out
		}
		a, err := fitAttnCalls(bySeqs(fitOn), g, formResidual)
		if err != nil {
			return err
		}
		add(row+", residual table by decodes alone (not decodes × KV heads), for comparison", &a, g, bySeqs(pred))
		a, err = fitAttnCalls(fitOn, g, formAdditive)
		if err != nil {
			return err
		}
		add(row+", additive decode form without the residual table, for comparison", &a, g, pred)
		a, err = fitAttnCalls(fitOn, g, formOlder)
		if err != nil {
			return err
		}
		add(row+", older decode form (no per-sequence cost), for comparison", &a, g, pred)
		return nil
	}
	// byContext adds the held-out-by-context row (fit max KV ≤ kv, predict
	// longer) of set s, and its older-form row.
	byContext := func(name string, s *attnSet, kv int) error {
		fitOn := s.all("", 0, func(x *AttnSample) bool { return attnMaxKV(x) <= kv })
		pred := s.all("", 0, func(x *AttnSample) bool { return attnMaxKV(x) > kv })
		a, err := fit(fitOn, s.gpu)
		if err != nil {
			return err
		}
		row := fmt.Sprintf("%s KV ≤ %d → longer", name, kv)
		add(row, a, s.gpu, pred)
		return older(row, fitOn, s.gpu, pred)
	}
	for _, name := range sortedKeys(sets) {
		s := sets[name]
		a, err := fit(s.all("", 0, nil), s.gpu)
		if err != nil {
			return nil, nil, err
		}
		fits[name] = *a
		var ms []string
		for _, b := range s.bundles {
			ms = append(ms, b.Meta.Model)
		}
		add(fmt.Sprintf("%s in sample (%s)", name, strings.Join(ms, ", ")), a, s.gpu, s.all("", 0, nil))
		if err := older(name+" in sample", s.all("", 0, nil), s.gpu, s.all("", 0, nil)); err != nil {
			return nil, nil, err
		}
		def := hardware.DefaultEfficiency()
		before := Attention{ComputeEff: def.AttnCompute, MemoryEff: def.Memory, OverheadS: def.OpOverhead}
		add(fmt.Sprintf("%s: the assumed roofline (50 %% of peak FLOP/s, 80 %% of HBM, 4 µs), for comparison", name), &before, s.gpu, s.all("", 0, nil))
	}
	if s := sets["rtx-pro-6000"]; s != nil {
		a, err := fit(s.all("Llama-3.1-8B", 1, nil), s.gpu)
		if err != nil {
			return nil, nil, err
		}
		fitOn := s.all("Llama-3.1-8B", 1, nil)
		for _, h := range []struct {
			row, model string
			tp         int
		}{
			{"rtx-pro-6000 Llama-3.1-8B TP1 → Qwen3-32B TP1, TP2", "Qwen3-32B", 0},
			{"rtx-pro-6000 Llama-3.1-8B TP1 → Qwen3-30B-A3B TP1, TP2", "Qwen3-30B-A3B", 0},
			{"rtx-pro-6000 Llama-3.1-8B TP1 → Llama-3.1-8B TP2", "Llama-3.1-8B", 2},
		} {
			add(h.row, a, s.gpu, s.all(h.model, h.tp, nil))
			if err := older(h.row, fitOn, s.gpu, s.all(h.model, h.tp, nil)); err != nil {
				return nil, nil, err
			}
		}
		dbl := func(x *AttnSample) bool { return doubling(x.Row) }
		a, err = fit(s.all("", 0, dbl), s.gpu)
		if err != nil {
			return nil, nil, err
		}
		add("rtx-pro-6000 doubling grid → ×1.5 grid (all models)", a, s.gpu, s.all("", 0, func(x *AttnSample) bool { return !doubling(x.Row) }))
		if err := older("rtx-pro-6000 doubling grid → ×1.5 grid (all models)", s.all("", 0, dbl), s.gpu, s.all("", 0, func(x *AttnSample) bool { return !doubling(x.Row) })); err != nil {
			return nil, nil, err
		}
		if err := byContext("rtx-pro-6000", s, 1024); err != nil {
			return nil, nil, err
		}
		// Held out by KV heads per GPU, the decode grid's other axis: a
		// GQA model with fewer KV heads than the fit's (attention_residual.go).
		kv8 := func(x *AttnSample) bool { return attnKVHeads(x) == 8 }
		fitOn, pred := s.all("", 0, kv8), s.all("", 0, func(x *AttnSample) bool { return !kv8(x) })
		if a, err = fit(fitOn, s.gpu); err != nil {
			return nil, nil, err
		}
		row := "rtx-pro-6000 8 KV heads per GPU → 4 and 2 (Llama-3.1-8B, Qwen3-32B TP1 → their TP2, Qwen3-30B-A3B)"
		add(row, a, s.gpu, pred)
		if err := older(row, fitOn, s.gpu, pred); err != nil {
			return nil, nil, err
		}
	}
	if s := sets["rtx-4090"]; s != nil {
		if err := byContext("rtx-4090", s, 1024); err != nil {
			return nil, nil, err
		}
	}
	if s := sets["h100"]; s != nil {
		a, err := fit(s.all("", 1, nil), s.gpu)
		if err != nil {
			return nil, nil, err
		}
		add("h100 TP1 → TP8", a, s.gpu, s.all("", 8, nil))
		if err := older("h100 TP1 → TP8", s.all("", 1, nil), s.gpu, s.all("", 8, nil)); err != nil {
			return nil, nil, err
		}
		if err := byContext("h100", s, 256); err != nil {
			return nil, nil, err
		}
	}
	for _, pair := range [][2]string{{"rtx-4090", "rtx-pro-6000"}, {"rtx-pro-6000", "rtx-4090"}, {"h100", "rtx-pro-6000"}, {"rtx-pro-6000", "h100"}, {"rtx-4090", "h100"}} {
		from, to := sets[pair[0]], sets[pair[1]]
		if from == nil || to == nil {
			continue
		}
		a, _ := fits[pair[0]].onSMs(from.gpu.SMs, to.gpu.SMs, pair[0], pair[1])
		short := func(x *AttnSample) bool { return attnMaxKV(x) <= 1024 }
		add(fmt.Sprintf("%s → %s (transfer; KV ≤ 1024)", pair[0], pair[1]), &a, to.gpu, to.all("", 0, short))
		// The rule the built-in transfers follow (attention_scale.go),
		// with the shipped profiles' GEMM fits.
		src, ok1 := Builtin(pair[0])
		dst, ok2 := Builtin(pair[1])
		if ok1 && ok2 {
			sc, _ := attnScale(src, dst)
			b := a.scaleCompute(sc)
			add(fmt.Sprintf("%s → %s (transfer, compute × %.3f, the GEMMs'; KV ≤ 1024)", pair[0], pair[1], sc), &b, to.gpu, to.all("", 0, short))
		}
	}
	return t, fits, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// attentionFor returns the attention of a built-in profile of gpu from the
// bundles' fits: measured where the GPU has a bundle, else transferred
// from the GPU of the same kernels (attnTransfer), with the source text
// and a note saying which. A transfer in attnComputeScaled scales the
// compute efficiencies by the GEMMs' (attention_scale.go): dst is gpu's
// profile, srcOf the profile of the GPU the fit comes from (nil or not
// found: unscaled). It returns false for a GPU with neither.
func attentionFor(gpu string, fits map[string]Attention, table *ErrTable, dst *Profile, srcOf func(string) (*Profile, bool)) (Attention, string, bool) {
	from := gpu
	if _, ok := fits[gpu]; !ok {
		from = attnTransfer[gpu].from
	}
	a, ok := fits[from]
	if !ok {
		return Attention{}, "", false
	}
	held := ""
	for i, r := range table.Rows {
		if strings.HasPrefix(r, from+" in sample") {
			c := table.Cells[i][0]
			held = fmt.Sprintf("in sample: median %.1f %%, p90 %.1f %% over %d calls", c.Median, c.P90, c.N)
		}
	}
	if from == gpu {
		a.Source = fmt.Sprintf("fitted to the %s attention calls of LLMServingSim's profile bundles (vLLM 0.19.0, FlashAttention varlen, BF16 KV; "+
			"../shared/data/llmservingsim/profiles, %s): prefill (o + max(FLOPs, bytes terms)), decode-only (additive: o + decodes × a per-sequence cost + KV bytes at a fitted bandwidth) and mixed-batch decode parameters in three least-squares stages (%s)",
			gpu, attnBundleNote[gpu], held)
		return a, "", true
	}
	a.From = "transferred from " + from
	a.Fit = FitStats{}
	a.Source = fmt.Sprintf("transferred: the %s fit to LLMServingSim's attention calls (%s; %s) on the %s peaks", from, attnBundleNote[from], held, gpu)
	cat := hardware.Builtin()
	gf, err1 := cat.Get(from)
	gt, err2 := cat.Get(gpu)
	if err1 != nil || err2 != nil {
		a.DecodeResidualUnits, a.DecodeResidualBytes, a.DecodeResidual = nil, nil, nil
		return a, attnTransfer[gpu].why, true
	}
	a, resid := a.onSMs(gf.SMs, gt.SMs, from, gpu)
	why := attnTransfer[gpu].why + resid
	if src, ok := lookup(srcOf, from); ok && dst != nil && attnComputeScaled[gpu] {
		s, note := attnScale(src, dst)
		a = a.scaleCompute(s)
		why += note
		if note != "" {
			a.Source += fmt.Sprintf(", compute efficiencies × %.3f (the BF16 GEMMs' compute efficiency, %s over %s)", s, gpu, from)
		}
	}
	return a, why, true
}

// lookup returns srcOf(gpu), false where srcOf is nil.
func lookup(srcOf func(string) (*Profile, bool), gpu string) (*Profile, bool) {
	if srcOf == nil {
		return nil, false
	}
	return srcOf(gpu)
}

// attnBundleNote says what each GPU's attention fit was measured on.
var attnBundleNote = map[string]string{
	"h100": "Qwen3.6-35B-A3B's 10 full-attention layers (16 query heads, 2 KV heads, head_dim 256) at TP 1 and 8, " +
		"contexts up to 1,024 tokens only: longer contexts extrapolate the fitted bandwidth terms, e.g. 16× at 16k",
	"rtx-4090":     "Llama-3.1-8B TP 1, contexts up to 16,384",
	"rtx-pro-6000": "Llama-3.1-8B, Qwen3-32B and Qwen3-30B-A3B at TP 1 and 2, contexts up to 16,384",
}

// attnTransfer names, for a GPU without attention timings, the GPU whose
// attention fit it takes, and why.
var attnTransfer = map[string]struct{ from, why string }{
	"a100": {"rtx-4090", "Attention is the RTX 4090's fit transferred (A100 has no attention timings): A100 (sm_80) and RTX 4090 (sm_89) run the same " +
		"FlashAttention-2 kernels in vLLM 0.19 (FlashAttention-3 needs Hopper), so their efficiencies are taken as fractions of the A100's " +
		"312 TFLOP/s and 2.04 TB/s. Unmeasured on an A100; the RTX 4090 ↔ RTX PRO 6000 transfers in `servesim calibrate --report` show the size of such errors."},
	"h200": {"h100", "Attention is the H100's fit with the H200's bandwidth (same GH100 chip, same FlashAttention-3 kernels, HBM3e 4.8 TB/s): " +
		"decode attention is bandwidth-bound and speeds up 1.43×. Unmeasured on an H200."},
	"b200": {"h100", "Attention is the H100's fit on the B200's peaks: B200 (sm_100) is a data-center part like the H100, while the measured " +
		"Blackwell, the RTX PRO 6000 (sm_120), runs other kernels on GDDR7. The least certain attention of the built-in profiles."},
	// The derived profiles (builtin_derived.go): the fit of the GPU that
	// runs the same attention kernels.
	"h100-pcie": {"h100", "Attention is the H100's fit on the H100 PCIe's peaks (same GH100, same FlashAttention-3 kernels; HBM2e at 2.0 TB/s, 0.60× the SXM's, " +
		"so bandwidth-bound decode attention slows down 1.68×). Unmeasured on an H100 PCIe."},
	"a100-pcie": {"rtx-4090", "Attention is the RTX 4090's fit transferred, as the A100 SXM's: A100 (sm_80) and RTX 4090 (sm_89) run the same " +
		"FlashAttention-2 kernels in vLLM 0.19 (FlashAttention-3 needs Hopper), so their efficiencies are taken as fractions of the A100 PCIe's " +
		"312 TFLOP/s and 1.935 TB/s. Unmeasured on an A100."},
	"gb200": {"h100", "Attention is the H100's fit on the GB200's peaks, as the B200's (the same sm_100 GPU): the least certain attention of the built-in profiles. Unmeasured on a GB200."},
	"b300":  {"h100", "Attention is the H100's fit on the B300's peaks, as the B200's (Blackwell Ultra, sm_103, the same trtllm-gen attention kernels; its doubled softmax-exponent rate is not modelled). Unmeasured on a B300."},
	"gb300": {"h100", "Attention is the H100's fit on the GB300's peaks, as the B300's (the same Blackwell Ultra GPU in a Grace superchip). Unmeasured on a GB300."},
	"l40s": {"rtx-4090", "Attention is the RTX 4090's fit on the L40S's peaks: both are AD102 (Ada, sm_89) and run the same FlashAttention-2 kernels in vLLM 0.19, " +
		"the closest measured GPU. Unmeasured on an L40S."},
}

// bundlesPresent reports whether dir exists.
func bundlesPresent(dir string) bool {
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}

// IsBundleDir reports whether dir is a profile bundle or holds some below
// it (and is not a copy of Vidur's data/profiling).
func IsBundleDir(dir string) bool {
	if IsBundle(dir) {
		return true
	}
	if _, err := os.Stat(filepath.Join(dir, "compute")); err == nil {
		return false
	}
	ds, err := FindBundles(dir)
	return err == nil && len(ds) > 0
}

// WithBundleAttention returns p with its attention fitted to the attention
// calls that the bundles at or below dir measured on p's GPU (catalog cat
// names the bundles' GPUs), and a note saying so; the rest of p is kept.
func WithBundleAttention(p *Profile, dir string, cat *hardware.Catalog) (*Profile, error) {
	sets, err := loadAttnSets(dir, cat)
	if err != nil {
		return nil, err
	}
	s := sets[p.GPU]
	if s == nil {
		return nil, fmt.Errorf("calibrate: no attention timings for gpu %q under %s (bundles for: %s)", p.GPU, dir, strings.Join(sortedKeys(sets), ", "))
	}
	a, err := FitAttention(s.all("", 0, nil), s.gpu)
	if err != nil {
		return nil, err
	}
	var files, ms []string
	for _, b := range s.bundles {
		ms = append(ms, b.Meta.Model)
		for _, t := range b.TP {
			if len(t.Attention) > 0 {
				rel, err := filepath.Rel(dir, filepath.Join(b.Dir, fmt.Sprintf("tp%d", t.TP), "attention.csv"))
				if err != nil {
					rel = filepath.Join(b.Dir, fmt.Sprintf("tp%d", t.TP), "attention.csv")
				}
				files = append(files, rel)
			}
		}
	}
	a.Source = fmt.Sprintf("fitted to %d attention calls of LLMServingSim profile bundles in %s (%s; files %s): prefill (o + max(FLOPs, bytes terms)), decode-only (additive: o + decodes × a per-sequence cost + KV bytes at a fitted bandwidth) and mixed-batch decode parameters in three least-squares stages (in sample: median %.1f %%, p90 %.1f %%)",
		a.Fit.Samples, filepath.Base(filepath.Clean(dir)), strings.Join(ms, ", "), strings.Join(files, ", "), a.Fit.MedianAPE, a.Fit.P90APE)
	q := p.Clone()
	q.Attention = a
	q.Notes = append(q.Notes, "Attention is fitted to profile bundles (kernel time of vLLM's Attention module, eager mode); every other class is the base profile's.")
	return q, nil
}

// AttachAttention sets p's attention as the built-in profiles' is: fitted
// to the bundles under dir (EvaluateAttention) where p's GPU has some,
// else transferred from the GPU of the same kernels, with a note saying
// which (its compute scaled by the GEMMs' against that GPU's built-in
// profile, attention_scale.go). It returns false, leaving p alone, for a
// GPU with neither.
func AttachAttention(p *Profile, dir string) (bool, error) {
	return attachAttention(p, dir, Builtin)
}

// attachAttention is AttachAttention with the transfer source's profile
// from srcOf (GenerateBuiltin passes the profiles it is fitting).
func attachAttention(p *Profile, dir string, srcOf func(string) (*Profile, bool)) (bool, error) {
	t, fits, err := EvaluateAttention(dir)
	if err != nil {
		return false, err
	}
	a, note, ok := attentionFor(p.GPU, fits, t, p, srcOf)
	if !ok {
		return false, nil
	}
	p.Attention = a
	if note != "" {
		p.Notes = append(p.Notes, note)
	}
	if blackwellDecodeGPUs[p.GPU] {
		// Decode-only attention measured on the B200 (blackwell_attention.go).
		d, err := FitB200Decode(a)
		if err != nil {
			return false, err
		}
		p.Notes = append(p.Notes, d.apply(&p.Attention, p.GPU))
	}
	return true, nil
}
