package calibrate

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// GenerateBuiltin fits the built-in profiles from dir, a copy of Vidur's
// data/profiling: A100 and H100 fitted to their traces, H200 and B200 the
// H100 fit transferred through their specs, RTX PRO 6000 and RTX 4090
// fitted to LLMServingSim's bundles beside it, and derivedGPUs (H100 PCIe,
// A100 PCIe, GB200, L40S) by architecture. It returns the TOML of each,
// by GPU name. The A100 → H100 transfer error is written into the notes of
// the transferred profiles, and so is the error against measured, native
// CSVs of their GPU (this project's H200 measurements).
func GenerateBuiltin(dir string, measured []string) (map[string][]byte, error) {
	if _, err := os.Stat(filepath.Join(dir, "compute")); err != nil {
		return nil, fmt.Errorf("calibrate: %s is not a copy of Vidur's data/profiling: %w", dir, err)
	}
	xt, err := LoadXLA(DefaultXLAPath(dir))
	if err != nil {
		return nil, fmt.Errorf("calibrate: the built-in profiles' GEMM precisions need XLA's matmul table beside the Vidur data: %w", err)
	}
	fitted := map[string]*Profile{}
	gpus := map[string]*hardware.GPU{}
	traces := map[string]*Trace{}
	for _, name := range traceGPUs {
		tr, g, err := loadVidurGPU(dir, name)
		if err != nil {
			return nil, err
		}
		p, err := FitProfile(tr, g, FitOptions{Trace: "vidur-profiling", Format: "vidur",
			Note:  "Vidur (github.com/microsoft/vidur) data/profiling at commit 7d47513363ec447a741ac5e47241580b47724fbf; cpu_overheads.csv from commit 6d98aa8f71696520acc603d87439e77cc78160a7 (see ../shared/data/vidur-profiling/SOURCE.md)",
			Notes: VidurNotes(name)})
		if err != nil {
			return nil, err
		}
		p.GEMMPrecisions = xt.Precisions(name)
		xn, err := xt.notes(p, g, nil)
		if err != nil {
			return nil, err
		}
		p.Notes = append(p.Notes, xn...)
		if name == "h100" {
			c, err := xt.XLACheck(p, g, models.BF16)
			if err != nil {
				return nil, err
			}
			xt.h100Bias = c.Bias
		}
		fitted[name], gpus[name], traces[name] = p, g, tr
	}
	// A100 → H100 transfer error, for the transferred profiles' notes.
	t, err := Transfer(fitted["a100"], gpus["h100"])
	if err != nil {
		return nil, err
	}
	l, err := predictAll(t, gpus["h100"], traces["h100"].Samples)
	if err != nil {
		return nil, err
	}
	tt := table("", []string{"a100 → h100"}, [][]labelled{l})
	gemm, _ := tt.Cell(RowGEMMs, "a100 → h100")
	all, _ := tt.Cell(RowAll, "a100 → h100")
	// The profiles fitted here are the attention transfers' sources
	// (attention_scale.go), so the bundle GPUs are fitted first.
	bundled := map[string]*Profile{}
	srcOf := func(gpu string) (*Profile, bool) {
		if p, ok := fitted[gpu]; ok {
			return p, true
		}
		p, ok := bundled[gpu]
		return p, ok
	}
	withAttention := func(p *Profile) error {
		ok, err := attachAttention(p, BundlesDir(dir), srcOf)
		if err != nil {
			return fmt.Errorf("%w (the built-in profiles' attention is fitted to ../shared/data/llmservingsim/profiles, beside %s)", err, dir)
		}
		if !ok {
			return fmt.Errorf("calibrate: no attention timings for %s and no GPU to transfer them from", p.GPU)
		}
		return nil
	}
	out := map[string][]byte{}
	// RTX PRO 6000 and RTX 4090: every class fitted to the bundles' dense
	// operators (bundle_dense.go), with the H100's (A100 host's) iteration
	// overhead: the bundles time kernels only.
	bdirs, err := FindBundles(BundlesDir(dir))
	if err != nil {
		return nil, err
	}
	for _, name := range bundleGPUs {
		g, err := hardware.Builtin().Get(name)
		if err != nil {
			return nil, err
		}
		p, err := fitBundleGPU(bdirs, g, fitted["h100"].Iteration, models.Builtin())
		if err != nil {
			return nil, err
		}
		if err := withAttention(p); err != nil {
			return nil, err
		}
		if _, err := AttachMoE(p, BundlesDir(dir)); err != nil {
			return nil, err
		}
		out[name] = p.WriteTOML()
		bundled[name] = p
	}
	for _, name := range traceGPUs {
		if err := withAttention(fitted[name]); err != nil {
			return nil, err
		}
		// [moe] from the bundles' moe.csv where the GPU has one (H100;
		// moe.go), before H200 and B200 take the H100 fit.
		if _, err := AttachMoE(fitted[name], BundlesDir(dir)); err != nil {
			return nil, err
		}
		out[name] = fitted[name].WriteTOML()
	}
	for _, name := range []string{"h200", "b200"} {
		g, err := hardware.Builtin().Get(name)
		if err != nil {
			return nil, err
		}
		p, err := Transfer(fitted["h100"], g)
		if err != nil {
			return nil, err
		}
		trust := fmt.Sprintf("How far such a transfer can be trusted, measured between the two traced GPUs: the A100 fit transferred to the H100 "+
			"predicts the H100 GEMMs with a median absolute error of %.1f %% (p90 %.1f %%) and all H100 operators with %.1f %% (p90 %.1f %%); "+
			"see the README's calibration section and `servesim calibrate --report`.", gemm.Median, gemm.P90, all.Median, all.P90)
		notes := []string{p.Notes[0], trust}
		notes = append(notes, transferNotes(name)...)
		if ps := xt.Precisions(name); ps != nil {
			// b200: re-derived from the GPU's own GEMM measurements; h200:
			// the H100's FP8 measurement, relabelled as transferred.
			plain := p.Clone()
			plain.GEMMPrecisions = nil
			p.GEMMPrecisions = ps
			notes[0] += p.rateHalfTokens()
			xn, err := xt.notes(p, g, plain)
			if err != nil {
				return nil, err
			}
			notes = append(notes, xn...)
		}
		if name == "b200" {
			c, err := CheckFP4(p, g)
			if err != nil {
				return nil, err
			}
			notes = append(notes, c.note())
		}
		for _, path := range measured {
			ss, err := readFile(path, filepath.Base(path), func(r io.Reader, n string) ([]Sample, error) { return ReadNative(r, n, nil) })
			if err != nil {
				return nil, err
			}
			if ss[0].GPU != name {
				continue
			}
			l, err := predictAll(p, g, ss)
			if err != nil {
				return nil, err
			}
			mt := table("", []string{"m"}, [][]labelled{l})
			c, _ := mt.Cell(RowGEMMs, "m")
			notes = append(notes, fmt.Sprintf("Against this project's %s measurements (hardware/calibrate/testdata/%s, %d kernel timings, "+
				"a 2026 PyTorch/cuBLAS stack): GEMMs median absolute error %.1f %%, p90 %.1f %%, median signed error %+.1f %% "+
				"(> 0: this profile predicts slower kernels than measured).", name, filepath.Base(path), len(ss), c.Median, c.P90, c.Bias))
		}
		p.Notes = append(notes, p.Notes[1:]...)
		if err := withAttention(p); err != nil {
			return nil, err
		}
		out[name] = p.WriteTOML()
	}
	// The catalog GPUs with no timings of their own: a measured GPU of the
	// same architecture transferred through their specs
	// (builtin_derived.go).
	in := &deriveInputs{dir: dir, fitted: map[string]*Profile{}, xt: xt, measured: measured, bundles: bdirs, attach: withAttention,
		trust: fmt.Sprintf("How far such a transfer can be trusted, measured between the two traced GPUs (across architectures): the A100 fit transferred to the H100 "+
			"predicts the H100 GEMMs with a median absolute error of %.1f %% (p90 %.1f %%) and all H100 operators with %.1f %% (p90 %.1f %%).", gemm.Median, gemm.P90, all.Median, all.P90)}
	for n, p := range fitted {
		in.fitted[n] = p
	}
	for n, p := range bundled {
		in.fitted[n] = p
	}
	for _, d := range derivedGPUs {
		p, err := in.derive(d)
		if err != nil {
			return nil, err
		}
		out[d.gpu] = p.WriteTOML()
	}
	return out, nil
}

// VidurNotes are the caveats of profiles fitted to Vidur-format traces,
// for FitOptions.Notes.
func VidurNotes(gpu string) []string {
	notes := []string{
		"Kernel times are Vidur's medians of sarathi-serve FP16 kernels (CUPTI, 1 µs resolution), one transformer layer on one GPU, repeated on the same weights.",
		"GEMM times step with cuBLAS's tile and wave quantization (up to 2× between neighbouring token counts) where cuBLAS's kernel choice for the shape puts them; the wave term (one tile per operator class) follows some steps, and the residual trees ([gemm_trees], where the profile has them: grown on log(measured/parametric) over shape and wave features) learn more of them; held out by model they still miss some (see the README).",
		"lm_head takes mlp_up's parameters and moe_router out_proj's (no samples); MoE expert GEMMs use the dense GEMM parameters.",
	}
	if gpu != "a100" {
		notes = append(notes, "iteration overhead: the only CPU-overhead profile is sarathi-serve's on an A100 host; the CPU side of an iteration does not depend on the GPU, so it is used as is.")
	}
	return notes
}

// transferNotes say what the transferred built-in profiles assume.
func transferNotes(gpu string) []string {
	switch gpu {
	case "h200":
		return []string{
			"H200 is the H100's GH100 chip with HBM3e at 4.8 TB/s (gpu-specs.md): the same tensor-core peak and NVLink, 1.43× the bandwidth. " +
				"Assumed: the same kernels reach the same fractions of the peaks, so memory-bound operators speed up 1.43× and compute-bound ones not at all. " +
				"Measured by this project on an H200 (hardware/calibrate/testdata/h200_*.csv): see the README's calibration section.",
		}
	case "b200":
		return []string{
			"B200 (Blackwell): GEMM compute and memory efficiencies and extra half-saturation tokens per precision are measured on a B200 " +
				"([[gemm_precision]] bf16 and fp8: XLA's sm_100_B200 matmul table, relative to its sm_90 BF16 table, same software on both GPUs, " +
				"applied to the H100 per-class fit); FP4 is measured (vLLM PR #20646, #22523, B200: vLLM's NVFP4 GEMM benchmark against the same runs' BF16 GEMM, " +
				"one Llama-3.1-8B shape by batch size; see its source). " +
				"Still transferred from the H100 (Hopper), unmeasured on Blackwell: the GEMM overheads (XLA's fits give 5.9 µs on sm_100_B200 against 5.7 µs on sm_90 " +
				"in BF16, within the table's ~5 µs timing floor, so not adjusted), the classes' per-shape behaviour (tiles, trees), " +
				"every non-GEMM operator (to its 2.39× HBM bandwidth: no Blackwell HBM kernel timings exist here; the RTX PRO 6000 bundles are a GB202 with GDDR7 " +
				"and sm_120 tensor cores, another memory system and MMA than B200's sm_100, so they are not used for it), attention (see its [attention] notes) " +
				"and the all-reduce (to 2× NVLink).",
		}
	}
	return nil
}
