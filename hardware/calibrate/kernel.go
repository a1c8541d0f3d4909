package calibrate

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/servesim/servesim/hardware"
	"github.com/servesim/servesim/models"
)

// Calibrated is the calibrated kernel-time model of one GPU at one TP
// degree, built by Profile.Kernel. One occurrence of an operator of class k
// with t tokens takes
//
//	o_k + max(min(FLOPs / (peak(op.Compute) · η_k) · (1 + h_k/t), W_k / (peak(op.Compute) · ω_k)),
//	          Bytes / (MemBW · μ_k), Bytes/t / (MemBW · ρ_k))
//
// (the compute efficiency η_k·t/(t+h_k) saturates in the token count; W_k,
// the padded work of whole waves of the class's GEMM tiles on the GPU's
// SMs, only for GEMM classes with a wave term and operators with N and K;
// the last term, a row's latency, only where ρ_k > 0; see OpParams); an
// operator with no FLOPs and no bytes takes 0. For a GEMM class, η_k, ω_k
// and h_k are those of the op's math precision: the profile's
// [[gemm_precision]] entry for it adjusts the [[op]] numbers
// (GEMMPrecision). Attention uses the profile's
// [attention] roofline (h = 0). An all-reduce is
//
//	latency + 2·(TP−1)/TP · CommBytes / (LinkBW · link_eff)
//
// with the profile's entry for TP (or the nearest TP it has), and 0 at
// TP ≤ 1 or for an empty message. OpTime is a pure function of the
// operator and does not allocate; with its reciprocals precomputed it is
// cheaper than hardware.Roofline (BenchmarkOpTime). A Calibrated is
// immutable but for its residual trees' memo of sums (trees_complete.go),
// which is safe for concurrent use, so goroutines may share one.
type Calibrated struct {
	gpu     *hardware.GPU
	tp      int
	cls     [models.NumOpKinds]class
	invPeak [3]float64 // 1/PeakFLOPS by models.DType (BF16, FP8, FP4)
	arLat   float64    // all-reduce latency at tp
	arInv   float64    // 2(tp−1)/tp / (LinkBW·link_eff)
	sms     int        // the GPU's SMs (waves of the tile model)
	trees   *forest    // GEMM residual trees; nil: none
	invBW   float64    // 1/MemBW (the trees' roofline feature)
	mixed   class      // decodes in a call with a prefill chunk (models.Op.Mixed)
	moe     class      // MoE expert operators (models.Op.Experts > 0), where hasMoE
	// moeMaxNK: expert operators with N·K above it take their dense class
	// (MoEParams.MaxExpertNK; 0: no bound).
	moeMaxNK float64
	hasMoE   bool
	// res is the decode-only attention's residual table
	// (Attention.DecodeResidual*); nil: none. Mixed decodes take it too
	// when the profile has no Mixed* parameters (mixedOwn false), as
	// Attention.decodeTime prices them.
	res      *residualTable
	mixedOwn bool
	// decodeFast says DecodeTime may take its short path: the decode
	// class has none of the terms OpTime skips there (a half-saturation,
	// a wave term, a per-precision memory efficiency, a per-row compute
	// term) and the trees do not correct decode attention.
	decodeFast bool
}

type class struct {
	o float64 // fixed seconds
	// invC is 1/η (compute efficiency), h the half-saturation tokens and
	// invW 1/η_w (wave efficiency), by the models.DType of the op's math:
	// the [[op]] numbers adjusted by the profile's [[gemm_precision]].
	invC [3]float64
	h    [3]float64
	invW [3]float64
	invM float64 // 1/(MemBW·μ)
	// invMD is 1/(MemBW·μ) by the op's math precision where the profile's
	// [[gemm_precision]] sets a memory_scale (GEMM classes); 0: invM.
	invMD  [3]float64
	invRow float64 // 1/(MemBW·row_memory_eff); 0: no per-row term
	perTok float64 // seconds added per token (decode attention's per-sequence cost)
	tm, tn int     // GEMM output tile; tm = 0: no wave term
	// sm, sn are log2 tm and tn where both are powers of two (shift
	// true): the wave term's tile counts are then shifts.
	sm, sn uint
	shift  bool
	wave   float64 // 2·tm·tn·SMs: FLOPs of one wave per unit of K
	// invRowC is 1/ρ of a per-row compute term FLOPs/tokens/(peak·ρ)
	// (prefill attention); 0: none.
	invRowC float64
}

var (
	_ hardware.KernelModel  = (*Calibrated)(nil)
	_ hardware.DecodeKernel = (*Calibrated)(nil)
)

// Kernel returns the calibrated kernel model for GPU g at tensor-parallel
// degree tp. The profile must be for g (same catalog name) and its peaks
// must be g's: the efficiencies are fractions of those peaks; a profile
// with a wave term also needs g's SM count to be its peaks.sms. To use a
// profile on another GPU, Transfer it first (`servesim calibrate
// --transfer`), which states the assumption in the new profile; Kernel never
// transfers silently. An all-reduce at a TP the profile has no entry for
// uses the entry of the nearest TP (the larger one on a tie); a profile
// with no entries prices all-reduces by roofline
// (hardware.DefaultEfficiency().Link and g.LinkLatency).
func (p *Profile) Kernel(g *hardware.GPU, tp int) (hardware.KernelModel, error) {
	return p.Calibrated(g, tp)
}

// Calibrated is Kernel with the concrete type.
func (p *Profile) Calibrated(g *hardware.GPU, tp int) (*Calibrated, error) {
	if g == nil {
		return nil, fmt.Errorf("calibrate: nil GPU")
	}
	if tp < 1 {
		return nil, fmt.Errorf("calibrate: tp must be >= 1, got %d", tp)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if g.Name != p.GPU {
		return nil, fmt.Errorf("calibrate: the profile is for gpu %q, not %q: transfer it first (servesim calibrate --transfer FILE --gpu %s)", p.GPU, g.Name, g.Name)
	}
	for _, c := range []struct {
		key        string
		prof, spec float64
	}{{"bf16_flops", p.Peaks.BF16FLOPS, g.BF16FLOPS}, {"mem_bw", p.Peaks.MemBW, g.MemBW}, {"link_bw", p.Peaks.LinkBW, g.LinkBW}} {
		if math.Abs(c.prof-c.spec) > 1e-6*c.spec {
			return nil, fmt.Errorf("calibrate: the %s profile's efficiencies are fractions of %s = %g, but gpu %q has %g: refit, or transfer the profile to this GPU definition", p.GPU, c.key, c.prof, g.Name, c.spec)
		}
	}
	if (p.hasTiles() || p.GEMMTrees != nil) && g.SMs != p.Peaks.SMs {
		return nil, fmt.Errorf("calibrate: the %s profile's GEMM tile model and trees count waves on peaks.sms = %d SMs, but gpu %q has sms = %d: set sms in the GPU definition, or transfer the profile to it", p.GPU, p.Peaks.SMs, g.Name, g.SMs)
	}
	k := &Calibrated{gpu: g, tp: tp, sms: g.SMs, invBW: 1 / g.MemBW}
	if p.GEMMTrees != nil {
		k.trees = forestOf(p.GEMMTrees)
	}
	for _, d := range []models.DType{models.BF16, models.FP8, models.FP4} {
		k.invPeak[d] = 1 / g.PeakFLOPS(d)
	}
	qkNorm := false // a profile entry for qk_norm; else it takes the norm class
	for _, o := range p.Ops {
		kind, _ := models.ParseOpKind(o.Op) // Validate checked it
		qkNorm = qkNorm || kind == models.OpQKNorm
		c := class{o: o.OverheadS, invM: 1 / (g.MemBW * o.MemoryEff)}
		if o.RowMemoryEff > 0 {
			c.invRow = 1 / (g.MemBW * o.RowMemoryEff)
		}
		if o.TileM > 0 && g.SMs > 0 {
			c.tm, c.tn = o.TileM, o.TileN
			if o.TileM&(o.TileM-1) == 0 && o.TileN > 0 && o.TileN&(o.TileN-1) == 0 {
				c.sm, c.sn, c.shift = uint(bits.TrailingZeros(uint(o.TileM))), uint(bits.TrailingZeros(uint(o.TileN))), true
			}
			c.wave = 2 * float64(o.TileM) * float64(o.TileN) * float64(g.SMs)
		}
		for _, d := range []models.DType{models.BF16, models.FP8, models.FP4} {
			eff, weff, h := o.ComputeEff, o.WaveEff, o.HalfTokens
			if gp, ok := p.precision(mathDType(g, d)); ok && isGEMM(kind) {
				eff, weff, h = min(1, eff*gp.ComputeScale), min(1, weff*gp.ComputeScale), h+gp.ExtraHalfTokens
				if gp.MemoryScale > 0 {
					c.invMD[d] = 1 / (g.MemBW * min(1, o.MemoryEff*gp.MemoryScale))
				}
			}
			c.invC[d], c.h[d] = 1/eff, h
			if c.tm > 0 {
				c.invW[d] = 1 / weff
			}
		}
		k.cls[kind] = c
	}
	if !qkNorm {
		k.cls[models.OpQKNorm] = k.cls[models.OpNorm]
	}
	att := class{o: p.Attention.OverheadS, invC: uniform(1 / p.Attention.ComputeEff), invM: 1 / (g.MemBW * p.Attention.MemoryEff)}
	if r := p.Attention.PrefillRowComputeEff; r > 0 {
		att.invRowC = 1 / r
	}
	k.cls[models.OpAttnPrefill] = att
	att.invRowC = 0
	k.cls[models.OpAttnDecode] = att
	if a := p.Attention; a.DecodeMemoryEff > 0 {
		d := class{o: a.DecodeOverheadS, invC: uniform(1 / a.DecodeComputeEff), invM: 1 / (g.MemBW * a.DecodeMemoryEff), perTok: a.DecodePerSeqS}
		if a.DecodeRowMemoryEff > 0 {
			d.invRow = 1 / (g.MemBW * a.DecodeRowMemoryEff)
		}
		k.cls[models.OpAttnDecode] = d
		if len(a.DecodeResidual) > 0 {
			k.res = newResidualTable(&a)
		}
	}
	k.mixed = k.cls[models.OpAttnDecode]
	if a := p.Attention; a.MixedMemoryEff > 0 {
		k.mixedOwn = true
		k.mixed = class{o: a.MixedOverheadS, invC: uniform(1 / a.MixedComputeEff), invM: 1 / (g.MemBW * a.MixedMemoryEff)}
	}
	if p.MoE.MemoryEff > 0 {
		k.moe, k.hasMoE, k.moeMaxNK = p.MoE.class(g), true, p.MoE.MaxExpertNK
	}
	if tp > 1 {
		n := float64(tp)
		lat, eff := g.LinkLatency, hardware.DefaultEfficiency().Link
		if a, ok := p.allReduceFor(tp); ok {
			lat, eff = a.LatencyS, a.LinkEff
		}
		k.arLat = lat
		k.arInv = 2 * (n - 1) / n / (g.LinkBW * eff)
	}
	k.decodeFast = k.decodeFastOK()
	return k, nil
}

// decodeFastOK reports whether DecodeTime's short path prices as OpTime
// does: the decode class's terms that path leaves out are all absent.
func (k *Calibrated) decodeFastOK() bool {
	c := &k.cls[models.OpAttnDecode]
	if c.tm > 0 || c.invRowC > 0 || k.trees != nil && k.trees.kinds[models.OpAttnDecode] {
		return false
	}
	for d := range c.h {
		if c.h[d] > 0 || c.invMD[d] > 0 {
			return false
		}
	}
	return true
}

// DecodeTime is OpTime for a decode attention operator of a decode-only
// call (hardware.DecodeKernel): the same operations in the same order,
// without the branches OpTime takes on the operator's kind (the
// all-reduce, mixed-call, MoE and residual-tree cases) and on the decode
// class's absent terms. Any other operator takes OpTime.
func (k *Calibrated) DecodeTime(op *models.Op) float64 {
	if !k.decodeFast || op.Kind != models.OpAttnDecode || op.Mixed || op.Experts > 0 {
		return k.OpTime(op)
	}
	if op.FLOPs == 0 && op.Bytes == 0 {
		return 0
	}
	// The residual table's factor first: its chain (u's division, u's
	// log2, the interpolation) is the longest of the price, and the
	// additive form's operations, independent of it, then run beside it.
	// The factor multiplies the additive time last, as in OpTime.
	f := 1.0
	res := k.res
	if res != nil {
		units := max(op.Tokens, 1) * max(op.KVHeads, 1)
		w, u := decodeWork(op.Tokens, op.KVHeads, op.Bytes)
		f = res.atUnits(units, w, u)
	}
	c := &k.cls[models.OpAttnDecode]
	d := op.Compute
	t := max(op.FLOPs*k.invPeak[d]*c.invC[d], op.Bytes*c.invM)
	if c.invRow > 0 {
		t = max(t, op.Bytes/float64(max(op.Tokens, 1))*c.invRow)
	}
	t += c.o + c.perTok*float64(op.Tokens)
	if res != nil {
		t *= f
	}
	return t
}

// uniform is x for every math precision (attention's efficiencies do not
// depend on the weights' precision).
func uniform(x float64) [3]float64 { return [3]float64{x, x, x} }

// allReduceFor returns the all-reduce entry for tp: exact, else the nearest
// TP (the larger on a tie).
func (p *Profile) allReduceFor(tp int) (AllReduceParams, bool) {
	best, bestD := -1, 0
	for i, a := range p.AllReduce {
		d := a.TP - tp
		if d < 0 {
			d = -d
		}
		if best < 0 || d < bestD || d == bestD && a.TP > p.AllReduce[best].TP {
			best, bestD = i, d
		}
	}
	if best < 0 {
		return AllReduceParams{}, false
	}
	return p.AllReduce[best], true
}

// OpTime returns the seconds of one occurrence of op. It panics if op.Kind
// or op.Compute is out of range (a programmer error).
func (k *Calibrated) OpTime(op *models.Op) float64 {
	if op.Kind == models.OpAllReduce {
		if k.tp <= 1 || op.CommBytes == 0 {
			return 0
		}
		return k.arLat + op.CommBytes*k.arInv
	}
	if op.FLOPs == 0 && op.Bytes == 0 {
		return 0
	}
	c := &k.cls[op.Kind]
	if op.Mixed && op.Kind == models.OpAttnDecode {
		c = &k.mixed
	}
	moe := k.hasMoE && op.Experts > 0 && (k.moeMaxNK == 0 || float64(op.N)*float64(op.K) <= k.moeMaxNK)
	if moe {
		c = &k.moe
	}
	n := float64(max(op.Tokens, 1))
	d := op.Compute
	inv := k.invPeak[d]
	tc := op.FLOPs * inv * c.invC[d]
	if c.h[d] > 0 {
		tc *= 1 + c.h[d]/n
	}
	if c.tm > 0 && op.N > 0 && op.K > 0 && op.Tokens > 0 {
		// The wave term: the padded work of whole waves, plus the FLOPs
		// beyond the GEMM's (the LM head's norm).
		w := c.wave*float64(op.K)*float64(c.waves(op.Tokens, op.N, k.sms)) + max(0, op.FLOPs-2*float64(op.Tokens)*float64(op.N)*float64(op.K))
		tc = min(tc, w*inv*c.invW[d])
	}
	invM := c.invM
	if v := c.invMD[d]; v > 0 {
		invM = v
	}
	t := max(tc, op.Bytes*invM)
	if c.invRow > 0 {
		t = max(t, op.Bytes/n*c.invRow)
	}
	if c.invRowC > 0 {
		t = max(t, op.FLOPs/n*inv*c.invRowC)
	}
	t += c.o + c.perTok*float64(op.Tokens)
	if k.res != nil && op.Kind == models.OpAttnDecode && (!op.Mixed || !k.mixedOwn) {
		w, u := decodeWork(op.Tokens, op.KVHeads, op.Bytes)
		t *= k.res.at(w, u)
	}
	if k.trees != nil && !moe && treeDomain(op, &k.trees.kinds, k.trees.dtype) {
		var x [numFeatures]float64
		k.features(op, t, x[:])
		t *= math.Exp(k.trees.at(x[:]))
	}
	return t
}

// waves returns the waves of c's output tiles a GEMM of m rows and n
// columns (both positive) runs on sms SMs: ⌈⌈m/tm⌉·⌈n/tn⌉ / sms⌉, by
// shifts where the tile is of powers of two and with one division for
// the waves (TestWaves: the same integers as the divisions).
func (c *class) waves(m, n, sms int) int {
	var tiles int
	if c.shift {
		tiles = ((m + c.tm - 1) >> c.sm) * ((n + c.tn - 1) >> c.sn)
	} else {
		tiles = ((m + c.tm - 1) / c.tm) * ((n + c.tn - 1) / c.tn)
	}
	w := tiles / sms
	if tiles%sms != 0 {
		w++
	}
	return w
}

// features fills x with the residual trees' features of GEMM op, whose
// parametric time is param: what the trees were grown on and what they
// are evaluated at.
func (k *Calibrated) features(op *models.Op, param float64, x []float64) {
	roof := max(op.FLOPs*k.invPeak[op.Compute], op.Bytes*k.invBW)
	gemmFeatures(x, op.Tokens, op.N, op.K, op.FLOPs, op.Bytes, k.sms, roof, param)
}

// TP returns the tensor-parallel degree k was built for.
func (k *Calibrated) TP() int { return k.tp }

// GPU returns the GPU k was built for.
func (k *Calibrated) GPU() *hardware.GPU { return k.gpu }
