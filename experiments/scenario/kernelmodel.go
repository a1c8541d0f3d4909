package scenario

// The kernel-time model a scenario asks for (hardware.profile).

import (
	"fmt"
	"strings"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/hardware/calibrate"
	"github.com/servesim/servesim/models"
	"github.com/servesim/servesim/sim/serve"
)

// kernelModel returns the kernel-time model of hardware.profile for GPU g
// at tp, the per-iteration overhead in seconds (the scenario's
// iteration_overhead_ms when set, else the profile's, else
// DefaultIterOverheadMs), and a description for reports.
//
//   - "" or "builtin": the GPU's built-in calibrated profile (a100, h100,
//     h200, b200); a GPU without one, or whose numbers a gpus_file changed,
//     uses the roofline, and the description says so;
//   - "roofline": the roofline with hardware.DefaultEfficiency;
//   - anything else: a profile file (servesim calibrate -o), which must be
//     for this GPU.
func (s *Scenario) kernelModel(g *hardware.GPU, tp int) (hardware.KernelModel, float64, string, string, error) {
	overhead := func(profile float64) float64 {
		if s.Hardware.IterOverheadMs > 0 || s.Explicit("hardware.iteration_overhead_ms") { // an explicit 0: no overhead
			return s.Hardware.IterOverheadMs / 1e3
		}
		return profile
	}
	roofline := hardware.Roofline{GPU: g, Eff: hardware.DefaultEfficiency(), TP: tp}
	rooflineID := "roofline " + DigestOf(roofline.Eff)
	switch prof := s.Hardware.Profile; prof {
	case "roofline":
		return roofline, overhead(DefaultIterOverheadMs / 1e3), "roofline (default efficiencies)", rooflineID, nil
	case "", "builtin":
		p, ok := calibrate.Builtin(g.Name)
		if !ok {
			return roofline, overhead(DefaultIterOverheadMs / 1e3), fmt.Sprintf("roofline (no built-in calibrated profile for %s)", g.Name), rooflineID, nil
		}
		q, stack, err := s.stackProfile(p, g)
		if err != nil {
			return nil, 0, "", "", err
		}
		k, err := q.Kernel(g, tp)
		if err != nil {
			return roofline, overhead(DefaultIterOverheadMs / 1e3), fmt.Sprintf("roofline (the built-in %s profile does not fit this GPU's numbers: %v)", g.Name, err), rooflineID, nil
		}
		d, _ := calibrate.BuiltinDigest(p.GPU) // of its TOML, what p.WriteTOML writes
		return k, overhead(p.IterOverhead()), "calibrated: " + p.Describe() + s.precisionNote(p, g) + stack, "builtin " + d + stackID(stack), nil
	default:
		path := s.Path(prof)
		p, err := calibrate.LoadProfile(path)
		if err != nil {
			return nil, 0, "", "", fmt.Errorf("%w (field \"hardware.profile\", flag --profile)", err)
		}
		q, stack, err := s.stackProfile(p, g)
		if err != nil {
			return nil, 0, "", "", fmt.Errorf("%w (field \"hardware.profile\", flag --profile)", err)
		}
		k, err := q.Kernel(g, tp)
		if err != nil {
			return nil, 0, "", "", fmt.Errorf("%w (field \"hardware.profile\", flag --profile)", err)
		}
		d, err := fileDigest(path)
		if err != nil {
			return nil, 0, "", "", fmt.Errorf("%w (field \"hardware.profile\", flag --profile)", err)
		}
		return k, overhead(p.IterOverhead()), "calibrated: " + p.Describe() + s.precisionNote(p, g) + stack, "file " + d + stackID(stack), nil
	}
}

// precisionNote is "; " + the profile's note on the scenario's weight
// precision where the profile has no measured scale for it, else "".
func (s *Scenario) precisionNote(p *calibrate.Profile, g *hardware.GPU) string {
	d, err := models.ParseDType(s.Weights)
	if err != nil {
		return ""
	}
	if n := p.PrecisionNote(g, d); n != "" {
		return "; " + n
	}
	return ""
}

// stackSep starts the per-stack sentence inside a kernel description (the
// trtllm engine's header note reads it back, kernelStack).
const stackSep = "; kernels: "

// stackProfile returns p re-rated for the scenario's engine where that
// engine runs its own kernels (trtllm: calibrate.TRTLLMStack), and the
// description's sentence for it ("" for every other engine: p as is).
func (s *Scenario) stackProfile(p *calibrate.Profile, g *hardware.GPU) (*calibrate.Profile, string, error) {
	if s.Engine == nil || s.Engine.Name != serve.TRTLLMVersion {
		return p, "", nil
	}
	st, err := calibrate.TRTLLMStack(p, g)
	if err != nil {
		return nil, "", err
	}
	q, err := st.Apply(p)
	if err != nil {
		return nil, "", err
	}
	return q, stackSep + st.Describe(p.GPU+" profile"), nil
}

// stackID keys the kernel model's digest by the stack sentence (it names
// every multiplier), so cached results of vLLM's kernels are not reused.
func stackID(stack string) string {
	if stack == "" {
		return ""
	}
	return " " + DigestOf(stack)
}

// kernelStack is the per-stack sentence of a kernel description, or "":
// from stackSep to its closing ", vLLM's" (what the engine wrapper appends
// after it, engineKernel's notes, is not part of it).
func kernelStack(desc string) string {
	i := strings.Index(desc, stackSep)
	if i < 0 {
		return ""
	}
	st := desc[i+len(stackSep):]
	if j := strings.LastIndex(st, stackEnd); j >= 0 {
		st = st[:j+len(stackEnd)]
	}
	return st
}

// stackEnd closes calibrate.Stack.Describe's sentence (its unmeasured
// classes, which the trtllm stack always lists).
const stackEnd = "not measured, vLLM's"
