package calibrate

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// levenbergMarquardt minimises Σ r_i(x)² from x0, where residuals fills r
// (len nres) for parameters x and, if jac is not nil, the Jacobian
// J[i][j] = ∂r_i/∂x_j (otherwise it is taken by forward differences). Each
// step solves (JᵀJ + λ·diag(JᵀJ)) δ = −Jᵀr with gonum/mat. It is
// deterministic: no randomness, a fixed iteration budget. It returns the
// best x seen and its sum of squares.
//
// (gonum/optimize would do, but it pulls in golang.org/x/tools through
// gonum/stat/distmv, which go.sum does not carry.)
func levenbergMarquardt(residuals func(x, r []float64), jac func(x []float64, J *mat.Dense), x0 []float64, nres, maxIter int) ([]float64, float64) {
	np := len(x0)
	x := append([]float64(nil), x0...)
	r := make([]float64, nres)
	rt := make([]float64, nres)
	residuals(x, r)
	cost := sumSq(r)
	if math.IsNaN(cost) {
		return x, cost
	}
	J := mat.NewDense(nres, np, nil)
	var jtj mat.SymDense
	jtr := mat.NewVecDense(np, nil)
	A := mat.NewSymDense(np, nil)
	var delta mat.VecDense
	xt := make([]float64, np)
	lambda := 1e-3
	for it := 0; it < maxIter; it++ {
		if jac != nil {
			jac(x, J)
		} else {
			// Forward-difference Jacobian.
			for j := 0; j < np; j++ {
				h := 1e-6 * math.Max(1, math.Abs(x[j]))
				copy(xt, x)
				xt[j] += h
				residuals(xt, rt)
				for i := 0; i < nres; i++ {
					J.Set(i, j, (rt[i]-r[i])/h)
				}
			}
		}
		jtj.SymOuterK(1, J.T())
		jtr.MulVec(J.T(), mat.NewVecDense(nres, r))
		improved := false
		for try := 0; try < 12; try++ {
			for a := 0; a < np; a++ {
				for b := a; b < np; b++ {
					v := jtj.At(a, b)
					if a == b {
						v += lambda * math.Max(v, 1e-12)
					}
					A.SetSym(a, b, v)
				}
			}
			var ch mat.Cholesky
			if !ch.Factorize(A) {
				lambda *= 10
				continue
			}
			if err := ch.SolveVecTo(&delta, jtr); err != nil {
				lambda *= 10
				continue
			}
			for j := 0; j < np; j++ {
				xt[j] = x[j] - delta.AtVec(j)
			}
			residuals(xt, rt)
			c := sumSq(rt)
			if c < cost {
				rel := (cost - c) / cost
				copy(x, xt)
				copy(r, rt)
				cost = c
				lambda = math.Max(lambda/10, 1e-12)
				improved = true
				if rel < 1e-13 {
					return x, cost
				}
				break
			}
			lambda *= 10
		}
		if !improved {
			break
		}
	}
	return x, cost
}

func sumSq(r []float64) float64 {
	s := 0.0
	for _, v := range r {
		s += v * v
	}
	return s
}
