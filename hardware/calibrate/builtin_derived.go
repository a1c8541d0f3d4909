package calibrate

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// derivedGPU is a catalog GPU without kernel timings of its own whose
// built-in profile is a measured GPU's fit transferred through its specs,
// by architecture (GenerateBuiltin). The rules every one follows:
//
//   - Transfer: efficiencies, half-token counts, tiles and fixed overheads
//     kept as fractions of the target's peaks, GEMM waves counted on its
//     SMs; the residual trees kept only where the SM count is the same
//     (they describe cuBLAS's kernel choice on one SM count), as for h200
//     and b200;
//   - all-reduce: a GPU with NVLink (LinkBW > HostBW, hardware.GPU.NVLink)
//     keeps the source's NCCL fit on its own link bandwidth; a PCIe GPU
//     drops the source's NVLink fit (an NVLink ring says nothing about a
//     PCIe one) and takes a fit to measured PCIe all-reduces where Vidur
//     has some (arNode), else the roofline;
//   - iteration overhead: the source's (the A100 host's sarathi-serve CPU
//     time, GPU-independent), as every built-in profile;
//   - memory: the engine's vLLM memory plan reads device_bytes from
//     gpus.toml where a driver figure is cited there (none of these has
//     one, so it takes mem_bytes), nothing in the profile.
type derivedGPU struct {
	gpu  string // catalog name
	from string // the built-in profile it is derived from
	// fit is the fitted profile Transfer moves (from, or from's own
	// source where from is itself a transfer).
	fit string
	// precisions is the GPU whose [[gemm_precision]] entries it carries,
	// relabelled as transferred ("": none).
	precisions string
	// arNode is a Vidur network/<node> with measured all-reduces over the
	// target's PCIe interconnect, arTP the TP degree of them that crosses
	// PCIe ("": none).
	arNode string
	arTP   int
	// why says what is measured and what is transferred, and why this
	// source.
	why string
}

// derivedGPUs are the catalog GPUs whose built-in profile is derived.
var derivedGPUs = []derivedGPU{
	{gpu: "h100-pcie", from: "h100", fit: "h100", precisions: "h100", arNode: "h100_pairwise_nvlink", arTP: 4,
		why: "H100 PCIe is the H100 SXM's GH100 die with 114 of its 132 SMs enabled, HBM2e at 2.0 TB/s and a 350 W limit (gpus.toml: BF16 756 TFLOP/s dense, 0.76× the SXM's; HBM 0.60×). " +
			"Assumed: the same Hopper kernels (cuBLAS, FlashAttention-3) reach the same fractions of these peaks; the GEMM tiles are kept and their waves counted on 114 SMs; " +
			"the residual trees are dropped (another SM count); the FP8 [[gemm_precision]] is the H100's (sm_90, the same tensor cores), relabelled transferred. " +
			"Tensor parallelism runs over PCIe Gen5 (the optional NVLink bridge joins pairs only and is not modelled): the H100 DGX's NVLink all-reduce fit is dropped."},
	{gpu: "a100-pcie", from: "a100", fit: "a100", arNode: "a100_pairwise_nvlink", arTP: 4,
		why: "A100 PCIe 80GB is the A100 SXM's GA100 with the same 108 SMs and tensor-core peak, HBM2e at 1.935 TB/s (0.95×) and a 300 W limit against 400 W. " +
			"Assumed: the same Ampere kernels reach the same fractions of the peaks (a 300 W card may clock lower under sustained GEMMs: not modelled); the same 108 SMs, so the GEMM tiles and residual trees are kept. " +
			"Tensor parallelism runs over PCIe Gen4 (the optional NVLink bridge joins pairs only and is not modelled): the A100 DGX's NVLink all-reduce fit is dropped."},
	{gpu: "gb200", from: "b200", fit: "h100", precisions: "b200",
		why: "GB200 is the B200's Blackwell GPU (sm_100, 148 SMs) in a Grace superchip at 1,200 W: 2.5 PFLOP/s BF16 dense against 2.25 (1.11×, higher clocks), the same 8 TB/s HBM3e and NVLink5. " +
			"It is built as b200 is: the H100 fit transferred through its specs (trees dropped: 148 SMs) with the B200's measured [[gemm_precision]] (XLA's sm_100_B200 BF16 and FP8 tables, vLLM's B200 NVFP4 benchmark: compute and memory scales, extra half-saturation tokens), " +
			"relabelled transferred and applied as the same fractions of the GB200's higher peaks; attention the H100's fit, as b200's; the all-reduce the H100 DGX's NCCL fit on NVLink5 (as b200; the 72-GPU NVLink Switch domain is not modelled). " +
			"Assumed: the extra 11 % of compute peak is delivered at the B200's efficiency (power, not kernels, separates the two); the NVLink-C2C host link only matters for swapping."},
	{gpu: "b300", from: "b200", fit: "h100", precisions: "b200",
		why: "B300 (Blackwell Ultra, sm_103, 148 SMs enabled) keeps the B200's BF16 and FP8 dense peaks (2.25 / 4.5 PFLOP/s), 8 TB/s HBM3e (288 GB) and NVLink5, and raises FP4 to 14 PFLOP/s dense against 9 (1.56×) at 1,100 W. " +
			"It is built as b200 is: the H100 fit transferred through its specs (trees dropped: 148 SMs) with the B200's measured [[gemm_precision]] (XLA's sm_100_B200 BF16 and FP8 tables, vLLM's B200 NVFP4 benchmark) relabelled transferred, " +
			"and the B200's measured decode attention (vLLM's trtllm-gen decode benchmark) on its bandwidth. " +
			"Assumed: sm_103's kernels reach the B200's fractions of these peaks, FP4 included (so FP4 GEMMs are 1.56× the B200's when compute-bound: unmeasured, and FP4 GEMM kernels tuned for sm_100 may not reach the new peak); " +
			"the doubled softmax-exponent rate (attention acceleration) is not modelled; the all-reduce the H100 DGX's NCCL fit on NVLink5."},
	{gpu: "gb300", from: "b200", fit: "h100", precisions: "b200",
		why: "GB300 is the B300's Blackwell Ultra GPU in a Grace superchip at 1,400 W: 2.5 / 5 / 15 PFLOP/s BF16 / FP8 / FP4 dense (1.11× the B300's BF16 and FP8, 1.07× its FP4), the same 8 TB/s HBM3e and NVLink5. " +
			"It is built as b300 is (the H100 fit on its specs, the B200's measured [[gemm_precision]] relabelled transferred, the B200's measured decode attention on its bandwidth); " +
			"assumed: the extra compute peak is delivered at the B200's efficiency, as for gb200; the 72-GPU NVLink Switch domain is not modelled."},
	{gpu: "l40s", from: "rtx-4090", fit: "rtx-4090",
		why: "L40S is an AD102 (Ada, sm_89) like the RTX 4090, the closest measured GPU: 142 SMs against 128, GDDR6 at 864 GB/s against the 4090's GDDR6X at 1,008 GB/s (0.86×), " +
			"and a data-center BF16 rate with FP32 accumulate of 362 TFLOP/s dense against the GeForce card's 165 (2.19×: GeForce halves FP32-accumulate tensor throughput). " +
			"Assumed: the same vLLM 0.19 kernels (cuBLAS GEMMs, FlashAttention-2 attention as the rtx-4090 fit) reach the same fractions of these peaks; the GEMM tiles are kept and their waves counted on 142 SMs; " +
			"the RTX 4090 fit has no residual trees. The least certain of the transfers on the GEMM side: the 2.19× compute peak is a datasheet ratio, and a 350 W card may not sustain it. " +
			"Tensor parallelism over PCIe Gen4 at the roofline (no Ada all-reduce is measured; the RTX 4090 profile has no fit either)."},
}

// matmulBench is one public benchmark script's best square matmul
// throughput (github.com/zzc0721/torch-performance-test-data: torch.matmul
// on N×N matrices, N = 1024 to 10240, the best TFLOP/s per dtype; each
// figure from one user's run, posted as an issue) on a derived GPU and on
// the GPU its profile is transferred from. Their ratio, each against its
// datasheet dense peak (the catalog's), is how much less of its peak the
// derived GPU sustains in compute-bound GEMMs: a power- or clock-limited
// card (L40S at 350 W, H100 PCIe at 350 W) does not reach the fraction its
// source does. It scales the transferred GEMM compute efficiencies
// ([[gemm_precision]] bf16, and the carried FP8/FP4 entries with it).
type matmulBench struct {
	gpu, source             string
	tflops, sourceTFLOPS    float64 // best half-precision TFLOP/s
	peak, sourcePeak        float64 // catalog BF16 dense peaks, TFLOP/s
	issue, sourceIssue, run string  // issue numbers and what was run
}

var matmulBenches = []matmulBench{
	// L40S: issue #43 (2025-10-05, docker, PyTorch 2.8 / CUDA 12.8), the
	// script's early table (FP32 | FP16 | BF16 | N/A, as its H100 row of
	// the same day, issue #39: 52.11 | 758.14 | 783.66 | N/A): FP16
	// 264.02, BF16 269.15. RTX 4090: issue #78 (2025-10-17, PyTorch 2.7 /
	// CUDA 12.8): FP16 168.38, BF16 164.81. The best half-precision figure
	// of each (both run on the same tensor cores at the same rate).
	{gpu: "l40s", source: "rtx-4090", tflops: 269.15, sourceTFLOPS: 168.38, peak: 362.05, sourcePeak: 165.2,
		issue: "#43", sourceIssue: "#78", run: "PyTorch 2.7/2.8, CUDA 12.8"},
	// H100 PCIe: issue #95 (2025-12-14, bare metal, PyTorch 2.9 / CUDA
	// 12.8): BF16 495.93 (FP16 458.03). H100 80GB HBM3 (SXM): issue #79
	// (2025-10-18, docker, PyTorch 2.7 / CUDA 12.8): BF16 797.51 (FP16
	// 760.04).
	{gpu: "h100-pcie", source: "h100", tflops: 495.93, sourceTFLOPS: 797.51, peak: 756, sourcePeak: 989.4,
		issue: "#95", sourceIssue: "#79", run: "PyTorch 2.7/2.9, CUDA 12.8"},
}

// benchFor returns the matmul benchmark of gpu, if any.
func benchFor(gpu string) (matmulBench, bool) {
	for _, b := range matmulBenches {
		if b.gpu == gpu {
			return b, true
		}
	}
	return matmulBench{}, false
}

// scale is the factor on the source's compute efficiencies.
func (b matmulBench) scale() float64 {
	return (b.tflops / b.peak) / (b.sourceTFLOPS / b.sourcePeak)
}

// apply adds b's measured BF16 compute scale to ps and multiplies the
// compute scale of every other entry by it (the same power limit on the
// same tensor cores, assumed to hold for FP8/FP4, which the benchmark
// does not run), saying so in their sources.
func (b matmulBench) apply(ps []GEMMPrecision) []GEMMPrecision {
	f := b.scale()
	src := fmt.Sprintf("one public benchmark on both GPUs (github.com/zzc0721/torch-performance-test-data, torch.matmul on square N = 1024–10240, %s): "+
		"the best half-precision TFLOP/s, %s %.2f (issue %s) against its %.2f dense peak (%.3f), %s %.2f (issue %s) against its %.1f (%.3f): "+
		"the %s fit's compute efficiencies × %.3f. One run each, square shapes only; memory-bound kernels are not adjusted",
		b.run, strings.ToUpper(b.gpu), b.tflops, b.issue, b.peak, b.tflops/b.peak, strings.ToUpper(b.source), b.sourceTFLOPS, b.sourceIssue, b.sourcePeak, b.sourceTFLOPS/b.sourcePeak, b.source, f)
	out := []GEMMPrecision{{DType: "bf16", ComputeScale: f, Basis: BasisMeasured, Source: "measured, " + src}}
	for _, p := range ps {
		p.ComputeScale *= f
		p.Source += fmt.Sprintf("; × %.3f for this GPU's measured BF16 compute ratio (%s), assumed to hold at this precision", f, src)
		out = append(out, p)
	}
	return out
}

// derivedMeasured says, per derived GPU, what measured data of it exists
// in ../shared/data and this package's testdata.
var derivedMeasured = map[string]string{
	"h100-pcie": "No H100 PCIe kernel timings exist in ../shared/data or this package's testdata (vidur-profiling has A100 and H100 SXM; LLMServingSim H100 SXM, RTX PRO 6000, RTX 4090; XLA sm_90 and sm_100_B200; gpu-specs.md has specs only), so the kernel transfer error cannot be measured on it; its GEMM compute scale rests on one public square-matmul benchmark of it and the H100 SXM ([[gemm_precision]] bf16).",
	"a100-pcie": "No A100 PCIe kernel timings exist in ../shared/data or this package's testdata, so the kernel transfer error cannot be measured on it; its all-reduces are measured (Vidur's a100_pairwise_nvlink, see below).",
	"gb200":     "No GB200 timings exist in ../shared/data (XLA's table has no GB200 matmul rows: its GB200/GB300 PR added collective tables only; xla-matmul/SOURCE.md), so the transfer error cannot be measured on it.",
	"b300":      "No B300 timings exist in ../shared/data or this package's testdata (XLA's table has no sm_103 rows; the Blackwell kernel tables in testdata/blackwell are B200), so the transfer error cannot be measured on it.",
	"gb300":     "No GB300 timings exist in ../shared/data or this package's testdata, so the transfer error cannot be measured on it.",
	"l40s":      "No L40S kernel timings exist in ../shared/data or this package's testdata (gpu-specs.md does not list it), so the transfer error cannot be measured on it; its GEMM compute scale rests on one public square-matmul benchmark of both Ada GPUs ([[gemm_precision]] bf16).",
}

// relabel returns ps relabelled as measured on gpu and carried to target.
func relabel(ps []GEMMPrecision, gpu, target string) []GEMMPrecision {
	out := make([]GEMMPrecision, len(ps))
	for i, p := range ps {
		p.Basis = BasisTransferred
		p.Source = fmt.Sprintf("the %s's entry, carried to %s (same tensor cores, no %s GEMM table): %s", strings.ToUpper(gpu), target, target, p.Source)
		out[i] = p
	}
	return out
}

// pcieAllReduce fits the all-reduces at tp of Vidur's network/<node> as
// measured over g's PCIe, and returns the fit, the source file and a note
// with the fit's error and the roofline's against the same timings.
func pcieAllReduce(dir, node string, tp int, g *hardware.GPU) ([]AllReduceParams, string, string, error) {
	rel := "network/" + node + "/all_reduce.csv"
	rows, err := readFile(filepath.Join(dir, filepath.FromSlash(rel)), rel, ReadVidurCollective)
	if err != nil {
		return nil, "", "", err
	}
	var ss []Sample
	for _, s := range AllReduceSamples(rows, g.Name, rel) {
		if s.TP == tp {
			ss = append(ss, s)
		}
	}
	ar, _, err := fitAllReduce(ss, g)
	if err != nil {
		return nil, "", "", err
	}
	if len(ar) != 1 {
		return nil, "", "", fmt.Errorf("calibrate: %s: no usable all-reduce fit at tp %d", rel, tp)
	}
	// The roofline these replace: the GPU's link latency and
	// DefaultEfficiency's link efficiency.
	roof := &Profile{AllReduce: []AllReduceParams{{TP: tp, LatencyS: g.LinkLatency, LinkEff: hardware.DefaultEfficiency().Link}}}
	var fitPE, roofPE []float64
	for _, s := range ss {
		c := 2 * float64(tp-1) / float64(tp) * s.Op.CommBytes / g.LinkBW
		fitPE = append(fitPE, 100*((ar[0].LatencyS+c/ar[0].LinkEff)/s.Seconds-1))
		r := roof.AllReduce[0]
		roofPE = append(roofPE, 100*((r.LatencyS+c/r.LinkEff)/s.Seconds-1))
	}
	f, r := errStatsOf(fitPE), errStatsOf(roofPE)
	note := fmt.Sprintf("all-reduce: fitted to the %d TP %d all-reduces of Vidur's %s (%s), whose ring crosses PCIe between the NVLink pairs: latency %.1f µs, %.2f of the %.0f GB/s PCIe link; "+
		"in sample median %.1f %%, p90 %.1f %% (the roofline, %.1f µs and %.2f of the link: %.1f %% / %.1f %%, median signed %+.1f %%). "+
		"It prices every TP degree (the nearest entry): that node's TP 2 runs over the NVLink bridge, which the catalog does not model, and it has no TP 8.",
		len(ss), tp, rel, vidurNodeNote[node], ar[0].LatencyS*1e6, ar[0].LinkEff, g.LinkBW/1e9, f.Median, f.P90,
		g.LinkLatency*1e6, hardware.DefaultEfficiency().Link, r.Median, r.P90, r.Bias)
	return ar, rel, note, nil
}

// vidurNodeNote says what each Vidur network node is (vidur-profiling/SOURCE.md).
var vidurNodeNote = map[string]string{
	"a100_pairwise_nvlink": "an Azure Standard_NC96ads_A100_v4, 4 A100-80GB PCIe GPUs with NVLink between pairs and slower links across them: this GPU",
	"h100_pairwise_nvlink": "an Azure VM with 4 H100 NVL GPUs in NVLink pairs: PCIe Gen5 cards like the H100 PCIe, though the NVL is another card (94 GB HBM3, 132 SMs), and the link is what an all-reduce measures",
}

// errStatsOf returns the median and p90 absolute and the median signed
// errors of pe (percent).
func errStatsOf(pe []float64) ErrStats {
	t := table("", []string{"x"}, [][]labelled{func() []labelled {
		l := make([]labelled, len(pe))
		for i, v := range pe {
			l[i] = labelled{kind: models.OpAllReduce, pe: v}
		}
		return l
	}()})
	c, _ := t.Cell(RowAll, "x")
	return c
}

// measuredNote returns the note of profile p of g against the native CSV
// at path, or "" when the file is of another GPU than want.
func measuredNote(p *Profile, g *hardware.GPU, path, want, lead string) (string, error) {
	ss, err := readFile(path, filepath.Base(path), func(r io.Reader, n string) ([]Sample, error) { return ReadNative(r, n, nil) })
	if err != nil {
		return "", err
	}
	if ss[0].GPU != want {
		return "", nil
	}
	l, err := predictAll(p, g, ss)
	if err != nil {
		return "", err
	}
	mt := table("", []string{"m"}, [][]labelled{l})
	c, _ := mt.Cell(RowGEMMs, "m")
	return fmt.Sprintf("%s (hardware/calibrate/testdata/%s, %d kernel timings, "+
		"a 2026 PyTorch/cuBLAS stack): GEMMs median absolute error %.1f %%, p90 %.1f %%, median signed error %+.1f %% "+
		"(> 0: this profile predicts slower kernels than measured).", lead, filepath.Base(path), len(ss), c.Median, c.P90, c.Bias), nil
}

// bundleProxyNote is the same-software transfer error the l40s profile can
// quote: the RTX 4090 fit transferred to the RTX PRO 6000 predicting that
// GPU's Llama-3.1-8B TP 1 dense timings (Ada → Blackwell, so across
// architectures: an upper bound on an Ada → Ada transfer).
func bundleProxyNote(src *Profile, dirs []string) (string, error) {
	g, err := hardware.Builtin().Get("rtx-pro-6000")
	if err != nil {
		return "", err
	}
	var ss []Sample
	for _, d := range dirs {
		b, err := ReadBundle(d)
		if err != nil {
			return "", err
		}
		bg, err := b.BundleGPU(hardware.Builtin())
		if err != nil {
			return "", err
		}
		m, ok := b.CatalogModel(models.Builtin())
		if bg.Name != g.Name || !ok || m.Name != "llama-3.1-8b" {
			continue
		}
		for _, s := range b.DenseSamples(m, g.Name) {
			if s.TP == 1 {
				ss = append(ss, s)
			}
		}
	}
	if len(ss) == 0 {
		return "", fmt.Errorf("calibrate: no RTX PRO 6000 Llama-3.1-8B TP 1 dense timings in the bundles for the l40s proxy error")
	}
	t, err := Transfer(src, g)
	if err != nil {
		return "", err
	}
	l, err := predictAll(t, g, ss)
	if err != nil {
		return "", err
	}
	mt := table("", []string{"m"}, [][]labelled{l})
	gm, _ := mt.Cell(RowGEMMs, "m")
	all, _ := mt.Cell(RowAll, "m")
	return fmt.Sprintf("Proxy for the transfer error, the nearest measurable: the RTX 4090 fit transferred through the RTX PRO 6000's specs predicts that GPU's measured Llama-3.1-8B TP 1 dense and LM-head timings "+
		"(LLMServingSim bundle, %d timings, the same vLLM 0.19 software) with GEMMs median absolute error %.1f %%, p90 %.1f %%, median signed %+.1f %%, and all of them %.1f %% / %.1f %%; "+
		"that is Ada → Blackwell (sm_120, GDDR7, 188 SMs), across architectures: a same-architecture transfer is expected to do better, but no Ada pair is measured to show it.",
		len(ss), gm.Median, gm.P90, gm.Bias, all.Median, all.P90), nil
}

// deriveInputs are what GenerateBuiltin has built when it derives the
// profiles of derivedGPUs.
type deriveInputs struct {
	dir      string              // the Vidur copy
	fitted   map[string]*Profile // fitted built-in profiles, attention and MoE attached
	xt       *XLATable
	trust    string   // the A100 → H100 transfer-error note
	measured []string // native CSVs of measured GPUs (h200)
	bundles  []string // LLMServingSim bundle directories
	attach   func(*Profile) error
}

// derive returns the built-in profile of d.
func (in *deriveInputs) derive(d derivedGPU) (*Profile, error) {
	g, err := hardware.Builtin().Get(d.gpu)
	if err != nil {
		return nil, err
	}
	src, ok := in.fitted[d.fit]
	if !ok {
		return nil, fmt.Errorf("calibrate: derived profile %s: no fitted %s profile", d.gpu, d.fit)
	}
	p, err := Transfer(src, g)
	if err != nil {
		return nil, err
	}
	first := p.Notes[0]
	if !g.NVLink() {
		// Transfer's note names the link NVLink; a PCIe GPU's is PCIe.
		first = strings.Replace(first, fmt.Sprintf("NVLink %.4g GB/s", g.LinkBW/1e9), fmt.Sprintf("PCIe %.4g GB/s", g.LinkBW/1e9), 1)
	}
	notes := []string{first, d.why, in.trust, derivedMeasured[d.gpu]}
	if d.precisions != "" {
		p.GEMMPrecisions = relabel(in.xt.Precisions(d.precisions), d.precisions, d.gpu)
	}
	if b, ok := benchFor(d.gpu); ok {
		if b.source != d.fit && b.source != d.from {
			return nil, fmt.Errorf("calibrate: derived profile %s: its matmul benchmark is against %s, but it is derived from %s", d.gpu, b.source, d.from)
		}
		p.GEMMPrecisions = b.apply(p.GEMMPrecisions)
	}
	notes[0] += p.rateHalfTokens()
	if !g.NVLink() {
		p.AllReduce = nil
		var files []string
		for _, f := range p.Source.Files {
			if !strings.HasPrefix(f, "network/") {
				files = append(files, f)
			}
		}
		p.Source.Files = files
		if d.arNode != "" {
			ar, rel, note, err := pcieAllReduce(in.dir, d.arNode, d.arTP, g)
			if err != nil {
				return nil, err
			}
			p.AllReduce = ar
			p.Source.Files = append(p.Source.Files, rel)
			sort.Strings(p.Source.Files)
			notes = append(notes, note)
		} else {
			notes = append(notes, fmt.Sprintf("all-reduce: by the roofline (%.1f µs, %.2f of the %.0f GB/s PCIe link; no all-reduce over this GPU's PCIe is measured here).",
				g.LinkLatency*1e6, hardware.DefaultEfficiency().Link, g.LinkBW/1e9))
		}
	}
	switch d.fit {
	case "rtx-4090":
		n, err := bundleProxyNote(src, in.bundles)
		if err != nil {
			return nil, err
		}
		notes = append(notes, n)
	default:
		// The same-die transfer this project can measure: the H100 fit on
		// the H200's specs against its H200 kernels.
		h200, err := hardware.Builtin().Get("h200")
		if err != nil {
			return nil, err
		}
		t, err := Transfer(in.fitted["h100"], h200)
		if err != nil {
			return nil, err
		}
		for _, path := range in.measured {
			n, err := measuredNote(t, h200, path, "h200", "Proxy for a same-die transfer error, the one measurable here: the H100 fit transferred through the H200's specs (same GH100, other memory) against this project's H200 measurements")
			if err != nil {
				return nil, err
			}
			if n != "" {
				notes = append(notes, n+" It mixes the hardware change with 2024-vs-2026 cuBLAS.")
			}
		}
	}
	for _, n := range p.Notes[1:] {
		// The source's attention note: in.attach writes this GPU's.
		if !strings.HasPrefix(n, "Attention is ") {
			notes = append(notes, n)
		}
	}
	p.Notes = notes
	if err := in.attach(p); err != nil {
		return nil, err
	}
	return p, nil
}
