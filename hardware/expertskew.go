package hardware

import (
	"fmt"
	"math"
	"sort"

	"github.com/servesim/servesim/models"
)

// Per-layer expert load skew. By default one skew (the step model's
// Parallel.EP.Skew) serves every MoE layer. SetLayerSkews gives each MoE
// layer its own: a layer's routed-expert operators run at the rows its
// busiest GPU computes under its skew and its all-to-all moves its busiest
// receiver's bytes, and the step sums the layers. The MoE operators of a
// step are the models' per-step totals, so a layer's share is the total at
// its skew over the M MoE layers (an operator's time is the same in every
// MoE layer at the same rows; the dense layers blended into them by
// models.Model.Ops do not depend on the skew and average out unchanged).
// Under two-batch overlap the layers' compute and all-to-all are spread
// evenly over them as without per-layer skews (their sums are exact; a hot
// layer's longer all-to-all hiding behind a cool layer's compute is not
// modelled).

// layerSkews is a step's per-layer skews, deduplicated: each distinct value
// and how many MoE layers carry it.
type layerSkews struct {
	vals   []float64
	counts []float64
	sum    float64   // Σ over the MoE layers of skew / the step model's skew
	moe    []float64 // Σ_l MoE operators' seconds at skew_l / M, by tokens, cached
}

// SetLayerSkews gives each of the model's MoE layers its own skew (in
// layer order; nil: the step model's one skew for all). It is an error if
// the count is not the model's MoE layers or a value is outside [1, ep].
func (e *ExpertStep) SetLayerSkews(skews []float64) error {
	if skews == nil {
		e.ls = nil
		return nil
	}
	m, p := e.s.m, e.s.p
	if len(skews) != m.Layers-m.DenseLayers {
		return fmt.Errorf("hardware: %d layer skews for model %q's %d MoE layers", len(skews), m.Name, m.Layers-m.DenseLayers)
	}
	base := math.Max(1, p.EP.Skew)
	count := map[float64]float64{}
	ls := &layerSkews{}
	for i, v := range skews {
		if !(v >= 1) || v > float64(p.EP.Size) || math.IsInf(v, 0) {
			return fmt.Errorf("hardware: layer skew %d is %v: want [1, ep %d]", i, v, p.EP.Size)
		}
		if count[v] == 0 {
			ls.vals = append(ls.vals, v)
		}
		count[v]++
		ls.sum += v / base
	}
	sort.Float64s(ls.vals)
	for _, v := range ls.vals {
		ls.counts = append(ls.counts, count[v])
	}
	e.ls = ls
	return nil
}

// moeAt returns the MoE operators' seconds of a step of n tokens per rank,
// each MoE layer at its own skew when SetLayerSkews gave them, else
// moeSec(n).
func (e *ExpertStep) moeAt(n int) float64 {
	ls := e.ls
	if ls == nil {
		return e.moeSec(n)
	}
	if n < len(ls.moe) && ls.moe[n] > 0 {
		return ls.moe[n]
	}
	p := e.s.p
	sec := 0.0
	for i, v := range ls.vals {
		p.EP.Skew = v
		sec += ls.counts[i] * e.moeOps(n, p)
	}
	sec /= e.layers
	cacheSec(&ls.moe, n, sec)
	return sec
}

// cacheSec stores sec at index n of a by-token-count cache, growing it
// (doubling) as needed; counts from maxCachedTokens on are not cached.
func cacheSec(cache *[]float64, n int, sec float64) {
	if n >= maxCachedTokens {
		return
	}
	if n >= len(*cache) {
		grown := make([]float64, max(n+1, 2*len(*cache)))
		copy(grown, *cache)
		*cache = grown
	}
	(*cache)[n] = sec
}

// moeOps returns the MoE operators' seconds for n tokens per rank under p.
func (e *ExpertStep) moeOps(n int, p models.Parallel) float64 {
	e.ops = e.s.m.Ops(models.Batch{Decodes: n}, p, e.ops[:0])
	sec := 0.0
	for i := range e.ops {
		op := &e.ops[i]
		switch op.Kind {
		case models.OpMoERouter, models.OpMLPUp, models.OpAct, models.OpMLPDown:
			if op.Count != 0 {
				sec += float64(op.Count) * e.s.k.OpTime(op)
			}
		}
	}
	return sec
}

// a2aLayers returns the dispatch and combine seconds of all MoE layers for
// a DP rank of tokens tokens: layers × AllToAll without per-layer skews,
// else each layer's bytes at its skew (the bytes scale with the skew).
func (e *ExpertStep) a2aLayers(tokens int) float64 {
	d, c := e.AllToAll(tokens)
	if e.ls == nil || tokens <= 0 || (d == 0 && c == 0) {
		return e.layers * (d + c)
	}
	t := float64(tokens)
	base := math.Max(1, e.s.p.EP.Skew)
	dx, cx := t*math.Max(e.dIntra, e.dInter)/base, t*math.Max(e.cIntra, e.cInter)/base
	if !e.floor {
		return e.layers*2*e.lat + (dx+cx)*base*e.ls.sum
	}
	sum := 0.0
	for i, v := range e.ls.vals {
		sum += e.ls.counts[i] * (math.Max(e.lat, dx*v) + math.Max(e.lat, cx*v))
	}
	return sum
}

// a2aPerLayer is a MoE layer's dispatch and combine seconds for tokens
// tokens: AllToAll's, or the mean over the layers of their own skews.
func (e *ExpertStep) a2aPerLayer(tokens int) float64 {
	if e.ls == nil {
		d, c := e.AllToAll(tokens)
		return d + c
	}
	return e.a2aLayers(tokens) / e.layers
}
