package calibrate

import (
	"fmt"
	"math"
	"sort"

	"github.com/servesim/servesim/hardware"
)

// The decode-only residual table. The additive decode form (attention.go)
// has one bandwidth for every call, but FlashAttention's decode kernel
// does not: its grid is sequences × KV heads (the query heads of a group
// share their KV head's thread block, pack_gqa), each block streams one
// sequence's context for one KV head, and the kernel splits a context when
// the grid is too small to fill the GPU. So the table is keyed by the work
// units, w = decodes × KV heads per GPU, and the KV bytes each unit
// streams, u = bytes / w. What the bundles show:
//
//   - the KV read's marginal bandwidth between contexts 256 and 1,024 on
//     the RTX PRO 6000 (Llama-3.1-8B, Qwen3-32B, Qwen3-30B-A3B at TP 1
//     and 2: 8, 4 and 2 KV heads per GPU) is 62–69 % of peak at w = 256
//     in all five folders that reach it, 69–79 % at 512 and 80–84 % at
//     1,024 and beyond, whatever the model; at contexts 8,192 → 16,384 it
//     is 84–86 % at every w;
//   - the H100's additive fit (Qwen3.6-35B-A3B, 2 KV heads of 256)
//     overprices its calls with w ≥ 256 by about 4 % and underprices the
//     small-w calls at long contexts by up to 23 %.
//
// Held out (`servesim calibrate --report`, attention table), the table
// cuts the decode-only median error against the additive form on every
// split but one (RTX 4090, KV ≤ 1,024 → longer: 9.0 against 7.5 %); keyed
// by the decode count alone it does about as well across the RTX PRO
// 6000's models and TP degrees, worse from H100 TP 1 to TP 8 (7.5 against
// 5.0 %). Where the key matters is a model whose KV heads the bundle's do
// not match: Llama-2-7B (32 KV heads) on the H100, whose only bundle has 2
// per GPU. Keyed by w, its calls (w = 288 at 9 decodes) take the H100's
// w ≥ 256 cells at their own u; keyed by decodes, their u is 16× beyond
// the table and they take its small-batch long-context factors (+7 to
// +12 %). On the validation suite's held-out H100 TP 1 runs the TPOT
// median error is 4 % keyed by w, 9 % keyed by decodes (decodeWork
// changed to return the decode count and the profiles regenerated, once;
// not kept), 6 % without the table (the profiles before it).
//
// The fit: for each doubling-grid pure-decode call, its measured time over
// the additive form's goes to the cell of its w and its KV-context grid
// value; a cell takes the geometric mean of its ratios, the column's u the
// geometric mean of its calls' u, and a cell no call reaches the nearest
// w's value in its column. A decode-only call is then priced
// additive × table(w, u), bilinear in (log2 w, log2 u), the edge values
// beyond the axes (an assumption: a model with more KV heads than the
// bundles' reaches larger w than any measured). Mixed calls keep their own
// parameters. The table plays the part for decode attention that the
// residual trees play for the GEMMs, a table because the bundles' decode
// calls lie on a grid.

// onSMs returns a moved from a GPU with fromSMs multiprocessors to one
// with toSMs, and a note: the residual table is kept only between GPUs
// with the same SM count (H100 → H200, the same GH100 die), as the GEMM
// residual trees are, since the kernel's split and occupancy regimes
// (what the table records) follow the SMs. Held out across GPUs
// (`servesim calibrate --report`, the attention table's transfer rows,
// all between GPUs of different SM counts) the table made every transfer
// worse: decode-only medians 10.6 → 11.4, 7.0 → 8.4, 7.8 → 8.8, 13.6 →
// 14.3 and 21.1 → 25.6 %.
func (a Attention) onSMs(fromSMs, toSMs int, from, to string) (Attention, string) {
	if len(a.DecodeResidual) == 0 {
		return a, ""
	}
	if fromSMs == toSMs && fromSMs > 0 {
		return a, fmt.Sprintf(" The decode-attention residual table is kept: %s and %s have the same %d SMs.", from, to, toSMs)
	}
	a.DecodeResidualUnits, a.DecodeResidualBytes, a.DecodeResidual = nil, nil, nil
	return a, fmt.Sprintf(" The decode-attention residual table is left out: it records the kernel's regimes on %s's %d SMs, not on %s's %d.", from, fromSMs, to, toSMs)
}

// maxResidual bounds a table factor: a call priced 4× off its additive
// form is no correction but a different kernel.
const maxResidual = 4.0

// validateResidual checks the residual table: all three fields or none,
// axes ascending and ≥ 1 (units) or > 0 (bytes), one row per unit count
// and one factor per byte count, factors in [1/maxResidual, maxResidual].
func (a *Attention) validateResidual() error {
	w, u, r := a.DecodeResidualUnits, a.DecodeResidualBytes, a.DecodeResidual
	if len(w) == 0 && len(u) == 0 && len(r) == 0 {
		return nil
	}
	if len(w) == 0 || len(u) == 0 {
		return &fieldErr{field: "attention.decode_residual", msg: "needs both axes, decode_residual_units and decode_residual_unit_bytes"}
	}
	if a.DecodeMemoryEff == 0 {
		return &fieldErr{field: "attention.decode_residual", msg: "needs the decode parameters (decode_memory_eff, decode_compute_eff, decode_overhead_s) beside it"}
	}
	for i, x := range w {
		if !(x >= 1 && x <= 1<<24) || i > 0 && !(x > w[i-1]) {
			return &fieldErr{field: "attention.decode_residual_units", msg: fmt.Sprintf("value %d (%v): want ascending work-unit counts (decodes × KV heads per GPU) in [1, %d]", i+1, x, 1<<24)}
		}
	}
	for i, x := range u {
		if !(x > 0 && x <= 1e12) || i > 0 && !(x > u[i-1]) {
			return &fieldErr{field: "attention.decode_residual_unit_bytes", msg: fmt.Sprintf("value %d (%v): want ascending KV bytes per work unit in (0, 1e12]", i+1, x)}
		}
	}
	if len(r) != len(w) {
		return &fieldErr{field: "attention.decode_residual", msg: fmt.Sprintf("has %d rows, decode_residual_units %d values: want one row per work-unit count", len(r), len(w))}
	}
	for i, row := range r {
		if len(row) != len(u) {
			return &fieldErr{field: "attention.decode_residual", msg: fmt.Sprintf("row %d has %d factors, decode_residual_unit_bytes %d values: want one factor per byte count", i+1, len(row), len(u))}
		}
		for j, f := range row {
			if !(f >= 1/maxResidual && f <= maxResidual) {
				return &fieldErr{field: "attention.decode_residual", msg: fmt.Sprintf("row %d, value %d (%v): want a factor in [%g, %g]", i+1, j+1, f, 1/maxResidual, maxResidual)}
			}
		}
	}
	return nil
}

// residualAt is the table's factor at w work units of u bytes each:
// bilinear in (log2 w, log2 u), the edge values beyond the axes. It does
// not allocate.
func residualAt(ws, us []float64, r [][]float64, w, u float64) float64 {
	i, fi := bracket(ws, w)
	j, fj := bracket(us, u)
	return bilinear(r, i, fi, j, fj)
}

// bilinear is r between rows i, i+1 and columns j, j+1 at fractions fi,
// fj (0: at i or j; the edge when i or j is the last).
func bilinear(r [][]float64, i int, fi float64, j int, fj float64) float64 {
	row := func(i int) float64 {
		if fj == 0 {
			return r[i][j]
		}
		return r[i][j] + fj*(r[i][j+1]-r[i][j])
	}
	if fi == 0 {
		return row(i)
	}
	return row(i) + fi*(row(i+1)-row(i))
}

// bracket returns i and f with x between axis[i] and axis[i+1] at
// fraction f of the way in log2 (f = 0: at axis[i], or beyond an end).
func bracket(axis []float64, x float64) (int, float64) {
	i, in := locate(axis, x)
	if !in {
		return i, 0
	}
	la := fastLog2(axis[i])
	return i, (log2Of(x) - la) / (fastLog2(axis[i+1]) - la)
}

// locate returns i with axis[i] < x < axis[i+1] and true, or, x at or
// beyond an end (or a one-point axis), that end's index and false.
func locate(axis []float64, x float64) (int, bool) {
	n := len(axis)
	if n == 1 || x <= axis[0] {
		return 0, false
	}
	if x >= axis[n-1] {
		return n - 1, false
	}
	i := 0
	for axis[i+1] < x {
		i++
	}
	return i, true
}

// residualTable is a residual table as the kernel model evaluates it:
// the same factors as residualAt, with the axes' log2 and their spans'
// inverses computed in advance, so that a lookup takes at most one log2
// an axis (none for a small integer work-unit count, log2Small).
type residualTable struct {
	w, u       []float64 // the axes
	lw, lu     []float64 // their log2
	invW, invU []float64 // 1/(log2 axis[i+1] − log2 axis[i])
	r          [][]float64
	// byUnits is bracketInv over w for each integer below its length
	// (up to the w axis's last value, beyond which the bracket is the
	// last row's): a decode call's work units are an integer, so the
	// lookup replaces the search along w.
	byUnits []unitBracket
}

// unitBracket is bracketInv's answer for one work-unit count.
type unitBracket struct {
	i int
	f float64
}

func newResidualTable(a *Attention) *residualTable {
	lg := func(v []float64) (l, inv []float64) {
		l = make([]float64, len(v))
		for i, x := range v {
			l[i] = fastLog2(x)
		}
		inv = make([]float64, max(len(v)-1, 0))
		for i := range inv {
			inv[i] = 1 / (l[i+1] - l[i])
		}
		return l, inv
	}
	t := &residualTable{w: a.DecodeResidualUnits, u: a.DecodeResidualBytes, r: a.DecodeResidual}
	t.lw, t.invW = lg(t.w)
	t.lu, t.invU = lg(t.u)
	t.byUnits = make([]unitBracket, min(len(log2Small), int(t.w[len(t.w)-1])+1))
	for x := range t.byUnits {
		i, f := bracketInv(t.w, t.lw, t.invW, float64(x))
		t.byUnits[x] = unitBracket{i, f}
	}
	return t
}

// at is the factor at w work units of u bytes each.
func (t *residualTable) at(w, u float64) float64 {
	var i int
	var fi float64
	// float64(int(w)) == w: an integer (as log2Of tests it).
	if w >= 0 && w < float64(len(t.byUnits)) && float64(int(w)) == w {
		b := &t.byUnits[int(w)]
		i, fi = b.i, b.f
	} else {
		i, fi = bracketInv(t.w, t.lw, t.invW, w)
	}
	// bracketInv along u, written out (its calls, and log2Of's, were a
	// fifth of a decode step's pricing): the same operations.
	j, in := locate(t.u, u)
	var fj float64
	if in {
		var l float64
		if u >= 1 && u < float64(len(log2Small)) && float64(int(u)) == u {
			l = log2Small[int(u)]
		} else {
			l = fastLog2(u)
		}
		fj = (l - t.lu[j]) * t.invU[j]
	}
	return bilinear(t.r, i, fi, j, fj)
}

// atUnits is at(w, u) for w = float64(units), units a decode operator's
// work units (decodeWork's w as an integer), in the order that shortens
// a decode step's price: u's log2, the longest link of its chain, comes
// first, before the search along u (whose branches, mispredicted, would
// discard a log begun after them), and is taken whether or not u lies
// inside the axis (fastLog2 is pure: a log not used changes nothing).
// Nor does it look an integer u up in log2Small: the table holds
// fastLog2's own values, so fastLog2(u) is the same bits.
func (t *residualTable) atUnits(units int, w, u float64) float64 {
	var i int
	var fi float64
	if uint(units) < uint(len(t.byUnits)) {
		// w = float64(units) exactly (units is small): at's by-units case.
		b := &t.byUnits[units]
		i, fi = b.i, b.f
	} else {
		i, fi = bracketInv(t.w, t.lw, t.invW, w)
	}
	j, in := locate(t.u, u)
	var fj float64
	if in {
		fj = (fastLog2(u) - t.lu[j]) * t.invU[j]
	}
	return bilinear(t.r, i, fi, j, fj)
}

// bracketInv is bracket with the axis's log2 and inverted spans.
func bracketInv(axis, l, inv []float64, x float64) (int, float64) {
	i, in := locate(axis, x)
	if !in {
		return i, 0
	}
	return i, (log2Of(x) - l[i]) * inv[i]
}

// log2Small holds log2 of the integers below its length (index 0 unused):
// a decode call's work units are an integer, most often below 4,096, so
// the lookup saves a log on the hot path. Read-only after init.
var log2Small = func() []float64 {
	t := make([]float64, 4096)
	for i := 1; i < len(t); i++ {
		t[i] = fastLog2(float64(i))
	}
	return t
}()

// log2Of is fastLog2(x), from log2Small where x is a small integer.
func log2Of(x float64) float64 {
	// float64(int(x)) == x: x is an integer (x == math.Trunc(x), in
	// this range, without Trunc's call).
	if x >= 1 && x < float64(len(log2Small)) && float64(int(x)) == x {
		return log2Small[int(x)]
	}
	return fastLog2(x)
}

// fastLog2 is log2 of a finite x > 0 to within 1e-10 (tested against
// math.Log2), in a few multiplications: x = m·2^e with m in [√½, √2), and
// ln m = 2·atanh(s), s = (m − 1)/(m + 1), |s| ≤ 0.172, by its series to
// s^13 (the next term is below 2e-12). math.Log2 costs 40–50 ns, most of a
// decode call's pricing with the residual table. Deterministic: plain
// float arithmetic.
func fastLog2(x float64) float64 {
	// frexp, its normal case written out (so that it inlines here).
	const mask, shift, bias = 0x7ff, 52, 1023
	var m float64 // in [0.5, 1)
	var e int
	if b := math.Float64bits(x); int(b>>shift)&mask != 0 && int(b>>shift)&mask != mask {
		m, e = math.Float64frombits(b&^(mask<<shift)|(bias-1)<<shift), int(b>>shift)&mask-bias+1
	} else {
		m, e = math.Frexp(x)
	}
	if m < math.Sqrt2/2 {
		m, e = 2*m, e-1
	}
	s := (m - 1) / (m + 1)
	s2 := s * s
	ln := 2 * s * (1 + s2*(1.0/3+s2*(1.0/5+s2*(1.0/7+s2*(1.0/9+s2*(1.0/11+s2*(1.0/13)))))))
	return float64(e) + ln*(1/math.Ln2)
}

// frexp is math.Frexp, its fraction and exponent taken from the bits
// directly for a normal x (what Frexp does for one, after its checks for
// 0, ±Inf, NaN and subnormals): a decode step's lookup takes a log2 of a
// byte count, and Frexp's call was a fifth of it.
func frexp(x float64) (frac float64, exp int) {
	const mask, shift, bias = 0x7ff, 52, 1023
	b := math.Float64bits(x)
	if e := int(b>>shift) & mask; e != 0 && e != mask {
		return math.Float64frombits(b&^(mask<<shift) | (bias-1)<<shift), e - bias + 1
	}
	return math.Frexp(x)
}

// decodeWork returns a decode operator's work units (decodes × KV heads
// per GPU; KV heads 0, an operator built without them, counts 1) and KV
// bytes per unit.
func decodeWork(tokens, kvHeads int, bytes float64) (w, u float64) {
	w = float64(max(tokens, 1)) * float64(max(kvHeads, 1))
	return w, bytes / w
}

// fitResidual sets a's residual table from the doubling-grid pure-decode
// calls of dec (see the top of this file), a's other parameters fixed.
func fitResidual(a *Attention, dec []AttnSample, g *hardware.GPU) {
	a.DecodeResidualUnits, a.DecodeResidualBytes, a.DecodeResidual = nil, nil, nil
	type cell struct {
		w   float64
		ctx int
	}
	logR := map[cell]float64{}
	cnt := map[cell]int{}
	logU := map[int]float64{}
	cntU := map[int]int{}
	wset := map[float64]bool{}
	for i := range dec {
		s := &dec[i]
		if !doubling(s.Row) || s.Row.KVDecode == 0 {
			continue
		}
		w, u := decodeWork(s.Decode.Tokens, s.Decode.KVHeads, s.Decode.Bytes)
		c := cell{w, s.Row.KVDecode}
		logR[c] += math.Log(s.Seconds / a.decodeTime(g, &s.Decode))
		cnt[c]++
		logU[c.ctx] += math.Log(u)
		cntU[c.ctx]++
		wset[w] = true
	}
	if len(cnt) == 0 {
		return
	}
	var ws []float64
	for w := range wset {
		ws = append(ws, w)
	}
	sort.Float64s(ws)
	var ctxs []int
	for c := range cntU {
		ctxs = append(ctxs, c)
	}
	sort.Ints(ctxs)
	us := make([]float64, len(ctxs))
	for j, c := range ctxs {
		us[j] = round4(math.Exp(logU[c] / float64(cntU[c])))
	}
	r := make([][]float64, len(ws))
	for i, w := range ws {
		r[i] = make([]float64, len(ctxs))
		for j, c := range ctxs {
			// The cell's own calls, else the nearest w's in this column.
			best, bestD := cell{}, math.Inf(1)
			for _, w2 := range ws {
				if d := math.Abs(math.Log2(w2 / w)); cnt[cell{w2, c}] > 0 && d < bestD {
					best, bestD = cell{w2, c}, d
				}
			}
			f := math.Exp(logR[best] / float64(cnt[best]))
			r[i][j] = round4(math.Min(maxResidual, math.Max(1/maxResidual, f)))
		}
	}
	a.DecodeResidualUnits, a.DecodeResidualBytes, a.DecodeResidual = ws, us, r
}
