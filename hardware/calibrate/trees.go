package calibrate

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"sync"

	"github.com/servesim/servesim/models"
)

// The GEMM residual trees: gradient-boosted regression trees that correct
// the fitted GEMM model for the kernel cuBLAS picks.
//
// The parametric model (OpParams) has one tile per class, but cuBLAS
// chooses its kernel (tile, split, stages) per shape and token count by
// heuristics, so measured GEMM time steps irregularly in M and the steps
// fall at different M for different N and K. No smooth model of one class
// follows them: fitted to each (N, K) alone with its best tile, ours still
// misses by 3.1 / 10.1 % (A100, median / p90) and 4.7 / 14.1 % (H100).
// The trees learn log(measured / parametric) as a function of the shape,
// pooled over the GEMM classes (cuBLAS sees a shape, not a class): the
// token count and dimensions, the occupancy of the last wave and the wave
// count for eight common output tiles, the token count modulo 64/128/256,
// and how far the parametric prediction sits above the roofline. Vidur
// fits one random forest per operator and model over the token count
// alone; these trees generalise across models (the report's held-out-by-
// model table measures it).
//
// Training is least-squares gradient boosting on histogram bins
// (quantiles of each feature; a larger child's histogram is its parent's
// minus its sibling's), deterministic whatever the number of workers: no
// sampling, splits chosen by gain with ties to the lower feature and
// threshold, leaf values and
// thresholds rounded so that a profile written as TOML and read back
// predicts bit for bit what the fit did.

// GEMMTrees is a profile's residual-tree correction of its GEMM classes:
// one occurrence of a dense GEMM of a class in Kinds, computing in BF16
// with N and K known, takes the parametric time times exp(Base + Σ trees).
// A GEMM outside that domain (another precision, MoE expert GEMMs, the LM
// head, an operator without N and K) takes the parametric time.
type GEMMTrees struct {
	// Features names the feature set the trees split on (GEMMFeatures).
	Features string `toml:"features"`
	// Kinds are the classes corrected ("qkv", "out_proj", "mlp_up",
	// "mlp_down"); Dtype the compute precision they were trained on.
	Kinds []string `toml:"kinds"`
	Dtype string   `toml:"dtype"`
	// Base is the initial log correction; each tree's leaves hold their
	// contribution (the learning rate applied).
	Base float64 `toml:"base"`
	// How the trees were grown: tree count, depth limit, minimum samples
	// per leaf, learning rate, histogram bins.
	Trees        int     `toml:"trees"`
	Depth        int     `toml:"depth"`
	MinLeaf      int     `toml:"min_leaf"`
	LearningRate float64 `toml:"learning_rate"`
	Bins         int     `toml:"bins"`
	// Fit is the in-sample error of the corrected GEMM times.
	Fit FitStats `toml:"fit"`
	// Tree holds the trees.
	Tree []Tree `toml:"tree"`
}

// Tree is one regression tree in preorder: node i splits on feature
// Feature[i] (x ≤ Value[i] goes to the left child, node i+1; otherwise to
// the right child, node i+Right[i]) or, where Feature[i] is −1, is a leaf worth Value[i] (its
// Right is 0).
type Tree struct {
	Feature []int     `toml:"feature"`
	Value   []float64 `toml:"value"`
	Right   []int     `toml:"right"`
}

// GEMMFeatures is the name of the feature set gemmFeatures computes.
const GEMMFeatures = "gemm-v1"

// featureTiles are the output tiles whose waves are features: the CTA
// shapes of cuBLAS's tensor-core kernels on Ampere and Hopper.
var featureTiles = [8][2]int{{64, 64}, {64, 128}, {128, 64}, {128, 128}, {128, 256}, {256, 128}, {64, 256}, {256, 64}}

// numFeatures is the length of a gemm-v1 feature vector.
const numFeatures = 5 + 3*len(featureTiles) + 5 + 1

// treeKinds are the classes the trees correct: the GEMMs the traces have.
var treeKinds = []models.OpKind{models.OpQKV, models.OpOutProj, models.OpMLPUp, models.OpMLPDown}

// Tree training settings (see the report for what they give).
const (
	treeCount   = 150
	treeDepth   = 6
	treeMinLeaf = 50
	treeLR      = 0.2
	treeBins    = 64
	// minTreeSamples is the least number of GEMM timings (with N and K)
	// a fit grows trees on; fewer would fit noise.
	minTreeSamples = 2000
	// maxTreeDepth bounds the depth of a tree read from a file.
	maxTreeDepth = 32
)

// treeDomain reports whether the trees apply to op: a dense GEMM of a
// corrected class, in the trained precision, with N and K known. A dense
// GEMM's FLOPs are 2·M·N·K and its bytes one N×K weight in the compute
// precision plus BF16 activations (models.gemm); MoE expert GEMMs read
// several experts' weights, so they fall outside.
func treeDomain(op *models.Op, kinds *[models.NumOpKinds]bool, dt models.DType) bool {
	if !kinds[op.Kind] || op.Compute != dt || op.N <= 0 || op.K <= 0 || op.Tokens <= 0 {
		return false
	}
	m, n, k := float64(op.Tokens), float64(op.N), float64(op.K)
	dense := n*k*dt.Bytes() + (m*k+m*n)*2
	return op.FLOPs == 2*m*n*k && math.Abs(op.Bytes-dense) <= 1e-9*dense
}

// treeNode is a Tree node as the kernel model walks it: from node i to
// i+left if x[feature] ≤ value, else to i+right. A leaf has left = right = 0
// (it absorbs the walk) and feature 0; its value is its contribution.
type treeNode struct {
	feature     int32
	left, right int32
	value       float64
}

// forest is GEMMTrees flattened for evaluation.
type forest struct {
	base  float64
	roots []int32 // index of each tree's root in nodes
	nodes []treeNode
	depth int // the deepest leaf's depth
	kinds [models.NumOpKinds]bool
	dtype models.DType
	// binned is the same forest over bin indices (trees_eval.go), which
	// at uses when set: the same leaves, summed in the same order.
	binned *binnedForest
}

func newForest(t *GEMMTrees) *forest {
	n := 0
	for _, tr := range t.Tree {
		n += len(tr.Feature)
	}
	f := &forest{base: t.Base, roots: make([]int32, 0, len(t.Tree)), nodes: make([]treeNode, 0, n)}
	for _, tr := range t.Tree {
		f.roots = append(f.roots, int32(len(f.nodes)))
		depth := make([]int, len(tr.Feature))
		for i, ft := range tr.Feature {
			nd := treeNode{feature: int32(ft), left: 1, right: int32(tr.Right[i]), value: tr.Value[i]}
			if ft < 0 {
				nd = treeNode{value: tr.Value[i]}
				f.depth = max(f.depth, depth[i])
			} else {
				depth[i+1], depth[i+tr.Right[i]] = depth[i]+1, depth[i]+1
			}
			f.nodes = append(f.nodes, nd)
		}
	}
	for _, k := range t.Kinds {
		kind, _ := models.ParseOpKind(k) // validated
		f.kinds[kind] = true
	}
	f.dtype, _ = models.ParseDType(t.Dtype)
	f.binned = newBinnedForest(f)
	return f
}

// at returns the log correction for feature vector x. atFloat walks four trees
// at a time for f.depth steps each (leaves absorb the walk, so every tree
// takes the same steps), so that the four chains of dependent loads
// overlap.
func (f *forest) at(x []float64) float64 {
	if f.binned != nil {
		return f.binned.at(x)
	}
	return f.atFloat(x)
}

// atFloat is at by walking the nodes' float thresholds.
func (f *forest) atFloat(x []float64) float64 {
	s := f.base
	nodes, roots := f.nodes, f.roots
	step := func(i int32) int32 {
		n := &nodes[i]
		d := n.left
		if x[n.feature] > n.value {
			d = n.right
		}
		return i + d
	}
	t := 0
	for ; t+4 <= len(roots); t += 4 {
		i0, i1, i2, i3 := roots[t], roots[t+1], roots[t+2], roots[t+3]
		for range f.depth {
			i0, i1, i2, i3 = step(i0), step(i1), step(i2), step(i3)
		}
		s += nodes[i0].value + nodes[i1].value + nodes[i2].value + nodes[i3].value
	}
	for ; t < len(roots); t++ {
		i := roots[t]
		for range f.depth {
			i = step(i)
		}
		s += nodes[i].value
	}
	return s
}

// treeSample is one training timing: its features and its target, the log
// of measured over parametric time.
type treeSample struct {
	x [numFeatures]float64
	y float64
}

// growTrees fits GEMMTrees to the samples by gradient boosting. It is
// deterministic (see the package comment on the trees) and uses up to
// GOMAXPROCS goroutines over features; the result does not depend on them.
func growTrees(ss []treeSample) *GEMMTrees {
	n := len(ss)
	// Histogram bins per feature: up to treeBins−1 thresholds, one after
	// each quantile value, each the shortest decimal between it and the
	// next larger value so that it survives TOML.
	thr := make([][]float64, numFeatures)
	rows := make([]uint8, n*numFeatures) // sample i's bins at [i·numFeatures, (i+1)·numFeatures)
	vals := make([]float64, n)
	for j := range numFeatures {
		for i := range ss {
			vals[i] = ss[i].x[j]
		}
		sort.Float64s(vals)
		var t []float64
		for b := 1; b < treeBins; b++ {
			// Split after the quantile value q: at a threshold in
			// [q, the next larger value).
			q := vals[b*n/treeBins]
			up := sort.Search(n, func(i int) bool { return vals[i] > q })
			if up == n || len(t) > 0 && q <= t[len(t)-1] {
				continue
			}
			t = append(t, shortestIn(q, vals[up]))
		}
		thr[j] = t
		for i := range ss {
			rows[i*numFeatures+j] = uint8(sort.SearchFloat64s(t, ss[i].x[j]))
		}
	}
	mean := 0.0
	for i := range ss {
		mean += ss[i].y
	}
	out := &GEMMTrees{Features: GEMMFeatures, Dtype: models.BF16.String(), Base: round4(mean / float64(n)),
		Trees: treeCount, Depth: treeDepth, MinLeaf: treeMinLeaf, LearningRate: treeLR, Bins: treeBins}
	for _, k := range treeKinds {
		out.Kinds = append(out.Kinds, k.String())
	}
	pred := make([]float64, n)
	res := make([]float64, n)
	for i := range pred {
		pred[i] = out.Base
	}
	g := &grower{rows: rows, thr: thr, res: res, workers: runtime.GOMAXPROCS(0)}
	g.hist = make([][2]*histogram, treeDepth+1)
	for d := range g.hist {
		g.hist[d] = [2]*histogram{new(histogram), new(histogram)}
	}
	root := new(histogram)
	ids := make([]int32, n)
	for range treeCount {
		for i := range res {
			res[i] = ss[i].y - pred[i]
			ids[i] = int32(i)
		}
		g.tree = Tree{}
		g.fill(root, ids)
		g.build(ids, 0, root)
		t := g.tree
		for i := range ss {
			pred[i] += evalTree(&t, ss[i].x[:])
		}
		out.Tree = append(out.Tree, t)
	}
	return out
}

// grower grows one tree on the residuals.
type grower struct {
	rows    []uint8 // bins, row-major (numFeatures a sample)
	thr     [][]float64
	res     []float64
	workers int
	tree    Tree
	// hist[d] holds the histograms of the two children of the node being
	// split at depth d.
	hist [][2]*histogram
}

// histogram is, per feature and bin, the sum and count of the residuals of
// a node's samples.
type histogram [numFeatures][treeBins]struct {
	sum float64
	n   int
}

// fill sets h to the histogram of the samples ids, adding each feature's
// residuals in the order of ids (features in parallel; the result does not
// depend on the workers).
func (g *grower) fill(h *histogram, ids []int32) {
	one := func(lo, hi int) {
		for j := lo; j < hi; j++ {
			h[j] = [treeBins]struct {
				sum float64
				n   int
			}{}
		}
		for _, i := range ids {
			r := g.res[i]
			row := g.rows[int(i)*numFeatures : int(i)*numFeatures+numFeatures]
			for j := lo; j < hi; j++ {
				c := &h[j][row[j]]
				c.sum += r
				c.n++
			}
		}
	}
	w := min(g.workers, numFeatures)
	if w <= 1 || len(ids) < 1024 {
		one(0, numFeatures)
		return
	}
	var wg sync.WaitGroup
	for k := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one(k*numFeatures/w, (k+1)*numFeatures/w)
		}()
	}
	wg.Wait()
}

type split struct {
	gain    float64
	feature int
	bin     int
}

// build appends the subtree of the samples ids, whose histogram is h, at
// depth d and returns its root's index. The smaller child's histogram is
// summed from its samples, the larger one's is h minus it.
func (g *grower) build(ids []int32, d int, h *histogram) int {
	sum := 0.0
	for _, i := range ids {
		sum += g.res[i]
	}
	me := len(g.tree.Feature)
	g.tree.Feature = append(g.tree.Feature, -1)
	g.tree.Value = append(g.tree.Value, round4(treeLR*sum/float64(len(ids))))
	g.tree.Right = append(g.tree.Right, 0)
	if d == treeDepth || len(ids) < 2*treeMinLeaf {
		return me
	}
	best := g.bestSplit(h, len(ids), sum)
	if best.feature < 0 {
		return me
	}
	left := make([]int32, 0, len(ids))
	var right []int32
	for _, i := range ids {
		if int(g.rows[int(i)*numFeatures+best.feature]) <= best.bin {
			left = append(left, i)
		} else {
			right = append(right, i)
		}
	}
	hl, hr := g.hist[d][0], g.hist[d][1]
	small, large := hl, hr
	if len(right) < len(left) {
		small, large = hr, hl
		g.fill(small, right)
	} else {
		g.fill(small, left)
	}
	for j := range h {
		for b := range h[j] {
			large[j][b].sum = h[j][b].sum - small[j][b].sum
			large[j][b].n = h[j][b].n - small[j][b].n
		}
	}
	g.tree.Feature[me] = best.feature
	g.tree.Value[me] = g.thr[best.feature][best.bin]
	g.build(left, d+1, hl)
	g.tree.Right[me] = len(g.tree.Feature) - me
	g.build(right, d+1, hr)
	return me
}

// bestSplit returns the split of a node of n samples with residual sum sum
// and histogram h with the largest reduction of the squared error that
// leaves treeMinLeaf samples on each side (feature −1: none), ties to the
// lower feature, then the lower bin.
func (g *grower) bestSplit(h *histogram, n int, sum float64) split {
	best := split{feature: -1}
	base := sum * sum / float64(n)
	for j := range numFeatures {
		ls, lc := 0.0, 0
		for k := range g.thr[j] {
			ls += h[j][k].sum
			lc += h[j][k].n
			rc := n - lc
			if lc < treeMinLeaf {
				continue
			}
			if rc < treeMinLeaf {
				break
			}
			rs := sum - ls
			if gain := ls*ls/float64(lc) + rs*rs/float64(rc) - base; gain > best.gain {
				best = split{gain: gain, feature: j, bin: k}
			}
		}
	}
	return best
}

// evalTree returns tree t's value at x.
func evalTree(t *Tree, x []float64) float64 {
	i := 0
	for t.Feature[i] >= 0 {
		if x[t.Feature[i]] <= t.Value[i] {
			i++
		} else {
			i += t.Right[i]
		}
	}
	return t.Value[i]
}

// round4 rounds v to 4 significant digits.
func round4(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return r
}

// shortestIn returns the midpoint of [lo, hi) rounded to the fewest
// significant digits that keep it in [lo, hi) (lo < hi): a threshold that
// TOML writes short and reads back exactly.
func shortestIn(lo, hi float64) float64 {
	mid := lo + (hi-lo)/2
	for p := 1; p <= 17; p++ {
		v, _ := strconv.ParseFloat(strconv.FormatFloat(mid, 'g', p, 64), 64)
		if v >= lo && v < hi {
			return v
		}
	}
	return lo
}

// validate checks the trees' shape: known features, classes and precision,
// every tree a well-formed preorder of at most maxTreeDepth levels with
// finite values.
func (t *GEMMTrees) validate(fe func(field, format string, a ...any) error) error {
	if t.Features != GEMMFeatures {
		return fe("gemm_trees.features", "%q: this servesim computes %q", t.Features, GEMMFeatures)
	}
	if len(t.Kinds) == 0 {
		return fe("gemm_trees.kinds", "must name at least one GEMM class")
	}
	for i, k := range t.Kinds {
		kind, err := models.ParseOpKind(k)
		if err != nil || !isGEMM(kind) {
			return fe(fmt.Sprintf("gemm_trees.kinds[%d]", i), "%q is not a GEMM class (%v)", k, gemmKinds)
		}
	}
	if _, err := models.ParseDType(t.Dtype); err != nil {
		return fe("gemm_trees.dtype", "%v", err)
	}
	if err := finite("gemm_trees.base", t.Base); err != nil {
		return err
	}
	if len(t.Tree) == 0 {
		return fe("gemm_trees.tree", "needs at least one tree")
	}
	if t.Trees != len(t.Tree) {
		return fe("gemm_trees.trees", "%d, but the profile has %d [[gemm_trees.tree]] tables", t.Trees, len(t.Tree))
	}
	if t.Depth < 0 || t.MinLeaf < 0 || t.Bins < 0 {
		return fe("gemm_trees.depth", "depth, min_leaf and bins must be >= 0 (%d, %d, %d)", t.Depth, t.MinLeaf, t.Bins)
	}
	if err := nonNeg("gemm_trees.learning_rate", t.LearningRate); err != nil {
		return err
	}
	if err := t.Fit.validate("gemm_trees.fit"); err != nil {
		return err
	}
	for ti := range t.Tree {
		tr := &t.Tree[ti]
		at := func(k string) string { return fmt.Sprintf("gemm_trees.tree[%d].%s", ti, k) }
		n := len(tr.Feature)
		if n == 0 || len(tr.Value) != n || len(tr.Right) != n {
			return fe(at("feature"), "feature, value and right must have the same length > 0 (%d, %d, %d)", n, len(tr.Value), len(tr.Right))
		}
		for i, v := range tr.Value {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fe(at(fmt.Sprintf("value[%d]", i)), "must be finite, got %v", v)
			}
		}
		end, err := checkSubtree(tr, 0, 0)
		if err == "" && end != n {
			err = fmt.Sprintf("node %d is not in the tree", end)
		}
		if err != "" {
			return fe(at("feature"), "%s", err)
		}
	}
	return nil
}

// checkSubtree checks the subtree rooted at node i at depth d and returns
// the index after it, or an error message.
func checkSubtree(tr *Tree, i, d int) (int, string) {
	if d > maxTreeDepth {
		return 0, fmt.Sprintf("deeper than %d levels", maxTreeDepth)
	}
	f := tr.Feature[i]
	if f == -1 {
		if tr.Right[i] != 0 {
			return 0, fmt.Sprintf("leaf %d has right = %d, want 0", i, tr.Right[i])
		}
		return i + 1, ""
	}
	if f < 0 || f >= numFeatures {
		return 0, fmt.Sprintf("node %d: feature %d out of range [-1, %d)", i, f, numFeatures)
	}
	if i+1 >= len(tr.Feature) {
		return 0, fmt.Sprintf("node %d has no left child", i)
	}
	end, err := checkSubtree(tr, i+1, d+1)
	if err != "" {
		return 0, err
	}
	if tr.Right[i] != end-i {
		return 0, fmt.Sprintf("node %d: right = %d, but its left subtree ends at node %d (right = %d)", i, tr.Right[i], end, end-i)
	}
	if end >= len(tr.Feature) {
		return 0, fmt.Sprintf("node %d has no right child", i)
	}
	return checkSubtree(tr, end, d+1)
}
